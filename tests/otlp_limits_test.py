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
  - the emitter's ordinary gzip body is still accepted.

Every check runs; the failures are listed together.
"""
import gzip
import json
import os
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
    print("the OTLP port refuses before it inflates, and bounds what it inflates")


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


if __name__ == "__main__":
    main()
