"""Progress on long work (issue 38): ledgerctl export, ledgerctl verify,
ledger-verify and ledgerctl audit draw a progress line on stderr when it is
a terminal (a real pty here), in place ("\\r" TEXT ESC "[K", util/text/
progress.h), erase it before their result, and print nothing of the sort
when stderr is not a terminal or --no-progress is given.

Usage: progress_test.py BUILD_DIR"""
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger_testlib import fail, free_port  # noqa: E402

ENTRIES = 20000
ERASE = "\r\x1b[K"


def on_terminal(argv, env):
    """Runs argv with stdout and stderr on one pty: (exit code, what the
    terminal received, with its CR LF turned back into LF)."""
    master, terminal = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            proc.kill()
            fail("no output for 120 s from " + " ".join(argv))
        try:
            piece = os.read(master, 65536)
        except OSError:  # the pty's other side closed
            break
        if not piece:
            break
        out += piece
    os.close(master)
    return proc.wait(), out.decode().replace("\r\n", "\n")


def piped(argv, env):
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=env)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def expect_progress(what, out, verb, total, result):
    """Progress lines of `verb`, of `total` entries when the tool knows it
    before them (else the percent is of the work's own measure), redrawn in
    place, never going back; then the line erased, and `result` after it."""
    of = " of " + format(total, ",") if total is not None else ""
    line = re.compile(r"\r%s: ([0-9,]+)%s entries \(([0-9]+)%%\)(, [0-9,]+/s, [0-9]+ (s|min [0-9]+ s) left)?\x1b\[K"
                      % (verb, of))
    drawn = list(line.finditer(out))
    if not drawn:
        fail("%s: no progress line '%s: N%s entries (P%%)' in %r" % (what, verb, of, out[-400:]))
    counts = [(int(m.group(1).replace(",", "")), int(m.group(2))) for m in drawn]
    if counts != sorted(counts) or counts[-1][0] > ENTRIES or counts[-1][1] > 100:
        fail("%s: the counts go back or past the end: %s" % (what, counts))
    between = line.sub("", out[drawn[0].start():drawn[-1].end()])
    if between:
        fail("%s: something between the progress lines: %r" % (what, between[:400]))
    end = out.rfind(ERASE)
    if end < drawn[-1].end() - len("\x1b[K") or end == -1:
        fail("%s: the line is not erased after the last one drawn: %r" % (what, out[-400:]))
    if result not in out[end:]:
        fail("%s: %r does not follow the erased line: %r" % (what, result, out[end:][:400]))
    if out[:drawn[0].start()].strip():
        fail("%s: something before the progress line: %r" % (what, out[:drawn[0].start()]))
    print("ok: %s: %d progress lines, erased before %r" % (what, len(drawn), result))


def expect_silent(what, rc, stdout, stderr):
    if rc != 0:
        fail("%s: exit %d: %s" % (what, rc, stderr))
    if "\x1b" in stdout + stderr or "\r" in stdout + stderr or "entries (" in stderr:
        fail("%s: progress written where it should not be: stdout %r, stderr %r" % (what, stdout, stderr))
    print("ok: %s: no progress" % what)


def main():
    build = os.path.abspath(sys.argv[1])
    ctl = os.path.join(build, "cmd", "ledgerctl")
    work = tempfile.mkdtemp(prefix="progress-test-")
    env = dict(os.environ, LEDGER_PROGRESS_INTERVAL_MS="1")
    address = "127.0.0.1:%d" % free_port()
    data = os.path.join(work, "data")
    log = open(os.path.join(work, "ledgerd.log"), "wb")
    proc = subprocess.Popen([os.path.join(build, "cmd", "ledgerd"), "--data", data, "--listen", address,
                             "--http-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "50"],
                            stdout=subprocess.PIPE, stderr=log)
    try:
        if not proc.stdout.readline().decode().startswith("listening on"):
            fail("ledgerd did not start: " + open(log.name).read())
        receipts = os.path.join(work, "receipts.jsonl")
        with open(receipts, "w") as f:
            for i in range(ENTRIES):
                f.write(json.dumps({"receipt_id": "r-%d" % i, "kind": "agent_start", "team": "team-a",
                                    "run_id": "run-1", "step_id": "s%d" % i, "occurred_at_us": 1767225600000000 + i,
                                    "decision": "allow", "timeout_ms": 600000}) + "\n")
        subprocess.run([ctl, "--server", address, "append", receipts], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([ctl, "--server", address, "checkpoint", "--at-least", str(ENTRIES)], check=True,
                       stdout=subprocess.DEVNULL)
        vkey = os.path.join(work, "vkey")
        with open(vkey, "w") as f:
            subprocess.run([ctl, "--server", address, "vkey"], check=True, stdout=f)
        pack = os.path.join(work, "run.tar.gz")

        export = [ctl, "--server", address, "export", "--run", "team-a/run-1", "--out", pack]
        rc, out = on_terminal(export, env)
        if rc != 0:
            fail("export on a terminal: exit %d: %s" % (rc, out))
        expect_progress("ledgerctl export", out, "exporting", ENTRIES, "wrote " + pack)
        expect_silent("ledgerctl export, piped", *piped(export, env))
        rc, out = on_terminal(export + ["--no-progress"], env)
        if rc != 0 or "\x1b" in out:
            fail("ledgerctl export --no-progress on a terminal: exit %d, %r" % (rc, out))

        for name, argv in (("ledger-verify", [os.path.join(build, "cmd", "ledger-verify"), pack, "--vkey", vkey]),
                           ("ledgerctl verify", [ctl, "verify", pack, "--vkey", vkey])):
            rc, out = on_terminal(argv, env)
            if rc != 0:
                fail("%s on a terminal: exit %d: %s" % (name, rc, out))
            # The count of entries is in the manifest, after them: the
            # percent is of the pack's bytes read.
            expect_progress(name, out, "verifying", None, "OK")
            expect_silent(name + ", piped", *piped(argv, env))
            rc, out = on_terminal(argv + ["--no-progress"], env)
            if rc != 0 or "\x1b" in out or "verifying:" in out:
                fail("%s --no-progress on a terminal: exit %d, %r" % (name, rc, out))
            print("ok: %s --no-progress: no progress" % name)
    finally:
        proc.terminate()
        proc.wait()

    audit = [ctl, "audit", "--data", data]
    rc, out = on_terminal(audit, env)
    if rc != 0:
        fail("ledgerctl audit on a terminal: exit %d: %s" % (rc, out))
    size = int(re.search(r"\b([0-9]+) entries", out[out.rfind(ERASE):]).group(1))
    expect_progress("ledgerctl audit", out, "auditing", size, "entries")
    expect_silent("ledgerctl audit, piped", *piped(audit, env))
    shutil.rmtree(work)
    print("PASS")


if __name__ == "__main__":
    main()
