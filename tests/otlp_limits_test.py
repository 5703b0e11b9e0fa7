#!/usr/bin/python3
"""The OTLP port authorizes before it inflates or decodes, and bounds what
it inflates.

Usage: otlp_limits_test.py BUILD_DIR

A real ledgerd over mutual TLS with --otlp-listen; a policy with an emitter
of team-a (writer), a reader (no append right) and a certificate the policy
names nowhere (stranger). Attacks, through the real port:

  - the stranger and the reader post a small gzip body that inflates to
    about 4 MB of empty spans, eight at once, several rounds: each is
    refused with 403 naming the rule, and ledgerd's peak memory (VmHWM)
    does not grow by more than a few MiB (it grew by hundreds when the
    body was inflated and decoded before the caller was looked at);
  - the emitter's body that inflates past 100 times its size is refused,
    413, with the limits named, and nothing is appended;
  - the emitter's ordinary gzip body is still accepted;
  - unfinished chunked uploads: the stranger's are answered 403 as soon
    as their heads are in, with no byte of their bodies held; the
    emitter's sixteen at once, each 2 MiB sent and never finished, hold at
    most 16 MiB (four times the largest body) from its address, the
    uploads past it answered 429, and ledgerd's peak memory grows by less
    than 48 MiB (about 131 MiB when every upload was held to its
    deadline).

Every check runs; the failures are listed together.
"""
import gzip
import json
import os
import socket
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from access_control_test import Ledger  # noqa: E402
from ledger_testlib import Certificates, fail  # noqa: E402

POLICY = {"identities": [
    {"identity": "cn:writer", "roles": ["emitter"], "teams": ["team-a"]},
    {"identity": "cn:reader", "roles": ["reader"], "teams": ["team-a"]},
]}


def peak_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def bomb():
    """About 4 MB of JSON: one resource, one scope, many empty spans."""
    spans = [{}] * 850_000
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()
    return gzip.compress(body, 9), len(body)


def span(name):
    now = int(time.time() * 1e9)
    attrs = [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
             {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
             {"key": "ledger.step_id", "value": {"stringValue": "s1"}}]
    return {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": name,
            "startTimeUnixNano": str(now), "endTimeUnixNano": str(now + 1000), "attributes": attrs}


def ordinary():
    resource = {"attributes": [{"key": "ledger.team", "value": {"stringValue": "team-a"}},
                               {"key": "ledger.run_id", "value": {"stringValue": "run-1"}}]}
    body = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span("chat m")]}]}]}
    return gzip.compress(json.dumps(body).encode())


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="otlp-limits-")
    ca = Certificates(os.path.join(work, "pki"), "ca")
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1,DNS:localhost")
    clients = {who: ca.issue(who, who) for who in ("writer", "reader", "stranger")}
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump(POLICY, f)
    ledger = Ledger(build, work, ["--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca,
                                  "--policy", policy, "--otlp-listen", "127.0.0.1:0"])
    otlp = ledger.proc.stdout.readline().decode().split()[-1]
    problems = []
    try:
        run(ledger, otlp, ca, clients, problems)
    finally:
        if ledger.proc.poll() is None:
            ledger.proc.kill()
    if problems:
        fail("%d problem(s):\n  %s" % (len(problems), "\n  ".join(problems)))
    print("the OTLP port refuses before it reads a body, and bounds what it holds and inflates")


def run(ledger, otlp, ca, clients, problems):
    def post(who, body):
        ctx = ssl.create_default_context(cafile=ca.ca)
        ctx.load_cert_chain(*clients[who])
        req = urllib.request.Request("https://%s/v1/traces" % otlp, data=body, method="POST",
                                     headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=60) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    small, inflated = bomb()
    print("the body: %d bytes of gzip, %d inflated" % (len(small), inflated))
    before = peak_kib(ledger.proc.pid)
    for who in ("stranger", "reader"):
        answers = []
        for _ in range(3):
            threads = [threading.Thread(target=lambda: answers.append(post(who, small))) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        want = "has no rule in the policy" if who == "stranger" else "may not append"
        wrong = [a for a in answers if a[0] != 403 or want not in a[1]]
        if wrong:
            problems.append("%s's bodies: want 403 with '%s', got %d of %d otherwise, e.g. %s" %
                            (who, want, len(wrong), len(answers), wrong[0]))
    grown = (peak_kib(ledger.proc.pid) - before) // 1024
    print("24 bodies each from a stranger and a reader: ledgerd's peak memory grew by %d MiB" % grown)
    if grown > 32:
        problems.append("refused bodies raised ledgerd's peak memory by %d MiB" % grown)

    status, body = post("writer", small)
    if status != 413 or "gzip inflates past" not in body or "100 times" not in body:
        problems.append("the emitter's bomb: want 413 naming the limits, got %d %s" % (status, body[:300]))
    status, body = post("writer", ordinary())
    if status != 200:
        problems.append("the emitter's ordinary body: want 200, got %d %s" % (status, body[:300]))
    unfinished(ledger, otlp, ca, clients, problems)


def unfinished(ledger, otlp, ca, clients, problems):
    host, port = otlp.rsplit(":", 1)

    def begin(who, data_bytes):
        """A chunked upload sent up to `data_bytes` of data, never finished.
        Returns the socket and what the server answered meanwhile."""
        ctx = ssl.create_default_context(cafile=ca.ca)
        ctx.load_cert_chain(*clients[who])
        sock = ctx.wrap_socket(socket.create_connection((host, int(port))), server_hostname="localhost")
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (64 << 10, b" " * (64 << 10))
        sock.settimeout(0.5)
        answer = b""
        try:
            for _ in range(data_bytes // (64 << 10)):
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, socket.timeout):
            pass
        try:
            answer = sock.recv(4096)
        except (socket.timeout, ssl.SSLError, ConnectionResetError):
            pass
        return sock, answer

    before = peak_kib(ledger.proc.pid)
    held = []
    stranger = [begin("stranger", 2 << 20) for _ in range(8)]
    refused = [a for _, a in stranger if a.startswith(b"HTTP/1.1 403") and b"has no rule in the policy" in a]
    if len(refused) != len(stranger):
        problems.append("the stranger's unfinished uploads: want 403 for all %d, got %d, e.g. %r" %
                        (len(stranger), len(refused), stranger[0][1][:200]))
    writer = [begin("writer", 2 << 20) for _ in range(16)]
    busy = [a for _, a in writer if a.startswith(b"HTTP/1.1 429") and b"arriving at once" in a]
    quiet = [a for _, a in writer if not a]
    print("16 unfinished uploads of the emitter: %d held, %d answered 429" % (len(quiet), len(busy)))
    if len(busy) < 10 or len(quiet) + len(busy) != 16:
        problems.append("the emitter's unfinished uploads: want at most 6 held and the rest 429, got %d held, "
                        "%d 429, e.g. %r" % (len(quiet), len(busy), ([a for a in writer if a[1]] or [(0, b"")])[0][1][:200]))
    held.extend(stranger + writer)
    grown = (peak_kib(ledger.proc.pid) - before) // 1024
    print("unfinished uploads: ledgerd's peak memory grew by %d MiB" % grown)
    if grown >= 48:
        problems.append("unfinished uploads raised ledgerd's peak memory by %d MiB" % grown)
    for sock, _ in held:
        sock.close()


if __name__ == "__main__":
    main()
