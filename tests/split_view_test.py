#!/usr/bin/env python3
"""Split view caught by a witness. An operator who holds the ledger's key
runs a second, forked ledger with the same origin and key, and shows its
checkpoint to one auditor while everyone else sees the real one. Both
checkpoints verify with the ledger's key alone: that is the attack, and it
succeeds against any verifier that checks only the log's signature. A
witness that cosigned the real ledger refuses the fork (409, then 422 with
the fork's consistency proof), so the fork's checkpoint never carries its
cosignature and fails a policy that requires it, and the witness keeps the
log-signed refused request as evidence.

Usage: split_view_test.py BUILD_DIR"""
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tlog_spec as t  # noqa: E402
from ledger_testlib import fail  # noqa: E402
from witness_server_test import WitnessProcess  # noqa: E402
from witnessed_ledger_test import ORIGIN, Ledger, check_cosigned, receipts, write_log_key  # noqa: E402


def fork_receipts(count):
    return receipts(0, count).replace('"decision": "allow"', '"decision": "deny"')


def main():
    build = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as work:
        seed = os.urandom(32)
        log_vkey = write_log_key(os.path.join(work, "data"), seed)
        write_log_key(os.path.join(work, "fork"), seed)  # the same key, held by the operator
        with open(os.path.join(work, "log.vkey"), "w") as f:
            f.write(log_vkey + "\n")
        wdata = os.path.join(work, "w")
        vkey = subprocess.run([os.path.join(build, "cmd", "ledger-witness"), "vkey", "--data", wdata, "--name",
                               "auditor-witness.example"], check=True, capture_output=True, text=True).stdout.strip()
        witness = WitnessProcess(build, wdata, [os.path.join(work, "log.vkey")])
        policy = os.path.join(work, "policy")
        with open(policy, "w") as f:
            f.write("log %s\nwitness W %s http://%s\nquorum W\n" % (log_vkey, vkey, witness.address))
        real = Ledger(build, work, policy, data="data", extra=("--witness-quorum-required",))
        fork = None
        try:
            real.ctl("append", "-", stdin=receipts(0, 20))
            real_note = real.ctl("checkpoint", "--at-least", "20", "--cosignatures", "1", "--timeout-ms", "20000")
            check_cosigned(real_note, log_vkey, {"W": vkey})
            print("ok: the real ledger's checkpoint %s is cosigned by the witness" % real_note.split("\n")[1])

            fork = Ledger(build, work, policy, data="fork")
            fork.ctl("append", "-", stdin=fork_receipts(30))
            fork_note = fork.ctl("checkpoint", "--at-least", "30")
            # The attack: the fork's checkpoint verifies with the ledger's key.
            t.open_note(log_vkey, fork_note)
            t.open_note(log_vkey, real_note)
            print("attack: the fork's checkpoint %s verifies with the ledger's key, as the real one does" %
                  fork_note.split("\n")[1])
            time.sleep(1.5)  # the fork's client submits, gets 409, retries with its proof, gets 422
            r = fork.ctl("checkpoint", "--at-least", "30", "--cosignatures", "1", "--timeout-ms", "1500", check=False)
            if r.returncode == 0:
                fail("the witness cosigned the fork: %r" % r.stdout)
            if "with 1 cosignatures yet" not in r.stderr:
                fail("unexpected: %r" % r.stderr)
            metrics = fork.get("/metrics")
            refused = [line for line in metrics.splitlines()
                       if line.startswith('ledger_witness_failures_total{witness="W",reason="refused"}')]
            if not refused or int(refused[0].split()[-1]) < 1:
                fail("the fork's submissions were not refused:\n" + metrics)
            print("ok: the witness refused the fork (fork's /metrics: %s)" % refused[0])
            auditor = os.path.join(work, "auditor.policy")
            with open(auditor, "w") as f:
                f.write("log %s\nwitness W %s\nquorum W\n" % (log_vkey, vkey))
            r = fork.ctl("policy-check", "--policy", auditor, "-", stdin=fork_note, check=False)
            if r.returncode == 0 or "lacks the quorum 'W': missing cosignatures of W" not in r.stderr:
                fail("an auditor's policy-check of the fork's checkpoint: %r %r" % (r.stdout, r.stderr))
            if not real.ctl("policy-check", "--policy", auditor, "-", stdin=real_note).startswith("OK: "):
                fail("an auditor's policy-check of the real checkpoint failed")
            print("ok: under the auditor's policy the fork's checkpoint fails (%s), the real one passes" %
                  r.stderr.strip().split(": ", 1)[1])
            kept = os.path.join(wdata, "logs", hashlib.sha256(ORIGIN.encode()).hexdigest() + ".refused")
            evidence = open(kept).read()
            if fork_note not in evidence:
                fail("the witness did not keep the fork's signed checkpoint as evidence")
            print("ok: the witness kept the fork's log-signed checkpoint in %s" % os.path.basename(kept))
            served = t.get(witness.address, "/%s/checkpoint" % hashlib.sha256(ORIGIN.encode()).hexdigest())
            if served[0] != 200 or served[2].split("\n")[:3] != real_note.split("\n")[:3]:
                fail("the witness now serves %r, not the real checkpoint" % (served,))
            real.ctl("append", "-", stdin=receipts(20, 5))
            check_cosigned(real.ctl("checkpoint", "--at-least", "25", "--cosignatures", "1", "--timeout-ms", "20000"),
                           log_vkey, {"W": vkey})
            print("ok: the real ledger is still cosigned after the fork was refused")

            # Packs: the real ledger's carries the witness's cosignature (its
            # exports wait for the quorum); the fork's cannot.
            vkey_file = os.path.join(work, "log.vkey")
            real_pack, fork_pack = os.path.join(work, "real.tar.gz"), os.path.join(work, "fork.tar.gz")
            real.ctl("export", "--run", "team-a/run-1", "--out", real_pack)
            fork.ctl("export", "--run", "team-a/run-1", "--out", fork_pack)
            for verifier in (["ledgerctl", "verify"], ["ledger-verify"]):
                def verify(*args):
                    return subprocess.run([os.path.join(build, "cmd", verifier[0])] + verifier[1:] + list(args),
                                          capture_output=True, text=True, timeout=60)
                r = verify(fork_pack, "--vkey", vkey_file)
                if r.returncode != 0 or not r.stdout.startswith("OK: "):
                    fail("%s: the fork's pack with the ledger's key alone: %r %r" % (verifier[0], r.stdout, r.stderr))
                print("attack: %s verifies the fork's pack with the ledger's key alone" % verifier[0])
                r = verify(fork_pack, "--policy", auditor)
                want = "FAILED: checkpoint: the policy's quorum W is not met: no cosignature from W\n"
                if r.returncode != 1 or r.stdout != want:
                    fail("%s --policy: the fork's pack: %r %r" % (verifier[0], r.stdout, r.stderr))
                print("ok: under the auditor's policy %s refuses the fork's pack: %s" % (verifier[0], r.stdout.strip()))
                r = verify(real_pack, "--policy", auditor)
                witnessed = [line for line in r.stdout.splitlines() if line.startswith("witnessed: ")]
                if r.returncode != 0 or not r.stdout.startswith("OK: ") or len(witnessed) != 1 or \
                        not witnessed[0].startswith("witnessed: quorum W met; cosigned by W at "):
                    fail("%s --policy: the real pack: %r %r" % (verifier[0], r.stdout, r.stderr))
                print("ok: %s accepts the real pack under the policy: %s" % (verifier[0], witnessed[0]))
            # An export that requires the quorum, from the fork: refused, nothing written.
            fork.stop()
            fork = Ledger(build, work, policy, data="fork",
                          extra=("--witness-quorum-required", "--witness-quorum-wait-ms", "300"))
            refused_pack = os.path.join(work, "refused.tar.gz")
            r = fork.ctl("export", "--run", "team-a/run-1", "--out", refused_pack, check=False)
            if r.returncode == 0 or "lacks the witness quorum W after 300 ms: no cosignature from W" not in r.stderr \
                    or os.path.exists(refused_pack):
                fail("the fork exported without the quorum: %r" % r.stderr)
            print("ok: with --witness-quorum-required the fork exports nothing: %s" % r.stderr.strip())
        finally:
            real.stop()
            if fork:
                fork.stop()
            witness.kill(signal.SIGTERM)
    print("PASS")


if __name__ == "__main__":
    main()
