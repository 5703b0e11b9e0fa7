"""The checkpoint's signed time, against both verifiers (`ledgerctl verify`
and export/verify/python/verify_pack.py), which must give the same verdict with the
reason expected. Tampered packs are rebuilt as the ledger's operator would,
re-signing with the data directory's signing.key (tests/pack_tamper_test.py).

Usage: pack_time_test.py LEDGERCTL VERIFY_PACK_PY RUN_PACK VKEY_FILE
       LEDGER_KEY_FILE OLD_KEPT WORK_DIR
RUN_PACK: a run whose step is pending, exported with --since the checkpoint
in OLD_KEPT (that checkpoint followed by its time note), by a ledgerd whose
grace is an hour.
"""
import base64
import datetime
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pack_tamper_test as t  # noqa: E402


def iso(us):
    d = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=us)
    return re.escape("%s (%d us)" % (d.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), us))


def note_body(note):
    return note.split(b"\n\n")[0].decode().split("\n")


def main():
    ledgerctl, verify_py, pack, vkey_file, key_file, old_kept, work = sys.argv[1:8]
    sign = t.signer(key_file)
    files = t.read_pack(pack)
    d = dict(files)
    manifest = json.loads(d["manifest.json"])
    time_lines = note_body(d["checkpoint-time"])  # header, origin, size, root, ["runs R",] "time N"
    signed_at = int(time_lines[-1][5:])
    size, root = int(time_lines[2]), base64.b64decode(time_lines[3]).hex()
    kept = open(old_kept, "rb").read()
    at = kept.index(b"\nevidence-ledger/checkpoint-time/v") + 1
    old_note, old_time = kept[:at], kept[at:]
    old_lines = note_body(old_time)
    old_at, old_size, old_root = int(old_lines[-1][5:]), int(old_lines[2]), base64.b64decode(old_lines[3]).hex()
    outcomes = json.loads(d["outcomes.json"])
    pending = [s for s in outcomes["steps"] if s["state"] == "pending"]
    assert len(pending) == 1, pending
    step = pending[0]
    deadline_at = step["start"]["timeout_at_us"]
    assert deadline_at < signed_at, (deadline_at, signed_at)  # past its timeout, within the hour's grace

    def manifest_edited(files, edit):
        def apply(data):
            m = json.loads(data)
            edit(m)
            return (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()
        return t.edited(files, "manifest.json", apply)

    def time_note(lines):
        return sign(("\n".join(lines) + "\n").encode())

    def without_time(files, downgrade):
        """The time note removed; downgrade: the manifest made format 1, and
        the run-head proof (of format 3) removed with it."""
        gone = {"checkpoint-time", "run-head.json"} if downgrade else {"checkpoint-time"}

        def edit(m):
            for name in gone:
                m["files"].pop(name, None)
            if downgrade:
                m["format"] = 1
                del m["unknown_grace_ms"]
        return t.resigned([(n, x) for n, x in manifest_edited(files, edit) if n not in gone], sign)

    def grace(ms):
        return t.resigned(manifest_edited(files, lambda m: m.__setitem__("unknown_grace_ms", ms)), sign)

    since = ["--since", old_kept]
    ok_line = (r"^OK: \d+ entries of .* at tree size %d, root %s, signed at %s\.$" % (size, root, iso(signed_at)))
    pending_msg = (r"^FAILED: outcomes\.json: step team-support/run-0007/%s attempt %d is pending, but its deadline "
                   r"\(start \+ timeout \+ the manifest's unknown_grace_ms 0\) %s is before the checkpoint's signed "
                   r"time %s: an honest ledger declares it unknown before signing$"
                   % (re.escape(step["step_id"]), step["attempt"], iso(deadline_at), iso(signed_at)))
    backwards = time_lines[:-1] + ["time %d" % (old_at - 1)]
    # (case, files, extra arguments, exit code, the line expected)
    cases = [
        ("the genuine pack, a step pending within the ledger's grace", files, [], 0, ok_line),
        ("the genuine pack, --since the kept checkpoint and its time", files, since, 0, ok_line),
        ("the genuine pack, --not-older-than the kept checkpoint and its time", files,
         ["--not-older-than", old_kept], 0, ok_line),
        ("the manifest's grace re-signed smaller: the pending step is overdue", grace(0), [], 1, pending_msg),
        ("the time note of another checkpoint (a genuine one)",
         t.resigned(t.edited(files, "checkpoint-time", lambda _: old_time), sign), [], 1,
         r"^FAILED: checkpoint-time: names the checkpoint of time\.test/log at size %d root %s, the pack's is size "
         r"%d root %s$" % (old_size, old_root, size, root)),
        ("a time note re-signed for another size",
         t.resigned(t.edited(files, "checkpoint-time",
                             lambda _: time_note(time_lines[:2] + [str(size + 1)] + time_lines[3:])), sign), [], 1,
         r"^FAILED: checkpoint-time: names the checkpoint of time\.test/log at size %d root %s, the pack's is size "
         r"%d root %s$" % (size + 1, root, size, root)),
        ("the time note removed, and from the manifest", without_time(files, False), [], 1,
         r"^FAILED: checkpoint-time: missing: a format 2 pack carries its checkpoint's time note$"),
        # The run's leaves are of version 2, which a ledger signing version 3
        # notes writes: a pack of them without a note is refused. (ledgerctl
        # also rebuilds report.html, which tells the run's completeness from
        # the manifest, and may name that difference first.)
        ("the time note removed, the manifest made format 1 (without --since's time)",
         without_time(files, True), [], 1,
         (r"^FAILED: (report\.html: differs from the report rebuilt|checkpoint-time: missing, but entries\.jsonl holds "
          r"a leaf of version 2)",
          r"^FAILED: checkpoint-time: missing, but entries\.jsonl holds a leaf of version 2 \(seq \d+\): a ledger that "
          r"writes version 2 leaves signs version 3 notes$")),
        ("the time note removed, the manifest made format 1, --since with its time", without_time(files, True),
         since, 1, r"^FAILED: checkpoint-time: missing: the checkpoint given with --since has a signed time, so "
                   r"every later checkpoint has one$"),
        ("a time re-signed before --since's",
         t.resigned(t.edited(files, "checkpoint-time", lambda _: time_note(backwards)), sign), since, 1,
         r"^FAILED: checkpoint-time: time %s is before %s, the time of the checkpoint given with --since \(times "
         r"never go backwards\)$" % (iso(old_at - 1), iso(old_at))),
        ("a time re-signed before --not-older-than's",
         t.resigned(t.edited(files, "checkpoint-time", lambda _: time_note(backwards)), sign),
         ["--not-older-than", old_kept], 1,
         r"^FAILED: checkpoint-time: time %s is before %s, the time of the checkpoint given with --not-older-than "
         r"\(times never go backwards\)$" % (iso(old_at - 1), iso(old_at))),
    ]
    mismatched = os.path.join(work, "mismatched.kept")
    open(mismatched, "wb").write(old_note + d["checkpoint-time"])
    failures = 0
    for label, packed, extra, codes, wants in cases:
        path = os.path.join(work, "time.tar.gz")
        t.write_pack(packed, path)
        verdicts = []
        codes, wants = (codes, codes) if isinstance(codes, int) else codes, \
            (wants, wants) if isinstance(wants, str) else wants
        for tool, cmd, code, want in (
                ("ledgerctl", [ledgerctl, "verify", path, "--vkey", vkey_file] + extra, codes[0], wants[0]),
                ("verify_pack.py", ["/usr/bin/python3", verify_py, path, "--vkey", vkey_file] + extra, codes[1],
                 wants[1])):
            p = subprocess.run(cmd, capture_output=True, text=True)
            out = (p.stdout + p.stderr).strip()
            verdicts.append(p.returncode)
            if p.returncode != code or not re.search(want, out, re.M):
                print("FAIL: %s, %s (exit %d, expected %d): %s" % (label, tool, p.returncode, code, out[:600]))
                failures += 1
            else:
                print("%s: %s exit %d: %s" % (label, tool, code, re.search(want, out, re.M).group(0)[:200]))
        if verdicts != list(codes):
            print("FAIL: %s: the verifiers disagree: %s" % (label, verdicts))
            failures += 1
    # A kept file whose time note is not its checkpoint's is bad usage.
    for tool, cmd in (("ledgerctl", [ledgerctl, "verify", pack, "--vkey", vkey_file, "--since", mismatched]),
                      ("verify_pack.py", ["/usr/bin/python3", verify_py, pack, "--vkey", vkey_file,
                                          "--since", mismatched])):
        p = subprocess.run(cmd, capture_output=True, text=True)
        out = (p.stdout + p.stderr).strip()
        if p.returncode != 2 or "time note: not the time note of the checkpoint before it" not in out:
            print("FAIL: --since with another checkpoint's time note, %s (exit %d): %s" % (tool, p.returncode, out))
            failures += 1
        else:
            print("--since with another checkpoint's time note: %s exit 2: %s" % (tool, out.splitlines()[-1]))
    if failures:
        sys.exit(1)
    print("checkpoint time: %d cases, the same verdict and reason from both verifiers" % len(cases))


if __name__ == "__main__":
    main()
