#!/usr/bin/python3
"""Who may read the log's tiles, through a real ledgerd with mutual TLS on
both ports (gRPC and HTTPS).

Usage: tlog_tiles_access_test.py BUILD_DIR

The log holds team-a's and team-b's entries. Tiles and entry bundles
(/tlog/tile/...) hold every team's entries, so:
  - an auditor of every team and an admin read them (200, the exact bytes:
    the leaf hashes the gRPC API gives, the leaves length-prefixed), with
    Cache-Control private (a shared cache must not keep them);
  - an auditor of team-a alone, a reader of every team and an identity
    without a rule get 403 with the reason, logged as a refusal;
  - a certificate that names no identity gets 403;
  - /tlog/checkpoint is the latest signed checkpoint for every identity, as
    /checkpoint is;
  - restarted with --tlog-public, the auditor of team-a reads them too,
    with Cache-Control public.

Every check runs; the failures are listed together.
"""
import json
import os
import ssl
import struct
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from access_control_test import Ledger  # noqa: E402
from ledger_testlib import Certificates, fail, generate_stubs, read  # noqa: E402

NOW_US = int(time.time() * 1e6)
ENTRIES = 300  # a full level-0 tile and a partial one of 44
POLICY = {"identities": [
    {"identity": "cn:writer", "roles": ["emitter"], "teams": ["team-a", "team-b"]},
    {"identity": "cn:auditor-a", "roles": ["auditor"], "teams": ["team-a"]},
    {"identity": "cn:reader-all", "roles": ["reader"], "teams": ["*"]},
    {"identity": "cn:auditor-all", "roles": ["auditor"], "teams": ["*"]},
    {"identity": "cn:admin", "roles": ["admin"]},
]}


def refusal(who):
    return ("identity 'cn:%s' may not read the log's tiles: they hold every team's entries (an auditor of every "
            "team or an admin may; or the operator makes the log public with --tlog-public)\n" % who)


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="tlog-tiles-access-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "ledger_service"))
    import grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc
    import receipt_pb2 as pb

    ca = Certificates(os.path.join(work, "pki"), "ca")
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1,DNS:localhost")
    clients = {name: ca.issue(name, name) for name in
               ("writer", "auditor-a", "reader-all", "auditor-all", "admin", "outsider")}
    clients["nameless"] = ca.issue("nameless", None)
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump(POLICY, f)
    tls = ["--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca, "--policy", policy]
    problems = []

    def https(ledger, who, path):
        """(status, body bytes, headers)."""
        ctx = ssl.create_default_context(cafile=ca.ca)
        ctx.load_cert_chain(*clients[who])
        req = urllib.request.Request("https://%s%s" % (ledger.http, path))
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def short(v):
        """Bytes as their length and first bytes, for a readable message."""
        if isinstance(v, tuple):
            return tuple(short(x) for x in v)
        return "%d bytes %s..." % (len(v), v[:16].hex()) if isinstance(v, bytes) and len(v) > 64 else v

    def expect(what, got, want):
        if got != want:
            problems.append("%s: want %r, got %r" % (what, short(want), short(got)))

    ledger = Ledger(build, work, tls)
    try:
        cert, key = clients["writer"]
        creds = grpc.ssl_channel_credentials(read(ca.ca), read(key), read(cert))
        with grpc.secure_channel(ledger.address, creds) as ch:
            stub = svc_grpc.LedgerServiceStub(ch)
            receipts = [pb.Receipt(receipt_id="r-%d" % i, team="team-a" if i % 2 else "team-b", run_id="run-1",
                                   occurred_at_us=NOW_US + i,
                                   tool_call=pb.ToolCall(tool="git", decision=pb.DECISION_ALLOW))
                        for i in range(ENTRIES)]
            out = stub.Append(svc.AppendRequest(receipts=receipts), timeout=30)
            if any(r.code for r in out.results):
                fail("seeding: %s" % [r for r in out.results if r.code][:3])
            leaf_hashes = b"".join(r.leaf_hash for r in out.results)
            for _ in range(200):
                cp = stub.GetCheckpoint(svc.GetCheckpointRequest(), timeout=10)
                if cp.tree_size == ENTRIES:
                    break
                time.sleep(0.05)
            else:
                fail("no checkpoint of %d entries" % ENTRIES)
        cert, key = clients["admin"]
        creds = grpc.ssl_channel_credentials(read(ca.ca), read(key), read(cert))
        with grpc.secure_channel(ledger.address, creds) as ch:
            stub = svc_grpc.LedgerServiceStub(ch)
            entries = [e.leaf for e in stub.GetEntries(svc.GetEntriesRequest(from_seq=256, to_seq=ENTRIES),
                                                        timeout=10)]
        bundle = b"".join(struct.pack(">H", len(leaf)) + leaf for leaf in entries)

        for who in ("auditor-all", "admin"):
            status, body, headers = https(ledger, who, "/tlog/tile/0/000")
            expect("%s: full tile" % who, (status, body, headers.get("Cache-Control")),
                   (200, leaf_hashes[:256 * 32], "private, max-age=31536000, immutable"))
            status, body, headers = https(ledger, who, "/tlog/tile/0/001.p/44")
            expect("%s: partial tile" % who, (status, body, headers.get("Cache-Control")),
                   (200, leaf_hashes[256 * 32:], "private, max-age=60"))
            expect("%s: entry bundle" % who, https(ledger, who, "/tlog/tile/entries/001.p/44")[:2], (200, bundle))
        for who in ("auditor-a", "reader-all", "outsider"):
            for path in ("/tlog/tile/0/000", "/tlog/tile/entries/001.p/44"):
                status, body, _ = https(ledger, who, path)
                expect("%s: %s" % (who, path), (status, body.decode()), (403, refusal(who)))
            status, body, _ = https(ledger, who, "/tlog/checkpoint")
            expect("%s: checkpoint" % who, (status, body.decode().split("\n")[1]), (200, str(ENTRIES)))
        expect("no identity: tile", https(ledger, "nameless", "/tlog/tile/0/000")[:2],
               (403, b"client certificate: names no identity\n"))
        refused = [json.loads(line) for line in ledger.stderr().splitlines()
                   if line.startswith("{") and '"http_refused"' in line and "/tlog/tile/0/000" in line]
        if not any(r.get("identity") == "cn:auditor-a" for r in refused):
            problems.append("the refusal of cn:auditor-a is not logged: %s" % refused)
        ledger.stop()
        if problems:
            fail("%d problem(s):\n  %s" % (len(problems), "\n  ".join(problems)))

        ledger = Ledger(build, work, tls + ["--tlog-public"])
        status, body, headers = https(ledger, "auditor-a", "/tlog/tile/0/000")
        expect("public: auditor-a", (status, body, headers.get("Cache-Control")),
               (200, leaf_hashes[:256 * 32], "public, max-age=31536000, immutable"))
        expect("public: bundle", https(ledger, "outsider", "/tlog/tile/entries/001.p/44")[:2], (200, bundle))
        expect("public, no identity", https(ledger, "nameless", "/tlog/tile/0/000")[0], 403)
    finally:
        if ledger.proc.poll() is None:
            ledger.proc.kill()
    if problems:
        fail("%d problem(s):\n  %s" % (len(problems), "\n  ".join(problems)))
    print("tiles: auditors of every team and admins, or everyone with --tlog-public; others 403")


if __name__ == "__main__":
    main()
