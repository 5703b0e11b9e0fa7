#!/usr/bin/env python3
"""ledger-witness through real HTTP on loopback, checked by a client written
from the C2SP tlog-witness and tlog-cosignature texts (tests/tlog_spec.py):
every status of add-checkpoint (200, 400, 403, 404, 409 with
text/x.tlog.size, 422), cosignatures verified with `cryptography`, the
monitoring GET, Go's note.Open still opening a cosigned checkpoint with the
log's key alone, the key file's mode, and a crash loop: a witness killed
with SIGKILL at random moments while an honest log and a fork signed with
the same key race, never cosigning both sides.

Usage: witness_server_test.py BUILD_DIR [--cycles N]"""
import hashlib
import os
import random
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tlog_spec as t  # noqa: E402
from ledger_testlib import ROOT, fail, go_note_open  # noqa: E402

ORIGIN = "witness-test.example/log"


class WitnessProcess:
    def __init__(self, build, data, log_vkey_files, name=None, listen="127.0.0.1:0", extra=()):
        self.out_path = data + ".out"
        args = [os.path.join(build, "cmd", "ledger-witness"), "--data", data, "--listen", listen]
        for f in log_vkey_files:
            args += ["--log", f]
        if name:
            args += ["--name", name]
        args += list(extra)
        self.out = open(self.out_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self.out, stderr=self.out)
        self.address = None
        for _ in range(200):
            with open(self.out_path) as f:
                for line in f:
                    if line.startswith("listening on "):
                        self.address = line.split()[-1]
            if self.address or self.proc.poll() is not None:
                break
            time.sleep(0.025)
        if not self.address:
            self.kill()
            fail("ledger-witness did not start: " + open(self.out_path).read())
        # Only this start's line counts next time.
        self.out.truncate(0)

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait()
        self.out.close()


def expect(what, got, status, body=None, content_type=None):
    if got[0] != status or (body is not None and got[2] != body) or \
            (content_type is not None and got[1] != content_type):
        fail("%s: want %s %r (%s), got %r" % (what, status, body, content_type, got))
    print("ok: %s -> %d %s" % (what, got[0], got[2].strip()[:90]))


def witness_vkey(build, data, extra=()):
    return subprocess.run([os.path.join(build, "cmd", "ledger-witness"), "vkey", "--data", data] + list(extra),
                          check=True, capture_output=True, text=True).stdout.strip()


def statuses(build, work, log, leaves):
    data = os.path.join(work, "w1")
    vkey = witness_vkey(build, data + "-key")  # another directory: another key
    os.rename(data + "-key", data)
    mode = stat.S_IMODE(os.stat(os.path.join(data, "witness.key")).st_mode)
    if mode != 0o600:
        fail("witness.key has mode %o, want 600" % mode)
    vkey_file = os.path.join(work, "log.vkey")
    w = WitnessProcess(build, data, [vkey_file])
    try:
        a = w.address
        second = subprocess.run([os.path.join(build, "cmd", "ledger-witness"), "--data", data, "--listen",
                                 "127.0.0.1:0", "--log", vkey_file], capture_output=True, text=True, timeout=30)
        if second.returncode == 0 or "is in use by another ledger-witness" not in second.stderr:
            fail("a second witness on the same data directory: %r" % second.stderr)
        if witness_vkey(build, data) != vkey:
            fail("vkey beside a running witness printed another key")
        print("ok: a second witness on the same records is refused; vkey still reads the key")
        note = lambda n: log.sign(t.checkpoint_text(ORIGIN, n, t.mth(leaves[:n])))  # noqa: E731
        body = t.add_checkpoint_body
        # Before anything is cosigned: the proof from 0 must be empty, and a
        # size-0 checkpoint must carry the empty tree's root.
        expect("a proof from size 0", t.post_add_checkpoint(a, body(0, [leaves[0]], note(8))), 422,
               "consistency proof: must be empty from size 0\n")
        zero = log.sign(t.checkpoint_text(ORIGIN, 0, leaves[0]))
        expect("size 0 with another root", t.post_add_checkpoint(a, body(0, [], zero)), 422,
               "a checkpoint of size 0 must have the empty tree's root\n")
        other = t.LogKey("other.example/log")
        expect("an unknown origin", t.post_add_checkpoint(
            a, body(0, [], other.sign(t.checkpoint_text("other.example/log", 3, t.mth(leaves[:3]))))), 404)
        impostor = t.LogKey(ORIGIN)  # the origin's name, another key
        expect("a checkpoint signed by another key",
               t.post_add_checkpoint(a, body(0, [], impostor.sign(t.checkpoint_text(ORIGIN, 8, t.mth(leaves[:8]))))),
               403, "signed note: no signature by a key trusted for '%s'\n" % ORIGIN)
        good = note(8)
        forged = t.checkpoint_text(ORIGIN, 8, t.mth(leaves[:9])) + good[good.index("\n\n") + 1:]
        expect("the log's signature over another text", t.post_add_checkpoint(a, body(0, [], forged)), 403)
        expect("old above the checkpoint's size", t.post_add_checkpoint(a, body(9, [], good)), 400,
               "old size 9 is above the checkpoint's size 8\n")
        expect("a malformed old line", t.post_add_checkpoint(a, b"old 08\n\n" + good.encode()), 400)
        r = t.post_add_checkpoint(a, body(0, [], good))
        expect("the first checkpoint", r, 200)
        when = t.verify_cosignature(vkey, t.checkpoint_text(ORIGIN, 8, t.mth(leaves[:8])), r[2])
        if abs(when - time.time()) > 60:
            fail("cosignature time %d is not now" % when)
        print("ok: cosignature verified by cryptography, time %d" % when)
        expect("a stale old size", t.post_add_checkpoint(a, body(0, [], note(12))), 409, "8\n", "text/x.tlog.size")
        proof = t.consistency_proof(8, leaves[:20])
        bad = [proof[0][:-1] + bytes([proof[0][-1] ^ 1])] + proof[1:]
        expect("a bad consistency proof", t.post_add_checkpoint(a, body(8, bad, note(20))), 422)
        fork = log.sign(t.checkpoint_text(ORIGIN, 8, t.mth(leaves[:7] + [t.leaf_hash(b"fork")])))
        expect("size 8 again with another root", t.post_add_checkpoint(a, body(8, [], fork)), 422)
        kept = os.path.join(data, "logs", hashlib.sha256(ORIGIN.encode()).hexdigest() + ".fork")
        with open(kept, "rb") as f:
            evidence = f.read()
        if fork.encode() not in evidence:
            fail("the fork is not kept as evidence: %r" % evidence[:200])
        # Anyone can post the log's public checkpoint with a junk proof; it
        # once replaced the kept evidence of the fork and raised another alarm.
        # (Unproven evidence, a log-signed checkpoint no proof joins, goes to
        # .refused, first kept; the junk one below was already kept there by
        # "a bad consistency proof" above, the fork's two roots in .fork.)
        junk = [bytes([i]) * 32 for i in range(3)]
        expect("the log's own checkpoint with a junk proof", t.post_add_checkpoint(a, body(8, junk, note(20))), 422)
        other_fork = log.sign(t.checkpoint_text(ORIGIN, 8, t.mth(leaves[:7] + [t.leaf_hash(b"fork 2")])))
        expect("a second fork of size 8", t.post_add_checkpoint(a, body(8, [], other_fork)), 422)
        with open(kept, "rb") as f:
            if f.read() != evidence:
                fail("a later request replaced the kept evidence of the fork")
        print("ok: the first fork's evidence is kept; a junk proof and a second fork leave it as it was")
        r = t.post_add_checkpoint(a, body(8, proof, note(20)))
        expect("a consistent checkpoint", r, 200)
        t.verify_cosignature(vkey, t.checkpoint_text(ORIGIN, 20, t.mth(leaves[:20])), r[2])
        origin_hash = hashlib.sha256(ORIGIN.encode()).hexdigest()
        served = t.get(a, "/%s/checkpoint" % origin_hash)
        expect("the monitoring GET", served, 200, note(20) + r[2])
        expect("the monitoring GET of an unknown log", t.get(a, "/%s/checkpoint" % ("0" * 64)), 404)
        expect("GET add-checkpoint", t.get(a, "/add-checkpoint"), 405)
        expect("a body above 64 KiB", t.post_add_checkpoint(a, b"old 0\n" + b"A" * 70000), 413,
               "body: at most 65536 bytes\n")
        expect("a chunked body", chunked_post(a), 411)
        # Requests that do not verify: at most 30 a minute from one address.
        answers = []
        while len(answers) < 70 and 429 not in answers:
            answers.append(t.post_add_checkpoint(a, body(20, junk, note(24)))[0])
        limited = t.post_add_checkpoint(a, body(20, t.consistency_proof(20, leaves[:24]), note(24)))
        if set(answers) != {422, 429} or limited[0] != 429 or "at most 30 a minute" not in limited[2]:
            fail("junk proofs then a good one: %r, then %r" % (sorted(set(answers)), limited))
        print("ok: after 30 requests that did not verify, this address gets 429 for the minute")
        go_open(work, served[2], log.vkey())
    finally:
        w.kill(signal.SIGTERM)


def chunked_post(address):
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as c:
        c.sendall(b"POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nold 0\n\r\n0\r\n\r\n")
        answer = b""
        while True:
            chunk = c.recv(4096)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.decode().partition("\r\n\r\n")
    return int(head.split()[1]), None, body


def go_open(work, cosigned, log_vkey):
    go_note_open(work, cosigned, log_vkey)
    print("ok: Go's note.Open opens the cosigned checkpoint with the log's key (the cosignature is skipped)")


def crash_loop(build, work, log, cycles):
    """Two clients race on one witness: the honest log and a fork that
    shares its first `split` leaves, both signed with the log's key. The
    witness is SIGKILLed at random moments. Whatever it answered 200 to must
    never include checkpoints of both sides past the split."""
    split = 10
    honest = [t.leaf_hash(b"h%d" % i) for i in range(400)]
    forked = honest[:split] + [t.leaf_hash(b"f%d" % i) for i in range(400 - split)]
    trees = {"honest": honest, "fork": forked}
    data = os.path.join(work, "crash")
    vkey = witness_vkey(build, data)
    known = {"honest": 0, "fork": 0}
    cosigned = []  # (side, size, root)
    rng = random.Random(19)
    for cycle in range(cycles):
        w = WitnessProcess(build, data, [os.path.join(work, "log.vkey")])
        timer = threading.Timer(rng.uniform(0.05, 0.4), w.kill)
        timer.start()
        try:
            while w.proc.poll() is None:
                side = rng.choice(["honest", "fork"])
                tree = trees[side]
                old = known[side]
                size = min(len(tree), max(old, 1) + rng.randint(0, 6))
                root = t.mth(tree[:size])
                note = log.sign(t.checkpoint_text(ORIGIN, size, root))
                try:
                    status, _, text = t.post_add_checkpoint(
                        w.address, t.add_checkpoint_body(old, t.consistency_proof(old, tree[:size]), note), timeout=5)
                except OSError:
                    break
                if status == 200:
                    t.verify_cosignature(vkey, t.checkpoint_text(ORIGIN, size, root), text)
                    cosigned.append((side, size, root))
                    known[side] = size
                elif status == 409:
                    known[side] = int(text)
                elif status not in (422, 429):  # refused: inconsistent, or too many refusals a minute
                    fail("cycle %d: unexpected %d %s" % (cycle, status, text))
        finally:
            timer.cancel()
            w.kill()
    past = {side for side, size, _ in cosigned if size > split}
    if len(past) > 1:
        first = {side: next(n for s, n, _ in cosigned if s == side and n > split) for side in past}
        fail("the witness cosigned both the log and its fork past size %d (first: %r)" % (split, first))
    for side, size, root in cosigned:
        if root != t.mth(trees[side][:size]):
            fail("bad bookkeeping")
    w = WitnessProcess(build, data, [os.path.join(work, "log.vkey")])
    try:
        status, _, served = t.get(w.address, "/%s/checkpoint" % hashlib.sha256(ORIGIN.encode()).hexdigest())
    finally:
        w.kill(signal.SIGTERM)
    largest = max(cosigned, key=lambda c: c[1])
    served_size = int(served.split("\n")[1])
    if status != 200 or served_size < largest[1]:
        fail("after the crashes the witness serves size %d, below the %d it cosigned" % (served_size, largest[1]))
    print("ok: %d crash cycles, %d cosignatures, all on one side (%s) past size %d; served size %d" %
          (cycles, len(cosigned), ",".join(sorted(past)) or "neither", split, served_size))


def main():
    build = os.path.abspath(sys.argv[1])
    cycles = int(sys.argv[sys.argv.index("--cycles") + 1]) if "--cycles" in sys.argv else 12
    with tempfile.TemporaryDirectory() as work:
        log = t.LogKey(ORIGIN)
        with open(os.path.join(work, "log.vkey"), "w") as f:
            f.write(log.vkey() + "\n")
        leaves = [t.leaf_hash(b"%d" % i) for i in range(64)]
        statuses(build, work, log, leaves)
        crash_loop(build, work, log, cycles)
    print("PASS")


if __name__ == "__main__":
    main()
