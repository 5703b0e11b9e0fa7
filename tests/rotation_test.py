#!/usr/bin/env python3
"""Key rotation (CONTRACT section 5d) through a real ledgerd, under load.

- Emitters append without pause while `ledgerctl rotate-key` moves the log
  to a new key made in its data directory; every append is acknowledged
  (the rotation's gate makes appends wait, never fail).
- The key_rotation entry is at the seq its statement names, the last
  checkpoint before it is the old key's, every later one the new key's;
  during the transition set (`--transition-sizes`) a checkpoint carries
  both lines, and Go's note.Open opens it with either key alone.
- `ledgerctl key-history` gives the rotation with its proof: packs
  exported after the rotation (a run pack across it, a seq-range pack)
  pass `ledgerctl verify` and `ledger-verify` given the OLD key and the
  history, and given a key set with ranges; the old key alone refuses
  them, naming the size and the key.
- A checkpoint the old key signs past the rotation (a holder of the stolen
  key) is refused against the history; a key set saying the old key is
  compromised as of a size below the rotation refuses the history.
- Restarted, the ledger signs with the new key (its key file replaced); a
  ledgerd given the old key file refuses to start, naming the new key.

Usage: rotation_test.py BUILD_DIR"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ledger_testlib import fail, go_note_open  # noqa: E402

ROOT = os.path.dirname(HERE)
ORIGIN = "rotation.test/ledger"


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


class Ledger:
    def __init__(self, build, work, extra=()):
        self.build, self.work = build, work
        self.data = os.path.join(work, "data")
        self.out_path = os.path.join(work, "ledgerd.%d.out" % time.monotonic_ns())
        self.out = open(self.out_path, "wb")
        self.proc = subprocess.Popen(
            [os.path.join(build, "cmd", "ledgerd"), "--data", self.data, "--origin", ORIGIN, "--listen",
             "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "50"] + list(extra), stdout=self.out, stderr=self.out)
        self.addr = None
        for _ in range(400):
            for line in open(self.out_path).read().splitlines():
                if line.startswith("listening on "):
                    self.addr = line.split()[-1]
            if self.addr or self.proc.poll() is not None:
                break
            time.sleep(0.05)

    def ctl(self, *args, stdin=None, check=True):
        r = subprocess.run([os.path.join(self.build, "cmd", "ledgerctl"), "--server", self.addr] + list(args),
                           input=stdin, capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            fail("ledgerctl %s: %s" % (" ".join(args), r.stderr))
        return r.stdout if check else r

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.out.close()


def receipts(first, count):
    return "".join(json.dumps({
        "receipt_id": "r-%d" % i, "kind": "tool_call", "team": "team-a", "run_id": "run-%d" % (i % 2),
        "occurred_at_us": 1767225600000000 + i, "tool": "git", "decision": "allow"}) + "\n"
        for i in range(first, first + count))


def note_key_ids(note):
    """The key IDs of a signed note's signature lines, in order."""
    ids = []
    for line in note.split("\n\n", 1)[1].splitlines():
        ids.append(base64.b64decode(line.split(" ")[-1])[:4].hex())
    return ids


def sign_with_key_file(path, text):
    """`text` signed with the note key in `path` (PRIVATE+KEY+name+id+b64)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    _, _, name, key_id, data = open(path).read().strip().split("+", 4)
    key = Ed25519PrivateKey.from_private_bytes(base64.b64decode(data)[1:])
    sig = base64.b64encode(bytes.fromhex(key_id) + key.sign(text.encode())).decode()
    return text + "\n\u2014 %s %s\n" % (name, sig)


def verify(build, pack, *args):
    results = []
    for cmd in ([os.path.join(build, "cmd", "ledgerctl"), "verify"], [os.path.join(build, "cmd", "ledger-verify")]):
        results.append(run(cmd + [pack, "--no-progress"] + list(args)))
    return results


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="rotation-")
    try:
        ledger = Ledger(build, work)
        if not ledger.addr:
            fail("ledgerd did not start: " + open(ledger.out_path).read())
        old_vkey = ledger.ctl("vkey").strip()
        old_id = old_vkey.split("+")[1]
        old_key_file = os.path.join(work, "old.key")  # what a thief of the old key holds
        shutil.copy(os.path.join(ledger.data, "signing.key"), old_key_file)
        # Load: two emitters append while the key rotates.
        errors, stop = [], threading.Event()
        counts = [0, 0]

        def emit(k):
            n = 0
            while not stop.is_set() and n < 4000:
                r = ledger.ctl("append", "-", stdin=receipts(100000 * (k + 1) + n, 20), check=False)
                if r.returncode != 0:
                    errors.append(r.stderr)
                    return
                n += 20
            counts[k] = n

        ledger.ctl("append", "-", stdin=receipts(0, 40))
        before = ledger.ctl("checkpoint", "--at-least", "40", "--timeout-ms", "20000")
        threads = [threading.Thread(target=emit, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        rotated = json.loads(ledger.ctl("rotate-key", "--transition-sizes", "1000000"))
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join()
        if errors:
            fail("an append failed during the rotation: %s" % errors[0])
        seq, new_vkey = rotated["seq"], rotated["new_key"]
        new_id = new_vkey.split("+")[1]
        if rotated["old_key"] != old_vkey or new_id == old_id:
            fail("rotate-key: %r" % rotated)
        print("ok: rotated at seq %d under load (%d + %d receipts appended meanwhile), %s -> %s" % (
            seq, counts[0], counts[1], old_id, new_id))
        # The statement both keys signed opens with Go's note.Open with either key.
        go_note_open(work, rotated["note"], old_vkey, cosignatures=1)
        go_note_open(work, rotated["note"], new_vkey, cosignatures=1)
        print("ok: the statement opens with Go's note.Open by either key")
        # Checkpoints past the rotation: the new key's line, then the old one's (the transition).
        size = seq + 41
        ledger.ctl("append", "-", stdin=receipts(900000, 40))
        after = ledger.ctl("checkpoint", "--at-least", str(size), "--timeout-ms", "20000")
        if note_key_ids(after) != [new_id, old_id]:
            fail("a checkpoint of the transition is signed by %r, want the new key then the old" % note_key_ids(after))
        go_note_open(work, after, new_vkey, cosignatures=1)
        go_note_open(work, after, old_vkey, cosignatures=1)
        if note_key_ids(before)[0] != old_id:
            fail("the checkpoint before the rotation: %r" % note_key_ids(before))
        print("ok: checkpoints past seq %d carry the new key's line, then the old one's; Go opens them with either"
              % seq)
        history = os.path.join(work, "keys.json")
        ledger.ctl("key-history", "--out", history)
        h = json.load(open(history))
        if [r["seq"] for r in h["rotations"]] != [seq]:
            fail("key-history: %r" % h)
        packs = [os.path.join(work, "run.tar.gz"), os.path.join(work, "seq.tar.gz")]
        ledger.ctl("export", "--run", "team-a/run-1", "--out", packs[0])
        ledger.ctl("export", "--seq", "0:%d" % (seq + 10), "--out", packs[1])
        old_file, new_file, key_set = (os.path.join(work, n) for n in ("old.vkey", "new.vkey", "keys.set"))
        open(old_file, "w").write(old_vkey + "\n")
        open(new_file, "w").write(new_vkey + "\n")
        open(key_set, "w").write("# the ledger's keys\n%s until %d\n%s from %d\n" % (old_vkey, seq, new_vkey, seq + 1))
        for pack in packs:
            for args, want in ((["--vkey", old_file, "--key-history", history], 0),
                               (["--key-set", key_set], 0),
                               (["--vkey", new_file], 0),
                               (["--vkey", old_file], 1)):
                for r in verify(build, pack, *args):
                    if r.returncode != want:
                        fail("verify %s %s: exit %d, want %d: %r %r" % (
                            os.path.basename(pack), " ".join(args), r.returncode, want, r.stdout[-300:],
                            r.stderr[-300:]))
                    if want == 1 and new_id not in r.stdout + r.stderr and old_id not in r.stdout + r.stderr:
                        fail("the old key alone: the refusal names no key: %r" % (r.stdout + r.stderr))
        print("ok: packs across the rotation pass given the old key and the history, or a key set; the old key "
              "alone refuses them")
        # A holder of the stolen old key signs a checkpoint past the rotation.
        forged = dict(h, checkpoint=sign_with_key_file(old_key_file, h["checkpoint"].split("\n\n")[0] + "\n"))
        forged_file = os.path.join(work, "forged.json")
        open(forged_file, "w").write(json.dumps(forged))
        for r in verify(build, packs[0], "--vkey", old_file, "--key-history", forged_file):
            if r.returncode != 2 or "no valid signature by %s+%s" % (ORIGIN, new_id) not in r.stderr:
                fail("a checkpoint the old key signed past the rotation: exit %d %r" % (r.returncode, r.stderr))
        print("ok: a checkpoint the old key signed past the rotation is refused")
        # A key set saying the old key is compromised as of a size before
        # its rotation: the rotation could be the thief's.
        bad_set = os.path.join(work, "compromised.set")
        open(bad_set, "w").write("%s until %d\n" % (old_vkey, seq - 1))
        for r in verify(build, packs[0], "--key-set", bad_set, "--key-history", history):
            if r.returncode != 2 or "its old key is not trusted at size %d" % seq not in r.stderr:
                fail("a history from a key compromised before its rotation: exit %d %r" % (r.returncode, r.stderr))
        print("ok: a key compromised as of size %d does not vouch for the rotation at seq %d" % (seq - 1, seq))
        # Restart: the new key signs (the key file was replaced).
        ledger.stop()
        key_file = open(os.path.join(ledger.data, "signing.key")).read()
        if new_id not in key_file:
            fail("signing.key after the rotation is not the new key")
        if os.path.exists(os.path.join(ledger.data, "signing.key.next")):
            fail("signing.key.next left after the rotation")
        ledger = Ledger(build, work)
        if not ledger.addr:
            fail("ledgerd did not restart after the rotation: " + open(ledger.out_path).read())
        ledger.ctl("append", "-", stdin=receipts(950000, 5))
        cp = ledger.ctl("checkpoint", "--at-least", str(size + 5), "--timeout-ms", "20000")
        if note_key_ids(cp) != [new_id]:
            fail("after a restart the checkpoint is signed by %r, want the new key alone" % note_key_ids(cp))
        ledger.stop()
        print("ok: restarted, the ledger signs with the new key alone (the transition ends with the process)")
        stale = Ledger(build, work, ["--signing-key", old_key_file])
        if stale.addr or stale.proc.wait(timeout=60) == 0:
            fail("ledgerd started with the key the log rotated away from")
        said = open(stale.out_path).read()
        if "rotated from this key" not in said or new_vkey not in said:
            fail("ledgerd with the old key: %r" % said[-600:])
        print("ok: ledgerd given the old key refuses to start, naming the new key")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS: rotation")


if __name__ == "__main__":
    main()
