#!/usr/bin/python3
"""ledgerctl says which TLS flags to give when they do not match the server
(issue 38), learned from the server's handshake, never from the port:

  - plain text to a TLS port: "the server at A speaks TLS: give --tls-ca,
    --cert and --key";
  - --tls-ca without --cert to a server that wants a client certificate:
    "... wants a client certificate: give --cert and --key";
  - a certificate its CA did not issue: "... refused the client
    certificate F (...)";
  - TLS to a plain-text port: "... speaks plain text, not TLS: ...".

Each exits 2 with that whole line on stderr and nothing on stdout (before,
"failed to connect to all addresses; ... Socket closed", exit 1); append
gives up at once, with no retry, and names the input line. A real ledgerd
with mutual TLS and one in plain text, both on loopback port 0; the
certificates come from the openssl command.

Usage: tls_mismatch_test.py BUILD_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger_testlib import Certificates, fail  # noqa: E402

POLICY = {"identities": [{"identity": "spiffe://test/admin", "roles": ["admin"]}]}
RECEIPT = {"receipt_id": "r-1", "kind": "agent_start", "team": "team-a", "run_id": "run-1", "step_id": "s1",
           "occurred_at_us": 1767225600000000, "decision": "allow", "timeout_ms": 600000}


class Ledgerd:
    def __init__(self, build, work, name, *flags):
        self.log = open(os.path.join(work, name + ".log"), "wb")
        self.proc = subprocess.Popen([os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, name),
                                      "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"] + list(flags),
                                     stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("listening on "):
            fail("ledgerd %s did not start: %r" % (name, line))
        self.address = line.split()[-1]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="tls-mismatch-")
    ca = Certificates(os.path.join(work, "ca"))
    other = Certificates(os.path.join(work, "other"), name="other-ca")
    server_cert, server_key = ca.issue("server", "localhost", "IP:127.0.0.1,DNS:localhost")
    admin = ca.issue("admin", "admin", "URI:spiffe://test/admin")
    stranger = other.issue("stranger", "stranger", "URI:spiffe://test/admin")
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump(POLICY, f)
    tls = Ledgerd(build, work, "tls", "--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca,
                  "--policy", policy)
    plain = Ledgerd(build, work, "plain")
    receipts = os.path.join(work, "receipts.jsonl")
    with open(receipts, "w") as f:
        f.write(json.dumps(RECEIPT) + "\n")
    failures = []

    def expect(name, want_rc, want_err, args, want_out=""):
        started = time.monotonic()
        r = subprocess.run([os.path.join(build, "cmd", "ledgerctl")] + args, capture_output=True, text=True,
                           timeout=60)
        took = time.monotonic() - started
        if r.returncode != want_rc or r.stderr != want_err + "\n" or r.stdout != want_out or took > 5:
            failures.append(name)
            print("FAIL: %s: exit %d (want %d) in %.1f s\nstderr: %r\nwant:   %r\nstdout: %r\nwant:   %r"
                  % (name, r.returncode, want_rc, took, r.stderr, want_err + "\n", r.stdout, want_out))
        else:
            print("ok: %s: %s" % (name, want_err))

    try:
        at = "the server at %s" % tls.address
        expect("plain text to TLS", 2, "ledgerctl: %s speaks TLS: give --tls-ca, --cert and --key" % at,
               ["--server", tls.address, "vkey"])
        expect("no client certificate", 2,
               "ledgerctl: %s wants a client certificate: give --cert and --key" % at,
               ["--server", tls.address, "--tls-ca", ca.ca, "vkey"])
        expect("a certificate of another CA", 2,
               "ledgerctl: %s refused the client certificate %s (it closed the connection in the TLS handshake): "
               "give --cert and --key of a certificate issued by a CA it trusts (ledgerd --client-ca)"
               % (at, stranger[0]),
               ["--server", tls.address, "--tls-ca", ca.ca, "--cert", stranger[0], "--key", stranger[1], "vkey"])
        expect("TLS to plain text", 2,
               "ledgerctl: the server at %s speaks plain text, not TLS: leave out --tls-ca, --cert and --key"
               % plain.address,
               ["--server", plain.address, "--tls-ca", ca.ca, "--cert", admin[0], "--key", admin[1], "vkey"])
        # append: no retry (at once, not after 7 s), the reason once, the line named.
        why = "%s speaks TLS: give --tls-ca, --cert and --key" % at
        expect("append in plain text to TLS", 1, "ledgerctl: append: " + why,
               ["--server", tls.address, "append", receipts],
               json.dumps({"error": {"code": "INVALID_ARGUMENT", "message": "line 1 (receipt_id r-1): " + why}},
                          separators=(",", ":")) + "\n")
        # The flags that match: no message at all.
        r = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "--server", tls.address, "--tls-ca", ca.ca,
                            "--cert", admin[0], "--key", admin[1], "vkey"], capture_output=True, text=True,
                           timeout=60)
        if r.returncode != 0 or r.stderr or not r.stdout.startswith("evidence-ledger.local/dev+"):
            failures.append("matching flags")
            print("FAIL: matching flags: %d %r %r" % (r.returncode, r.stdout, r.stderr))
    finally:
        tls.stop()
        plain.stop()
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        fail("%d cases: %s" % (len(failures), ", ".join(failures)))
    print("PASS")


if __name__ == "__main__":
    main()
