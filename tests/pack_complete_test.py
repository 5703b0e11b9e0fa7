"""Proven completeness (CONTRACT.md section 7, format 3) against the three
verifiers: `ledgerctl verify`, export/verify/python/verify_pack.py and ledger-verify-go.
Genuine run packs verify and say what is proven as of the tree size; the
operator's forgeries, re-signed with the ledger's key
(tests/pack_tamper_test.py's helpers, outcomes.json recomputed), are refused
by all three with the reason section 7 gives: the run's last entry
dropped, its step_unknown dropped, a head claimed shorter, the head of an
older export presented as current, run-head.json removed (and the manifest
made format 2, which a version 3 note refutes).

Usage: pack_complete_test.py LEDGERCTL VERIFY_PACK_PY LEDGER_VERIFY_GO PACK_OUTCOMES VKEY_FILE
       LEDGER_KEY_FILE WORK_DIR
WORK_DIR holds live-old.tar.gz and live.tar.gz (team-ops/run-live, a step
pending, exported before and after its third entry), unknown.tar.gz
(team-support/run-0007, whose last entry is its step_unknown), done.tar.gz
(team-code/run-0000), failed.tar.gz (team-ops/run-failed: a start and its
failed agent_exec, the step's deadline an hour away), failed-since.tar.gz
(the same, exported --since the checkpoint of old.kept, which holds that
checkpoint and its time note), none.tar.gz (team-ops/run-none, no entry) and
seq.tar.gz (seqs 0 to 4).
"""
import base64
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "export", "verify", "python"))
import pack_tamper_test as t  # noqa: E402
import runmap  # noqa: E402


def note_lines(note):
    return note.split(b"\n\n")[0].decode().split("\n")


class Pack:
    def __init__(self, path):
        self.files = t.read_pack(path)
        d = dict(self.files)
        self.manifest = json.loads(d["manifest.json"])
        self.entries = [json.loads(x) for x in d["entries.jsonl"].split(b"\n")[:-1]]
        self.size = self.manifest["tree_size"]
        self.root = self.manifest["root"]
        self.runs = base64.b64decode(note_lines(d["checkpoint-time"])[4][5:])
        self.run_head = json.loads(d["run-head.json"]) if "run-head.json" in d else None
        self.scope = self.manifest["scope"]

    def get(self, name):
        return dict(self.files)[name]


def main():
    ledgerctl, verify_py, lvg, outcomes_tool, vkey, key_file, work = sys.argv[1:8]
    sign = t.signer(key_file)
    packs = {n: Pack(os.path.join(work, n + ".tar.gz")) for n in ("live-old", "live", "unknown", "done", "failed",
                                                                   "failed-since", "none", "seq")}
    for name, p in packs.items():
        assert p.manifest["format"] == 5, (name, p.manifest["format"])
    live, old, unknown, done = packs["live"], packs["live-old"], packs["unknown"], packs["done"]
    failed = packs["failed"]
    assert unknown.entries[-1]["receipt"]["kind"] == "step_unknown", unknown.entries[-1]
    assert [e["receipt"]["kind"] for e in failed.entries] == ["agent_start", "agent_exec"]
    assert len(live.entries) == len(old.entries) + 1 and old.size < live.size

    def resigned(files, manifest_edit=None):
        if manifest_edit:
            def apply(data):
                m = json.loads(data)
                manifest_edit(m)
                return (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()
            files = t.edited(files, "manifest.json", apply)
        return t.resigned(files, sign, outcomes_tool)

    def drop_last(files):
        return t.lines_edited(files, lambda lines: lines[:-1])

    def with_run_head(files, data):
        out = [(n, d) for n, d in files if n != "run-head.json"]
        if data is None:
            return out
        return sorted(out + [("run-head.json", data)])

    def no_run_head(files):
        """run-head.json removed, and from the manifest's files."""
        def apply(data):
            m = json.loads(data)
            del m["files"]["run-head.json"]
            return (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()
        return t.edited(with_run_head(files, None), "manifest.json", apply)

    def format2(m):
        m["format"] = 2

    def scope_name(p):
        return "%s/%s" % (p.scope["team"], p.scope["run_id"])

    def ok(p, steps, since=None):
        """since: (size, root hex) of the --since checkpoint."""
        n, c = p.size, len(p.entries)
        complete = ("complete: every entry of the run up to seq %d (run-head proof, %d entries)" % (n - 1, c) if c
                    else "complete: the run has no entry up to seq %d (absence proof)" % (n - 1))
        py = [r"OK: %d entries of .* at tree size %d, root %s, signed at .*\." % (c, n, p.root)]
        if since:
            py.append(re.escape("The checkpoint is consistent with the earlier one at size %d, root %s (the one given "
                                "with --since)." % since))
        py.append(re.escape(complete + "."))
        py += [re.escape("%s/%s attempt 1 (%s): no completion in the log up to seq %d (proven)."
                         % (scope_name(p), s, state, n - 1)) for s, state in steps]
        go = ["OK run %s: %d entries, tree size %d, root %s%s; %s; outcomes.json not recomputed"
              % (scope_name(p), c, n, p.root, ", consistent with the --since checkpoint size %d root %s" % since
                 if since else "", complete)]
        go += ["step %s/%s attempt 1: no completion in the log up to seq %d (proven)" % (scope_name(p), s, n - 1)
               for s, _ in steps]
        # ledgerctl verify: the same statements, in its own OK line's words.
        ctl = [re.escape(complete)] + [re.escape("no completion in the log up to seq %d (proven)" % (n - 1))
                                       for _ in steps]
        return 0, "\n".join(py), "\n".join(go), ctl

    def refused(reason, *evidence):
        """verify_pack.py and ledger-verify-go give section 7's reason;
        ledgerctl verify refuses naming the evidence (default: the reason),
        and its words are compared with the reason and shown where they
        differ."""
        ctl = ["^FAILED: .*" + re.escape(e) for e in evidence or [reason]]
        return 1, "FAILED: " + re.escape(reason), "FAIL: " + reason, ctl + ["CONTRACT: FAILED: " + reason]

    missing = ("run-head.json: missing: a run pack whose checkpoint-time note signs a run-head map root carries its "
               "run's head proof")
    counts = "run-head.json: the run has %d entries up to tree size %d, the pack holds %d"
    leads = "run-head.json: the proof leads to map root %s, the checkpoint-time note signs %s"
    # (c): the head claimed one entry shorter, its proof's siblings kept.
    shorter = dict(done.run_head)
    last = done.entries[-2]
    last_hash = runmap.sha256(b"\x00" + done.get("entries.jsonl").split(b"\n")[-3])
    shorter["head"] = {"count": len(done.entries) - 1, "last_seq": last["seq"], "last_leaf_hash": last_hash.hex()}
    key = bytes.fromhex(done.run_head["key"])
    shorter_root = runmap.inclusion_root(key, len(done.entries) - 1, last["seq"], last_hash,
                                         [bytes.fromhex(s) for s in done.run_head["siblings"]])
    downgraded = drop_last(no_run_head(done.files))
    # The operator's downgrade: the run cut short, its proof removed, a
    # version 1 note re-signed for the checkpoint, the manifest format 2.
    since = packs["failed-since"]
    body = note_lines(since.get("checkpoint-time"))
    v1 = sign(("\n".join(["evidence-ledger/checkpoint-time/v1"] + body[1:4] + body[-1:]) + "\n").encode())
    v1_downgrade = resigned(t.edited(drop_last(no_run_head(since.files)), "checkpoint-time", lambda _: v1), format2)
    kept = ["--since", os.path.join(work, "old.kept")]
    old_cp = note_lines(open(os.path.join(work, "old.note"), "rb").read())
    old_size, old_root = int(old_cp[1]), base64.b64decode(old_cp[2]).hex()
    cases = [
        ("(f) a run in progress, a step pending", live.files, ok(live, [("step-0", "pending")])),
        ("(f) the same run exported before its last entry", old.files, ok(old, [("step-0", "pending")])),
        ("a run whose crashed step the ledger declared unknown", unknown.files,
         ok(unknown, [(s["step_id"], "unknown") for s in json.loads(unknown.get("outcomes.json"))["steps"]
                      if s["state"] == "unknown" and "completion" not in s])),
        ("a finished run", done.files, ok(done, [])),
        ("(g) a run with no entry: an absence proof", packs["none"].files, ok(packs["none"], [])),
        ("a run whose step failed", failed.files, ok(failed, [])),
        ("(a) the run's failed agent_exec dropped, its step pending within its deadline",
         resigned(drop_last(failed.files)), refused(counts % (2, failed.size, 1))),
        ("(a) the run's last entry dropped", resigned(drop_last(done.files)),
         refused(counts % (len(done.entries), done.size, len(done.entries) - 1))),
        ("(b) the run's step_unknown dropped", resigned(drop_last(unknown.files)),
         refused(counts % (len(unknown.entries), unknown.size, len(unknown.entries) - 1))),
        ("(c) the last entry dropped, the head claimed one entry shorter",
         resigned(with_run_head(drop_last(done.files), json.dumps(shorter, separators=(",", ":")).encode())),
         refused(leads % (shorter_root.hex(), done.runs.hex()), "run-head.json: ", shorter_root.hex(),
                 done.runs.hex())),
        ("(d) the head of an older export of the run with the current checkpoint",
         resigned(with_run_head(drop_last(live.files), old.get("run-head.json"))),
         refused(leads % (old.runs.hex(), live.runs.hex()), "run-head.json: ", old.runs.hex(), live.runs.hex())),
        ("(e) run-head.json removed", resigned(no_run_head(done.files)),
         refused(missing)),
        ("(e) run-head.json removed, the last entry dropped, the manifest made format 2",
         resigned(downgraded, format2),
         refused("checkpoint-time: format 2 pack with a version 4 note: a format 2 pack carries a version 1 note")),
        ("a genuine pack, --since the kept checkpoint and its version 4 time note", since.files,
         ok(since, [], (old_size, old_root)), kept),
        ("(e) the failed agent_exec dropped, run-head.json removed, a version 1 note re-signed, format 2; --since a "
         "kept version 4 note", v1_downgrade,
         refused("checkpoint-time: a version 1 note, but the checkpoint given with --since has a version 4 note: a "
                 "ledger that keys runs by team does so with every later checkpoint"), kept),
        ("a seq range given a run's head proof", resigned(with_run_head(packs["seq"].files, done.get("run-head.json"))),
         refused("run-head.json: only a run pack carries a run-head proof")),
    ]
    failures = worded = 0
    for case in cases:
        label, files, (code, py_want, go_want, ctl_want), extra = (case + ([],))[:4]
        path = os.path.join(work, "case.tar.gz")
        t.write_pack(files, path)
        verdicts = {}
        for tool, cmd in (("verify_pack.py", ["/usr/bin/python3", verify_py, path, "--vkey", vkey] + extra),
                          ("ledger-verify-go", [lvg, "--vkey", vkey, path] + extra),
                          ("ledgerctl", [ledgerctl, "verify", path, "--vkey", vkey] + extra)):
            p = subprocess.run(cmd, capture_output=True, text=True)
            got = (p.stdout + p.stderr).strip()
            verdicts[tool] = p.returncode
            good = p.returncode == code and {
                "verify_pack.py": lambda: re.fullmatch(py_want, got) is not None,
                "ledger-verify-go": lambda: got == go_want,
                "ledgerctl": lambda: all(re.search(w, got, re.M) for w in ctl_want if not w.startswith("CONTRACT: "))
            }[tool]()
            contract = [w[10:] for w in ctl_want if w.startswith("CONTRACT: ")]
            if tool == "ledgerctl" and good and contract and contract[0] not in got.splitlines():
                print("%s: ledgerctl refuses it in other words than section 7's:\n    ledgerctl: %s\n    contract:  %s"
                      % (label, got.splitlines()[-1], contract[0]))
                worded += 1
            if not good:
                print("FAIL: %s: %s exited %d (expected %d):\n    %s" % (label, tool, p.returncode, code,
                                                                        got.replace("\n", "\n    ")[:1200]))
                failures += 1
            else:
                print("%s: %s exit %d: %s" % (label, tool, code, got.splitlines()[-1][:200]))
        if len(set(verdicts.values())) != 1:
            print("FAIL: %s: the verifiers disagree: %s" % (label, verdicts))
            failures += 1
    if failures:
        print("%d failures" % failures)
        sys.exit(1)
    print("proven completeness: %d cases, the same verdict from the three verifiers, section 7's reason from "
          "verify_pack.py and ledger-verify-go; ledgerctl verify words %d otherwise" % (len(cases), worded))


if __name__ == "__main__":
    main()
