"""A witness beside a replicated shard: a real ledger-witness that both
nodes name in their --witness-policy. Only the leader submits; the nodes
share what the witness last cosigned through the shard's database, so the
node that takes the lead sends its first checkpoint with the consistency
proof from the size the witness last cosigned: the witness cosigns across
the failover and answers no 409 (wrong old size) and no 422 (bad proof).

One 409 per failover is explained, and allowed, only when the leader was
killed after the witness cosigned and before the leader recorded it in the
database: the record then lags the witness, and C2SP tlog-witness's 409
tells the new leader the size. Each kill checks which it was."""
import hashlib
import json
import os
import subprocess
import time
import urllib.error
import urllib.request

from ledger_testlib import fail  # noqa: E402
from witness_server_test import WitnessProcess, witness_vkey  # noqa: E402

EM_DASH = "\u2014"


class ShardWitness:
    NAME = "witness-a.example"

    def __init__(self, build, work, origin, log_vkey):
        self.origin = origin
        self.data = os.path.join(work, "witness")
        log_vkey_file = os.path.join(work, "log.vkey")
        with open(log_vkey_file, "w") as f:
            f.write(log_vkey + "\n")
        subprocess.run([os.path.join(build, "cmd", "ledger-witness"), "vkey", "--data", self.data, "--name",
                        self.NAME], check=True, capture_output=True)
        self.vkey = witness_vkey(build, self.data)
        self.proc = WitnessProcess(build, self.data, [log_vkey_file])
        self.policy = os.path.join(work, "witness.policy")
        with open(self.policy, "w") as f:
            f.write("log %s\nwitness A %s http://%s\nquorum A\n" % (log_vkey, self.vkey, self.proc.address))
        self.explained = 0  # kills whose record lagged the witness

    def flags(self):
        return ["--witness-policy", self.policy]

    def size(self):
        """The size of the checkpoint the witness last cosigned (its record)."""
        path = "/%s/checkpoint" % hashlib.sha256(self.origin.encode()).hexdigest()
        try:
            with urllib.request.urlopen("http://%s%s" % (self.proc.address, path), timeout=5) as r:
                return int(r.read().decode().split("\n")[1])
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return 0
            raise

    def recorded(self, pg):
        """The size the shard's database records for the witness (its only one)."""
        out = pg.primary.sql("SELECT coalesce(max(size), 0) FROM ledger_cosignatures")
        return int(out) if out else 0

    def after_kill(self, pg, leader_name):
        """Right after SIGKILL of the leader (no node submits until another
        takes the lead, a lease later): does the shard's record lag the
        witness?"""
        time.sleep(0.2)  # a submission in flight when the leader died lands
        witness, recorded = self.size(), self.recorded(pg)
        if recorded > witness:
            fail("the shard records a cosignature of size %d, the witness last cosigned %d" % (recorded, witness))
        if recorded < witness:
            self.explained += 1
            print("  %s died after the witness cosigned size %d and before recording it (the record has %d): "
                  "one 409 is allowed" % (leader_name, witness, recorded), flush=True)
        return witness

    def refusals(self):
        """The witness's answers other than 200, from its log."""
        out = []
        with open(self.proc.out_path, errors="replace") as f:
            for line in f:
                if '"witness_refused"' in line:
                    out.append(json.loads(line))
        return out

    def check(self, failovers):
        refused = self.refusals()
        conflicts = [r for r in refused if r.get("status") == 409]
        others = [r for r in refused if r.get("status") != 409]
        if others:
            fail("the witness refused %d submissions across the failovers, e.g. %s" % (len(others), others[0]))
        if len(conflicts) > self.explained:
            fail("the witness answered %d 409s across %d failover(s) (%d explained by a kill between its "
                 "cosignature and the shard's record): a new leader did not resume from the size the witness last "
                 "cosigned, e.g. %s" % (len(conflicts), failovers, self.explained, conflicts[0]))
        return len(conflicts)

    def close(self):
        self.proc.kill()


def cosigned_by(note, witness_name):
    """True when the served checkpoint `note` carries a signature line of
    the witness's key name."""
    return any(line.startswith("%s %s " % (EM_DASH, witness_name)) for line in note.split("\n"))


def wait_cosigned(checkpoint, node, at_least, witness_name=ShardWitness.NAME, timeout=20):
    """The first checkpoint `node` serves of at least `at_least` entries
    that carries the witness's cosignature."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cp = checkpoint(node)
        note = cp.cosigned_note or cp.note
        if cp.tree_size >= at_least and cosigned_by(note, witness_name):
            return cp
        time.sleep(0.05)
    fail("%s serves no checkpoint of at least %d entries cosigned by the witness after %d s"
         % (node.name, at_least, timeout))
