#!/usr/bin/python3
"""Who may do what, over real mutual TLS.

Usage: access_control_test.py BUILD_DIR

Certificates come from the openssl command: a CA, a second CA nobody
trusts, a server certificate for 127.0.0.1, and client certificates whose
identity is a URI SAN, a DNS SAN or only a CN. A real ledgerd runs with
--tls-cert, --tls-key, --client-ca and --policy; the test then calls every
RPC as every identity and expects the exact status code of a table written
out below (not derived from the policy):

  - emitter, reader, auditor of team-a; an auditor of every team (matched by
    a prefix pattern); an admin; an identity the policy does not name;
  - a certificate from the other CA, an expired one, and none at all, which
    TLS refuses before any RPC (UNAVAILABLE);
  - a receipt of another team in a batch is refused alone;
  - the entry's emitter is the authenticated identity, typed by its kind.

Identity kinds: a certificate whose CN, or DNS SAN, is spelled like the
admin's URI SAN is not the admin; a prefix pattern matches at a '/' only
(`team-c*` covers `team-c/...`, not `team-cd/...`); an identity that is not
valid UTF-8 or holds a control character is UNAUTHENTICATED; a certificate
cannot take the name the ledger writes its own entries under (`ledger`).
The policy is written as before identities had kinds (untyped), except
where only an explicit kind can say it (`cn:auditor-a`).

Then: the policy is reloaded on SIGHUP while a watch stays open on the same
connection, and a broken policy file keeps the old policy. Plain text is
refused on a non-loopback address unless --insecure, which warns.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger_testlib import Certificates, fail, free_port, generate_stubs, read  # noqa: E402

GATEWAY = "spiffe://cluster/ns/team-a/sa/gateway"
ADMIN = "spiffe://cluster/ns/ops/sa/admin"
POLICY = {"identities": [
    {"identity": GATEWAY, "roles": ["emitter"], "teams": ["team-a"]},
    {"identity": "dns:reader.team-a.example", "roles": ["reader"], "teams": ["team-a"]},
    {"identity": "cn:auditor-a", "roles": ["auditor"], "teams": ["team-a"]},
    {"identity": "spiffe://cluster/ns/audit/*", "roles": ["auditor"], "teams": ["*"]},
    {"identity": ADMIN, "roles": ["admin"]},
    # Identity kinds.
    {"identity": "spiffe://cluster/ns/team-c*", "roles": ["emitter"], "teams": ["team-c"]},
    {"identity": "ledger", "roles": ["emitter"], "teams": ["team-c"]},
]}

PUBLIC = {"checkpoint", "vkey", "consistency"}
APPEND_A = {"append_a", "append_stream_a"}
QUERY_A = {"step_a", "steps_a", "run_a", "runs_a", "watch_a"}
READ_A = {"prove_a", "entries_a"}
EXPORT_A = {"export_run_a", "export_seqs_a", "export_team_a"}
EVERY_TEAM = {"steps_b", "watch_b", "prove_b", "prove_b_by_id", "entries_ab", "export_run_b", "export_seqs_ab"}
CALLS = sorted(PUBLIC | APPEND_A | QUERY_A | READ_A | EXPORT_A | EVERY_TEAM | {"append_b", "backup"})

# What each identity may do; every other call is PERMISSION_DENIED.
ALLOWED = {
    "emitter-a": PUBLIC | APPEND_A,
    "reader-a": PUBLIC | QUERY_A,
    "auditor-a": PUBLIC | QUERY_A | READ_A | EXPORT_A,
    "auditor-all": PUBLIC | QUERY_A | READ_A | EXPORT_A | EVERY_TEAM,
    "admin": set(CALLS),
    "unknown": PUBLIC,
}
NOW_US = int(time.time() * 1e6)


def uri_san_der(uri):
    """A subjectAltName holding one URI SAN of raw bytes (openssl's arbitrary
    extension form), for identities the openssl command would not write."""
    name = bytes([0x86, len(uri)]) + uri
    return "DER:" + (bytes([0x30, len(name)]) + name).hex()
REFUSED_BY_TLS = ["other-ca", "expired", "no-cert"]


class Ledger:
    def __init__(self, build, work, args, name="ledgerd"):
        self.port = free_port()
        self.address = "127.0.0.1:%d" % self.port
        self.log_path = os.path.join(work, name + ".log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, name + "-data"),
             "--listen", self.address, "--http-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "20"] + args,
            stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("listening on"):
            fail("%s did not start: %s" % (name, open(self.log_path).read()))
        self.http = self.proc.stdout.readline().decode().split()[-1]
        if "--health-listen" in args:
            self.health = self.proc.stdout.readline().decode().split()[-1]

    def stderr(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        if self.proc.wait(timeout=30) != 0:
            fail("ledgerd exited %d" % self.proc.returncode)


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="access-control-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "ledger_service", "query", "export"))
    import grpc
    import export_pb2 as ex
    import export_pb2_grpc as ex_grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc
    import query_pb2 as q
    import query_pb2_grpc as q_grpc
    import receipt_pb2 as pb

    ca = Certificates(os.path.join(work, "pki"), "ca")
    other = Certificates(os.path.join(work, "pki-other"), "other-ca")
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1,DNS:localhost")
    clients = {
        "emitter-a": ca.issue("emitter-a", "gw", "DNS:gw.example,URI:" + GATEWAY),
        "reader-a": ca.issue("reader-a", "reader", "DNS:reader.team-a.example"),
        "auditor-a": ca.issue("auditor-a", "auditor-a"),
        "auditor-all": ca.issue("auditor-all", "aud", "URI:spiffe://cluster/ns/audit/sa/auditor"),
        "admin": ca.issue("admin", "admin", "URI:" + ADMIN),
        "unknown": ca.issue("unknown", "nobody", "URI:spiffe://cluster/ns/team-z/sa/nobody"),
        "cn-as-admin": ca.issue("cn-as-admin", ADMIN.replace("/", "\\/")),
        "dns-as-admin": ca.issue("dns-as-admin", "x", "DNS:" + ADMIN),
        "team-c": ca.issue("team-c", "x", "URI:spiffe://cluster/ns/team-c/sa/x"),
        "team-cd": ca.issue("team-cd", "x", "URI:spiffe://cluster/ns/team-cd/sa/x"),
        "not-utf8": ca.issue("not-utf8", "x", uri_san_der(b"spiffe://cluster/ns/team-c/sa/\xff")),
        "control": ca.issue("control", "x", uri_san_der(b"spiffe://cluster/ns/team-c/sa/a\x1b[31m")),
        "dns-ledger": ca.issue("dns-ledger", "x", "DNS:ledger"),
        "cn-ledger": ca.issue("cn-ledger", "ledger"),
        "other-ca": other.issue("foreign", "gw", "URI:" + GATEWAY),
        "expired": ca.issue("expired", "gw", "URI:" + GATEWAY, days=-1),
        "no-cert": (None, None),
    }
    policy_path = os.path.join(work, "policy.json")
    with open(policy_path, "w") as f:
        json.dump(POLICY, f)
    tls = ["--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca, "--policy", policy_path]
    ledger = Ledger(build, work, tls + ["--unknown-grace-ms", "60000", "--health-listen", "127.0.0.1:0",
                                       "--backup-root", work])

    def channel(who):
        cert, key = clients[who]
        creds = grpc.ssl_channel_credentials(root_certificates=read(ca.ca),
                                             private_key=read(key) if key else None,
                                             certificate_chain=read(cert) if cert else None)
        return grpc.secure_channel(ledger.address, creds)

    def receipt(rid, team, run, step, kind):
        if kind == "start":
            return pb.Receipt(receipt_id=rid, team=team, run_id=run, step_id=step, occurred_at_us=NOW_US,
                              agent_start=pb.AgentStart(decision=pb.DECISION_ALLOW, timeout_ms=600000))
        return pb.Receipt(receipt_id=rid, team=team, run_id=run, step_id=step, occurred_at_us=NOW_US,
                          agent_exec=pb.AgentExec(start_receipt_id=rid.replace("exec", "start"),
                                                  status=pb.EXEC_STATUS_SUCCEEDED))

    # The admin writes team-a's run at seqs 0-1 and team-b's at 2-3.
    with channel("admin") as ch:
        stub = svc_grpc.LedgerServiceStub(ch)
        seed = [receipt("a-start", "team-a", "run-a", "s1", "start"), receipt("a-exec", "team-a", "run-a", "s1", "exec"),
                receipt("b-start", "team-b", "run-b", "s1", "start"), receipt("b-exec", "team-b", "run-b", "s1", "exec")]
        out = stub.Append(svc.AppendRequest(receipts=seed), timeout=10)
        if [r.seq for r in out.results] != [0, 1, 2, 3] or any(r.code for r in out.results):
            fail("seeding: %s" % out)
        for _ in range(200):
            if stub.GetCheckpoint(svc.GetCheckpointRequest(), timeout=5).tree_size >= 4:
                break
            time.sleep(0.05)

    counter = [0]

    def fresh(team):
        counter[0] += 1
        return pb.Receipt(receipt_id="m-%d" % counter[0], team=team, run_id="run-" + team[-1], step_id="s1",
                          occurred_at_us=NOW_US, model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW, input_tokens=1))

    def append(stub, team):
        r = stub.Append(svc.AppendRequest(receipts=[fresh(team)]), timeout=10).results[0]
        return grpc.StatusCode.OK if r.code == 0 else code_of(r.code), r

    def code_of(number):
        return next(c for c in grpc.StatusCode if c.value[0] == number)

    def drain(stream):
        for _ in stream:
            pass

    def run_call(ch, name, who):
        """The status code of one call; for appends, the receipt's result code."""
        ledger_stub = svc_grpc.LedgerServiceStub(ch)
        query = q_grpc.QueryServiceStub(ch)
        exports = ex_grpc.ExportServiceStub(ch)
        t = 10
        try:
            if name == "append_a":
                return append(ledger_stub, "team-a")[0]
            if name == "append_b":
                return append(ledger_stub, "team-b")[0]
            if name == "append_stream_a":
                responses = list(ledger_stub.AppendStream(iter([svc.AppendRequest(receipts=[fresh("team-a")])]), timeout=t))
                code = responses[0].results[0].code
                return grpc.StatusCode.OK if code == 0 else code_of(code)
            if name == "checkpoint":
                ledger_stub.GetCheckpoint(svc.GetCheckpointRequest(), timeout=t)
            elif name == "vkey":
                ledger_stub.GetVerifierKey(svc.GetVerifierKeyRequest(), timeout=t)
            elif name == "consistency":
                ledger_stub.GetConsistencyProof(svc.GetConsistencyProofRequest(from_size=2, to_size=4), timeout=t)
            elif name == "prove_a":
                ledger_stub.GetInclusionProof(svc.GetInclusionProofRequest(seq=0, tree_size=4), timeout=t)
            elif name == "prove_b":
                ledger_stub.GetInclusionProof(svc.GetInclusionProofRequest(seq=2, tree_size=4), timeout=t)
            elif name == "prove_b_by_id":
                ledger_stub.GetInclusionProof(svc.GetInclusionProofRequest(receipt_id="b-exec", team="team-b", tree_size=4), timeout=t)
            elif name == "entries_a":
                drain(ledger_stub.GetEntries(svc.GetEntriesRequest(from_seq=0, to_seq=2), timeout=t))
            elif name == "entries_ab":
                drain(ledger_stub.GetEntries(svc.GetEntriesRequest(from_seq=0, to_seq=4), timeout=t))
            elif name == "backup":
                ledger_stub.Backup(svc.BackupRequest(dir=os.path.join(work, "backup-" + who)), timeout=60)
            elif name == "step_a":
                query.GetStep(q.GetStepRequest(team="team-a", run_id="run-a", step_id="s1"), timeout=t)
            elif name == "steps_a":
                query.ListSteps(q.ListStepsRequest(filter=q.StepFilter(team="team-a")), timeout=t)
            elif name == "steps_b":
                query.ListSteps(q.ListStepsRequest(filter=q.StepFilter(team="team-b")), timeout=t)
            elif name == "run_a":
                query.GetRun(q.GetRunRequest(team="team-a", run_id="run-a"), timeout=t)
            elif name == "runs_a":
                query.ListRuns(q.ListRunsRequest(team="team-a"), timeout=t)
            elif name == "watch_a":
                watch = query.WatchSteps(q.WatchStepsRequest(filter=q.StepFilter(team="team-a"), after_seq=-1),
                                         timeout=t)
                next(watch)
                watch.cancel()
            elif name == "watch_b":
                watch = query.WatchSteps(q.WatchStepsRequest(filter=q.StepFilter(team="team-b"), after_seq=-1),
                                         timeout=t)
                next(watch)
                watch.cancel()
            elif name == "export_run_a":
                drain(exports.Export(ex.ExportRequest(run=ex.RunScope(team="team-a", run_id="run-a")), timeout=60))
            elif name == "export_run_b":
                drain(exports.Export(ex.ExportRequest(run=ex.RunScope(team="team-b", run_id="run-b")), timeout=60))
            elif name == "export_seqs_a":
                drain(exports.Export(ex.ExportRequest(seqs=ex.SeqScope(from_seq=0, to_seq=2)), timeout=60))
            elif name == "export_seqs_ab":
                drain(exports.Export(ex.ExportRequest(seqs=ex.SeqScope(from_seq=0, to_seq=4)), timeout=60))
            elif name == "export_team_a":
                drain(exports.Export(ex.ExportRequest(team=ex.TeamScope(team="team-a", from_us=0, to_us=2**62)),
                                     timeout=60))
            else:
                fail("no call " + name)
            return grpc.StatusCode.OK
        except grpc.RpcError as e:
            return e.code()

    # Identity kinds, before anything else is appended.
    def status(who, call):
        """(code, message or seq) of `call` on the ledger as `who`."""
        with channel(who) as ch:
            try:
                return call(svc_grpc.LedgerServiceStub(ch))
            except grpc.RpcError as e:
                return e.code(), e.details()

    def backup(stub):
        counter[0] += 1
        stub.Backup(svc.BackupRequest(dir=os.path.join(work, "backup-kinds-%d" % counter[0])), timeout=60)
        return grpc.StatusCode.OK, None

    def append_c(stub):
        out = stub.Append(svc.AppendRequest(receipts=[fresh("team-c")]), timeout=10).results[0]
        return (grpc.StatusCode.OK, out.seq) if out.code == 0 else (code_of(out.code), out.message)

    kinds = [
        ("cn-as-admin", backup, (grpc.StatusCode.PERMISSION_DENIED,
                                 "identity 'cn:%s' has no rule in the policy" % ADMIN)),
        ("dns-as-admin", backup, (grpc.StatusCode.PERMISSION_DENIED,
                                  "identity 'dns:%s' has no rule in the policy" % ADMIN)),
        ("team-cd", append_c, (grpc.StatusCode.PERMISSION_DENIED,
                               "identity 'uri:spiffe://cluster/ns/team-cd/sa/x' has no rule in the policy")),
        ("not-utf8", append_c, (grpc.StatusCode.UNAUTHENTICATED,
                                "client certificate: its URI SAN is not valid UTF-8")),
        ("control", append_c, (grpc.StatusCode.UNAUTHENTICATED,
                               "client certificate: its URI SAN holds a control character (U+001B)")),
        ("cn-ledger", append_c, (grpc.StatusCode.PERMISSION_DENIED, "identity 'cn:ledger' has no rule in the policy")),
    ]
    for who, call, want in kinds:
        got = status(who, call)
        if got != want:
            fail("identity kinds, %s: want %s, got %s" % (who, want, got))
    with channel("not-utf8") as ch:
        try:
            svc_grpc.LedgerServiceStub(ch).GetCheckpoint(svc.GetCheckpointRequest(), timeout=10)
            fail("an identity that is not UTF-8 read a checkpoint")
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNAUTHENTICATED:
                fail("not-utf8 checkpoint: %s" % e.code())
    emitters = {}
    for who, emitter in (("team-c", "uri:spiffe://cluster/ns/team-c/sa/x"), ("dns-ledger", "dns:ledger")):
        code, seq = status(who, append_c)
        if code != grpc.StatusCode.OK:
            fail("identity kinds, %s: append refused: %s %s" % (who, code, seq))
        emitters[seq] = emitter
    with channel("admin") as ch:
        stub = svc_grpc.LedgerServiceStub(ch)
        for seq, emitter in emitters.items():
            entry = next(stub.GetEntries(svc.GetEntriesRequest(from_seq=seq, to_seq=seq + 1), timeout=10))
            if json.loads(entry.leaf)["emitter"] != emitter:
                fail("the emitter of entry %d is %r, want %r" % (seq, json.loads(entry.leaf)["emitter"], emitter))
        size = stub.GetCheckpoint(svc.GetCheckpointRequest(), timeout=10).tree_size
        drain(ex_grpc.ExportServiceStub(ch).Export(ex.ExportRequest(seqs=ex.SeqScope(from_seq=0, to_seq=size)),
                                                    timeout=60))
    for legacy, kind in (("spiffe://cluster/ns/team-c*", "uri"), ("ledger", "dns")):
        if '"identity":"%s","read_as":"%s:%s"' % (legacy, kind, legacy) not in ledger.stderr():
            fail("no warning that the untyped %r was read as %s: %s" % (legacy, kind, ledger.stderr()))
    print("identity kinds: a CN or DNS SAN spelled like the admin's URI is not the admin; team-c* does not "
          "cover team-cd; identities not UTF-8 or with control characters are UNAUTHENTICATED; "
          "'ledger' is never a certificate's identity; untyped rules read as documented, with a warning")

    # The matrix.
    failures = []
    for who in list(ALLOWED) + REFUSED_BY_TLS:
        with channel(who) as ch:
            for name in CALLS:
                if who in REFUSED_BY_TLS:
                    expected = grpc.StatusCode.UNAVAILABLE
                else:
                    expected = grpc.StatusCode.OK if name in ALLOWED[who] else grpc.StatusCode.PERMISSION_DENIED
                got = run_call(ch, name, who)
                if got != expected:
                    failures.append("%s %s: expected %s, got %s" % (who, name, expected.name, got.name))
    if failures:
        fail("access matrix:\n  " + "\n  ".join(failures))
    print("matrix: %d identities x %d calls as expected" % (len(ALLOWED) + len(REFUSED_BY_TLS), len(CALLS)))

    # A batch with a foreign receipt: the rest is appended, the entry's
    # emitter is the certificate's identity, and the refusal names the team.
    with channel("emitter-a") as ch:
        stub = svc_grpc.LedgerServiceStub(ch)
        batch = [fresh("team-a"), fresh("team-b"), fresh("team-a")]
        results = stub.Append(svc.AppendRequest(receipts=batch), timeout=10).results
        if [r.code for r in results] != [0, grpc.StatusCode.PERMISSION_DENIED.value[0], 0]:
            fail("mixed batch: %s" % results)
        want = "team: identity 'uri:%s' may not append for team 'team-b'" % GATEWAY
        if results[1].message != want:
            fail("mixed batch message: %r, want %r" % (results[1].message, want))
        seq, last_seq = results[0].seq, results[2].seq
    with channel("admin") as ch:
        entry = next(svc_grpc.LedgerServiceStub(ch).GetEntries(svc.GetEntriesRequest(from_seq=seq, to_seq=seq + 1),
                                                              timeout=10))
        if json.loads(entry.leaf)["emitter"] != "uri:" + GATEWAY:
            fail("emitter: %s" % entry.leaf)
    with channel("auditor-a") as ch:
        try:
            drain(svc_grpc.LedgerServiceStub(ch).GetEntries(svc.GetEntriesRequest(from_seq=0, to_seq=4), timeout=10))
            fail("auditor-a read team-b's entries")
        except grpc.RpcError as e:
            # The refusal names the entry, never whose it is.
            if e.details() != "entry 2: identity 'cn:auditor-a' may not read entries and proofs for the team of " \
                              "this entry" or "team-b" in e.details():
                fail("entries refusal: %s" % e.details())
    print("mixed batch: foreign receipt refused alone, emitter is the certificate's identity")

    # The HTTP port with TLS: HTTPS, a client certificate required, the
    # dashboard under the same policy; plain-HTTP probes on --health-listen.
    import ssl
    import urllib.error
    import urllib.request

    def https(who, path):
        ctx = ssl.create_default_context(cafile=ca.ca)
        cert, key = clients[who]
        if cert:
            ctx.load_cert_chain(cert, key)
        try:
            with urllib.request.urlopen("https://%s%s" % (ledger.http, path), context=ctx, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except (urllib.error.URLError, ssl.SSLError, ConnectionError):
            return "tls refused", b""

    pages = [
        ("reader-a", "/teams/team-a", 200), ("reader-a", "/teams/team-b", 403),
        ("reader-a", "/teams/team-a/runs/run-a", 200), ("reader-a", "/teams/team-a/runs/run-a/pack.tar.gz", 403),
        ("reader-a", "/proofs/0", 403), ("emitter-a", "/teams/team-a", 403), ("unknown", "/teams/team-a", 403),
        ("auditor-a", "/proofs/0", 200), ("auditor-a", "/proofs/2", 403),
        ("auditor-a", "/teams/team-a/runs/run-a/pack.tar.gz", 200),
        ("auditor-a", "/teams/team-b/runs/run-b/pack.tar.gz", 403),
        ("auditor-all", "/teams/team-b/runs/run-b/pack.tar.gz", 200), ("admin", "/teams/team-b", 200),
        ("unknown", "/metrics", 403), ("admin", "/metrics", 200), ("unknown", "/healthz", 200),
        ("no-cert", "/healthz", "tls refused"), ("other-ca", "/metrics", "tls refused"),
        ("expired", "/teams/team-a", "tls refused"),
    ]
    wrong = []
    for who, path, want in pages:
        got, body = https(who, path)
        if got != want:
            wrong.append("%s %s: want %s, got %s %s" % (who, path, want, got, body[-300:]))
    if wrong:
        fail("dashboard over HTTPS:\n  " + "\n  ".join(wrong))
    step_page = https("reader-a", "/teams/team-a/runs/run-a/steps/s1")[1].decode()
    if "your role does not include reading" not in step_page or "/proofs/" in step_page:
        fail("a reader saw receipts or proof links: %s" % step_page)
    if "/proofs/0" not in https("auditor-a", "/teams/team-a/runs/run-a/steps/s1")[1].decode():
        fail("the auditor's step page has no proof link")
    index = https("reader-a", "/")[1].decode()
    if 'href="/teams/team-a"' not in index or "team-b" in index:
        fail("the reader's team list: %s" % index)
    import hashlib
    proof = json.loads(https("auditor-a", "/proofs/0")[1])
    if hashlib.sha256(b"\x00" + proof["leaf"].encode()).hexdigest() != proof["leaf_hash"]:
        fail("proof 0: the leaf hash does not match the leaf")
    with urllib.request.urlopen("http://%s/readyz" % ledger.health, timeout=10) as r:
        if r.status != 200:
            fail("health port /readyz")
    try:
        urllib.request.urlopen("http://%s/metrics" % ledger.health, timeout=10)
        fail("the plain health port served /metrics")
    except urllib.error.HTTPError as e:
        if e.code != 404:
            fail("health port /metrics: %d" % e.code)
    print("HTTPS: %d dashboard pages as each identity's rights say; TLS refuses no, foreign or expired "
          "certificates; plain health port serves probes only" % len(pages))

    # ledgerctl over TLS with a client certificate.
    def ledgerctl(who, *command):
        cert, key = clients[who]
        return subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "--server", ledger.address,
                               "--tls-ca", ca.ca, "--cert", cert, "--key", key] + list(command),
                              capture_output=True, text=True, timeout=60)
    out = ledgerctl("reader-a", "steps", "--team", "team-a", "--json")
    if out.returncode != 0 or "run-a" not in out.stdout:
        fail("ledgerctl steps as reader-a: %s %s" % (out.stdout, out.stderr))
    out = ledgerctl("reader-a", "steps", "--team", "team-b")
    if out.returncode == 0 or "may not query for team 'team-b'" not in out.stderr:
        fail("ledgerctl steps of team-b as reader-a: %s %s" % (out.stdout, out.stderr))
    out = ledgerctl("auditor-a", "export", "--run", "team-a/run-a", "--out", os.path.join(work, "a.tar.gz"))
    vkey = ledgerctl("auditor-a", "vkey").stdout.strip()
    verify = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "verify", os.path.join(work, "a.tar.gz"),
                             "--vkey-string", vkey], capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or verify.returncode != 0:
        fail("export over TLS and verify: %s %s %s" % (out.stderr, verify.stdout, verify.stderr))
    print("ledgerctl over TLS: the reader's query, its refusal for another team, an auditor's export that verifies")

    # Reload on SIGHUP: the reader gains team-b; a watch opened before stays up.
    with channel("admin") as admin_ch, channel("reader-a") as reader_ch:
        watch = q_grpc.QueryServiceStub(admin_ch).WatchSteps(
            q.WatchStepsRequest(filter=q.StepFilter(team="team-a"), after_seq=last_seq), timeout=60)
        reader = q_grpc.QueryServiceStub(reader_ch)
        steps_b = q.ListStepsRequest(filter=q.StepFilter(team="team-b"))
        try:
            reader.ListSteps(steps_b, timeout=10)
            fail("reader-a read team-b before the reload")
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.PERMISSION_DENIED:
                fail("before reload: %s" % e.code())
        POLICY["identities"][1]["teams"] = ["team-a", "team-b"]
        with open(policy_path, "w") as f:
            json.dump(POLICY, f)
        ledger.proc.send_signal(signal.SIGHUP)
        for _ in range(100):
            if "policy reloaded" in ledger.stderr():
                break
            time.sleep(0.05)
        else:
            fail("no reload logged")
        reader.ListSteps(steps_b, timeout=10)  # raises if still denied
        with open(policy_path, "w") as f:
            f.write('{"identities": [{"identity": "x", "roles": ["writer"], "teams": ["t"]}]}')
        ledger.proc.send_signal(signal.SIGHUP)
        for _ in range(100):
            if "kept the old policy" in ledger.stderr():
                break
            time.sleep(0.05)
        else:
            fail("a broken policy was not reported")
        if "identities[0].roles[0]: unknown role 'writer'" not in ledger.stderr():
            fail("the broken policy's reason is not logged: %s" % ledger.stderr())
        reader.ListSteps(steps_b, timeout=10)  # the old (reloaded) policy still holds
        # The watch opened before both reloads still delivers.
        with channel("admin") as ch:
            svc_grpc.LedgerServiceStub(ch).Append(
                svc.AppendRequest(receipts=[receipt("w-start", "team-a", "run-w", "s9", "start")]), timeout=10)
        change = next(watch)
        if change.step.step_id != "s9":
            fail("watch after reload: %s" % change)
        watch.cancel()
    print("SIGHUP: policy reloaded without dropping a watch; a broken file kept the old policy")
    ledger.stop()

    # Plain text: refused off loopback unless --insecure, which warns.
    plain = subprocess.run([os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, "plain"),
                            "--listen", "0.0.0.0:0", "--http-listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=30)
    if plain.returncode == 0 or "--listen: 0.0.0.0:0 is not a loopback address" not in plain.stderr:
        fail("plain text on 0.0.0.0 was not refused: %s" % plain.stderr)
    insecure = Ledger(build, work, ["--insecure"], name="insecure")
    insecure.stop()
    if '"event":"insecure"' not in insecure.stderr():
        fail("--insecure did not warn")
    bad = subprocess.run([os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, "bad")] + tls[:6],
                         capture_output=True, text=True, timeout=30)
    if bad.returncode == 0 or "--policy: required with TLS" not in bad.stderr:
        fail("TLS without a policy was not refused: %s" % bad.stderr)
    print("plain text: refused on 0.0.0.0, allowed with --insecure (warned); TLS needs a policy")
    print("PASS")


if __name__ == "__main__":
    main()
