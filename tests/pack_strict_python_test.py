#!/usr/bin/env python3
"""export/verify/python/verify_pack.py against the operator's attacks on what a pack
states and the printing of what a pack holds (CONTRACT.md section 7,
"Reading a pack strictly", "The signed time"): each attack, re-signed with
the ledger's key, is refused with the rule named; the genuine packs verify.

- Pending steps from the entries, never from outcomes.json: the run's
  step_unknown dropped, the run head and the note's runs root forged to
  match, outcomes.json showing the step succeeded.
- The signed time against the pack: a kept note of the pack's size signing
  other map roots; a time before the latest entry's logged_at_us; a time
  after a witness's cosignature; version 2 leaves under a version 2 note,
  or under no note (format 1); --expect-grace-ms.
- Values of a pack printed escaped: ids with control and bidi characters,
  a member name that is not UTF-8 (packs built here from the contract's
  text with a test key, tests/run_head_pack_test.py's builder: the ledger
  refuses such ids at append).

Usage: pack_strict_python_test.py VERIFY_PACK_PY VKEY_FILE LEDGER_KEY_FILE UNKNOWN_PACK RUN_PACK WORK_DIR
         UNKNOWN_PACK_5
UNKNOWN_PACK: team-support/run-0007 of a ledger whose grace is 200 ms, its
crashed step declared unknown (the step_unknown its last entry), of format
6; UNKNOWN_PACK_5: the same of format 5; RUN_PACK: another run pack of that
ledger, of format 5 (its forgeries rewrite it as formats 1 and 3, which
prove their entries with proofs.jsonl).
"""
import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import gzip

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "export", "verify", "python"))
import pack_tamper_test as t  # noqa: E402
import run_head_pack_test as rh  # noqa: E402
import runmap  # noqa: E402
import strict_packs as sp  # noqa: E402


def manifest_edited(files, edit):
    m = json.loads(files["manifest.json"])
    edit(m)
    return dict(files, **{"manifest.json": (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()})


def note_body(note):
    return sp.text_of(note).decode().split("\n")  # the lines, then ""


def step_unknown_dropped(files, sign):
    """Item 12: the step_unknown (the run's last entry) dropped, run-head.json
    made the run's head without it, the note's runs root the one that head
    leads to (re-signed), outcomes.json showing the step succeeded; its
    line of proofs.jsonl dropped, or in format 6 the multiproof made anew
    for the entries left."""
    entries = files["entries.jsonl"].split(b"\n")[:-1]
    dropped = json.loads(entries[-1])
    assert dropped["receipt"]["kind"] == "step_unknown", dropped
    last = json.loads(entries[-2])
    head = json.loads(files["run-head.json"])
    last_hash = hashlib.sha256(b"\x00" + entries[-2]).digest()
    head["head"] = {"count": head["head"]["count"] - 1, "last_seq": last["seq"], "last_leaf_hash": last_hash.hex()}
    forged_root = runmap.inclusion_root(bytes.fromhex(head["key"]), head["head"]["count"], last["seq"], last_hash,
                                        [bytes.fromhex(s) for s in head["siblings"]])
    body = note_body(files["checkpoint-time"])
    body[4] = "runs " + base64.b64encode(forged_root).decode()
    outcomes = json.loads(files["outcomes.json"])
    step_id = dropped["receipt"]["step_id"]
    for s in outcomes["steps"]:
        if s["step_id"] == step_id and s["state"] == "unknown":
            s["state"] = "succeeded"
            s.pop("unknown", None)
    if "multiproof.txt" in files:
        inclusion = {"multiproof.txt": sp.remade_multiproof(files, lambda i: i != len(entries) - 1)}
    else:
        inclusion = {"proofs.jsonl": b"".join(x + b"\n" for x in files["proofs.jsonl"].split(b"\n")[:-2])}
    out = dict(files, **inclusion, **{
        "entries.jsonl": b"".join(x + b"\n" for x in entries[:-1]),
        "run-head.json": json.dumps(head, separators=(",", ":")).encode(),
        "checkpoint-time": sign("\n".join(body).encode()),
        "outcomes.json": (json.dumps(outcomes, separators=(",", ":")) + "\n").encode()})
    return dict(t.resigned(sorted(out.items()), sign)), step_id


def real_cases(files, unknown, unknown5, sign, work):
    """(label, files, extra flags, exit code, regex of the output)."""
    resign = lambda f: dict(t.resigned(sorted(f.items()), sign))  # noqa: E731
    body = note_body(files["checkpoint-time"])  # header, origin, size, root, runs, teams, time, ""
    signed_at = int(body[6][5:])
    entries = [json.loads(x) for x in files["entries.jsonl"].split(b"\n")[:-1]]
    latest = max(entries, key=lambda e: e["logged_at_us"])
    cp = files["checkpoint"]
    kept_roots = {}
    for at, name in ((4, "runs"), (5, "teams")):
        other = list(body)
        other[at] = "%s %s" % (name, base64.b64encode(hashlib.sha256(b"another view").digest()).decode())
        kept_roots[name] = os.path.join(work, "kept-%s.note" % name)
        with open(kept_roots[name], "wb") as f:
            f.write(cp + sign("\n".join(other).encode()))
    early = list(body)
    early[6] = "time %d" % (latest["logged_at_us"] - 1)
    w = sp.Witness("witness-a.example")
    cosigned = sp.with_lines(cp, sp.sig_lines(cp) + [w.line(sp.text_of(cp), signed_at // 1000000 - 10)])
    policy = os.path.join(work, "policy-a.txt")
    with open(policy, "w") as f:
        f.write("log %s\nwitness A %s\nquorum A\n" % (files["ledger.vkey"].decode().strip(), w.vkey))
    # A version 2 note keys runs by v1 keys: the forger proves the run in a
    # map of it alone (its root the run's leaf hash), which the key signs.
    import runmap
    scope = json.loads(files["manifest.json"])["scope"]
    head = json.loads(files["run-head.json"])["head"]
    key1 = runmap.run_key(scope["team"].encode(), scope["run_id"].encode(), 1)
    alone = runmap.leaf_hash(key1, runmap.value_hash(head["count"], head["last_seq"],
                                                      bytes.fromhex(head["last_leaf_hash"])))
    v2 = sign(("\n".join(["evidence-ledger/checkpoint-time/v2"] + body[1:4] +
                         ["runs " + base64.b64encode(alone).decode()] + body[6:])).encode())
    proof1 = json.dumps({"key": key1.hex(), "head": head, "siblings": []}, separators=(",", ":")).encode() + b"\n"
    as_format3 = manifest_edited(dict(files, **{"checkpoint-time": v2, "run-head.json": proof1}),
                                 lambda m: m.update(format=3))

    def format1(m):
        m.update(format=1)
        del m["unknown_grace_ms"]
        for name in ("checkpoint-time", "run-head.json"):
            del m["files"][name]
    as_format1 = manifest_edited({n: d for n, d in files.items() if n not in ("checkpoint-time", "run-head.json")},
                                 format1)
    forged, step_id = step_unknown_dropped(unknown, sign)
    forged5, _ = step_unknown_dropped(unknown5, sign)
    team, run = json.loads(unknown["manifest.json"])["scope"]["team"], json.loads(unknown["manifest.json"])["scope"][
        "run_id"]
    ok = r"^OK: \d+ entries of "
    pending = (r"^FAILED: outcomes\.json: step %s/%s/%s attempt 1 is pending, but its deadline \(start \+ "
               r"timeout \+ the manifest's unknown_grace_ms 200\) .* is before the checkpoint's signed time "
               % (re.escape(team), re.escape(run), re.escape(step_id)))
    return [
        ("the genuine run pack", files, [], 0, ok),
        ("the genuine pack of the unknown step", unknown, [], 0, ok),
        ("the genuine pack of the unknown step, format 5", unknown5, [], 0, ok),
        ("item 12: the step_unknown dropped, the run head and runs root forged, the multiproof made anew, "
         "outcomes.json showing success", forged, [], 1, pending),
        ("item 12, format 5: the step_unknown and its proof line dropped, the run head and runs root forged, "
         "outcomes.json showing success", forged5, [], 1, pending),
        ("item 15a: --not-older-than a kept note of the same size signing another runs root", files,
         ["--not-older-than", kept_roots["runs"]], 1,
         r"^FAILED: checkpoint-time: runs root [0-9a-f]{64} at tree size \d+, the note kept with the checkpoint "
         r"given with --not-older-than signs [0-9a-f]{64} at that size$"),
        ("item 15a: --not-older-than a kept note of the same size signing another teams root", files,
         ["--not-older-than", kept_roots["teams"]], 1, r"^FAILED: checkpoint-time: teams root "),
        ("item 15b: a time re-signed before the latest entry's logged_at_us",
         resign(dict(files, **{"checkpoint-time": sign("\n".join(early).encode())})), [], 1,
         r"^FAILED: checkpoint-time: time .* is before entry %d's logged_at_us " % latest["seq"]),
        ("item 15b: a witness's cosignature ten seconds before the signed time", resign(dict(files, checkpoint=cosigned)),
         ["--policy", policy], 1,
         r"^FAILED: checkpoint-time: time .* is after the cosignature time \d+ of witness A: a witness cosigns"),
        ("item 15c: version 2 leaves under a version 2 note (the manifest made format 3)", resign(as_format3), [], 1,
         r"^FAILED: checkpoint-time: a version 2 note, but entries\.jsonl holds a leaf of version 2 \(seq \d+\): a "
         r"ledger that writes version 2 leaves signs version 3 notes$"),
        ("item 15c: version 2 leaves, the note removed (the manifest made format 1)", resign(as_format1), [], 1,
         r"^FAILED: checkpoint-time: missing, but entries\.jsonl holds a leaf of version 2 "),
        ("item 15d: --expect-grace-ms the ledger's grace", files, ["--expect-grace-ms", "200"], 0, ok),
        ("item 15d: --expect-grace-ms another grace", files, ["--expect-grace-ms", "30000"], 1,
         r"^FAILED: manifest\.json: unknown_grace_ms: 200, the auditor expects 30000 \(--expect-grace-ms\)$"),
        ("item 15d: --expect-grace-ms not a decimal number", files, ["--expect-grace-ms", "3_0"], 2,
         r"--expect-grace-ms: want a decimal number"),
    ]


HOSTILE_RUN = "run-\x1b[2J\u202egnp.exe"
HOSTILE_STEP = "s\x07\u2066x"


def hostile_pack(key):
    """A format 3 run pack (the builder of tests/run_head_pack_test.py) whose
    run id and step id hold control and bidi characters."""
    log = rh.Log()
    log.append(rh.step("team-a", HOSTILE_RUN, HOSTILE_STEP, "agent_start", 0, decision="allow", timeout_ms=3600000))
    log.append(rh.step("team-a", HOSTILE_RUN, HOSTILE_STEP, "model_call", 1, route="local/m", decision="allow"))
    return rh.build_pack(key, log, len(log.leaves), {"kind": "run", "team": "team-a", "run_id": HOSTILE_RUN})


def escaping_cases(work):
    """(label, pack path, flags, exit code, regex) of the printing of a
    pack's values (item 10), against the test key."""
    key = rh.Key(rh.ORIGIN, rh.SEED)
    vkey = os.path.join(work, "test.vkey")
    with open(vkey, "w") as f:
        f.write(key.vkey + "\n")
    hostile = os.path.join(work, "hostile.tar.gz")
    rh.write_pack(hostile_pack(key), hostile)
    # The scope is printed as JSON (a control character as \\u00XX), then
    # escaped; the step line holds the ids themselves, escaped.
    scope_run, run = r"run-\\u001b\[2J\\u\{202e\}gnp\.exe", r"run-\\x1b\[2J\\u\{202e\}gnp\.exe"
    step = r"s\\x07\\u\{2066\}x"
    named = os.path.join(work, "named.tar.gz")
    files = hostile_pack(key)
    members = [sp.member("evidence/" + n, files[n]) for n in sorted(files)]
    members.append(sp.member("evidence/zz\udcff\x1b[31m", b"x"))
    with open(named, "wb") as f:
        f.write(gzip.compress(sp.tar_bytes(members), mtime=0))
    return vkey, [
        ("item 10: the OK line and the step line of ids with control and bidi characters", hostile, [], 0,
         r'^OK: 2 entries of \{"kind":"run","run_id":"%s","team":"team-a"\} verified .*\n.*\nteam-a/%s/%s attempt 1 '
         r'\(pending\): no completion' % (scope_run, run, step)),
        ("item 10: a failure naming the scope", hostile, ["--expect-scope", "run:team-a/run-1"], 1,
         r'^FAILED: manifest\.json: scope is \{"kind":"run","run_id":"%s","team":"team-a"\}, expected ' % scope_run),
        ("item 10: a member name that is not UTF-8", named, [], 1,
         r"^FAILED: evidence/zz\\xff\\x1b\[31m: not a file of an evidence pack$"),
    ]


def run_case(verify_py, vkey, label, pack, flags, code, want):
    p = subprocess.run(["/usr/bin/python3", verify_py, pack, "--vkey", vkey] + flags, capture_output=True)
    out = (p.stdout + p.stderr).decode("utf-8", "replace").strip()
    raw = re.search(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]", out)
    if p.returncode != code or not re.search(want, out, re.M) or raw:
        print("FAIL: %s: exit %d (expected %d)%s:\n    %s\n  expected: %s" % (
            label, p.returncode, code, ", a raw control or bidi character printed" if raw else "",
            out.encode("unicode_escape").decode()[:1200], want))
        return 1
    print("%s: exit %d: %s" % (label, code, out.splitlines()[-1][:200]))
    return 0


def main():
    verify_py, vkey, key_file, unknown_pack, run_pack, work, unknown5_pack = sys.argv[1:8]
    sign = t.signer(key_file)
    files, unknown, unknown5 = (dict(t.read_pack(p)) for p in (run_pack, unknown_pack, unknown5_pack))
    assert [json.loads(p["manifest.json"])["format"] for p in (files, unknown, unknown5)] == [5, 7, 5]
    failures = 0
    for n, (label, f, flags, code, want) in enumerate(real_cases(files, unknown, unknown5, sign, work)):
        path = os.path.join(work, "case-%d.tar.gz" % n)
        with open(path, "wb") as out:
            out.write(sp.pack_bytes(f))
        failures += run_case(verify_py, vkey, label, path, flags, code, want)
    test_vkey, cases = escaping_cases(work)
    for label, path, flags, code, want in cases:
        failures += run_case(verify_py, test_vkey, label, path, flags, code, want)
    if failures:
        print("%d failures" % failures)
        sys.exit(1)
    print("verify_pack.py: the attacks on the signed time and the outcomes refused, pack values printed escaped")


if __name__ == "__main__":
    main()
