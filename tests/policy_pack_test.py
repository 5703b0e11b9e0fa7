#!/usr/bin/env python3
"""Witnessed and monitored packs under an auditor's tlog-policy (CONTRACT.md
section 7, "Witnessed packs" and "Monitored packs"), through both independent
verifiers: export/verify/python/verify_pack.py and ledger-verify-go
(export/verify/go).

A real ledgerd with --witness-policy and --witness-quorum-required, and two
real ledger-witness processes (A and B), exports a run pack whose checkpoint
carries both cosignatures. The other packs are made from it as an operator
holding the ledger's key could (the checkpoint's cosignature lines changed,
the manifest re-signed with the data directory's signing.key); cosignatures
of witnesses that do not run (C, an unknown U) are made here with
`cryptography` from c2sp.org/tlog-cosignature. Monitors' map cosignatures
(CONTRACT section 5c) of the pack's checkpoint-time note are made here too,
by two monitors M1 and M2 and by a forger holding another key under M2's
name and key ID. Each case runs through both verifiers, which must give the
same verdict: the exact `witnessed:` and `monitored:` lines after the OK
line, or the exact FAILED line, or exit 2 naming the policy's line; and,
where it can be, through `ledgerctl verify`, the ledger's own.

Usage: policy_pack_test.py BUILD_DIR"""
import base64
import hashlib
import os
import struct
import subprocess
import sys
import tempfile
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pack_tamper_test as pt  # noqa: E402
import tlog_spec as t  # noqa: E402
from ledger_testlib import fail  # noqa: E402
from witnessed_ledger_test import ORIGIN, Ledger, receipts, start_witnesses, write_log_key  # noqa: E402

ROOT = os.path.dirname(HERE)


class Cosigner:
    """A witness key of cosignature/v1 (type 0x04), made here."""

    def __init__(self, name):
        self.name = name
        self.key = Ed25519PrivateKey.generate()
        self.pub = t.raw_public(self.key)
        self.key_id = hashlib.sha256(name.encode() + b"\n\x04" + self.pub).digest()[:4]

    def vkey(self):
        return "%s+%s+%s" % (self.name, self.key_id.hex(), t.b64(b"\x04" + self.pub))

    def line(self, text, when, key_id=None):
        sig = self.key.sign(("cosignature/v1\ntime %d\n" % when + text).encode())
        return "%s %s %s\n" % (t.EM_DASH, self.name, t.b64((key_id or self.key_id) + struct.pack(">Q", when) + sig))


class MapCosigner:
    """A monitor key of map-cosignature/v1 (type 0xff, CONTRACT section 5c),
    made here."""
    TYPE = b"\xffevidence-ledger/map-cosignature/v1"

    def __init__(self, name):
        self.name = name
        self.key = Ed25519PrivateKey.generate()
        self.pub = t.raw_public(self.key)
        self.key_id = hashlib.sha256(name.encode() + b"\n" + self.TYPE + self.pub).digest()[:4]

    def vkey(self):
        return "%s+%s+%s" % (self.name, self.key_id.hex(), t.b64(self.TYPE + self.pub))

    def name_id(self):
        return "%s+%s" % (self.name, self.key_id.hex())

    def line(self, text, when, key_id=None):
        sig = self.key.sign(("evidence-ledger/map-cosignature/v1\ntime %d\n" % when + text).encode())
        return "%s %s %s\n" % (t.EM_DASH, self.name, t.b64((key_id or self.key_id) + struct.pack(">Q", when) + sig))


def build_go_verifier(build):
    out = os.path.join(build, "tests", "policy_pack", "ledger-verify-go")
    env = dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off", GOPROXY="off", GOFLAGS="",
               GOCACHE=os.path.join(build, "export", "verify", "go", "gocache"))
    subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.join(ROOT, "export", "verify", "go"), env=env,
                   check=True)
    return out


def iso(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def witnessed(quorum, cosigners):
    """The line after the OK line: cosigners is [(policy name, time)] in
    policy order."""
    if not cosigners:
        return "witnessed: quorum %s met; no cosignature" % quorum
    return "witnessed: quorum %s met; cosigned by %s" % (
        quorum, ", ".join("%s at %s (%d)" % (name, iso(when), when) for name, when in cosigners))


def monitored(quorum, monitors, cosigners):
    """The line after the witnessed: line: cosigners is [(policy name,
    time)] in policy order."""
    return "monitored: monitor-quorum %d of %d met; map cosigned by %s" % (
        quorum, monitors, ", ".join("%s at %s (%d)" % (name, iso(when), when) for name, when in cosigners))


def with_checkpoint(files, checkpoint, sign):
    """The pack with another checkpoint file, its manifest re-signed."""
    return with_file(files, "checkpoint", checkpoint, sign)


def with_file(files, name, data, sign):
    """The pack with another `name` file, its manifest re-signed; a new
    checkpoint-time with report.html rebuilt from it (format 7's page lists
    the note's lines)."""
    edited = pt.edited(files, name, lambda _: data.encode())
    if name == "checkpoint-time":
        edited = pt.rebuilt_report(edited, BUILD[0])
    return pt.resigned(edited, sign)


# The build tree (main's argument), for tests/util/pack_report.
BUILD = []


def main():
    build = os.path.abspath(sys.argv[1])
    BUILD.append(build)
    lvg = build_go_verifier(build)
    verify_py = os.path.join(ROOT, "export", "verify", "python", "verify_pack.py")
    with tempfile.TemporaryDirectory() as work:
        # A key whose base64 holds a '+': a vkey splits at its first two.
        seed = next(x for x in iter(lambda: os.urandom(32), None) if "+" in t.LogKey(ORIGIN, x).vkey().split("+", 2)[2])
        log_vkey = write_log_key(os.path.join(work, "data"), seed)
        vkey_file = os.path.join(work, "log.vkey")
        with open(vkey_file, "w") as f:
            f.write(log_vkey + "\n")
        vkeys, procs = start_witnesses(build, work, ("A", "B"), vkey_file)
        ledger_policy = os.path.join(work, "ledger.policy")
        with open(ledger_policy, "w") as f:
            f.write("log %s\n" % log_vkey)
            for name in ("A", "B"):
                f.write("witness %s %s http://%s\n" % (name, vkeys[name], procs[name].address))
            f.write("group both all A B\nquorum both\n")
        ledger = Ledger(build, work, ledger_policy, extra=("--witness-quorum-required",))
        pack = os.path.join(work, "real.tar.gz")
        try:
            ledger.ctl("append", "-", stdin=receipts(0, 20))
            ledger.ctl("checkpoint", "--at-least", "20", "--cosignatures", "2", "--timeout-ms", "20000")
            ledger.ctl("export", "--run", "team-a/run-1", "--out", pack)
        finally:
            ledger.stop()
            for p in procs.values():
                p.kill()
        print("ok: a real ledgerd with two real witnesses exported %s" % pack)
        check_cases(work, pack, vkey_file, log_vkey, vkeys, lvg, verify_py, os.path.join(build, "cmd", "ledgerctl"))


def check_cases(work, pack, vkey_file, log_vkey, vkeys, lvg, verify_py, ledgerctl):
    sign = pt.signer(os.path.join(work, "data", "signing.key"))
    files = pt.read_pack(pack)
    note = dict(files)["checkpoint"].decode()
    text = t.open_note(log_vkey, note)
    lines = t.signature_lines(note)
    log_line, cosigned = lines[0], lines[1:]
    times = {}
    for name in ("A", "B"):
        mine = [x for x in cosigned if x.startswith(t.EM_DASH + " " + vkeys[name].split("+")[0] + " ")]
        if len(mine) != 1:
            fail("the exported pack's checkpoint has no single cosignature of %s: %r" % (name, note))
        times[name] = t.verify_cosignature(vkeys[name], text, mine[0])
    in_order = [x for name in ("A", "B") for x in cosigned if x.startswith(t.EM_DASH + " witness-%s" % name.lower())]
    if cosigned != in_order:
        fail("the cosignature lines are not in the policy's order: %r" % cosigned)
    print("ok: the pack's checkpoint is cosigned by A at %d and B at %d, in the policy's order"
          % (times["A"], times["B"]))

    c, u, forger = Cosigner("witness-c.example"), Cosigner("unknown.example"), Cosigner("witness-b.example")
    vkeys = dict(vkeys, C=c.vkey())
    b_name, b_blob = cosigned[1].split()[1], base64.b64decode(cosigned[1].split()[2])
    b_id = b_blob[:4]
    retimed_b = "%s %s %s\n" % (t.EM_DASH, b_name, t.b64(b_id + struct.pack(">Q", times["B"] + 1) + b_blob[12:]))
    now = int(time.time())
    packs = {
        "genuine": files,
        "B's line removed": with_checkpoint(files, text + "\n" + log_line + cosigned[0], sign),
        "no cosignature": with_checkpoint(files, text + "\n" + log_line, sign),
        "C's line added": with_checkpoint(files, note + c.line(text, now), sign),
        "U's line added": with_checkpoint(files, note + u.line(text, now + 1), sign),
        "B's line forged": with_checkpoint(files, text + "\n" + log_line + cosigned[0] +
                                           forger.line(text, now, key_id=b_id), sign),
        "B's line and a forged one": with_checkpoint(files, note + forger.line(text, now, key_id=b_id), sign),
        "B's line with another time": with_checkpoint(files, text + "\n" + log_line + cosigned[0] + retimed_b, sign),
    }

    def pack_path(name):
        return pack if name == "genuine" else os.path.join(work, name.replace(" ", "_").replace("'", "") + ".tar.gz")

    def policy(name, text):
        path = os.path.join(work, name + ".policy")
        with open(path, "w") as f:
            f.write(text)
        return path

    wa, wb = "witness A %s\n" % vkeys["A"], "witness B %s\n" % vkeys["B"]
    both = policy("both", "# an auditor's policy\nlog %s\n%s%sgroup both all A B\nquorum both\n"
                  % (log_vkey, wa, wb))
    three = policy("three", "log %s\n%s%switness C %s\ngroup all3 all A B C\nquorum all3\n"
                   % (log_vkey, wa, wb, vkeys["C"]))
    two_of_three = policy("two-of-three", "log %s\n%s%switness C %s\ngroup X 2 A B C\ngroup top any X\nquorum top\n"
                          % (log_vkey, wa, wb, vkeys["C"]))
    only_c = policy("only-c", "log %s\n%s%switness C %s\nquorum C\n" % (log_vkey, wa, wb, vkeys["C"]))
    none = policy("none", "log %s\n%s%squorum none\n" % (log_vkey, wa, wb))
    other = policy("other-log", "log %s\n%s%sgroup both all A B\nquorum both\n" % (t.LogKey(ORIGIN).vkey(), wa, wb))
    no_log = policy("no-log", "log %s\n%s%sgroup both all A B\nquorum both\n"
                    % (t.LogKey("elsewhere.example/log").vkey(), wa, wb))
    undefined = policy("undefined", "log %s\n%sgroup both all A B\nquorum both\n" % (log_vkey, wa))
    two_quorums = policy("two-quorums", "log %s\n%s\nquorum A\n  # a comment\nquorum A\n" % (log_vkey, wa))
    bad_threshold = policy("bad-threshold", "log %s\n%s%sgroup both 3 A B\nquorum both\n" % (log_vkey, wa, wb))
    log_as_witness = policy("log-as-witness", "log %s\nwitness A %s\nquorum A\n" % (log_vkey, log_vkey))

    # The rules of tlog-policy each implementation applies alike (exit 2).
    syntax = [
        ("log %s\r\nquorum none\n" % log_vkey,
         "line 1: byte 0x0d: only tab, newline, printable ASCII and bytes above 0x7f are allowed"),
        (wa + "group A any A\nquorum A\n", "line 2: 'A' is already defined on line 1"),
        (wa + "group G any G\nquorum G\n", "line 2: member 'G' is not defined on an earlier line"),
        (wa + "group G any none\nquorum G\n", "line 2: 'none' cannot be a group member"),
        (wa + "group G 0 A\nquorum G\n", "line 2: threshold must be all, any or a decimal k with 1 <= k <= 1"),
        (wa + "group G any A A\nquorum G\n", "line 2: member 'A' is listed twice"),
        (wa + "witness none %s\nquorum none\n" % vkeys["B"], "line 2: 'none' is reserved and cannot name a witness"),
        (wa + "witness C %s\nquorum none\n" % vkeys["A"], "line 2: this witness's key is listed twice"),
        ("log %s\nlog %s\nquorum none\n" % (log_vkey, log_vkey), "line 2: this log's key is listed twice"),
        ("log %s+x\nquorum none\n" % log_vkey, "line 1: log verifier key: key data must be base64 of 0x01 (Ed25519) "
                                                "and 32 bytes"),
        ("witnesses A %s\nquorum none\n" % vkeys["A"],
         "line 1: unknown keyword 'witnesses' (want log, witness, group, quorum, monitor or "
         "monitor-quorum)"),
        ("quorum B\n", "line 1: quorum 'B' is not defined on an earlier line"),
        (wa, "no quorum line (use 'quorum none' for none)"),
    ]
    vkey = ["--vkey", vkey_file]
    ab = [("A", times["A"]), ("B", times["B"])]
    # (case, pack, arguments, exit code, the witnessed line (and the
    # monitored: line, a list), the FAILED message or the usage error)
    cases = [
        ("the genuine pack without --policy", "genuine", vkey, 0, None),
        ("the genuine pack with U's line, without --policy", "U's line added", vkey, 0, None),
        ("B's line removed, without --policy: the operator's pack verifies", "B's line removed", vkey, 0, None),
        ("quorum met", "genuine", vkey + ["--policy", both], 0, witnessed("both", ab)),
        ("quorum met, the key taken from the policy (no --vkey)", "genuine", ["--policy", both], 0,
         witnessed("both", ab)),
        ("a policy witness missing (C never cosigned)", "genuine", vkey + ["--policy", three], 1,
         "checkpoint: the policy's quorum all3 is not met: no cosignature from C; cosigned by A, B"),
        ("C's line made with cryptography meets the quorum", "C's line added", vkey + ["--policy", three], 0,
         witnessed("all3", ab + [("C", now)])),
        ("two of three through nested groups", "genuine", vkey + ["--policy", two_of_three], 0,
         witnessed("top", ab)),
        ("the quorum a single witness, who never cosigned", "genuine", vkey + ["--policy", only_c], 1,
         "checkpoint: the policy's quorum C is not met: no cosignature from C; cosigned by A, B"),
        ("the quorum a single witness, who cosigned", "C's line added", vkey + ["--policy", only_c], 0,
         witnessed("C", ab + [("C", now)])),
        ("B's line removed by the operator", "B's line removed", vkey + ["--policy", both], 1,
         "checkpoint: the policy's quorum both is not met: no cosignature from B; cosigned by A"),
        ("every cosignature removed", "no cosignature", vkey + ["--policy", both], 1,
         "checkpoint: the policy's quorum both is not met: no cosignature from A, B"),
        ("B's line forged with another key under B's name and key ID", "B's line forged", vkey + ["--policy", both],
         1, "checkpoint: the cosignature of witness B does not verify"),
        ("B's genuine line, and a forged one under B's name and key ID", "B's line and a forged one",
         vkey + ["--policy", both], 1, "checkpoint: the cosignature of witness B does not verify"),
        ("B's line with its time changed", "B's line with another time", vkey + ["--policy", both], 1,
         "checkpoint: the cosignature of witness B does not verify"),
        ("a line of an unknown key is ignored", "U's line added", vkey + ["--policy", both], 0,
         witnessed("both", ab)),
        ("--trust-pack-key: the pack's key, a log of the policy", "genuine", ["--trust-pack-key", "--policy", both],
         0, witnessed("both", ab)),
        ("--trust-pack-key: the pack's key, not a log of the policy", "genuine",
         ["--trust-pack-key", "--policy", other], 1,
         "checkpoint: the ledger's key %s is not a log of the policy" % "+".join(log_vkey.split("+")[:2])),
        ("quorum none, cosigned", "genuine", vkey + ["--policy", none], 0, witnessed("none", ab)),
        ("quorum none, no cosignature", "no cosignature", vkey + ["--policy", none], 0, witnessed("none", [])),
        ("--vkey not a log of the policy", "genuine", vkey + ["--policy", other], 1,
         "checkpoint: the ledger's key %s is not a log of the policy" % "+".join(log_vkey.split("+")[:2])),
        ("no --vkey and no log of the policy named the origin", "genuine", ["--policy", no_log], 2,
         "--policy: no log of the policy is named %s" % ORIGIN),
        ("a group naming a witness not defined", "genuine", vkey + ["--policy", undefined], 2,
         "--policy: line 3: member 'B' is not defined on an earlier line"),
        ("two quorum lines", "genuine", vkey + ["--policy", two_quorums], 2,
         "--policy: line 6: a second quorum line"),
        ("a threshold above the members", "genuine", vkey + ["--policy", bad_threshold], 2,
         "--policy: line 4: threshold must be all, any or a decimal k with 1 <= k <= 2"),
        ("a log's key given as a witness's", "genuine", vkey + ["--policy", log_as_witness], 2,
         "--policy: line 2: witness verifier key: key data must be base64 of 0x04 (cosignature/v1) and 32 bytes"),
    ]
    for n, (text, error) in enumerate(syntax):
        cases.append(("policy rule %d" % n, "genuine", vkey + ["--policy", policy("syntax-%d" % n, text)], 2,
                      "--policy: " + error))
    # ledgerctl verify, the ledger's own verifier, is checked beside them
    # where it can be: it rebuilds report.html, which shows the checkpoint
    # file (not the checkpoint-time file), so a pack whose cosignature lines
    # were edited fails there after the checkpoint's checks; and it words
    # some policy rules otherwise.
    worded_otherwise = {"policy rule %d" % n for n in (0, 1, 3, 9, 10, 12)}
    # ledgerctl names the key NAME+ID cut at the vkey's last '+', not its second.
    worded_otherwise |= {"--vkey not a log of the policy", "--trust-pack-key: the pack's key, not a log of the policy"}
    monitor_packs, monitor_cases, worded = monitored_packs(files, sign, log_vkey, vkeys, ab, vkey, policy)
    packs.update(monitor_packs)
    cases += monitor_cases
    worded_otherwise |= worded
    for name, contents in packs.items():
        if contents is not files:
            pt.write_pack(contents, pack_path(name))
    # The packs whose checkpoint file is the genuine one: report.html holds.
    genuine_checkpoint = dict(files)["checkpoint"]
    same_report = {name for name, contents in packs.items() if dict(contents)["checkpoint"] == genuine_checkpoint}
    run_cases(cases, pack_path, same_report, worded_otherwise, lvg, verify_py, ledgerctl)


def run_cases(cases, pack_path, same_report, worded_otherwise, lvg, verify_py, ledgerctl):
    """Each case through verify_pack.py and ledger-verify-go, and through
    ledgerctl verify on a pack of the genuine report (same_report) or a
    failure, unless it words the case otherwise; fail() unless every
    verifier gives its verdict."""
    failures = 0
    runs = 0
    for case, name, args, code, want in cases:
        verifiers = [("verify_pack.py", ["/usr/bin/python3", verify_py], "OK: ", "FAILED: "),
                     ("ledger-verify-go", [lvg], "OK ", "FAIL: ")]
        if (name in same_report or code == 1) and case not in worded_otherwise:
            verifiers.append(("ledgerctl verify", [ledgerctl, "verify"], "OK: ", "FAILED: "))
        for verifier, cmd, ok_prefix, fail_prefix in verifiers:
            runs += 1
            r = subprocess.run(cmd + [pack_path(name)] + args, capture_output=True, text=True, timeout=120)
            out = r.stdout.splitlines()
            at = next((k for k, x in enumerate(out) if x.startswith(ok_prefix)), None)  # after a WARNING line
            if code == 0:
                want_after = [] if want is None else [want] if isinstance(want, str) else want
                lines_after = [x for x in out if x.startswith(("witnessed: ", "monitored: "))]
                good = (r.returncode == 0 and at is not None and lines_after == want_after and
                        out[at + 1:at + 1 + len(want_after)] == want_after)
            elif code == 1:
                good = (r.returncode == 1 and out[-1:] == [fail_prefix + want] and
                        all(x.startswith("WARNING: --trust-pack-key") for x in out[:-1]))
            else:
                good = r.returncode == 2 and want in r.stderr and not r.stdout.startswith(ok_prefix)
            if not good:
                failures += 1
                print("FAIL: %s: %s: want exit %d %r, got exit %d stdout %r stderr %r"
                      % (case, verifier, code, want, r.returncode, r.stdout, r.stderr[-400:]))
            else:
                print("ok: %s: %s: %s" % (case, verifier, (out[at + 1:at + 3] if code == 0 and want else
                                                            (out[-1] if out else r.stderr.strip().splitlines()[0]))))
    if failures:
        fail("%d of %d verifications differ from the contract" % (failures, runs))
    print("ok: %d cases, each through verify_pack.py and ledger-verify-go (%d verifications with ledgerctl verify)"
          % (len(cases), runs))



def monitored_packs(files, sign, log_vkey, vkeys, ab, vkey, policy):
    """Packs whose checkpoint-time note carries map cosignatures made here,
    and their cases ("Monitored packs"): (packs, cases, the cases ledgerctl
    verify words otherwise)."""
    tn = dict(files)["checkpoint-time"].decode()
    text = t.open_note(log_vkey, tn)
    if not text.startswith("evidence-ledger/checkpoint-time/v4\n"):
        fail("the exported pack's checkpoint-time note is not of version 4: %r" % tn)
    time_at = text.rindex("\ntime ") + 1
    signed_us = int(text[time_at + 5:-1])
    signed = signed_us // 1000000
    m1, m2 = MapCosigner("monitor-1.example"), MapCosigner("monitor-2.example")
    forger = MapCosigner("monitor-2.example")
    cp = dict(files)["checkpoint"].decode()
    cp_text = t.open_note(log_vkey, cp)
    # The ledger's own signature of a note whose time is a microsecond later:
    # the monitors' lines below are over the genuine note, not this one.
    later = text[:time_at] + "time %d\n" % (signed_us + 1)
    packs = {
        "monitored by both": with_file(files, "checkpoint-time", tn + m1.line(text, signed + 1) +
                                       m2.line(text, signed), sign),
        "monitored by M1": with_file(files, "checkpoint-time", tn + m1.line(text, signed + 1), sign),
        "M2's map cosignature forged": with_file(files, "checkpoint-time", tn + m1.line(text, signed + 1) +
                                                 forger.line(text, signed, key_id=m2.key_id), sign),
        "two map cosignatures of M1": with_file(files, "checkpoint-time", tn + m1.line(text, signed) +
                                                m2.line(text, signed) + m1.line(text, signed + 5), sign),
        "M1 before the note's time": with_file(files, "checkpoint-time", tn + m1.line(text, signed - 1) +
                                               m2.line(text, signed), sign),
        "the map cosignatures of another note": with_file(files, "checkpoint-time", sign(later.encode()).decode() +
                                                          m1.line(text, signed + 1) + m2.line(text, signed), sign),
        "map cosignatures on the checkpoint": with_checkpoint(files, cp + m1.line(cp_text, signed) +
                                                              m2.line(cp_text, signed), sign),
    }
    ms = "monitor M1 %s\nmonitor M2 %s https://m2.example\n" % (m1.vkey(), m2.vkey())
    both = policy("monitors", "log %s\n%squorum none\n" % (log_vkey, ms))
    any_one = policy("monitors-any", "log %s\n%smonitor-quorum any\nquorum none\n" % (log_vkey, ms))
    witnesses_too = policy("witnesses-and-monitors", "log %s\nwitness A %s\nwitness B %s\ngroup both all A B\n%s"
                           "monitor-quorum 1\nquorum both\n" % (log_vkey, vkeys["A"], vkeys["B"], ms))
    no_monitor = policy("no-monitor", "log %s\nquorum none\n" % log_vkey)
    by_both = [("M1", signed + 1), ("M2", signed)]
    none_met = "witnessed: quorum none met; no cosignature"
    cases = [
        ("both monitors' lines, a policy requiring both", "monitored by both", vkey + ["--policy", both], 0,
         [none_met, monitored(2, 2, by_both)]),
        ("both monitors' lines, without --policy", "monitored by both", vkey, 0, None),
        ("both monitors' lines, a policy without monitors", "monitored by both", vkey + ["--policy", no_monitor], 0,
         [none_met]),
        ("both monitors' lines, monitor-quorum any", "monitored by both", vkey + ["--policy", any_one], 0,
         [none_met, monitored(1, 2, by_both)]),
        ("both monitors' lines, witnesses and monitors required", "monitored by both",
         vkey + ["--policy", witnesses_too], 0, [witnessed("both", ab), monitored(1, 2, by_both)]),
        ("M2's line missing", "monitored by M1", vkey + ["--policy", both], 1,
         "checkpoint-time: the policy's monitor-quorum 2 of 2 is not met: no map cosignature from M2; cosigned by M1"),
        ("M2's line missing, monitor-quorum any", "monitored by M1", vkey + ["--policy", any_one], 0,
         [none_met, monitored(1, 2, by_both[:1])]),
        ("no map cosignature", "genuine", vkey + ["--policy", both], 1,
         "checkpoint-time: the policy's monitor-quorum 2 of 2 is not met: no map cosignature from M1, M2"),
        ("M2's line forged with another key under M2's name and key ID", "M2's map cosignature forged",
         vkey + ["--policy", both], 1,
         "checkpoint-time: monitor M2: map cosignature: signature by %s does not verify" % m2.name_id()),
        ("M2's line forged, without --policy", "M2's map cosignature forged", vkey, 0, None),
        ("two lines of M1", "two map cosignatures of M1", vkey + ["--policy", any_one], 1,
         "checkpoint-time: monitor M1: map cosignature: two lines by %s" % m1.name_id()),
        ("M1's line before the note's time", "M1 before the note's time", vkey + ["--policy", both], 1,
         "checkpoint-time: monitor M1: map cosignature: time %d is before the note's time %d (seconds): a monitor "
         "cannot have cosigned a note before the ledger signed it" % (signed - 1, signed)),
        ("the monitors' lines of another note", "the map cosignatures of another note", vkey + ["--policy", both], 1,
         "checkpoint-time: monitor M1: map cosignature: signature by %s does not verify" % m1.name_id()),
        ("the monitors' lines on the checkpoint", "map cosignatures on the checkpoint", vkey + ["--policy", both], 1,
         "checkpoint-time: the policy's monitor-quorum 2 of 2 is not met: no map cosignature from M1, M2"),
    ]
    # The rules of section 5c's monitor lines (exit 2).
    wa = "witness A %s\n" % vkeys["A"]
    syntax = [
        (ms, "no quorum line (use 'quorum none' for none)"),
        (wa + ms + "group G any A M1\nquorum G\n", "line 4: member 'M1' is a monitor: monitors are not witnesses"),
        (ms + "quorum M2\n", "line 3: quorum 'M2' is a monitor: monitors are not witnesses"),
        (ms + "monitor-quorum 3\nquorum none\n",
         "line 3: monitor-quorum must be all, any or a decimal k with 1 <= k <= 2"),
        ("monitor-quorum any\n" + ms + "quorum none\n", "line 1: monitor-quorum without a monitor line before it"),
        ("monitor M1 %s\nquorum none\n" % vkeys["A"], "line 1: monitor verifier key: a witness key (type 0x04) is "
         "not a monitor key (type 0xff evidence-ledger/map-cosignature/v1)"),
        (ms + "monitor M3 %s\nquorum none\n" % m1.vkey().replace("monitor-1", "monitor-3"),
         "line 3: monitor verifier key: key id %s does not match the key" % m1.key_id.hex()),
        ("monitors M1 %s\nquorum none\n" % m1.vkey(),
         "line 1: unknown keyword 'monitors' (want log, witness, group, quorum, monitor or monitor-quorum)"),
    ]
    # ledgerctl verify words these rules otherwise.
    worded = {"monitor policy rule %d" % n for n in (1, 2, 4, 5, 7)}
    for n, (policy_text, error) in enumerate(syntax):
        path = policy("monitor-syntax-%d" % n, policy_text)
        cases.append(("monitor policy rule %d" % n, "genuine", vkey + ["--policy", path], 2, "--policy: " + error))
    return packs, cases, worded


if __name__ == "__main__":
    main()
