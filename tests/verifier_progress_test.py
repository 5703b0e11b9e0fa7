#!/usr/bin/env python3
"""The progress line of export/verify/python/verify_pack.py and
ledger-verify-go, through a real terminal (a pseudo-terminal from the pty
module), on packs of a few thousand entries from a real ledgerd: a genuine
seq range, and the same with its last entry changed and the manifest
re-signed with the ledger's key, which each verifier refuses at that entry.

For each verifier and pack, with LEDGER_PROGRESS_INTERVAL_MS=1 so that a
short check prints lines:
- stderr in a file: stderr stays empty, and stdout is the reference;
- stdout and stderr on the terminal: one progress line or more, each
  exactly "\\r" + "verifying: DONE of TOTAL entries (P%)[, RATE/s, LEFT
  left]" + "\\x1b[K" with TOTAL the manifest's counts.entries and P and
  LEFT those DONE, TOTAL and RATE make; then "\\r\\x1b[K" once; then,
  byte for byte, the reference stdout (the OK or FAIL lines);
- stderr on the terminal, stdout in a pipe: stdout is the reference, the
  terminal holds the progress lines and the erasure only;
- --no-progress, stderr on the terminal: the terminal holds nothing.

Usage: verifier_progress_test.py BUILD_DIR
"""
import errno
import json
import os
import pty
import re
import subprocess
import sys
import tempfile
import tty

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import pack_tamper_test as t  # noqa: E402
from team_window_pack_test import Ledger  # noqa: E402

ENTRIES = 3000
T0 = 1767225600000000  # the receipts' occurred_at_us, one microsecond apart
ERASE = b"\r\x1b[K"
GROUPED = rb"[0-9]{1,3}(?:,[0-9]{3})*"
LINE = re.compile(rb"\rverifying: (%s) of (%s) entries \(([0-9]+)%%\)(?:, (%s)/s, ([0-9a-z ]+) left)?\x1b\[K"
                  % (GROUPED, GROUPED, GROUPED))


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def number(text):
    return int(text.replace(b",", b""))


def left_text(seconds):
    if seconds < 60:
        return "%d s" % seconds
    if seconds < 3600:
        return "%d min %d s" % (seconds // 60, seconds % 60)
    return "%d h %d min" % (seconds // 3600, seconds % 3600 // 60)


def progress_lines(got, total, label):
    """The progress lines at the start of got, each checked against total;
    returns (their count, what follows them)."""
    at, count, last_done = 0, 0, 0
    while True:
        m = LINE.match(got, at)
        if m is None:
            return count, got[at:]
        done, of, percent = number(m.group(1)), number(m.group(2)), int(m.group(3))
        shown = "{:,}".format(done).encode()
        if m.group(1) != shown or of != total or m.group(2) != "{:,}".format(total).encode():
            fail("%s: %r: want DONE grouped by commas and the total %d" % (label, m.group(0), total))
        if not last_done <= done <= total or percent != done * 100 // total:
            fail("%s: %r: after %d done, of %d" % (label, m.group(0), last_done, total))
        if m.group(4) is not None:
            rate = number(m.group(4))
            if rate == 0 or m.group(5).decode() != left_text(-(-(total - done) // rate)):
                fail("%s: %r: the time left is not ceil((TOTAL - DONE) / RATE)" % (label, m.group(0)))
        at, count, last_done = m.end(), count + 1, done


def on_terminal(argv, env, stdout_too):
    """Runs argv with stderr (and with stdout_too, stdout) on a new
    pseudo-terminal in raw mode; returns (what the terminal got, stdout if
    not on it, exit code)."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave if stdout_too else subprocess.PIPE,
                            stderr=slave, env=env)
    os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError as e:
            if e.errno != errno.EIO:  # EIO: every end of the terminal's slave side is closed
                raise
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    out = b"" if stdout_too else proc.stdout.read()
    return got, out, proc.wait()


def check_verifier(label, argv, total, want_code, work, env):
    """The four runs of argv (module docstring) against each other; the
    verifier exits want_code."""
    err_path = os.path.join(work, "stderr")
    with open(err_path, "wb") as err:
        ref = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=env)
    with open(err_path, "rb") as f:
        err = f.read()
    if err or ref.returncode != want_code:
        fail("%s, stderr in a file: exit %d, stderr %r; want exit %d, nothing on stderr"
             % (label, ref.returncode, err[:300], want_code))
    got, _, code = on_terminal(argv, env, stdout_too=True)
    count, rest = progress_lines(got, total, label)
    if count == 0 or code != ref.returncode or rest != ERASE + ref.stdout:
        fail("%s, on a terminal: exit %d, %d progress lines, then %r; want exit %d, a line or more, then %r"
             % (label, code, count, rest[:300], ref.returncode, (ERASE + ref.stdout)[:300]))
    got, out, code = on_terminal(argv, env, stdout_too=False)
    count, rest = progress_lines(got, total, label)
    if count == 0 or rest != ERASE or out != ref.stdout or code != ref.returncode:
        fail("%s, stderr on a terminal: %d progress lines, then %r, stdout %r" % (label, count, rest, out))
    got, out, code = on_terminal(argv + ["--no-progress"], env, stdout_too=False)
    if got or out != ref.stdout or code != ref.returncode:
        fail("%s --no-progress: the terminal got %r, stdout %r" % (label, got[:300], out))
    print("%s: exit %d, %d progress lines, then %r" % (label, ref.returncode, count, ref.stdout.split(b"\n")[0][:60]))


def make_packs(build, work):
    """(genuine pack, the same with its last entry changed and re-signed,
    verifier key file, counts.entries)."""
    data = os.path.join(work, "data")
    ledger = Ledger(build, work, data, "--checkpoint-interval-ms", "20")
    try:
        receipts = "".join(json.dumps({"decision": "allow", "kind": "model_call", "occurred_at_us": T0 + i,
                                       "receipt_id": "r%d" % i, "route": "local/m", "run_id": "run-%d" % (i % 7),
                                       "step_id": "s", "team": "team-p"}) + "\n" for i in range(ENTRIES))
        ledger.ctl("append", "-", stdin=receipts)
        size = int(ledger.ctl("checkpoint", "--at-least", str(ENTRIES)).split("\n")[1])
        genuine = os.path.join(work, "seq.tar.gz")
        ledger.ctl("export", "--seq", "0:%d" % size, "--out", genuine)
        vkey = os.path.join(work, "vkey")
        with open(vkey, "w") as f:
            f.write(ledger.ctl("vkey"))
    finally:
        ledger.stop()
    files = t.read_pack(genuine)
    total = json.loads(dict(files)["manifest.json"])["counts"]["entries"]
    tampered = os.path.join(work, "tampered.tar.gz")
    edited = t.edited(files, "entries.jsonl", last_entry_changed)
    t.write_pack(t.resigned(edited, t.signer(os.path.join(data, "signing.key"))), tampered)
    return genuine, tampered, vkey, total


def last_entry_changed(data):
    """entries.jsonl with its last entry's route changed: still canonical,
    its leaf hash no longer the one proofs.jsonl names."""
    lines = data.split(b"\n")[:-1]
    changed = lines[-1].replace(b'"route":"local/m"', b'"route":"local/x"')
    if changed == lines[-1]:
        fail("the last entry has no route local/m: %r" % lines[-1])
    return b"".join(x + b"\n" for x in lines[:-1] + [changed])


def build_go_verifier(build, work):
    out = os.path.join(work, "ledger-verify-go")
    env = dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off", GOPROXY="off", GOFLAGS="",
               GOCACHE=os.path.join(build, "export", "verify", "go", "gocache"))
    subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.join(ROOT, "export", "verify", "go"), env=env,
                   check=True)
    return out


def main():
    build = os.path.abspath(sys.argv[1])
    env = dict(os.environ, LEDGER_PROGRESS_INTERVAL_MS="1")
    with tempfile.TemporaryDirectory(prefix="verifier-progress-") as work:
        lvg = build_go_verifier(build, work)
        genuine, tampered, vkey, total = make_packs(build, work)
        if total < ENTRIES:
            fail("the pack holds %d entries, want %d or more" % (total, ENTRIES))
        py = ["/usr/bin/python3", os.path.join(ROOT, "export", "verify", "python", "verify_pack.py")]
        for name, pack, want in (("genuine", genuine, 0), ("last entry changed", tampered, 1)):
            for label, argv in (("verify_pack.py", py + [pack, "--vkey", vkey]),
                                ("ledger-verify-go", [lvg, "--vkey", vkey, pack])):
                check_verifier("%s, %s" % (label, name), argv, total, want, work, env)


if __name__ == "__main__":
    main()
