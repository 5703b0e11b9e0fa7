"""A real ledgerd over TLS with two admins, emitters' receipts and erased
entries (CONTRACT section 8), for the tests of erasure and of the packs
that hold erased entries.

    ledger = ErasureLedger(build, work)      # starts ledgerd
    ledger.append(receipts)                  # as the emitter, through ledgerctl append
    ledger.erase(seq, reason)                # alice asks, bob approves
    ledger.export(out, "--run", "acme/run-7")
    ledger.stop()

`python3 tests/erasure_testlib.py BUILD_DIR OUT_DIR` writes, for other
verifiers' tests, packs holding erased entries: run.tar.gz (a run with an
erased completion and an erased call), seqs.tar.gz (a seq range holding
both erased entries and their redactions), team.tar.gz (a team window),
before.tar.gz (the run before the erasure), and vkey (the ledger's key)."""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ledger_testlib import Certificates, fail  # noqa: E402

ORIGIN = "erasure.test/ledger"
MARKER = "ERASE-ME-4242"
T0_US = 1767225600000000
POLICY = {"identities": [
    {"identity": "cn:gateway", "roles": ["emitter"], "teams": ["acme", "globex"]},
    {"identity": "cn:auditor", "roles": ["auditor"], "teams": ["*"]},
    {"identity": "cn:alice-admin", "roles": ["admin"]},
    {"identity": "cn:bob-admin", "roles": ["admin"]},
]}


def receipts():
    """A run of acme (a step, its completion, a call holding the marker, a
    second step denied), and globex's call between them."""
    r = []

    def add(**fields):
        fields.setdefault("occurred_at_us", T0_US + len(r))
        r.append(fields)
    add(receipt_id="build-start", kind="agent_start", team="acme", run_id="run-7", step_id="build",
        decision="allow", timeout_ms=600000, cost_reserved_micros=5000, workflow="release", agent="builder")
    add(receipt_id="crm-lookup", kind="tool_call", team="acme", run_id="run-7", step_id="build", tool="crm",
        target="https://crm.example/customers/" + MARKER, decision="allow", cost_micros=7)
    add(receipt_id="other", kind="tool_call", team="globex", run_id="run-1", tool="git", decision="allow")
    add(receipt_id="build-exec", kind="agent_exec", team="acme", run_id="run-7", step_id="build",
        start_receipt_id="build-start", status="succeeded", exit_code=0, cost_micros=1200)
    add(receipt_id="deploy-start", kind="agent_start", team="acme", run_id="run-7", step_id="deploy",
        decision="deny", reason="customer " + MARKER + " is not cleared")
    return r


class ErasureLedger:
    def __init__(self, build, work, extra=()):
        self.build, self.work = build, work
        self.data = os.path.join(work, "data")
        ca = Certificates(os.path.join(work, "pki"))
        self.ca = ca.ca
        server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1,DNS:localhost")
        self.clients = {name: ca.issue(name, name) for name in
                        ("gateway", "auditor", "alice-admin", "bob-admin")}
        policy = os.path.join(work, "policy.json")
        with open(policy, "w") as f:
            json.dump(POLICY, f)
        self.args = [os.path.join(build, "cmd", "ledgerd"), "--data", self.data, "--origin", ORIGIN,
                     "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "50",
                     "--tls-cert", server_cert,
                     "--tls-key", server_key, "--client-ca", ca.ca, "--policy", policy,
                     "--backup-root", work] + list(extra)
        self.proc = None
        self.start()

    def start(self):
        self.out_path = os.path.join(self.work, "ledgerd.%d.out" % time.monotonic_ns())
        self.out = open(self.out_path, "wb")
        self.proc = subprocess.Popen(self.args, stdout=self.out, stderr=self.out)
        lines = []
        for _ in range(600):
            lines = open(self.out_path).read().splitlines()
            at = next((i for i, x in enumerate(lines) if x.startswith("listening on ")), None)
            if (at is not None and len(lines) > at + 1) or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        at = next((i for i, x in enumerate(lines) if x.startswith("listening on ")), None)
        if at is None or len(lines) <= at + 1:
            fail("ledgerd did not start: " + open(self.out_path).read())
        self.addr = lines[at].split()[-1]
        self.http = lines[at + 1].split()[-1]

    def stop(self, kill=False):
        if self.proc.poll() is None:
            (self.proc.kill if kill else self.proc.terminate)()
        self.proc.wait(timeout=60)
        self.out.close()

    def log_text(self):
        return open(self.out_path).read()

    def ctl(self, who, *args, check=True, stdin=None):
        cert, key = self.clients[who]
        r = subprocess.run([os.path.join(self.build, "cmd", "ledgerctl"), "--server", self.addr, "--tls-ca",
                            self.ca, "--cert", cert, "--key", key] + list(args),
                           input=stdin, capture_output=True, text=True, timeout=300)
        if check and r.returncode != 0:
            fail("ledgerctl %s as %s: %s" % (" ".join(args), who, r.stderr))
        return r

    def append(self, rs):
        out = self.ctl("gateway", "append", stdin="".join(json.dumps(x) + "\n" for x in rs)).stdout
        return [json.loads(line)["seq"] for line in out.splitlines() if line.strip()]

    def erase(self, seq, reason):
        """Alice asks, Bob approves: the approval's JSON."""
        asked = json.loads(self.ctl("alice-admin", "erase", "--seq", str(seq), "--reason", reason).stdout)
        if not asked.get("pending"):
            fail("erase: the first admin's call was not pending: %s" % asked)
        return json.loads(self.ctl("bob-admin", "erase", "--seq", str(seq), "--reason", reason).stdout)

    def wait_checkpoint(self, size):
        for _ in range(400):
            cp = self.ctl("auditor", "checkpoint").stdout
            if int(cp.splitlines()[1]) >= size:
                return cp
            time.sleep(0.05)
        fail("no checkpoint of size %d" % size)

    def https(self, who, path):
        """(status, body bytes, headers) of GET `path` on the HTTPS port as `who`."""
        import ssl
        import urllib.error
        import urllib.request
        ctx = ssl.create_default_context(cafile=self.ca)
        ctx.load_cert_chain(*self.clients[who])
        try:
            with urllib.request.urlopen("https://%s%s" % (self.http, path), context=ctx, timeout=30) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def vkey(self):
        return self.ctl("auditor", "vkey").stdout.strip()

    def export(self, out, *scope):
        return self.ctl("auditor", "export", "--out", out, "--no-progress", *scope)


def make_packs(build, out_dir):
    """The packs of the module's docstring, in out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    ledger = ErasureLedger(build, os.path.join(out_dir, "work"))
    try:
        seqs = ledger.append(receipts())
        ledger.wait_checkpoint(len(seqs))
        ledger.export(os.path.join(out_dir, "before.tar.gz"), "--run", "acme/run-7")
        ledger.erase(seqs[3], "court order 2026-117")  # the completion
        ledger.erase(seqs[1], "GDPR art. 17 request 881")  # the call with the marker
        size = len(seqs) + 2
        ledger.wait_checkpoint(size)
        ledger.export(os.path.join(out_dir, "run.tar.gz"), "--run", "acme/run-7")
        ledger.export(os.path.join(out_dir, "seqs.tar.gz"), "--seq", "0:%d" % size)
        ledger.export(os.path.join(out_dir, "team.tar.gz"), "--team", "acme", "--from", "2000-01-01T00:00:00Z",
                      "--to", "2100-01-01T00:00:00Z")
        with open(os.path.join(out_dir, "vkey"), "w") as f:
            f.write(ledger.vkey() + "\n")
        return seqs
    finally:
        ledger.stop()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print(make_packs(sys.argv[1], sys.argv[2]))
