#!/usr/bin/python3
"""OpenTelemetry in, end to end: the OpenTelemetry SDK for Node and its
OTLP/HTTP exporters (tests/otlp/emit.js, JSON and gzip'd protobuf) send
GenAI spans to a real ledgerd's --otlp-listen over mutual TLS.

Usage: otlp_test.py BUILD_DIR

Checked, through the real process, its gRPC API and its data directory:
  - a chat span and an execute_tool span become a model_call and a
    tool_call entry, compared whole with the receipt the contract's mapping
    gives (ids, team and run from the resource, step from the span, tokens,
    digests of the content, latency, error.type), emitted by the sender's
    certificate identity;
  - a span without gen_ai.operation.name is ignored;
  - a span without ledger.step_id, one for a team the sender may not append
    to, and one carrying a credential are refused alone, named in the
    exporter's partial success, while the good ones are appended;
  - the exporter's resend of the same spans appends nothing (duplicates);
  - bad requests get their OTLP/HTTP status (415, 400, 404) and a
    google.rpc.Status, a certificate naming no identity 401 (never the
    server's own in-process identity), an identity without the emitter role
    403, and none of them appends anything;
  - a body nested a million deep is refused (400), not walked until the
    stack runs out;
  - in plain text, --otlp-listen off loopback needs --insecure;
  - neither the prompt, the completion nor the tool's arguments and result
    are anywhere in the data directory, while the model name is (so the
    search can see what is stored).

Every check runs; the failures are listed together.
"""
import hashlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger_testlib import Certificates, fail, free_port, generate_stubs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT = "Summarize the Nightjar acquisition memo for the board"
COMPLETION = "Nightjar closes in March at forty million"
TOOL_ARGS = '{"query":"Nightjar escrow terms"}'
TOOL_RESULT = "escrow held by Corvid Trust"
CREDENTIAL_MODEL = "sk-live0123456789abcdefghijklmnop"
POLICY = {"identities": [
    {"identity": "cn:writer", "roles": ["emitter"], "teams": ["team-a"]},
    {"identity": "cn:auditor", "roles": ["auditor"], "teams": ["*"]},
    {"identity": "cn:outsider", "roles": ["reader"], "teams": ["team-a"]},
]}


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def spans_for(run):
    step = {"ledger.step_id": "step-1"}
    return [
        {"name": "chat gpt-4o", "attributes": dict(step, **{
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 45, "gen_ai.agent.name": "planner",
            "gen_ai.input.messages": PROMPT, "gen_ai.output.messages": COMPLETION})},
        {"name": "execute_tool web_search", "attributes": dict(step, **{
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "web_search",
            "gen_ai.tool.call.arguments": TOOL_ARGS, "gen_ai.tool.call.result": TOOL_RESULT,
            "error.type": "timeout"})},
        {"name": "GET /search", "attributes": {"http.request.method": "GET"}},
        {"name": "chat no step", "attributes": {"gen_ai.operation.name": "chat"}},
        {"name": "chat team-b", "attributes": dict(step, **{"gen_ai.operation.name": "chat", "ledger.team": "team-b"})},
        {"name": "chat credential", "attributes": dict(step, **{
            "gen_ai.operation.name": "chat", "gen_ai.request.model": CREDENTIAL_MODEL})},
    ]


def status_pb(code, message):
    """A google.rpc.Status {code, message} in protobuf (message shorter than 128 bytes)."""
    return b"\x08" + bytes([code]) + b"\x12" + bytes([len(message)]) + message.encode()


class Ledger:
    def __init__(self, build, work, tls):
        self.data = os.path.join(work, "data")
        self.log = open(os.path.join(work, "ledgerd.log"), "ab")
        self.address = "127.0.0.1:%d" % free_port()
        self.proc = subprocess.Popen(
            [os.path.join(build, "cmd", "ledgerd"), "--data", self.data, "--listen", self.address,
             "--http-listen", "127.0.0.1:0", "--otlp-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "20"] + tls,
            stdout=subprocess.PIPE, stderr=self.log)
        lines = [self.proc.stdout.readline().decode() for _ in range(3)]
        if not lines[0].startswith("listening on") or not lines[2].startswith("otlp on"):
            fail("ledgerd did not start: %r %s" % (lines, open(os.path.join(work, "ledgerd.log")).read()))
        self.otlp = lines[2].split()[-1]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        if self.proc.wait(timeout=30) != 0:
            fail("ledgerd exited %d" % self.proc.returncode)


def main():
    build = os.path.abspath(sys.argv[1])
    if not os.path.isdir(os.path.join(HERE, "otlp", "node_modules", "@opentelemetry")):
        fail("tests/otlp/node_modules is missing: run 'npm ci' in tests/otlp (scripts/setup.sh test does)")
    work = tempfile.mkdtemp(prefix="otlp-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "ledger_service"))
    import grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc

    ca = Certificates(os.path.join(work, "pki"), "ca")
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1,DNS:localhost")
    clients = {name: ca.issue(name, name) for name in ("writer", "auditor", "outsider")}
    clients["nameless"] = ca.issue("nameless", None)
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump(POLICY, f)
    ledger = Ledger(build, work, ["--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca,
                                  "--policy", policy])
    problems = []

    def check(ok, what):
        if not ok:
            problems.append(what)

    creds = grpc.ssl_channel_credentials(open(ca.ca, "rb").read(), open(clients["auditor"][1], "rb").read(),
                                         open(clients["auditor"][0], "rb").read())
    stub = svc_grpc.LedgerServiceStub(grpc.secure_channel(ledger.address, creds))

    def entries():
        """Every entry, once the checkpoint (signed every 20 ms) covers what was appended."""
        time.sleep(0.2)
        size = stub.GetCheckpoint(svc.GetCheckpointRequest()).tree_size
        return [json.loads(e.leaf) for e in stub.GetEntries(svc.GetEntriesRequest(from_seq=0, to_seq=size))]

    for protocol, compression in (("json", "none"), ("proto", "gzip")):
        run = "run-" + protocol
        writer_cert, writer_key = clients["writer"]
        config = {"url": "https://%s/v1/traces" % ledger.otlp, "protocol": protocol, "compression": compression,
                  "ca": ca.ca, "cert": writer_cert, "key": writer_key, "run_id": run, "spans": spans_for(run)}
        done = subprocess.run(["node", os.path.join(HERE, "otlp", "emit.js"), json.dumps(config)],
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            fail("emit.js (%s) failed: %s" % (protocol, done.stderr))
        out = json.loads(done.stdout)
        spans = {s["name"]: s for s in out["spans"]}
        check([e["code"] for e in out["exports"]] == [0, 0], "%s: exports %r" % (protocol, out["exports"]))
        log = [e for e in entries() if e["receipt"].get("run_id") == run]
        by_id = {e["receipt"]["receipt_id"]: e for e in log}

        def rid(name):
            return "otel.%s.%s" % (spans[name]["trace_id"], spans[name]["span_id"])

        def common(name):
            s = spans[name]
            return {"receipt_id": rid(name), "team": "team-a", "run_id": run, "step_id": "step-1", "attempt": 1,
                    "occurred_at_us": int(s["start_ns"]) // 1000, "trace_id": s["trace_id"],
                    "span_id": s["span_id"],
                    "latency_ms": (int(s["end_ns"]) - int(s["start_ns"])) // 1000000, "decision": "allow"}

        model = dict(common("chat gpt-4o"), kind="model_call", agent="planner", provider="openai",
                     model="gpt-4o-2024-08-06", route="chat", input_tokens=120, output_tokens=45,
                     request_sha256=sha(PROMPT), response_sha256=sha(COMPLETION))
        tool = dict(common("execute_tool web_search"), kind="tool_call", tool="web_search",
                    request_sha256=sha(TOOL_ARGS), response_sha256=sha(TOOL_RESULT), reason="timeout")
        # Once each, though sent twice.
        check(sorted(e["receipt"]["receipt_id"] for e in log) == sorted([model["receipt_id"], tool["receipt_id"]]),
              "%s: entries of the run %r" % (protocol, [e["receipt"]["receipt_id"] for e in log]))
        for want in (model, tool):
            got = by_id.get(want["receipt_id"])
            check(got is not None and got["receipt"] == want,
                  "%s: receipt\n got  %r\n want %r" % (protocol, got and got["receipt"], want))
            check(got is not None and got["emitter"] == "cn:writer", "%s: emitter %r" % (protocol, got))

        def refused(name, why):
            s = spans[name]
            return "span %s of trace %s: %s" % (s["span_id"], s["trace_id"], why)

        message = "; ".join([
            refused("chat no step", "ledger.step_id: required on the span or its resource"),
            refused("chat team-b", "team: identity 'cn:writer' may not append for team 'team-b'"),
            refused("chat credential", "model: looks like a secret API key (sk-...): an audit log must not hold "
                                       "credentials; record a digest or a credential id instead"),
        ])
        partial = [w for w in out["warnings"] if "Partial Success" in w]
        check(len(partial) == 2, "%s: two partial successes (the send and the resend): %r" % (protocol, out["warnings"]))
        for w in partial:
            got = json.loads(w[w.index("{"):])
            rejected = got.get("rejectedSpans")
            if isinstance(rejected, dict):  # protobufjs decodes an int64 as a Long {low, high, unsigned}
                rejected = rejected["low"] + (rejected["high"] << 32)
            check(str(rejected) == "3" and got.get("errorMessage") == message,
                  "%s: partial success\n got  %r\n want rejectedSpans 3, errorMessage %r" % (protocol, got, message))

    # Requests refused whole: nothing appended.
    before = len(entries())

    def post(who, path, body, content_type, encoding=None):
        ctx = ssl.create_default_context(cafile=ca.ca)
        ctx.load_cert_chain(*clients[who])
        headers = {"Content-Type": content_type}
        if encoding:
            headers["Content-Encoding"] = encoding
        req = urllib.request.Request("https://%s%s" % (ledger.otlp, path), data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    good = json.dumps({"resourceSpans": [{"resource": {"attributes": [
        {"key": "ledger.team", "value": {"stringValue": "team-a"}},
        {"key": "ledger.run_id", "value": {"stringValue": "run-raw"}}]}, "scopeSpans": [{"spans": [{
            "traceId": "5bf92f3577b34da6a3ce929d0e0e4736", "spanId": "10f067aa0ba902b7", "name": "chat",
            "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                           {"key": "ledger.step_id", "value": {"stringValue": "s"}}]}]}]}]}).encode()
    cases = [
        ("writer", "/v1/traces", good, "text/plain", None, 415,  # protobuf, when no JSON was sent
         status_pb(3, "Content-Type: 'text/plain' is not application/json or application/x-protobuf (OTLP/HTTP)")),
        ("writer", "/v1/traces", b'{"resourceSpans":[', "application/json", None, 400,
         {"code": 3, "message": "body: not JSON"}),
        ("writer", "/v1/traces", good, "application/json", "gzip", 400,
         {"code": 3, "message": "body: Content-Encoding is gzip but the body is not"}),
        ("writer", "/v1/traces", good, "application/json", "br", 415,
         {"code": 12, "message": "Content-Encoding: 'br' is not gzip or identity"}),
        # Nested a million deep (2 MB, within the body limit): refused, and ledgerd lives on.
        ("writer", "/v1/traces", b'{"resourceSpans":[],"x":' + b"[" * 1000000 + b"]" * 1000000 + b"}",
         "application/json", None, 400, {"code": 3, "message": "body: JSON nested deeper than 100 levels"}),
        ("writer", "/v1/logs", good, "application/json", None, 404,
         {"code": 5, "message": "path: '/v1/logs': only /v1/traces"}),
        # Never the server's own identity: a certificate without one is refused.
        ("nameless", "/v1/traces", good, "application/json", None, 401,
         {"code": 16, "message": "client certificate: names no identity"}),
        ("outsider", "/v1/traces", good, "application/json", None, 403,
         {"code": 7, "message": "identity 'cn:outsider' may not append (its roles do not allow it)"}),
    ]
    for who, path, body, content_type, encoding, status, want in cases:
        try:
            got_status, got_body = post(who, path, body, content_type, encoding)
        except OSError as e:
            fail("%s %s: no answer (%s); ledgerd exited %r:\n%s" % (who, path, e, ledger.proc.poll(),
                                                                  open(os.path.join(work, "ledgerd.log")).read()[-2000:]))
        try:
            got = json.loads(got_body)
        except ValueError:
            got = got_body
        check((got_status, got) == (status, want),
              "%s %s %s: got %d %r, want %d %r" % (who, path, content_type, got_status, got, status, want))
    check(len(entries()) == before, "refused requests appended: %d -> %d" % (before, len(entries())))
    # The good body itself is appended, with OTLP/JSON's empty response.
    check(post("writer", "/v1/traces", good, "application/json") == (200, b"{}"), "the raw good body")

    # In plain text, every sender would be 'local' (admin): off loopback only with --insecure.
    refused = subprocess.run([os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, "plain"),
                              "--otlp-listen", "0.0.0.0:0"], capture_output=True, text=True, timeout=30)
    check(refused.returncode == 1 and "--otlp-listen: 0.0.0.0:0 is not a loopback address; in plain-text mode every "
          "sender appends as 'local' to any team: give --tls-cert, --tls-key, --client-ca and --policy, or "
          "--insecure" in refused.stderr,
          "plain text off loopback: %d %s" % (refused.returncode, refused.stderr))

    # No content in the data directory; the model name is (the search sees what is stored).
    ledger.stop()
    logged = [json.loads(line) for line in open(os.path.join(work, "ledgerd.log"))
              if '"otlp_spans_refused"' in line]
    check(len(logged) == 4 and all(e["identity"] == "cn:writer" and e["rejected"] == 3 and e["spans"] == 5
                                   for e in logged), "the refusals logged: %r" % logged)
    stored = b""
    for root, _, files in os.walk(ledger.data):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                stored += fh.read()
    check(b"gpt-4o-2024-08-06" in stored, "the data directory does not show the model name: the search is blind")
    for text in (PROMPT, COMPLETION, TOOL_ARGS, TOOL_RESULT, "Nightjar"):
        check(text.encode() not in stored, "the data directory holds %r" % text)

    if problems:
        fail("\n".join(problems))
    shutil.rmtree(work, ignore_errors=True)
    print("otlp_test: OK")


if __name__ == "__main__":
    main()
