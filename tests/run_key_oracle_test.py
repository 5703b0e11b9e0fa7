#!/usr/bin/python3
"""Absence proofs are not a membership oracle across teams, over real mutual
TLS (CONTRACT section 6a, "What a proof reveals").

Usage: run_key_oracle_test.py BUILD_DIR

The attack: an auditor of team-b only wants to know whether team-a has a run
it may not read ("secret-merger"). It computes that run's key the way the
checkpoint-time note's version says, searches locally for run ids of team-b
whose keys share 16 bits with it, and asks the ledger for their absence
proofs. Under run keys v1 the path of such a key ends at team-a's run when it
exists, and the proof's `leaf` names its key: the guess is confirmed, and a
guess that does not exist is refuted. Under run keys v2 every key of team-b
starts with team-b's 64 bits, so no search finds such an id, and every
proof's `leaf` is a run of team-b.

Then: a team with no entry gets no run proof (its path would end at another
team's run), and a team-b run with no entry exports as a format 5 pack that
ledgerctl verify, verify_pack.py and ledger-verify-go accept as an absence.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "export", "verify", "python"))
import runmap  # noqa: E402
from access_control_test import Ledger  # noqa: E402
from ledger_testlib import Certificates, fail  # noqa: E402

EMITTER = "spiffe://cluster/ns/gw/sa/gateway"
POLICY = {"identities": [
    {"identity": EMITTER, "roles": ["emitter"], "teams": ["team-a", "team-b", "team-c"]},
    {"identity": "cn:auditor-b", "roles": ["auditor"], "teams": ["team-b"]},
    {"identity": "cn:auditor-c", "roles": ["auditor"], "teams": ["team-c"]},
]}
SECRET, NOT_THERE = "secret-merger", "secret-nothing"
SEARCH_BITS, SEARCH_TRIES = 16, 400_000


def common_bits(a, b):
    for i in range(256):
        if (a[i // 8] >> (7 - i % 8)) & 1 != (b[i // 8] >> (7 - i % 8)) & 1:
            return i
    return 256


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="run-key-oracle-")
    ca = Certificates(os.path.join(work, "pki"), "ca")
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1,DNS:localhost")
    certs = {"emitter": ca.issue("emitter", "gw", "URI:" + EMITTER),
             "auditor-b": ca.issue("auditor-b", "auditor-b"),
             "auditor-c": ca.issue("auditor-c", "auditor-c")}
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump(POLICY, f)
    ledger = Ledger(build, work, ["--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca,
                                  "--policy", policy])

    def ctl(who, *command, stdin=None):
        cert, key = certs[who]
        return subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "--server", ledger.address, "--tls-ca", ca.ca,
                               "--cert", cert, "--key", key] + list(command),
                              input=stdin, capture_output=True, text=True, timeout=120)

    now = int(time.time() * 1e6)
    runs = [("team-a", "run-a-%d" % i) for i in range(40)] + [("team-a", SECRET)]
    runs += [("team-b", "run-b-%d" % i) for i in range(5)]
    lines = "".join(json.dumps({"receipt_id": "%s.%s.start" % (team, run), "team": team, "run_id": run,
                                "step_id": "s1", "occurred_at_us": now, "kind": "agent_start", "decision": "allow",
                                "timeout_ms": 86_400_000}) + "\n" for team, run in runs)
    out = ctl("emitter", "append", "-", stdin=lines)
    if out.returncode != 0:
        fail("append: %s %s" % (out.stdout, out.stderr))
    out = ctl("auditor-b", "checkpoint", "--at-least", str(len(runs)), "--time-note")
    if out.returncode != 0:
        fail("checkpoint: %s" % out.stderr)
    note = out.stdout[out.stdout.index("evidence-ledger/checkpoint-time/"):].split("\n\n")[0].split("\n")
    version = int(note[0].rsplit("/v", 1)[1])
    runs_root = base64.b64decode(note[4][len("runs "):])
    keys = 2 if version >= 4 else 1  # the run keys the note's version says
    print("checkpoint-time note of version %d at size %s: run keys v%d" % (version, note[2], keys))

    def absence(run_id):
        out = ctl("auditor-b", "prove-run", "--team", "team-b", "--run", run_id)
        if out.returncode != 0:
            fail("prove-run team-b/%s: %s" % (run_id, out.stderr))
        proof = json.loads(out.stdout)
        if "head" in proof:
            fail("team-b/%s has a head" % run_id)
        latest = ctl("auditor-b", "checkpoint", "--time-note").stdout
        root = base64.b64decode(latest[latest.index("evidence-ledger/checkpoint-time/"):].split("\n")[4][5:])
        runmap.verify_absence_json(root, runmap.run_key(b"team-b", run_id.encode(), keys), proof)
        return proof

    # The attack, for a guess that exists and one that does not.
    findings = {}
    for guess in (SECRET, NOT_THERE):
        target = runmap.run_key(b"team-a", guess.encode(), keys)
        probe = None
        for i in range(SEARCH_TRIES):
            candidate = "probe-%s-%d" % (guess, i)
            if common_bits(runmap.run_key(b"team-b", candidate.encode(), keys), target) >= SEARCH_BITS:
                probe = candidate
                break
        if probe is None:
            findings[guess] = "no team-b run id of %d tried shares %d bits with its key" % (SEARCH_TRIES, SEARCH_BITS)
            continue
        proof = absence(probe)
        shown = bytes.fromhex(proof["leaf"]["key"]) if "leaf" in proof else None
        findings[guess] = "the proof of team-b/%s shows %s" % (
            probe, "team-a/%s's key" % guess if shown == target else "another key" if shown else "an empty subtree")
    print("attack: " + "; ".join("%s: %s" % kv for kv in findings.items()))
    if any("'s key" in f for f in findings.values()):
        fail("an absence proof of a team-b run told team-b's auditor that team-a has %s" % SECRET)
    if version < 4:
        fail("the ledger signs version %d notes (run keys v1)" % version)

    # Whatever team-b asks about, a proof's leaf is a run of team-b.
    prefix = runmap.team_key(b"team-b")[:8]
    leaves = 0
    for i in range(60):
        proof = absence("made-up-%d" % i)
        if "leaf" in proof:
            leaves += 1
            if not bytes.fromhex(proof["leaf"]["key"]).startswith(prefix):
                fail("the absence proof of team-b/made-up-%d shows a run of another team: %s" % (i, proof["leaf"]))
    if leaves == 0:
        fail("no absence proof of 60 showed a neighbouring run: the check above checked nothing")
    print("60 absence proofs of team-b: %d show a neighbour, each a run of team-b" % leaves)

    # A team with no entry: no run proof, and no run pack.
    out = ctl("auditor-c", "prove-run", "--team", "team-c", "--run", "anything")
    expected = "run team-c/anything: team team-c has no entry up to tree size"
    if out.returncode == 0 or expected not in out.stderr or "(a team window of team-c proves it)" not in out.stderr:
        fail("prove-run of a team with no entry: %d %s %s" % (out.returncode, out.stdout, out.stderr))
    out = ctl("auditor-c", "export", "--run", "team-c/anything", "--out", os.path.join(work, "c.tar.gz"))
    if out.returncode == 0 or expected not in out.stderr:
        fail("export of a run of a team with no entry: %d %s" % (out.returncode, out.stderr))
    print("team-c (no entry): prove-run and export refused: %s" % out.stderr.strip().splitlines()[-1])

    # A run of team-b with no entry: a format 5 pack that every verifier reads.
    pack = os.path.join(work, "b-never.tar.gz")
    out = ctl("auditor-b", "export", "--run", "team-b/never", "--allow-empty", "--out", pack)
    if out.returncode != 0:
        fail("export team-b/never: %s" % out.stderr)
    vkey = os.path.join(work, "vkey")
    with open(vkey, "w") as f:
        f.write(ctl("auditor-b", "vkey").stdout)
    lvg = os.path.join(work, "ledger-verify-go")
    subprocess.run(["go", "build", "-o", lvg, "."], cwd=os.path.join(ROOT, "export", "verify", "go"), check=True,
                   env=dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off", GOPROXY="off", GOFLAGS="",
                            GOCACHE=os.path.join(build, "export", "verify", "go", "gocache")))
    verifiers = {
        "ledgerctl verify": [os.path.join(build, "cmd", "ledgerctl"), "verify", pack, "--vkey", vkey],
        "verify_pack.py": ["/usr/bin/python3", os.path.join(ROOT, "export", "verify", "python", "verify_pack.py"), pack, "--vkey", vkey],
        "ledger-verify-go": [lvg, "--vkey", vkey, pack],
    }
    for name, command in verifiers.items():
        if not os.path.exists(command[0]):
            fail("%s: %s is not built" % (name, command[0]))
        out = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if out.returncode != 0 or "absence proof" not in out.stdout:
            fail("%s on the absence pack: %d %s %s" % (name, out.returncode, out.stdout, out.stderr))
    ledger.stop()
    print("OK: under run keys v2 team-b's proofs show only team-b's runs; %s" % ", ".join(verifiers))


if __name__ == "__main__":
    main()
