#!/usr/bin/env python3
"""RFC 3161 time-stamps of checkpoint-time notes (CONTRACT section 5e)
through a real ledgerd and a real TSA on loopback (`openssl ts -reply`,
tests/tsa_testlib.py).

- ledgerd --tsa stamps its time notes: `ledgerctl checkpoint --time-note`
  gives the note with its time-stamp line, and `openssl ts -verify` (a tool
  we did not write) accepts the token over the note's text.
- A run pack exported with --tsa-required carries it: `ledgerctl verify`,
  `ledger-verify`, `verify_pack.py` and `ledger-verify-go` given --tsa-root
  print "stamped by TSA ... at ..."; without --tsa-root they pass and say
  the token was not checked; given another TSA's root they refuse it.
- Packs forged by the ledger's operator (re-signed with the ledger's key)
  are refused by all four with the contract's words: a note backdated and
  stamped now (the ledger's clock set back), a note dated after its stamp,
  a token of another TSA, a stale token (an earlier note's), two stamp
  lines, the line removed (with --tsa-root).
- The TSA down: appends go on; an export with --tsa-required fails
  UNAVAILABLE naming the TSA; back up, the export passes.
- A ledgerd whose --tsa-ca is not the TSA's keeps no token (it would be
  refused) and says why in its log.
- Restarted with the TSA down, the ledger serves the kept line again.

Usage: tsa_test.py BUILD_DIR"""
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ledger_testlib import fail  # noqa: E402
import pack_tamper_test as t  # noqa: E402
from policy_pack_test import build_go_verifier  # noqa: E402
from rotation_test import PROCESSES, Process, receipts  # noqa: E402
from tsa_testlib import TsaServer, make_tsa, stamp, stamp_id, stamp_line  # noqa: E402

ROOT = os.path.dirname(HERE)
ORIGIN = "tsa.test/ledger"
NAMES = ["ledgerctl verify", "ledger-verify", "verify_pack.py", "ledger-verify-go"]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


class Ledger:
    def __init__(self, build, work, name, extra=()):
        self.build, self.data = build, os.path.join(work, name)
        self.process = Process([os.path.join(build, "cmd", "ledgerd"), "--data", self.data, "--origin", ORIGIN,
                                "--listen", "127.0.0.1:0", "--http-listen", "", "--checkpoint-interval-ms", "50"]
                               + list(extra), os.path.join(work, "%s.%d.out" % (name, time.monotonic_ns())))
        if not self.process.line:
            fail("ledgerd did not start: " + self.process.text())
        self.addr = self.process.line.split()[-1]

    def ctl(self, *args, stdin=None, check=True):
        r = run([os.path.join(self.build, "cmd", "ledgerctl"), "--server", self.addr] + list(args), input=stdin)
        if check and r.returncode != 0:
            fail("ledgerctl %s: %s" % (" ".join(args), r.stderr))
        return r.stdout if check else r


def stamps(note):
    """The tokens of a note's time-stamp lines (section 5e's stamp ID rule)."""
    out = []
    for line in note.split("\n\n", 1)[1].splitlines():
        _, name, data = line.split(" ", 2)
        raw = base64.b64decode(data)
        if len(raw) >= 5 and raw[:4] == stamp_id(name):
            out.append(raw[4:])
    return out


def text_of(note):
    return note.split("\n\n", 1)[0] + "\n"


def wait_stamped(ledger, size):
    for _ in range(200):
        note = ledger.ctl("checkpoint", "--time-note")
        if stamps(note) and int(text_of(note).splitlines()[2]) >= size:
            return note
        time.sleep(0.05)
    fail("no time-stamp line on the time note after 10 s")


def verify(build, go, pack, *args):
    return [run(cmd + [pack, "--no-progress"] + list(args))
            for cmd in ([os.path.join(build, "cmd", "ledgerctl"), "verify"],
                        [os.path.join(build, "cmd", "ledger-verify")],
                        ["/usr/bin/python3", os.path.join(ROOT, "export", "verify", "python", "verify_pack.py")],
                        [go])]


def expect(results, code, words, case):
    for name, r in zip(NAMES, results):
        said = r.stdout + r.stderr
        if r.returncode != code or words not in said:
            fail("%s, %s: exit %d, want %d with %r:\n%s" % (case, name, r.returncode, code, words, said))
    print("ok: %s: all four verifiers%s" % (case, " refuse it" if code else " pass"))


def openssl_verify(work, note, token, root):
    """`openssl ts -verify` of the token over the note's text, as an auditor checks it by hand."""
    data, tok = os.path.join(work, "text"), os.path.join(work, "token.tst")
    open(data, "wb").write(text_of(note).encode())
    open(tok, "wb").write(token)
    return run(["openssl", "ts", "-verify", "-data", data, "-in", tok, "-token_in", "-CAfile", root])


def time_note_with(sign, note, time_us, line):
    """The note's text with its time replaced, signed by the ledger's key, then `line`."""
    lines = text_of(note).splitlines()
    lines[-1] = "time %d" % time_us
    return sign(("\n".join(lines) + "\n").encode()).decode() + line


def main():
    build = os.path.abspath(sys.argv[1])
    go = build_go_verifier(build)
    work = tempfile.mkdtemp(prefix="tsa-")
    servers = []
    try:
        tsa_dir, other_dir = os.path.join(work, "tsa"), os.path.join(work, "other")
        make_tsa(tsa_dir, "Loopback TSA")
        make_tsa(other_dir, "Other TSA")
        root, other_root = os.path.join(tsa_dir, "root.pem"), os.path.join(other_dir, "root.pem")
        tsa = TsaServer(tsa_dir)
        servers.append(tsa)
        flags = ["--tsa", tsa.url, "--tsa-ca", root, "--tsa-required", "--tsa-wait-ms", "5000", "--tsa-max-delay", "2"]
        ledger = Ledger(build, work, "data", flags)
        ledger.ctl("append", "-", stdin=receipts(0, 20))
        first_note = wait_stamped(ledger, 20)
        token = stamps(first_note)[0]
        checked = openssl_verify(work, first_note, token, root)
        if checked.returncode != 0 or "Verification: OK" not in checked.stdout:
            fail("openssl ts -verify of the ledger's token: " + checked.stdout + checked.stderr)
        print("ok: the time note carries a time-stamp line; openssl ts -verify accepts its token over the note's text")

        # run-0's entries, then, 3 s later, more of run-1's: the pack of
        # run-0 at the later checkpoint has entries older than its note by
        # more than the bound, so a note backdated within them is possible.
        time.sleep(3)
        ledger.ctl("append", "-", stdin=receipts(1001, 10).replace('"run-0"', '"run-1"'))
        ledger.ctl("checkpoint", "--at-least", "30", "--timeout-ms", "10000")
        pack = os.path.join(work, "run0.tar.gz")
        ledger.ctl("export", "--run", "team-a/run-0", "--out", pack)
        vkey = os.path.join(work, "ledger.vkey")
        open(vkey, "w").write(ledger.ctl("vkey").strip() + "\n")
        files = t.read_pack(pack)
        note = dict(files)["checkpoint-time"].decode()
        if len(stamps(note)) != 1:
            fail("the pack's checkpoint-time carries %d time-stamp lines, want 1:\n%s" % (len(stamps(note)), note))
        expect(verify(build, go, pack, "--vkey", vkey, "--tsa-root", root, "--tsa-max-delay", "2"), 0,
               "stamped by TSA Loopback TSA at ", "the pack, --tsa-root the TSA's")
        expect(verify(build, go, pack, "--vkey", vkey), 0, "time stamp: present, not checked (no --tsa-root)",
               "the pack, no --tsa-root")
        expect(verify(build, go, pack, "--vkey", vkey, "--tsa-root", other_root), 1,
               "time stamp: not signed by a TSA of --tsa-root", "the pack, --tsa-root another TSA's")

        # Forged by the ledger's operator: notes re-signed with its key, the
        # manifest re-signed over them.
        sign = t.signer(os.path.join(ledger.data, "signing.key"))
        note_time = int(text_of(note).splitlines()[-1].split()[1])

        def forged(name, time_us, make_line):
            """The pack with its time note replaced, report.html rebuilt
            from it (tests/util/pack_report) and the manifest re-signed."""
            body = time_note_with(sign, note, time_us, "")
            line = make_line(text_of(body))
            edited = t.rebuilt_report(t.edited(files, "checkpoint-time", lambda _: (body + line).encode()), build)
            path = os.path.join(work, name + ".tar.gz")
            t.write_pack(t.resigned(edited, sign), path)
            return path

        def stamped_now(text):
            return stamp_line(stamp(tsa_dir, text)[0])

        back = forged("backdated", note_time - 2_500_000, stamped_now)
        expect(verify(build, go, back, "--vkey", vkey, "--tsa-root", root, "--tsa-max-delay", "2"), 1,
               "stamped late, or backdated", "a note backdated 2.5 s (the ledger's clock set back), stamped now")
        ahead = forged("ahead", note_time + 3_600_000_000, stamped_now)
        expect(verify(build, go, ahead, "--vkey", vkey, "--tsa-root", root), 1, "after its stamp's time",
               "a note dated an hour ahead of its stamp")
        other = forged("other-tsa", note_time, lambda text: stamp_line(stamp(other_dir, text)[0]))
        expect(verify(build, go, other, "--vkey", vkey, "--tsa-root", root), 1,
               "time stamp: not signed by a TSA of --tsa-root", "a token of another TSA")
        stale = forged("stale", note_time, lambda text: stamp_line(stamps(first_note)[0]))
        expect(verify(build, go, stale, "--vkey", vkey, "--tsa-root", root), 1, "time stamp: it stamps another text",
               "a stale token (an earlier note's)")
        twice = forged("twice", note_time, lambda text: stamped_now(text) * 2)
        expect(verify(build, go, twice, "--vkey", vkey, "--tsa-root", root), 1,
               "time stamp: more than one time-stamp line", "two time-stamp lines")
        bare = forged("bare", note_time, lambda text: "")
        expect(verify(build, go, bare, "--vkey", vkey, "--tsa-root", root), 1, "time stamp: missing",
               "the stamp line removed, with --tsa-root")
        expect(verify(build, go, bare, "--vkey", vkey), 0, "OK", "the stamp line removed, no --tsa-root")
        # The page of format 7 says what stamped the note: the line removed
        # and the page left saying it, the two verifiers that rebuild the
        # page refuse it (the other two check its digest alone).
        stale_page = os.path.join(work, "stale-page.tar.gz")
        t.write_pack(t.resigned(t.edited(files, "checkpoint-time",
                                         lambda data: data.replace(stamp_line(stamps(note)[0]).encode(), b"")), sign),
                     stale_page)
        for name, r in zip(NAMES[:2], verify(build, go, stale_page, "--vkey", vkey)[:2]):
            if r.returncode != 1 or "FAILED: report.html: differs from the report rebuilt" not in r.stdout:
                fail("the stamp line removed, the page left, %s: exit %d: %s" % (name, r.returncode, r.stdout))
        print("ok: the stamp line removed and report.html left saying it: ledgerctl verify and ledger-verify refuse "
              "the page")

        # The TSA down: appends go on, an export that needs a stamp fails.
        tsa.down = True
        before = tsa.requests
        ledger.ctl("append", "-", stdin=receipts(2001, 5).replace('"run-0"', '"run-2"').replace('"run-1"', '"run-2"'))
        ledger.ctl("checkpoint", "--at-least", "35", "--timeout-ms", "10000")
        r = ledger.ctl("export", "--run", "team-a/run-2", "--out", os.path.join(work, "down.tar.gz"), check=False)
        if r.returncode == 0 or "no time-stamp from TSA " + tsa.url not in r.stderr:
            fail("an export with the TSA down: exit %d: %s" % (r.returncode, r.stderr))
        if tsa.requests == before:
            fail("the ledger did not ask the TSA for the export's note")
        print("ok: the TSA down, appends are acknowledged and an export needing a stamp fails naming the TSA")
        # The note signed while the TSA was down is now older than the
        # bound: it is never stamped; the next note is.
        tsa.down = False
        ledger.ctl("append", "-", stdin=receipts(3001, 1).replace('"run-1"', '"run-2"').replace('"run-0"', '"run-2"'))
        ledger.ctl("checkpoint", "--at-least", "36", "--timeout-ms", "10000")
        ledger.ctl("export", "--run", "team-a/run-2", "--out", os.path.join(work, "up.tar.gz"))
        expect(verify(build, go, os.path.join(work, "up.tar.gz"), "--vkey", vkey, "--tsa-root", root), 0,
               "stamped by TSA Loopback TSA at ", "the TSA back, a pack exported")

        # A ledger whose --tsa-ca is another TSA's: it keeps no token.
        wrong = Ledger(build, work, "wrong", ["--tsa", tsa.url, "--tsa-ca", other_root])
        wrong.ctl("append", "-", stdin=receipts(0, 3))
        time.sleep(1.5)
        if stamps(wrong.ctl("checkpoint", "--time-note")):
            fail("a ledger whose --tsa-ca is not the TSA's served a token")
        if "not signed by a TSA of --tsa-root" not in wrong.process.text():
            fail("the ledger did not log why it kept no token:\n" + wrong.process.text())
        wrong.process.stop()
        print("ok: a ledger whose --tsa-ca is not the TSA's keeps no token and logs why")

        # Restarted, the TSA down: the kept line is served with the note.
        latest = wait_stamped(ledger, 0)
        ledger.process.stop()
        tsa.down = True
        ledger = Ledger(build, work, "data", ["--tsa", tsa.url, "--tsa-ca", root])
        again = ledger.ctl("checkpoint", "--time-note")
        if text_of(again) != text_of(latest) or stamps(again) != stamps(latest):
            fail("after a restart, the time note's stamp:\n%s\nwant\n%s" % (again, latest))
        print("ok: restarted with the TSA down, the kept stamp is served with its note")
    finally:
        for p in PROCESSES:
            try:
                p.stop()
            except Exception:
                pass
        for s in servers:
            s.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
