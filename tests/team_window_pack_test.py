#!/usr/bin/env python3
"""Closed team windows (CONTRACT.md section 7, format 4) through a real
ledgerd, against the three verifiers: `ledgerctl verify`,
export/verify/python/verify_pack.py and ledger-verify-go.

One ledger, two lifetimes: first with --run-map=false (version 1 leaves and
notes), then restarted without it (version 2 leaves, team_prev, version 3
notes). Genuine windows verify and say what the team chain proves: a window
with entries after it (`after`), one reaching the end of the log (`head`),
an empty one with a `before`, a team with no entry (absence), one holding
its team's first entry (no `before`), one straddling the upgrade ("complete
after seq C") and one of version 1 leaves only ("not proven complete").
The operator's forgeries, re-signed with the ledger's key from the data
directory (tests/pack_tamper_test.py's helpers, outcomes.json recomputed),
are refused by every verifier naming what is missing: a whole run dropped
from the window, the ledger's step_unknown dropped, the window's last entry
dropped (with head), its first entry dropped (with before), `after`
replaced by a later entry of the team, `head` taken from an older export,
team-window.json removed, and the same with the note re-signed as version 2
and the manifest made format 3 while --since holds a kept version 4 note.

Usage: team_window_pack_test.py BUILD_DIR
"""
import base64
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import pack_tamper_test as t  # noqa: E402

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def rfc3339(us):
    return (EPOCH + datetime.timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_us():
    return time.time_ns() // 1000


class Ledger:
    """A real ledgerd on a free loopback port, over a data directory."""

    def __init__(self, build, work, data, *flags):
        self.build = build
        self.log = os.path.join(work, "ledgerd-%d.out" % now_us())
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen([os.path.join(build, "cmd", "ledgerd"), "--data", data, "--listen",
                                          "127.0.0.1:0", "--http-listen", "127.0.0.1:0"] + list(flags),
                                         stdout=out, stderr=subprocess.STDOUT)
        for _ in range(200):
            with open(self.log) as f:
                m = re.search(r"^listening on (\S+)", f.read(), re.M)
            if m:
                self.addr = m.group(1)
                return
            time.sleep(0.05)
        self.stop()
        fail("ledgerd did not start: " + open(self.log).read())

    def ctl(self, *args, stdin=None):
        p = subprocess.run([os.path.join(self.build, "cmd", "ledgerctl"), "--server", self.addr] + list(args),
                           input=stdin, capture_output=True, text=True)
        if p.returncode != 0:
            fail("ledgerctl %s: exit %d: %s" % (" ".join(args), p.returncode, p.stdout + p.stderr))
        return p.stdout

    def append(self, *receipts):
        """Appends the receipts, waits for a checkpoint covering them, and
        returns their entries (as the log holds them)."""
        out = self.ctl("append", "-", stdin="".join(json.dumps(r) + "\n" for r in receipts))
        seqs = [int(s) for s in re.findall(r'"seq":\s*(\d+)', out)]
        if len(seqs) != len(receipts):
            fail("append: %s" % out)
        self.ctl("checkpoint", "--at-least", str(max(seqs) + 1))
        return [self.entry(s) for s in seqs]

    def entry(self, seq):
        return json.loads(self.ctl("entries", "--from", str(seq), "--to", str(seq + 1)))

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def receipt(team, rid, run, kind="model_call", **fields):
    r = {"decision": "allow", "kind": kind, "occurred_at_us": now_us(), "receipt_id": rid, "run_id": run,
         "step_id": "s", "team": team}
    if kind == "model_call":
        r["route"] = "local/m"
    r.update(fields)
    return r


def build_go_verifier(build):
    out = os.path.join(build, "tests", "team_window_pack", "ledger-verify-go")
    env = dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off", GOPROXY="off", GOFLAGS="",
               GOCACHE=os.path.join(build, "export", "verify", "go", "gocache"))
    subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.join(ROOT, "export", "verify", "go"), env=env,
                   check=True)
    return out


class Pack:
    def __init__(self, path):
        self.files = t.read_pack(path)
        d = dict(self.files)
        self.manifest = json.loads(d["manifest.json"])
        self.lines = d["entries.jsonl"].split(b"\n")[:-1]
        self.entries = [json.loads(x) for x in self.lines]
        self.proofs = [json.loads(x) for x in d["proofs.jsonl"].split(b"\n")[:-1]]
        self.size = self.manifest["tree_size"]
        self.scope = self.manifest["scope"]
        self.note = d.get("checkpoint-time", b"").split(b"\n\n")[0].decode().split("\n")
        self.window = json.loads(d["team-window.json"]) if "team-window.json" in d else None

    def get(self, name):
        return dict(self.files)[name]

    def teams_root(self):
        return base64.b64decode(self.note[5][6:])

    def bound(self, seq):
        """The BOUND of the pack's entry at seq."""
        i = [e["seq"] for e in self.entries].index(seq)
        return {"seq": seq, "leaf": self.lines[i].decode(), "inclusion": self.proofs[i]["inclusion"]}


def window_json(obj):
    return json.dumps({k: obj[k] for k in ("before", "after", "head") if k in obj}, separators=(",", ":"),
                      ensure_ascii=False).encode()


def with_file(files, name, data):
    """The pack with file `name` replaced (None: removed, and from the
    manifest's files)."""
    out = [(n, d) for n, d in files if n != name]
    if data is not None:
        return sorted(out + [(name, data)])

    def unlisted(m):
        m = json.loads(m)
        del m["files"][name]
        return (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()
    return t.edited(out, "manifest.json", unlisted)


def dropped(files, seqs):
    return t.lines_edited(files, lambda lines: [x for x in lines if json.loads(x)["seq"] not in seqs])


def main():
    build = os.path.abspath(sys.argv[1])
    lvg = build_go_verifier(build)
    tools = {"verify_pack.py": os.path.join(ROOT, "export", "verify", "python", "verify_pack.py"), "ledger-verify-go": lvg,
             "ledgerctl": os.path.join(build, "cmd", "ledgerctl")}
    outcomes_tool = os.path.join(build, "tests", "pack_outcomes")
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "data")
        fast = ("--checkpoint-interval-ms", "20", "--unknown-grace-ms", "200", "--sweep-interval-ms", "50")
        e = {"start": now_us()}
        # Lifetime 1: version 1 leaves. u0 and u1 of team-up.
        ledger = Ledger(build, work, data, "--run-map=false", *fast)
        try:
            e["u0"], = ledger.append(receipt("team-up", "u0", "run-u"))
            time.sleep(0.05)
            e["u1"], = ledger.append(receipt("team-up", "u1", "run-u"))
        finally:
            ledger.stop()
        # Lifetime 2: version 2 leaves from here on.
        ledger = Ledger(build, work, data, *fast)
        try:
            run_workload(ledger, work, e)
        finally:
            ledger.stop()
        failures = check_all(e, work, data, tools, outcomes_tool)
    if failures:
        print("%d failures" % failures)
        sys.exit(1)


def run_workload(ledger, work, e):
    """Appends the workload and exports its packs into `work`; adds the
    entries and boundary times the cases need to e."""
    time.sleep(0.05)
    e["u2"], e["u3"] = ledger.append(receipt("team-up", "u2", "run-u"), receipt("team-up", "u3", "run-u"))
    time.sleep(0.05)
    e["w1a"], e["w1b"] = ledger.append(
        receipt("team-w", "w1a", "run-a", "agent_start", step_id="s-a", timeout_ms=3600000),
        receipt("team-w", "w1b", "run-b"))
    # The auditor keeps this checkpoint with its (version 3) time note.
    cp = ledger.ctl("checkpoint")
    note = ledger.ctl("checkpoint", "--time-note", "--size", cp.split("\n")[1])
    with open(os.path.join(work, "old.note"), "w") as f:
        f.write(cp)
    with open(os.path.join(work, "old.kept"), "w") as f:
        f.write(cp + note)
    time.sleep(0.05)
    e["w2a"], e["w2b"], e["w2c"], e["w2d"] = ledger.append(
        receipt("team-w", "w2a", "run-a"), receipt("team-w", "w2b", "run-b"), receipt("team-w", "w2c", "run-b"),
        receipt("team-w", "w2d", "run-c"))
    time.sleep(0.05)
    e["w3a"], e["w3b"] = ledger.append(receipt("team-w", "w3a", "run-a"), receipt("team-w", "w3b", "run-a"))
    b12, b23 = e["w1b"]["logged_at_us"] + 1, e["w3a"]["logged_at_us"]
    export(ledger, work, "head-old", "team-w", b12, now_us() + 1)
    time.sleep(0.05)
    e["w3c"], = ledger.append(receipt("team-w", "w3c", "run-a"))
    # team-u: a step that never completes, declared unknown by the ledger,
    # then another entry of the team.
    e["u-start"], = ledger.append(receipt("team-u", "u-start", "run-u1", "agent_start", step_id="s-u",
                                          timeout_ms=300))
    for _ in range(100):
        if '"unknown"' in ledger.ctl("steps", "--team", "team-u", "--state", "unknown", "--json"):
            break
        time.sleep(0.1)
    e["u-unknown"] = ledger.entry(e["u-start"]["seq"] + 1)
    if e["u-unknown"]["receipt"]["kind"] != "step_unknown":
        fail("team-u: seq %d is not the step_unknown: %s" % (e["u-start"]["seq"] + 1, e["u-unknown"]))
    e["u-after"], = ledger.append(receipt("team-u", "u-after", "run-u2"))
    time.sleep(0.05)
    end = now_us()
    e["windows"] = {
        "after": ("team-w", b12, b23),  # before w1b, after w3a
        "head": ("team-w", b12, end),  # before w1b, head
        "empty": ("team-w", e["w3c"]["logged_at_us"] + 1, end),  # no entry, before w3c, head
        "absent": ("team-z", e["start"], end),
        "first": ("team-w", e["start"], b23),  # the team's first entry inside, after w3a
        "unknown": ("team-u", e["start"], end),
        "upgrade": ("team-up", e["start"], end),  # u0 to u3: version 1, then 2
        "v1-only": ("team-up", e["start"], e["u1"]["logged_at_us"]),  # u0; after u1, version 1
        "v1-then-v2": ("team-up", e["start"], e["u2"]["logged_at_us"]),  # u0, u1; after u2, version 2
    }
    for name, (team, a, b) in e["windows"].items():
        export(ledger, work, name, team, a, b)
    export(ledger, work, "after-since", "team-w", b12, b23, os.path.join(work, "old.note"))


def export(ledger, work, name, team, a, b, since=None):
    """--allow-empty: the windows "empty" and "absent" hold no entry, and their packs prove it."""
    # Format 5: the forged bounds below take an entry's path from proofs.jsonl.
    args = ["export", "--team", team, "--from", rfc3339(a), "--to", rfc3339(b), "--allow-empty", "--pack-format", "5",
            "--out",
            os.path.join(work, name + ".tar.gz")]
    ledger.ctl(*(args + (["--since", since] if since else [])))


def complete(p, stop=None, proven=True):
    """The line after the OK line: stop, the seq of the version 1 leaf the
    team chain reaches; proven False when it reaches none."""
    s = p.scope
    if not proven:
        return ("not proven complete: the team's entries around the window are version 1 leaves, written before "
                "the ledger kept team chains")
    if stop is None:
        return "complete: every entry of team %s logged in [%d, %d) up to seq %d (team chain, %d entries)" % (
            s["team"], s["from_us"], s["to_us"], p.size - 1, len(p.entries))
    return ("complete after seq %d: every entry of team %s logged in [%d, %d) after seq %d up to seq %d (team "
            "chain); the window's entries up to seq %d are version 1 leaves, written before the ledger kept team "
            "chains: that none of them was left out is not proven" % (stop, s["team"], s["from_us"], s["to_us"], stop,
                                                                     p.size - 1, stop))


def check_all(e, work, data, tools, outcomes_tool):
    """Runs every case through the three verifiers; returns the failures."""
    sign = t.signer(os.path.join(data, "signing.key"))
    vkey = os.path.join(work, "vkey")
    packs = {n: Pack(os.path.join(work, n + ".tar.gz")) for n in list(e["windows"]) + ["head-old", "after-since"]}
    seq = {k: v["seq"] for k, v in e.items() if isinstance(v, dict) and "seq" in v}
    with open(vkey, "wb") as f:
        f.write(packs["after"].get("ledger.vkey"))
    for name, p in packs.items():
        assert p.manifest["format"] == 5, (name, p.manifest["format"])
    after, head, since = packs["after"], packs["head"], packs["after-since"]
    assert [x["seq"] for x in after.entries] == [seq[k] for k in ("w2a", "w2b", "w2c", "w2d")], after.entries
    assert packs["v1-only"].window["after"]["seq"] == seq["u1"], packs["v1-only"].window
    assert packs["head-old"].size < head.size

    def resigned(files, manifest_edit=None):
        if manifest_edit:
            def apply(text):
                m = json.loads(text)
                manifest_edit(m)
                return (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()
            files = t.edited(files, "manifest.json", apply)
        return t.resigned(files, sign, outcomes_tool)

    def rewindowed(files, p, **changes):
        """files with p's team-window.json changed, re-signed."""
        return resigned(with_file(files, "team-window.json", window_json(dict(p.window, **changes))))

    def format3(m):
        m["format"] = 3

    def ok(p, line, kept=None):
        return (0, p, line, kept)

    def refused(reason, kept=None):
        return (1, None, reason, kept)

    walk = "team-window.json: entry %d follows the team's entry %d (team_prev), which the pack does not hold"
    last = "team-window.json: head: the team's last entry up to tree size %d is seq %d with leaf hash %s, the pack's " \
           "last is seq %d with leaf hash %s"
    missing = ("team-window.json: missing: a team window whose checkpoint-time note signs a team-head map root "
               "carries its team chain proof")
    h = {n: hashlib.sha256(b"\x00" + line).hexdigest() for p in packs.values() for n, line in
         zip([x["seq"] for x in p.entries], p.lines)}
    body = since.note
    v2 = sign(("\n".join(["evidence-ledger/checkpoint-time/v2"] + body[1:5] + body[6:]) + "\n").encode())
    kept = os.path.join(work, "old.kept")
    downgraded = resigned(t.edited(with_file(dropped(since.files, {seq["w2d"]}), "team-window.json", None),
                                   "checkpoint-time", lambda _: v2), format3)
    downgrade = ("checkpoint-time: a version 2 note, but the checkpoint given with %s has a version 4 note: a ledger "
                 "that keys runs by team does so with every later checkpoint")
    cases = [
        ("a window with entries after it", after.files, ok(after, complete(after))),
        ("a window reaching the end of the log", head.files, ok(head, complete(head))),
        ("an empty window with a before", packs["empty"].files, ok(packs["empty"], complete(packs["empty"]))),
        ("a team with no entry (absence)", packs["absent"].files, ok(packs["absent"], complete(packs["absent"]))),
        ("a window holding its team's first entry", packs["first"].files,
         ok(packs["first"], complete(packs["first"]))),
        ("a window with the ledger's step_unknown", packs["unknown"].files,
         ok(packs["unknown"], complete(packs["unknown"]))),
        ("a window straddling the upgrade", packs["upgrade"].files,
         ok(packs["upgrade"], complete(packs["upgrade"], seq["u1"]))),
        ("a window of version 1 leaves, after it a version 1 leaf", packs["v1-only"].files,
         ok(packs["v1-only"], complete(packs["v1-only"], proven=False))),
        ("a window of version 1 leaves, after it a version 2 leaf", packs["v1-then-v2"].files,
         ok(packs["v1-then-v2"], complete(packs["v1-then-v2"], seq["u1"]))),
        ("a window exported --since the kept checkpoint, its version 3 note kept", since.files,
         ok(since, complete(since), kept)),
        ("a whole run dropped from the window", resigned(dropped(after.files, {seq["w2b"], seq["w2c"]})),
         refused(walk % (seq["w2d"], seq["w2c"]))),
        ("the ledger's step_unknown dropped", resigned(dropped(packs["unknown"].files, {seq["u-unknown"]})),
         refused(walk % (seq["u-after"], seq["u-unknown"]))),
        ("the window's last entry dropped (head)", resigned(dropped(head.files, {seq["w3c"]})),
         refused(last % (head.size, seq["w3c"], h[seq["w3c"]], seq["w3b"], h[seq["w3b"]]))),
        ("the window's first entry dropped (before)", resigned(dropped(after.files, {seq["w2a"]})),
         refused(walk % (seq["w2b"], seq["w2a"]))),
        ("after replaced by a later entry of the team", rewindowed(after.files, after, after=head.bound(seq["w3b"])),
         refused(walk % (seq["w3b"], seq["w3a"]))),
        ("head taken from an older export (older tree size), the last entry dropped",
         rewindowed(dropped(head.files, {seq["w3c"]}), head, head=packs["head-old"].window["head"]),
         refused("team-window.json: head: the proof leads to map root %s, the checkpoint-time note signs %s"
                 % (packs["head-old"].teams_root().hex(), head.teams_root().hex()))),
        ("team-window.json with both after and head", rewindowed(after.files, after, head=head.window["head"]),
         refused("team-window.json: want exactly one of after and head")),
        ("before.seq written as a string",
         rewindowed(after.files, after, before=dict(after.window["before"], seq="%d" % seq["w1b"])),
         refused("team-window.json: before.seq: want a JSON integer")),
        ("before replaced by the window's first entry",
         rewindowed(dropped(after.files, {seq["w2a"]}), after, before=after.bound(seq["w2a"])),
         refused("team-window.json: before: entry %d was logged at %d, not before the window's from_us %d"
                 % (seq["w2a"], e["w2a"]["logged_at_us"], after.scope["from_us"]))),
        ("after replaced by the window's last entry",
         rewindowed(dropped(after.files, {seq["w2d"]}), after, after=after.bound(seq["w2d"])),
         refused("team-window.json: after: entry %d was logged at %d, inside the window, which ends at %d"
                 % (seq["w2d"], e["w2d"]["logged_at_us"], after.scope["to_us"]))),
        ("team-window.json removed", resigned(with_file(after.files, "team-window.json", None)), refused(missing)),
        ("team-window.json removed, the manifest made format 3", resigned(with_file(after.files, "team-window.json",
                                                                                    None), format3),
         refused("checkpoint-time: format 3 pack with a version 4 note: a format 3 pack carries a version 2 note")),
        ("the last entry dropped, team-window.json removed, a version 2 note re-signed, format 3; --since a kept "
         "version 4 note", downgraded, refused(downgrade % "--since", kept)),
        ("the last entry dropped, team-window.json removed, a version 2 note re-signed, format 3; --not-older-than "
         "a kept version 4 note", downgraded, refused(downgrade % "--not-older-than", ["--not-older-than", kept])),
    ]
    return run_cases(cases, work, vkey, tools)


def reads_format4(lvg, files, work, vkey):
    """Whether ledger-verify-go reads a genuine format 4 pack at all; a
    binary that refuses the format itself (an older ledger-verify-go) has its
    cases skipped, saying so."""
    path = os.path.join(work, "genuine.tar.gz")
    t.write_pack(files, path)
    r = subprocess.run([lvg, "--vkey", vkey, path], capture_output=True, text=True)
    got = (r.stdout + r.stderr).strip()
    if r.returncode != 0 and re.search(r'format: expected 1, 2 or 3|unknown file "[^"]*/team-window.json"|'
                                       r'unknown key "team_prev"', got):
        print("SKIPPED: ledger-verify-go: every case: it refuses format 4 packs altogether (%s)" % got)
        return False
    return True


def run_cases(cases, work, vkey, tools):
    failures = worded = 0
    go_format4 = reads_format4(tools["ledger-verify-go"], cases[0][1], work, vkey)
    for label, files, (code, p, line, kept) in cases:
        path = os.path.join(work, "case.tar.gz")
        t.write_pack(files, path)
        extra = kept if isinstance(kept, list) else ["--since", kept] if kept else []
        verdicts = {}
        for tool, cmd in (("verify_pack.py", ["/usr/bin/python3", tools["verify_pack.py"], path, "--vkey", vkey]),
                          ("ledger-verify-go", [tools["ledger-verify-go"], "--vkey", vkey, path]),
                          ("ledgerctl", [tools["ledgerctl"], "verify", path, "--vkey", vkey])):
            r = subprocess.run(cmd + extra, capture_output=True, text=True)
            got = (r.stdout + r.stderr).strip()
            if tool == "ledger-verify-go" and (not go_format4 or "--not-older-than" in extra):  # it has no such flag
                continue
            verdicts[tool] = r.returncode
            if code == 0:
                scope = json.dumps(p.scope, separators=(",", ":"), sort_keys=True)
                want = [r"OK: %d entries of %s verified against the checkpoint of .* at tree size %d, root %s, "
                        r"signed at .*\." % (len(p.entries), re.escape(scope), p.size, p.manifest["root"])]
                if kept:
                    want.append(r"The checkpoint is consistent with the earlier one at size \d+, root [0-9a-f]{64} "
                                r"\(the one given with --since\)\.")
                want.append(re.escape(line + "."))
                exact = re.fullmatch("\n".join(want), got) is not None
                good = r.returncode == 0 and (exact if tool == "verify_pack.py" else line in got)
            else:
                exact = got == "FAILED: " + line
                good = r.returncode == 1 and (exact if tool == "verify_pack.py" else line in got)
                if tool == "ledgerctl" and r.returncode == 1 and not good and line.split(":")[0] in got:
                    print("%s: ledgerctl refuses it in other words than section 7's:\n    ledgerctl: %s\n    "
                          "contract:  %s" % (label, got.splitlines()[-1], line))
                    worded += 1
                    good = True
            if not good:
                print("FAIL: %s: %s exited %d (expected %d):\n    %s\n  expected: %s"
                      % (label, tool, r.returncode, code, got.replace("\n", "\n    ")[:1500], line))
                failures += 1
            else:
                print("%s: %s exit %d: %s" % (label, tool, r.returncode, got.splitlines()[-1][:240]))
        if len(set(verdicts.values())) != 1:
            print("FAIL: %s: the verifiers disagree: %s" % (label, verdicts))
            failures += 1
    if not failures:
        print("closed team windows: %d cases, the same verdict from %s; ledgerctl verify words %d refusals otherwise"
              % (len(cases), "the three verifiers" if go_format4 else "verify_pack.py and ledgerctl verify (ledger-"
                 "verify-go skipped: it refuses format 4)", worded))
    return failures


if __name__ == "__main__":
    main()
