#!/usr/bin/env python3
"""Key rotation (CONTRACT section 5d) through a real ledgerd, under load,
with a real ledger-witness and a real ledger-monitor following it.

- Emitters append without pause while `ledgerctl rotate-key` moves the log
  to a new key made in its data directory; every append is acknowledged
  (the rotation's gate makes appends wait, never fail).
- The statement both keys signed opens with Go's note.Open by either key.
  Checkpoints past the rotation carry the new key's line, then, for the
  transition set (`--transition-sizes`), the old one's; Go opens them with
  either key alone.
- A second rotation, with no transition: the witness cosigns the
  checkpoints past it (it follows both rotations: the ledger told it, and
  the old key's line is gone), and the monitor cosigns the time notes past
  it (it followed them as it replayed the log).
- `ledgerctl key-history` gives both rotations with their proofs: packs
  across them (a run pack, a seq-range pack) pass `ledgerctl verify` and
  `ledger-verify` given the FIRST key and the history, and given a key set
  with ranges (`ledgerctl verify`, `ledger-verify`, `verify_pack.py` and
  `ledger-verify-go`); the first key alone refuses them. A refused key
  history is exit 2 (usage) for all four.
- A checkpoint the first key signs past its rotation (a thief's) is
  refused against the history; a key set saying the first key is
  compromised as of a size below its rotation refuses the history.
- Restarted, the ledger signs with the newest key alone (its key file
  replaced, no signing.key.next left); `ledgerctl audit` of the stopped
  store holds from the first key and from the newest; a ledgerd given the first key file
  refuses to start, naming the log's key now.

Usage: rotation_test.py BUILD_DIR"""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ledger_testlib import fail, free_port, go_note_open  # noqa: E402
from policy_pack_test import build_go_verifier  # noqa: E402
from witness_server_test import WitnessProcess  # noqa: E402

ROOT = os.path.dirname(HERE)
ORIGIN = "rotation.test/ledger"
PROCESSES = []


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


class Process:
    """A program whose output goes to a file of its own; `ready` is the
    line it prints once it serves."""

    def __init__(self, cmd, out_path, ready="listening on "):
        self.out_path = out_path
        self.out = open(out_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=self.out)
        PROCESSES.append(self)
        self.line = None
        for _ in range(400):
            self.line = next((x for x in open(out_path).read().splitlines() if x.startswith(ready)), None)
            if self.line or self.proc.poll() is not None:
                break
            time.sleep(0.05)

    def text(self):
        return open(self.out_path).read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=60)
        self.out.close()


class Ledger:
    def __init__(self, build, work, extra=()):
        self.build, self.data = build, os.path.join(work, "data")
        self.process = Process([os.path.join(build, "cmd", "ledgerd"), "--data", self.data, "--origin", ORIGIN,
                                "--listen", "127.0.0.1:0", "--checkpoint-interval-ms", "50"] + list(extra),
                               os.path.join(work, "ledgerd.%d.out" % time.monotonic_ns()))
        self.addr = self.process.line.split()[-1] if self.process.line else None

    def ctl(self, *args, stdin=None, check=True):
        r = subprocess.run([os.path.join(self.build, "cmd", "ledgerctl"), "--server", self.addr] + list(args),
                           input=stdin, capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            fail("ledgerctl %s: %s" % (" ".join(args), r.stderr))
        return r.stdout if check else r


def write_log_key(data):
    """The ledger's first key, made here so that the witness and the monitor
    are given its verifier key before the ledger starts."""
    seed = os.urandom(32)
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    key_id = hashlib.sha256(ORIGIN.encode() + b"\n\x01" + public).digest()[:4].hex()
    os.makedirs(data)
    with open(os.path.join(data, "signing.key"), "w") as f:
        f.write("PRIVATE+KEY+%s+%s+%s\n" % (ORIGIN, key_id, base64.b64encode(b"\x01" + seed).decode()))
    return "%s+%s+%s" % (ORIGIN, key_id, base64.b64encode(b"\x01" + public).decode())


def receipts(first, count):
    return "".join(json.dumps({
        "receipt_id": "r-%d" % i, "kind": "tool_call", "team": "team-a", "run_id": "run-%d" % (i % 2),
        "occurred_at_us": 1767225600000000 + i, "tool": "git", "decision": "allow"}) + "\n"
        for i in range(first, first + count))


def note_key_ids(note):
    """The key IDs of a signed note's signature lines by the ledger's keys, in order."""
    return [base64.b64decode(line.split(" ")[-1])[:4].hex()
            for line in note.split("\n\n", 1)[1].splitlines() if line.split(" ")[1] == ORIGIN]


def sign_with_key_file(path, text):
    """`text` signed with the note key in `path` (PRIVATE+KEY+name+id+b64)."""
    _, _, name, key_id, data = open(path).read().strip().split("+", 4)
    key = Ed25519PrivateKey.from_private_bytes(base64.b64decode(data)[1:])
    sig = base64.b64encode(bytes.fromhex(key_id) + key.sign(text.encode())).decode()
    return text + "\n\u2014 %s %s\n" % (name, sig)


def verify(build, pack, *args):
    """ledgerctl verify, ledger-verify, verify_pack.py and ledger-verify-go
    (the last two written from the contract's text alone) on `pack` with
    `args`."""
    return [run(cmd + [pack, "--no-progress"] + list(args))
            for cmd in ([os.path.join(build, "cmd", "ledgerctl"), "verify"],
                        [os.path.join(build, "cmd", "ledger-verify")],
                        ["/usr/bin/python3", os.path.join(ROOT, "export", "verify", "python", "verify_pack.py")],
                        [GO_VERIFIER[0]])]


# ledger-verify-go, built once (policy_pack_test.build_go_verifier).
GO_VERIFIER = []


def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
            return r.status, r.read().decode()
    except (urllib.error.URLError, ConnectionError) as e:
        return getattr(e, "code", 0), ""


def rotate_under_load(ledger, transition, base):
    """Rotates while two emitters append; returns rotate-key's answer."""
    errors, stop, counts = [], threading.Event(), [0, 0]

    def emit(k):
        n = 0
        while not stop.is_set() and n < 4000:
            r = ledger.ctl("append", "-", stdin=receipts(base + 100000 * k + n, 20),
                           check=False)
            if r.returncode != 0:
                errors.append(r.stderr)
                return
            n += 20
        counts[k] = n

    threads = [threading.Thread(target=emit, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    rotated = ledger.ctl("rotate-key", "--transition-sizes", str(transition), check=False)
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join()
    if errors:
        fail("an append failed during the rotation: %s" % errors[0])
    if rotated.returncode != 0:
        fail("rotate-key: %s" % rotated.stderr)
    print("ok: rotated at seq %d under load (%d + %d receipts appended meanwhile)" % (
        json.loads(rotated.stdout)["seq"], counts[0], counts[1]))
    return json.loads(rotated.stdout)


def main():
    build = os.path.abspath(sys.argv[1])
    GO_VERIFIER.append(build_go_verifier(build))
    work = tempfile.mkdtemp(prefix="rotation-")
    try:
        first_vkey = write_log_key(os.path.join(work, "data"))
        first_id = first_vkey.split("+")[1]
        first_key_file = os.path.join(work, "first.key")  # what a thief of the first key holds
        shutil.copy(os.path.join(work, "data", "signing.key"), first_key_file)
        first_file = os.path.join(work, "first.vkey")
        open(first_file, "w").write(first_vkey + "\n")
        # A witness and a monitor, each given the first key only.
        wdata, mdata = os.path.join(work, "witness"), os.path.join(work, "monitor")
        wvkey = run([os.path.join(build, "cmd", "ledger-witness"), "vkey", "--data", wdata, "--name",
                     "witness-a.example"]).stdout.strip()
        witness = WitnessProcess(build, wdata, [first_file], name="witness-a.example")
        PROCESSES.append(witness)
        mvkey = run([os.path.join(build, "cmd", "ledger-monitor"), "vkey", "--data", mdata, "--name",
                     "M1"]).stdout.strip()
        http_port, monitor_port = free_port(), free_port()
        wpolicy, mpolicy = os.path.join(work, "witness.policy"), os.path.join(work, "monitor.policy")
        open(wpolicy, "w").write("log %s\nwitness A %s http://%s\nquorum A\n" % (first_vkey, wvkey, witness.address))
        open(mpolicy, "w").write("log %s\nmonitor M1 %s http://127.0.0.1:%d\nquorum none\n" % (
            first_vkey, mvkey, monitor_port))
        serving = ["--http-listen", "127.0.0.1:%d" % http_port, "--witness-policy", wpolicy, "--monitor-policy",
                   mpolicy, "--monitor-quorum-wait-ms", "0"]
        ledger = Ledger(build, work, serving)
        if not ledger.addr:
            fail("ledgerd did not start: " + ledger.process.text())
        monitor = Process([os.path.join(build, "cmd", "ledger-monitor"), "--data", mdata, "--log",
                           "http://127.0.0.1:%d" % http_port, "--log-key", first_file, "--listen",
                           "127.0.0.1:%d" % monitor_port, "--interval-ms", "100"], os.path.join(work, "monitor.out"))
        if not monitor.line:
            fail("ledger-monitor did not start: " + monitor.text())
        ledger.ctl("append", "-", stdin=receipts(0, 40))
        before = ledger.ctl("checkpoint", "--at-least", "40", "--timeout-ms", "20000")

        # The first rotation, with a transition.
        first = rotate_under_load(ledger, 1000000, 1000000)
        seq1, second_vkey = first["seq"], first["new_key"]
        second_id = second_vkey.split("+")[1]
        if first["old_key"] != first_vkey or second_id == first_id:
            fail("rotate-key: %r" % first)
        go_note_open(work, first["note"], first_vkey, cosignatures=1)
        go_note_open(work, first["note"], second_vkey, cosignatures=1)
        print("ok: the statement opens with Go's note.Open by either key")
        ledger.ctl("append", "-", stdin=receipts(900000, 40))
        after = ledger.ctl("checkpoint", "--at-least", str(seq1 + 41), "--cosignatures", "1", "--timeout-ms",
                           "20000")
        if note_key_ids(after) != [second_id, first_id]:
            fail("a checkpoint of the transition is signed by %r, want the new key then the old" % note_key_ids(after))
        go_note_open(work, after, second_vkey, cosignatures=2)  # the old key's line and the witness's
        go_note_open(work, after, first_vkey, cosignatures=2)
        if note_key_ids(before) != [first_id]:
            fail("the checkpoint before the rotation: %r" % note_key_ids(before))
        print("ok: checkpoints past seq %d carry the new key's line, then the old one's; Go opens them with either"
              % seq1)

        # The second rotation, no transition: only a witness and a monitor
        # that followed both rotations cosign what comes after it.
        second = rotate_under_load(ledger, 0, 2000000)
        seq2, third_vkey = second["seq"], second["new_key"]
        third_id = third_vkey.split("+")[1]
        if second["old_key"] != second_vkey:
            fail("the second rotation's old key: %r" % second)
        ledger.ctl("append", "-", stdin=receipts(910000, 10))
        size = seq2 + 11
        cosigned = ledger.ctl("checkpoint", "--at-least", str(size), "--cosignatures", "1", "--timeout-ms", "30000")
        if note_key_ids(cosigned) != [third_id]:
            fail("a checkpoint past the second rotation is signed by %r" % note_key_ids(cosigned))
        keys_file = os.path.join(wdata, "logs", hashlib.sha256(ORIGIN.encode()).hexdigest() + ".keys")
        if not os.path.exists(keys_file) or len(open(keys_file).read().splitlines()) != 2:
            fail("the witness's record of the rotations: %r" % os.listdir(os.path.join(wdata, "logs")))
        print("ok: the witness, given the first key only, follows both rotations and cosigns size %s"
              % cosigned.split("\n")[1])
        deadline = time.time() + 30
        while True:
            status, note = get(monitor_port, "/cosigned")
            if status == 200 and int(note.split("\n")[2]) > seq2:
                break
            if time.time() > deadline:
                fail("the monitor cosigned nothing past the second rotation: %s" % monitor.text()[-1500:])
            time.sleep(0.2)
        print("ok: the monitor, given the first key only, follows both rotations as it replays and cosigns the "
              "time note of size %s" % note.split("\n")[2])

        history = os.path.join(work, "keys.json")
        ledger.ctl("key-history", "--out", history)
        h = json.load(open(history))
        if [r["seq"] for r in h["rotations"]] != [seq1, seq2]:
            fail("key-history: %r" % h)
        packs = [os.path.join(work, "run.tar.gz"), os.path.join(work, "seq.tar.gz")]
        ledger.ctl("export", "--run", "team-a/run-1", "--out", packs[0])
        ledger.ctl("export", "--seq", "0:%d" % (seq2 + 5), "--out", packs[1])
        third_file, key_set = os.path.join(work, "third.vkey"), os.path.join(work, "keys.set")
        open(third_file, "w").write(third_vkey + "\n")
        open(key_set, "w").write("# the ledger's keys\n%s until %d\n%s from %d until %d\n%s from %d\n" % (
            first_vkey, seq1, second_vkey, seq1 + 1, seq2, third_vkey, seq2 + 1))
        for pack in packs:
            for args, want in ((["--vkey", first_file, "--key-history", history], 0),
                               (["--key-set", key_set], 0),
                               (["--vkey", third_file], 0),
                               (["--vkey", first_file], 1)):
                for r in verify(build, pack, *args):
                    if r.returncode != want:
                        fail("verify %s %s: exit %d, want %d: %r %r" % (
                            os.path.basename(pack), " ".join(args), r.returncode, want, r.stdout[-300:],
                            r.stderr[-300:]))
                    if want == 1 and third_id not in r.stdout + r.stderr and first_id not in r.stdout + r.stderr:
                        fail("the first key alone: the refusal names no key: %r" % (r.stdout + r.stderr))
        print("ok: packs across both rotations pass given the first key and the history, or a key set; the first "
              "key alone refuses them")

        # A holder of the stolen first key signs a checkpoint past its rotation.
        forged = dict(h, checkpoint=sign_with_key_file(first_key_file, h["checkpoint"].split("\n\n")[0] + "\n"))
        forged_file = os.path.join(work, "forged.json")
        open(forged_file, "w").write(json.dumps(forged))
        for r in verify(build, packs[0], "--vkey", first_file, "--key-history", forged_file):
            if r.returncode != 2 or "signature by %s+%s" % (ORIGIN, third_id) not in r.stdout + r.stderr:
                fail("a checkpoint the first key signed past its rotation: exit %d %r" % (r.returncode, r.stderr))
        print("ok: a checkpoint the first key signed past its rotation is refused")
        # A key set saying the first key is compromised as of a size before
        # its rotation: the rotation could be the thief's.
        bad_set = os.path.join(work, "compromised.set")
        open(bad_set, "w").write("%s until %d\n" % (first_vkey, seq1 - 1))
        for r in verify(build, packs[0], "--key-set", bad_set, "--key-history", history):
            if r.returncode != 2 or "its old key is not trusted at size %d" % seq1 not in r.stdout + r.stderr:
                fail("a history from a key compromised before its rotation: exit %d %r" % (r.returncode, r.stderr))
        print("ok: a key compromised as of size %d does not vouch for the rotation at seq %d" % (seq1 - 1, seq1))

        # Restart: the newest key signs (the key file was replaced).
        ledger.process.stop()
        if third_id not in open(os.path.join(ledger.data, "signing.key")).read():
            fail("signing.key after the rotations is not the newest key")
        if os.path.exists(os.path.join(ledger.data, "signing.key.next")):
            fail("signing.key.next left after the rotation")
        ledger = Ledger(build, work, serving)
        if not ledger.addr:
            fail("ledgerd did not restart after the rotations: " + ledger.process.text())
        ledger.ctl("append", "-", stdin=receipts(950000, 5))
        cp = ledger.ctl("checkpoint", "--at-least", str(size + 5), "--cosignatures", "1", "--timeout-ms", "20000")
        if note_key_ids(cp) != [third_id]:
            fail("after a restart the checkpoint is signed by %r, want the newest key alone" % note_key_ids(cp))
        ledger.process.stop()
        print("ok: restarted, the ledger signs with the newest key alone, and the witness cosigns")
        # The stopped store audits from the first key, following the
        # rotations, and from the newest, whose statements lead back.
        for vkey_file in (first_file, third_file):
            r = run([os.path.join(build, "cmd", "ledgerctl"), "audit", "--data", ledger.data, "--vkey", vkey_file,
                     "--no-progress"])
            if r.returncode != 0 or not r.stdout.startswith("OK"):
                fail("ledgerctl audit --vkey %s: exit %d %r %r" % (os.path.basename(vkey_file), r.returncode,
                                                                   r.stdout, r.stderr))
        print("ok: ledgerctl audit of the stopped store holds from the first key and from the newest")
        stale = Ledger(build, work, ["--signing-key", first_key_file])
        if stale.addr or stale.process.proc.wait(timeout=60) == 0:
            fail("ledgerd started with a key the log rotated away from")
        said = stale.process.text()
        if "rotated from this key" not in said or third_vkey not in said:
            fail("ledgerd with the first key: %r" % said[-600:])
        print("ok: ledgerd given the first key refuses to start, naming the log's key now")
    finally:
        for p in PROCESSES:
            try:
                p.stop() if isinstance(p, Process) else p.kill()
            except Exception:  # noqa: BLE001 (already stopped)
                pass
        shutil.rmtree(work, ignore_errors=True)
    print("PASS: rotation")


if __name__ == "__main__":
    main()
