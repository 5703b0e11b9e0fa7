#!/usr/bin/env python3
"""Run packs across the retention line (CONTRACT section 9, "A run pack
across the line (format 9)") through a real ledgerd, and the four
verifiers on them: ledgerctl verify, ledger-verify, verify_pack.py and
ledger-verify-go.

    retention_packs.py make BUILD OUT    the corpus, in OUT
    retention_packs.py test BUILD        make it in a temporary folder, run
                                         every verifier on every case, print
                                         the table case x verifier, and check
                                         with Go's sumdb/tlog the inclusion
                                         proofs ledgerctl pack-proof derives
                                         from run9.tar.gz; exit 1 on any
                                         wrong verdict

The store: tests/util/retention_fill over 40 simulated days, runs of ten
days, then one pass at day 40 of the policy `default 20d`, `team acme
15d`, `team audit forever`: acme's run-2 straddles acme's line. A real
ledgerd on that store exports:
- run9.tar.gz: acme/run-2, format 9, complete from acme's line;
- run7.tar.gz: globex/run-3, a run above every line, format 7;
and refuses acme/run-2 in format 8 and acme/run-1 (every entry pruned).

OUT/forged/*.tar.gz: run9.tar.gz broken one way each and re-signed with
the ledger's key (OUT/signing.key), as only its operator could.
OUT/cases.json: [{"pack", "verdict" ("ok" or "refused"), "message", and
"flags" to give the verifiers, when there are}], the
message a substring every verifier's output holds (the contract's words),
or a list of such substrings.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import pack_tamper_test as t  # noqa: E402
from strict_packs import multiproof_of, subtree_hashes  # noqa: E402
from ledger_testlib import Ledgerd, fail  # noqa: E402

ORIGIN = "retention.test/log"
POLICY = b"default 20d\nteam acme 15d\nteam audit forever\n"


def subtrees(files):
    """Every subtree hash the genuine pack's multiproof walk computes, its
    retention entry walked with the entries."""
    size = json.loads(files["manifest.json"])["tree_size"]
    leaves = {}
    for name in ("entries.jsonl", "retention.jsonl"):
        for line in files[name].split(b"\n")[:-1]:
            leaves[json.loads(line)["seq"]] = line
    nodes = [bytes.fromhex(x) for x in files["multiproof.txt"].decode().split("\n")[:-1]]
    return subtree_hashes(size, leaves, nodes)


def manifest_edit(files, edit):
    m = json.loads(files["manifest.json"])
    edit(m)
    out = dict(files)
    out["manifest.json"] = (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()
    return out


def make(build, out):
    os.makedirs(out, exist_ok=True)
    data = os.path.join(out, "work", "data")
    shutil.rmtree(os.path.join(out, "work"), ignore_errors=True)
    os.makedirs(os.path.join(out, "work"))
    fill = os.path.join(build, "tests", "retention_fill")
    subprocess.run([fill, "fill", data, "--entries", "3000", "--days", "40", "--run-hours", "240", "--origin",
                    ORIGIN], check=True, capture_output=True)
    policy = os.path.join(out, "work", "policy")
    open(policy, "wb").write(POLICY)
    r = subprocess.run([fill, "prune", data, "--policy", policy, "--day", "40", "--origin", ORIGIN], check=True,
                       capture_output=True, text=True)
    lines = {x["team"]: x["below_seq"] for x in json.loads(r.stdout)["rules"]}
    ledgerd = Ledgerd(build, os.path.join(out, "work"), data, ORIGIN)
    try:
        open(os.path.join(out, "vkey"), "w").write(ledgerd.ctl("vkey").stdout)
        ledgerd.ctl("export", "--run", "acme/run-2", "--out", os.path.join(out, "run9.tar.gz"), "--no-progress")
        ledgerd.ctl("export", "--run", "globex/run-3", "--out", os.path.join(out, "run7.tar.gz"), "--no-progress")
        # The pass's entries (the log's last three), for the forgeries.
        ledgerd.ctl("export", "--seq", "3000:3003", "--out", os.path.join(out, "work", "pass.tar.gz"),
                    "--no-progress")
        refusals = {}
        for name, args in (("format 8", ("--run", "acme/run-2", "--pack-format", "8")),
                           ("wholly pruned", ("--run", "acme/run-1"))):
            r = ledgerd.ctl("export", *args, "--out", os.path.join(out, "no.tar.gz"), "--no-progress", check=False)
            if r.returncode == 0 or os.path.exists(os.path.join(out, "no.tar.gz")):
                fail("export %s: not refused, or a file left: %s" % (" ".join(args), r.stdout))
            refusals[name] = r.stderr.strip()
    finally:
        ledgerd.stop()
    shutil.copy(os.path.join(data, "signing.key"), os.path.join(out, "signing.key"))
    forge(out, lines["acme"])
    return lines, refusals


def forge(out, line):
    sign = t.signer(os.path.join(out, "signing.key"))
    files = dict(t.read_pack(os.path.join(out, "run9.tar.gz")))
    size = json.loads(files["manifest.json"])["tree_size"]
    known = subtrees(files)
    entries = files["entries.jsonl"].split(b"\n")[:-1]
    seqs = [json.loads(x)["seq"] for x in entries]
    retention = files["retention.jsonl"]
    r_seq = json.loads(retention)["seq"]
    os.makedirs(os.path.join(out, "forged"), exist_ok=True)
    cases = [{"pack": "run9.tar.gz", "verdict": "ok",
              "message": "complete from seq %d: every entry of the run from seq %d up to seq %d (run-head proof, "
                         "%d of its" % (line, line, size - 1, len(entries))},
             {"pack": "run7.tar.gz", "verdict": "ok", "message": "complete: every entry of the run up to seq"},
             # The auditor who asks for the run gets its pack from the line.
             {"pack": "run9.tar.gz", "verdict": "ok", "flags": ["--expect-scope", "run:acme/run-2"],
              "message": "complete from seq %d:" % line},
             {"pack": "run9.tar.gz", "verdict": "refused", "flags": ["--expect-scope", "run:acme/run-1"],
              "message": "--expect-scope"}]

    def add(name, forged, message, remake=True):
        f = dict(forged)
        if remake:
            kept = {json.loads(x)["seq"]: x for x in f["entries.jsonl"].split(b"\n")[:-1]}
            for x in f.get("retention.jsonl", b"").split(b"\n")[:-1]:
                kept[json.loads(x)["seq"]] = x
            f["multiproof.txt"] = multiproof_of(size, kept, known)
        path = os.path.join("forged", name + ".tar.gz")
        f = manifest_edit(f, lambda m: m.update(files={k: v for k, v in m["files"].items() if k in f}))
        t.write_pack(t.resigned(sorted(f.items()), sign), os.path.join(out, path))
        cases.append({"pack": path, "verdict": "refused", "message": message})

    def without(k):
        f = dict(files)
        f["entries.jsonl"] = b"".join(x + b"\n" for i, x in enumerate(entries) if i != k)
        return f

    add("first-kept-dropped", without(0),
        "run_prev expected below %d (the run's entries before the scope's from_seq were pruned), found %d"
        % (line, seqs[0]))
    add("middle-dropped", without(len(entries) // 2), ["seq %d" % seqs[len(entries) // 2 + 1], "run_prev"])
    add("last-dropped", without(len(entries) - 1), "the run's last entry up to tree size %d is seq %d" % (size, seqs[-1]))
    add("from-seq-lowered", manifest_edit(files, lambda m: m["scope"].update(from_seq=line - 100)),
        "manifest.json: scope.from_seq %d, the retention entry's below_seq is %d" % (line - 100, line))
    add("from-seq-raised", manifest_edit(files, lambda m: m["scope"].update(from_seq=seqs[0] + 1)),
        "manifest.json: scope.from_seq %d, the retention entry's below_seq is %d" % (seqs[0] + 1, line))
    add("from-seq-removed", manifest_edit(files, lambda m: m["scope"].pop("from_seq")),
        "manifest.json: scope: a pack of format 9 is a run pack from a seq (from_seq)")
    add("format-8", manifest_edit(files, lambda m: m.update(format=8)),
        "manifest.json: scope.from_seq: only a run pack of format 9 starts at a seq")
    f = dict(files)
    del f["retention.jsonl"]
    add("retention-entry-removed", f,
        "retention.jsonl: missing: a format 9 pack carries the retention entry that pruned its run's first entries")
    f = dict(files)
    del f["retention-policy.txt"]
    add("policy-removed", f, "retention-policy.txt: missing: a format 9 pack carries the policy its retention entry "
        "applied")
    f = dict(files)
    f["retention.jsonl"] = retention + retention
    add("retention-entry-twice", f, "retention.jsonl: want one line ending in a newline", remake=False)
    altered = files["retention-policy.txt"].replace(b"team acme 15d", b"team acme 10d")
    f = dict(files)
    f["retention-policy.txt"] = altered
    add("policy-altered", f, "retention-policy.txt: SHA-256 %s, the retention entry's policy_sha256 is %s"
        % (hashlib.sha256(altered).hexdigest(), json.loads(retention)["receipt"]["policy_sha256"]))
    # Another rule's entry of the same pass, in the log and the checkpoint:
    # the default rule's (one seq before) and audit's `forever` (one after).
    for name, seq, rule, keep in (("default-rule-entry", r_seq - 1, "default", "1728000"),
                                  ("forever-rule-entry", r_seq + 1, "team audit", "none")):
        other = pass_entry(out, seq)
        f = dict(files)
        f["retention.jsonl"] = other + b"\n"
        add(name, f, "retention.jsonl: the entry states rule %s (keep_s %s), the policy's rule for team acme is "
            "team acme (line 2, keep_s 1296000)" % (rule, keep))
    # The entry's time moved by 1 us, its cutoff with it (still a valid
    # retention): only the multiproof can tell.
    r = json.loads(retention)["receipt"]
    f = dict(files)
    f["retention.jsonl"] = retention.replace(b'"cutoff_us":%d' % r["cutoff_us"], b'"cutoff_us":%d' % (
        r["cutoff_us"] + 1)).replace(b'"occurred_at_us":%d' % r["occurred_at_us"], b'"occurred_at_us":%d' % (
            r["occurred_at_us"] + 1))
    add("retention-entry-altered", f, "the entries and the multiproof lead to root", remake=False)
    f = dict(files)
    f["entries.jsonl"] = files["entries.jsonl"].replace(b"MARK-%d-" % seqs[-1], b"MARK-%d+" % seqs[-1])
    add("entry-altered", f, "the entries and the multiproof lead to root", remake=False)
    with open(os.path.join(out, "cases.json"), "w") as out_file:
        json.dump(cases, out_file, indent=1)
        out_file.write("\n")


def pass_entry(out, seq):
    """The leaf of `seq`, an entry of the pass, from the seq range of the
    pass's entries the ledger exported."""
    lines = dict(t.read_pack(os.path.join(out, "work", "pass.tar.gz")))["entries.jsonl"].split(b"\n")[:-1]
    return next(x for x in lines if json.loads(x)["seq"] == seq)


def verifiers(build, work):
    lvg = os.path.join(work, "ledger-verify-go")
    env = dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off", GOPROXY="off", GOFLAGS="",
               GOCACHE=os.path.join(build, "export", "verify", "go", "gocache"))
    subprocess.run(["go", "build", "-o", lvg, "."], cwd=os.path.join(ROOT, "export", "verify", "go"), env=env,
                   check=True)
    return [("ledgerctl", [os.path.join(build, "cmd", "ledgerctl"), "verify"]),
            ("ledger-verify", [os.path.join(build, "cmd", "ledger-verify")]),
            ("verify_pack.py", ["/usr/bin/python3", os.path.join(ROOT, "export", "verify", "python",
                                                                "verify_pack.py")]),
            ("ledger-verify-go", [lvg])]


def go_proofs(build, out, work):
    """ledgerctl pack-proof's proofs of entries of run9.tar.gz (whose
    multiproof walks the retention entry too), checked by Go's
    tlog.CheckRecord (tests/interop/pack_proof.go): what tools we did not
    write make of a format 9 pack."""
    env = dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off", GOPROXY="off", GOFLAGS="",
               GOCACHE=os.path.join(build, "export", "verify", "go", "gocache"))
    tool = os.path.join(work, "pack_proof")
    subprocess.run(["go", "build", "-o", tool, os.path.join(HERE, "interop", "pack_proof.go")], env=env, check=True)
    pack = os.path.join(out, "run9.tar.gz")
    files = dict(t.read_pack(pack))
    for name in ("checkpoint", "entries.jsonl"):
        open(os.path.join(work, name), "wb").write(files[name])
    seqs = [json.loads(x)["seq"] for x in files["entries.jsonl"].split(b"\n")[:-1]]
    proofs = []
    for seq in (seqs[0], seqs[len(seqs) // 2], seqs[-1]):
        for form in ("tlog-proof", "json"):
            r = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "pack-proof", pack, "--seq", str(seq),
                                "--vkey", os.path.join(out, "vkey"), "--format", form], capture_output=True)
            if r.returncode != 0:
                fail("pack-proof --seq %d --format %s: %s" % (seq, form, r.stderr.decode()))
            proofs.append(os.path.join(work, "%d.%s" % (seq, form)))
            open(proofs[-1], "wb").write(r.stdout)
    r = subprocess.run([tool, os.path.join(out, "vkey"), os.path.join(work, "checkpoint"),
                        os.path.join(work, "entries.jsonl")] + proofs, capture_output=True, text=True)
    if r.returncode != 0 or r.stdout.count("proven in tree size") != len(proofs):
        fail("Go's tlog.CheckRecord on pack-proof's proofs of run9.tar.gz: %s%s" % (r.stdout, r.stderr))
    print("run9.tar.gz: %d proofs from ledgerctl pack-proof checked by Go's tlog.CheckRecord" % len(proofs))


def check(build, out, work):
    with open(os.path.join(out, "cases.json")) as f:
        cases = json.load(f)
    vs = verifiers(build, work)
    vkey = os.path.join(out, "vkey")
    wrong, rows = [], []
    for case in cases:
        row = []
        for name, command in vs:
            cmd = command + [os.path.join(out, case["pack"]), "--vkey", vkey] + case.get("flags", [])
            if name == "ledger-verify-go":
                cmd = command + ["--vkey", vkey, os.path.join(out, case["pack"])] + case.get("flags", [])
            p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=120)
            said = (p.stdout + p.stderr).replace("\n", " ")
            wanted = case["message"] if isinstance(case["message"], list) else [case["message"]]
            good = (p.returncode == 0) == (case["verdict"] == "ok") and all(w in said for w in wanted)
            row.append("ok" if good else "WRONG")
            if not good:
                wrong.append("%s, %s: want %s with '%s', got exit %d: %s"
                             % (case["pack"], name, case["verdict"], case["message"], p.returncode, said[:500]))
        rows.append((" ".join([case["pack"]] + case.get("flags", [])), case["verdict"], row))
    width = max(len(r[0]) for r in rows)
    print("%-*s  %-8s  %s" % (width, "pack", "verdict", "  ".join("%-16s" % n for n, _ in vs)))
    for pack, verdict, row in rows:
        print("%-*s  %-8s  %s" % (width, pack, verdict, "  ".join("%-16s" % v for v in row)))
    for w in wrong:
        print("WRONG: " + w)
    print("retention packs: %d cases x %d verifiers, %d wrong" % (len(cases), len(vs), len(wrong)))
    return 1 if wrong else 0


def main():
    if len(sys.argv) != 4 and not (len(sys.argv) == 3 and sys.argv[1] == "test"):
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[2])
    if sys.argv[1] == "make":
        lines, refusals = make(build, os.path.abspath(sys.argv[3]))
        print(json.dumps({"lines": lines, "refusals": refusals}, indent=1))
        return 0
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "corpus")
        lines, refusals = make(build, out)
        want = {"format 8": "its pack would not hold the whole run: ask for format 9",
                "wholly pruned": "its pack would not hold the whole run, and no entry of it is kept"}
        for name, message in want.items():
            if message not in refusals[name]:
                fail("export refusal (%s): want '%s', got '%s'" % (name, message, refusals[name]))
            print("refused (%s): %s" % (name, refusals[name]))
        go_proofs(build, out, work)
        return check(build, out, work)


if __name__ == "__main__":
    sys.exit(main())
