"""Format 3 and format 5 packs built from CONTRACT.md's text alone (sections
1, 2, 5, 6, 6a and 7), with Python's standard library and cryptography,
signed with a test key: a log of three runs, its RFC 9162 tree, its
run-head map (under run keys of version 1, and of version 2 for format 5)
and the map's proofs, the team-head map, the checkpoint and its time note
(version 2; version 4 in format 5). export/verify/python/verify_pack.py and
ledger-verify-go must accept the genuine packs (a run pack, an absence
pack, a seq range, a format 2 pack of an older ledger) and refuse each
forged one with the reason section 7 gives, the manifest re-signed with the
key as the ledger's operator could; some are verified --since a kept
checkpoint and its time note.

Usage: run_head_pack_test.py VERIFY_PACK_PY LEDGER_VERIFY_GO WORK_DIR
"""
import base64
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import datetime
import gzip
import itertools

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "export", "verify", "python"))
import runmap  # noqa: E402

ORIGIN = "run-head.test/log"
SEED = bytes(range(32))
T0 = 1767225600000000  # 2026-01-01T00:00:00Z
GRACE_MS = 3600000


class Key:
    def __init__(self, name, seed):
        self.name, self.private = name, Ed25519PrivateKey.from_private_bytes(seed)
        public = self.private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.key_id = hashlib.sha256(name.encode() + b"\n\x01" + public).digest()[:4]
        self.vkey = "%s+%s+%s" % (name, self.key_id.hex(), base64.b64encode(b"\x01" + public).decode())

    def sign(self, text):
        """A C2SP signed note of text (which ends in a newline)."""
        sig = base64.b64encode(self.key_id + self.private.sign(text.encode())).decode()
        return (text + "\n\u2014 %s %s\n" % (self.name, sig)).encode()


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def leaf_hash(leaf):
    return hashlib.sha256(b"\x00" + leaf).digest()


def node(a, b):
    return hashlib.sha256(b"\x01" + a + b).digest()


def mth(hashes):
    """RFC 9162 2.1.1: the root over leaf hashes."""
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return node(mth(hashes[:k]), mth(hashes[k:]))


def path(m, hashes):
    """RFC 9162 2.1.3.1: the inclusion proof of leaf m."""
    if len(hashes) <= 1:
        return []
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    if m < k:
        return path(m, hashes[:k]) + [mth(hashes[k:])]
    return path(m - k, hashes[k:]) + [mth(hashes[:k])]


class Log:
    """A log of entries appended in order; the run chain, hash chain and the
    run-head map kept as section 1 and 6a say."""

    def __init__(self):
        self.leaves, self.hashes, self.heads = [], [], {}

    def append(self, receipt):
        seq = len(self.leaves)
        entry = {"v": 1, "seq": seq, "prev": (self.hashes[-1] if self.hashes else bytes(32)).hex(),
                 "logged_at_us": T0 + 1000 * seq, "emitter": "ledger" if receipt["kind"] == "step_unknown" else
                 "uri:spiffe://test/worker", "receipt": receipt}
        run = (receipt["team"], receipt["run_id"])
        if run in self.heads:
            entry["run_prev"] = self.heads[run][1]
        leaf = canonical(entry)
        self.leaves.append(leaf)
        self.hashes.append(leaf_hash(leaf))
        count = self.heads[run][0] + 1 if run in self.heads else 1
        self.heads[run] = (count, seq, self.hashes[-1])

    def map_at(self, size, run_keys=1):
        """{key: (head, value hash)} of the first size entries, keyed by run
        keys of version run_keys."""
        heads = {}
        for leaf in self.leaves[:size]:
            r = json.loads(leaf)["receipt"]
            run = (r["team"], r["run_id"])
            count = heads[run][0] + 1 if run in heads else 1
            heads[run] = (count, json.loads(leaf)["seq"], leaf_hash(leaf))
        return {runmap.run_key(t.encode(), r.encode(), run_keys): (h, runmap.value_hash(*h))
                for (t, r), h in heads.items()}

    def teams_root(self, size):
        """The team-head map root of the first size entries."""
        heads = {}
        for leaf in self.leaves[:size]:
            team = json.loads(leaf)["receipt"]["team"]
            heads[team] = (heads[team][0] + 1 if team in heads else 1, json.loads(leaf)["seq"], leaf_hash(leaf))
        return runmap.root({runmap.team_key(t.encode()): runmap.value_hash(*h) for t, h in heads.items()})


def map_proof(runs, key):
    """The JSON form of section 6a of key's proof in runs ({key: (head,
    value hash)}), built from the tree's definition."""
    siblings, members, depth = [], sorted(runs), 0
    while len(members) > 1:
        side = runmap.bit(key, depth)
        mine = [k for k in members if runmap.bit(k, depth) == side]
        other = [k for k in members if runmap.bit(k, depth) != side]
        siblings.append(runmap.subtree([(k, runs[k][1]) for k in other], depth + 1))
        members, depth = mine, depth + 1
    proof = {"key": key.hex()}
    if members == [key]:
        count, last_seq, last_hash = runs[key][0]
        proof["head"] = {"count": count, "last_seq": last_seq, "last_leaf_hash": last_hash.hex()}
    elif members:
        proof["leaf"] = {"key": members[0].hex(), "value_hash": runs[members[0]][1].hex()}
    proof["siblings"] = [s.hex() for s in reversed(siblings)]
    return proof


def step(team, run, step_id, kind, n, **fields):
    r = {"receipt_id": "%s-%s-%d" % (run, kind, n), "kind": kind, "team": team, "run_id": run,
         "occurred_at_us": T0 + n, **fields}
    if step_id:
        r.update(step_id=step_id, attempt=1)
    return r


def build_log():
    """team-a/run-1: a step that succeeded and one still pending; team-a/run-2
    a step declared unknown (its step_unknown the run's last entry); team-b's
    run in between."""
    log = Log()
    log.append(step("team-a", "run-1", "s1", "agent_start", 0, decision="allow", timeout_ms=60000))
    log.append(step("team-a", "run-2", "s1", "agent_start", 1, decision="allow", timeout_ms=10))
    log.append(step("team-b", "run-9", "s1", "agent_start", 2, decision="allow", timeout_ms=60000))
    log.append(step("team-a", "run-1", "s1", "agent_exec", 3, start_receipt_id="run-1-agent_start-0",
                    status="succeeded"))
    log.append(step("team-a", "run-1", "s2", "agent_start", 4, decision="allow", timeout_ms=600000))
    log.append(step("team-a", "run-2", "s1", "step_unknown", 5, start_seq=1, start_receipt_id="run-2-agent_start-1",
                    deadline_us=T0 + 40000, receipt_id="ledger.unknown.1"))
    log.append(step("team-b", "run-9", "s1", "agent_exec", 6, start_receipt_id="run-9-agent_start-2",
                    status="failed"))
    return log


def outcomes(log, size, team, run):
    """outcomes.json's steps as verify_pack.py reads them (state, start,
    completion); the other fields are the ledger's and not read here."""
    steps = {}
    for leaf in log.leaves[:size]:
        e = json.loads(leaf)
        r = e["receipt"]
        if (r["team"], r["run_id"]) != (team, run):
            continue
        if r["kind"] == "agent_start":
            steps[r["receipt_id"]] = {"attempt": 1, "run_id": run, "state": "pending", "step_id": r["step_id"],
                                      "team": team, "start": {"receipt_id": r["receipt_id"], "seq": e["seq"],
                                                              "timeout_at_us": e["logged_at_us"] +
                                                              1000 * r["timeout_ms"]}}
        elif r["kind"] == "agent_exec":
            steps[r["start_receipt_id"]].update(state=r["status"], completion={"seq": e["seq"]})
        elif r["kind"] == "step_unknown":
            steps[r["start_receipt_id"]].update(state="unknown", unknown={"seq": e["seq"]})
    return canonical({"runs": [], "steps": list(steps.values())}) + b"\n"


def run_keys_of(note_version):
    """The run key version of a note's runs root (section 6a, "Which run
    key"): 2 in a note of version 4, else 1."""
    return 2 if note_version == 4 else 1


def time_note(key, log, size, note_version, runs_root=None):
    """The checkpoint-time note (section 5) of version note_version of the
    log's checkpoint at size; runs_root, when given, in place of the map's."""
    b64 = base64.b64encode(mth(log.hashes[:size])).decode()
    if runs_root is None:
        runs_root = runmap.root({k: v[1] for k, v in log.map_at(size, run_keys_of(note_version)).items()})
    lines = ["evidence-ledger/checkpoint-time/v%d" % note_version, ORIGIN, str(size), b64]
    if note_version >= 2:
        lines.append("runs " + base64.b64encode(runs_root).decode())
    if note_version >= 3:
        lines.append("teams " + base64.b64encode(log.teams_root(size)).decode())
    return key.sign("\n".join(lines + ["time %d" % (T0 + 1000 * size)]) + "\n")


def build_pack(key, log, size, scope, fmt=3, note_version=2, map_size=None):
    """The files of a pack of scope against the log's checkpoint at size."""
    hashes = log.hashes[:size]
    root = mth(hashes)
    b64 = base64.b64encode(root).decode()
    runs = log.map_at(size if map_size is None else map_size, run_keys_of(note_version))
    files = {"checkpoint": key.sign("%s\n%d\n%s\n" % (ORIGIN, size, b64)), "ledger.vkey": (key.vkey + "\n").encode()}
    if fmt >= 2:
        files["checkpoint-time"] = time_note(key, log, size, note_version,
                                             runmap.root({k: v[1] for k, v in runs.items()}))
    if scope["kind"] == "run":
        seqs = [i for i in range(size) if (json.loads(log.leaves[i])["receipt"]["team"],
                                           json.loads(log.leaves[i])["receipt"]["run_id"])
                == (scope["team"], scope["run_id"])]
        files["outcomes.json"] = outcomes(log, size, scope["team"], scope["run_id"])
        if fmt >= 3:
            rk = runmap.run_key(scope["team"].encode(), scope["run_id"].encode(), run_keys_of(note_version))
            files["run-head.json"] = json.dumps(map_proof(runs, rk), separators=(",", ":")).encode()
    else:
        seqs = list(range(scope["from_seq"], scope["to_seq"]))
        files["outcomes.json"] = canonical({"runs": [], "steps": []}) + b"\n"
    files["entries.jsonl"] = b"".join(log.leaves[i] + b"\n" for i in seqs)
    files["proofs.jsonl"] = b"".join(json.dumps(
        {"seq": i, "leaf_hash": hashes[i].hex(), "inclusion": [h.hex() for h in path(i, hashes)]},
        separators=(",", ":")).encode() + b"\n" for i in seqs)
    files["report.html"] = b"<!doctype html><title>evidence</title>\n"
    manifest = {"counts": {"entries": len(seqs)}, "files": {}, "format": fmt, "origin": ORIGIN, "root": root.hex(),
                "scope": scope, "tree_size": size}
    if fmt >= 2:
        manifest["unknown_grace_ms"] = GRACE_MS
    return resign(key, files, manifest)


def resign(key, files, manifest=None):
    """The manifest rewritten over the files and signed, as the ledger (or
    its operator, who holds the key) does."""
    files = dict(files)
    manifest = manifest or json.loads(files["manifest.json"])
    manifest["files"] = {n: hashlib.sha256(d).hexdigest() for n, d in files.items()
                         if n not in ("manifest.json", "manifest.sig")}
    manifest["counts"]["entries"] = files["entries.jsonl"].count(b"\n")
    files["manifest.json"] = canonical(manifest) + b"\n"
    files["manifest.sig"] = key.sign(hashlib.sha256(files["manifest.json"]).hexdigest() + "\n")
    return files


def write_pack(files, path):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo("evidence/" + name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[name]))
    with open(path, "wb") as f:
        f.write(gzip.compress(raw.getvalue(), mtime=0))


def cases(key, log):
    """(name, files, exit code, verify_pack.py's lines, ledger-verify-go's line)."""
    n = len(log.leaves)
    last = n - 1
    run1 = {"kind": "run", "team": "team-a", "run_id": "run-1"}
    run2 = {"kind": "run", "team": "team-a", "run_id": "run-2"}
    none = {"kind": "run", "team": "team-a", "run_id": "run-0"}
    genuine = build_pack(key, log, n, run1)
    unknown = build_pack(key, log, n, run2)
    k1 = runmap.run_key(b"team-a", b"run-1")
    map_root = runmap.root({k: v[1] for k, v in log.map_at(n).items()}).hex()
    hash_of = {i: log.hashes[i].hex() for i in range(n)}

    def ok_py(files, entries):
        return py_ok(log, files, entries)

    def ok_go(scope_name, entries, tail=""):
        return go_ok(log, scope_name, entries, tail)

    def edit(files, run_head):
        """files with run-head.json replaced (removed if None), re-signed."""
        f = {n: d for n, d in files.items() if n != "run-head.json"}
        if run_head is not None:
            f["run-head.json"] = run_head
        return resign(key, f)

    def manifest(files, **fields):
        m = json.loads(files["manifest.json"])
        for k, v in fields.items():
            if v is None:
                del m[k]
            else:
                m[k] = v
        return resign(key, files, m)

    def drop_last(files):
        f = dict(files)
        f["entries.jsonl"] = b"".join(line + b"\n" for line in f["entries.jsonl"].split(b"\n")[:-2])
        f["proofs.jsonl"] = b"".join(line + b"\n" for line in f["proofs.jsonl"].split(b"\n")[:-2])
        return resign(key, f)

    def head(files, **h):
        p = json.loads(files["run-head.json"])
        p["head"].update(h)
        return edit(files, json.dumps(p).encode())

    complete1 = "complete: every entry of the run up to seq %d (run-head proof, 3 entries)" % last
    rh = "run-head.json: the run has %d entries up to tree size %d, the pack holds %d"
    yield ("a run pack, every entry of its run, a step pending", genuine, 0,
           ok_py(genuine, 3) + [complete1 + ".",
                                "team-a/run-1/s2 attempt 1 (pending): no completion in the log up to seq %d "
                                "(proven)." % last],
           ok_go("run team-a/run-1", 3, "; " + complete1) + "\nstep team-a/run-1/s2 attempt 1: no completion in the "
           "log up to seq %d (proven)" % last)
    yield ("a run pack whose last entry is the ledger's step_unknown", unknown, 0,
           ok_py(unknown, 2) + ["complete: every entry of the run up to seq %d (run-head proof, 2 entries)." % last,
                                "team-a/run-2/s1 attempt 1 (unknown): no completion in the log up to seq %d "
                                "(proven)." % last],
           ok_go("run team-a/run-2", 2, "; complete: every entry of the run up to seq %d (run-head proof, 2 entries)"
                 % last) + "\nstep team-a/run-2/s1 attempt 1: no completion in the log up to seq %d (proven)" % last)
    absent = build_pack(key, log, n, none)
    yield ("a run with no entry: an absence proof, no entries", absent, 0,
           ok_py(absent, 0) + ["complete: the run has no entry up to seq %d (absence proof)." % last],
           ok_go("run team-a/run-0", 0, "; complete: the run has no entry up to seq %d (absence proof)" % last))
    seq = build_pack(key, log, n, {"kind": "seq", "from_seq": 2, "to_seq": 5})
    yield ("a seq range of format 3: no run-head proof", seq, 0, ok_py(seq, 3), ok_go("seq 2:5", 3))
    # A format 2 pack carries a version 1 note and no run-head.json (the
    # table of section 7): anything else is refused, however well proven.
    format2 = "checkpoint-time: format 2 pack with a version 2 note: a format 2 pack carries a version 1 note"
    seq2 = build_pack(key, log, n, {"kind": "seq", "from_seq": 2, "to_seq": 5}, fmt=2)
    yield ("a seq range of format 2 with a version 2 note", seq2, 1, ["FAILED: " + format2], "FAIL: " + format2)
    run2 = build_pack(key, log, n, run1, fmt=2)
    run2 = resign(key, dict(run2, **{"run-head.json": genuine["run-head.json"]}))
    yield ("a run pack of format 2 with a version 2 note and its run-head proof", run2, 1, ["FAILED: " + format2],
           "FAIL: " + format2)
    older = build_pack(key, log, n, run1, fmt=2, note_version=1)
    yield ("a format 2 pack with a version 1 note (an older ledger's)", older, 0, ok_py(older, 3),
           ok_go("run team-a/run-1", 3))

    msg = rh % (2, n, 1)
    yield ("the run's last entry (the step_unknown) dropped", drop_last(unknown), 1, ["FAILED: " + msg], "FAIL: " + msg)
    msg = rh % (3, n, 2)
    yield ("the run's last entry dropped", drop_last(genuine), 1, ["FAILED: " + msg], "FAIL: " + msg)
    shorter = head(drop_last(genuine), count=2, last_seq=3, last_leaf_hash=hash_of[3])
    wrong = runmap.root({**{k: v[1] for k, v in log.map_at(n).items()},
                         k1: runmap.value_hash(2, 3, log.hashes[3])}).hex()
    msg = "run-head.json: the proof leads to map root %s, the checkpoint-time note signs %s" % (wrong, map_root)
    yield ("the last entry dropped and the head claimed shorter", shorter, 1, ["FAILED: " + msg], "FAIL: " + msg)
    stale = edit(drop_last(genuine), build_pack(key, log, n - 1, run1)["run-head.json"])
    old_root = runmap.root({k: v[1] for k, v in log.map_at(n - 1).items()}).hex()
    msg = "run-head.json: the proof leads to map root %s, the checkpoint-time note signs %s" % (old_root, map_root)
    yield ("the head proof of an older tree size with the current checkpoint", stale, 1, ["FAILED: " + msg],
           "FAIL: " + msg)
    msg = ("run-head.json: the run's last entry up to tree size %d is seq 5 with leaf hash %s, the pack's last is "
           "seq 4 with leaf hash %s" % (n, hash_of[5], hash_of[4]))
    lying = build_pack(key, log, n, run1, map_size=n)
    p = json.loads(lying["run-head.json"])
    p["head"].update(last_seq=5, last_leaf_hash=hash_of[5])
    lying_root = runmap.inclusion_root(k1, 3, 5, log.hashes[5], [bytes.fromhex(s) for s in p["siblings"]])
    f = dict(lying, **{"run-head.json": json.dumps(p).encode()})
    note = f["checkpoint-time"].decode().split("\n")
    note[4] = "runs " + base64.b64encode(lying_root).decode()
    f["checkpoint-time"] = key.sign("\n".join(note[:6]) + "\n")
    yield ("a head whose last entry is not the pack's (under a root the operator signed)", resign(key, f), 1,
           ["FAILED: " + msg], "FAIL: " + msg)
    msg = ("run-head.json: missing: a run pack whose checkpoint-time note signs a run-head map root carries its run's "
           "head proof")
    yield ("run-head.json removed", edit(genuine, None), 1, ["FAILED: " + msg], "FAIL: " + msg)
    yield ("run-head.json removed and the manifest made format 2", manifest(edit(genuine, None),
                                                                            format=2), 1,
           ["FAILED: " + format2], "FAIL: " + format2)
    v1 = build_pack(key, log, n, run1, note_version=1)
    msg = "checkpoint-time: a format 3 pack carries a version 2 note (with the run-head map root)"
    yield ("a format 3 pack with a version 1 note", v1, 1, ["FAILED: " + msg], "FAIL: " + msg)
    msg = "run-head.json: only a run pack carries a run-head proof"
    yield ("a seq range carrying a run-head proof", edit(seq, genuine["run-head.json"]), 1,
           ["FAILED: " + msg], "FAIL: " + msg)
    msg = "run-head.json: only a run pack carries a run-head proof"
    yield ("a format 2 pack carrying a run-head proof", edit(older, genuine["run-head.json"]), 1,
           ["FAILED: " + msg], "FAIL: " + msg)
    k2 = runmap.run_key(b"team-a", b"run-2")
    msg = "run-head.json: key %s is not the run key of team-a/run-1 (%s)" % (k2.hex(), k1.hex())
    yield ("another run's head proof", edit(genuine, unknown["run-head.json"]), 1,
           ["FAILED: " + msg], "FAIL: " + msg)
    msg = "run-head.json: head.count: want a JSON integer"
    yield ("a count that is not a JSON integer", head(genuine, count="3"), 1, ["FAILED: " + msg], "FAIL: " + msg)
    msg = "run-head.json: head.count: want a JSON integer"
    yield ("a count of 3.0", edit(genuine, genuine["run-head.json"].replace(b'"count":3',
                                                                                         b'"count":3.0')), 1,
           ["FAILED: " + msg], "FAIL: " + msg)
    msg = "run-head.json: note: not a field of a run-head proof"
    p = dict(json.loads(genuine["run-head.json"]), note="x")
    yield ("a field that is not the proof's", edit(genuine, json.dumps(p).encode()), 1,
           ["FAILED: " + msg], "FAIL: " + msg)
    msg = ("run-head.json: the map shows no entry of team-a/run-1 up to tree size %d, the pack holds 3" % n)
    p = map_proof({k: v for k, v in log.map_at(n).items() if k != k1}, k1)
    f = dict(genuine, **{"run-head.json": json.dumps(p).encode()})
    note = f["checkpoint-time"].decode().split("\n")
    note[4] = "runs " + base64.b64encode(runmap.root({k: v[1] for k, v in log.map_at(n).items()
                                                      if k != k1})).decode()
    f["checkpoint-time"] = key.sign("\n".join(note[:6]) + "\n")
    yield ("an absence proof (under a root the operator signed) for a run the pack holds", resign(key, f), 1,
           ["FAILED: " + msg], "FAIL: " + msg)


def py_ok(log, files, entries):
    """verify_pack.py's OK line of a pack of the whole log."""
    n = len(log.leaves)
    scope = json.loads(files["manifest.json"])["scope"]
    return ["OK: %d entries of %s verified against the checkpoint of %s at tree size %d, root %s, signed at "
            "%s." % (entries, canonical(scope).decode(), ORIGIN, n, mth(log.hashes).hex(), iso(T0 + 1000 * n))]


def go_ok(log, scope_name, entries, tail=""):
    """ledger-verify-go's OK line of a pack of the whole log, tail before
    its end."""
    return "OK %s: %d entries, tree size %d, root %s%s; outcomes.json not recomputed" % (
        scope_name, entries, len(log.leaves), mth(log.hashes).hex(), tail)


def format5_cases(key, log):
    """Packs of format 5 (section 7): a version 4 note whose runs root is the
    map under run keys of version 2, run-head.json keyed by them; as
    cases(), each with the kept checkpoint file given with --since, if any."""
    n = len(log.leaves)
    last = n - 1
    run1 = {"kind": "run", "team": "team-a", "run_id": "run-1"}
    genuine = build_pack(key, log, n, run1, fmt=5, note_version=4)
    complete1 = "complete: every entry of the run up to seq %d (run-head proof, 3 entries)" % last
    pending = "team-a/run-1/s2 attempt 1 (pending): no completion in the log up to seq %d (proven)." % last
    go_pending = "\nstep team-a/run-1/s2 attempt 1: no completion in the log up to seq %d (proven)" % last
    yield ("format 5: a run pack under run keys of version 2", genuine, 0,
           py_ok(log, genuine, 3) + [complete1 + ".", pending],
           go_ok(log, "run team-a/run-1", 3, "; " + complete1) + go_pending)
    absent = build_pack(key, log, n, {"kind": "run", "team": "team-a", "run_id": "run-0"}, fmt=5, note_version=4)
    leaf = json.loads(absent["run-head.json"])["leaf"]["key"]
    assert leaf[:16] == runmap.team_key(b"team-a")[:8].hex(), "the run in run-0's place is not one of team-a's"
    yield ("format 5: a run of a team with runs has no entry (the proof's leaf is a run of the team)", absent, 0,
           py_ok(log, absent, 0) + ["complete: the run has no entry up to seq %d (absence proof)." % last],
           go_ok(log, "run team-a/run-0", 0, "; complete: the run has no entry up to seq %d (absence proof)" % last))
    seq = build_pack(key, log, n, {"kind": "seq", "from_seq": 2, "to_seq": 5}, fmt=5, note_version=4)
    yield ("format 5: a seq range", seq, 0, py_ok(log, seq, 3), go_ok(log, "seq 2:5", 3))

    v1_keyed = build_pack(key, log, n, run1, fmt=4, note_version=3)
    k1 = runmap.run_key(b"team-a", b"run-1")
    k2 = runmap.run_key(b"team-a", b"run-1", 2)
    msg = "run-head.json: key %s is not the run key of team-a/run-1 (%s)" % (k1.hex(), k2.hex())
    forged = dict(genuine, **{"run-head.json": v1_keyed["run-head.json"],
                              "checkpoint-time": time_note(key, log, n, 4, runmap.root(
                                  {k: v[1] for k, v in log.map_at(n).items()}))})
    yield ("format 5: a version 4 note signing the v1-keyed root, with the v1-keyed proof", resign(key, forged), 1,
           ["FAILED: " + msg], "FAIL: " + msg)
    msg = "checkpoint-time: format 4 pack with a version 4 note: a format 4 pack carries a version 3 note"
    yield ("a format 4 pack with a version 4 note", build_pack(key, log, n, run1, fmt=4, note_version=4), 1,
           ["FAILED: " + msg], "FAIL: " + msg)
    msg = "checkpoint-time: a format 5 pack carries a version 4 note (with run keys of version 2)"
    yield ("a format 5 pack with a version 3 note and its v1-keyed proof",
           build_pack(key, log, n, run1, fmt=5, note_version=3), 1, ["FAILED: " + msg], "FAIL: " + msg)
    yield from kept_cases(key, log, genuine, v1_keyed)


def kept_cases(key, log, genuine, v1_keyed):
    """Format 4 and 5 run packs --since a kept checkpoint of the same size
    and its note (section 7, "The signed time")."""
    n = len(log.leaves)
    checkpoint = genuine["checkpoint"]
    consistency = json.dumps({"old_checkpoint": checkpoint.decode(), "proof": []}, separators=(",", ":")).encode()
    v3, v5 = (resign(key, dict(p, **{"consistency.json": consistency})) for p in (v1_keyed, genuine))
    msg = ("checkpoint-time: a version 3 note, but the checkpoint given with --since has a version 4 note: a ledger "
           "that keys runs by team does so with every later checkpoint")
    yield ("a format 4 pack (version 3 note) --since a kept version 4 note", v3, 1, ["FAILED: " + msg],
           "FAIL: " + msg, checkpoint + genuine["checkpoint-time"])
    last = n - 1
    complete1 = "complete: every entry of the run up to seq %d (run-head proof, 3 entries)" % last
    consistent = ("The checkpoint is consistent with the earlier one at size %d, root %s (the one given with --since)."
                  % (n, mth(log.hashes).hex()))
    ok_py = py_ok(log, v5, 3) + [consistent, complete1 + ".",
                                 "team-a/run-1/s2 attempt 1 (pending): no completion in the log up to seq %d "
                                 "(proven)." % last]
    ok_go = go_ok(log, "run team-a/run-1", 3, ", consistent with the --since checkpoint size %d root %s; %s" % (
        n, mth(log.hashes).hex(), complete1)) + (
        "\nstep team-a/run-1/s2 attempt 1: no completion in the log up to seq %d (proven)" % last)
    yield ("a format 5 pack --since the version 3 note of its checkpoint (the runs roots key runs apart)", v5, 0,
           ok_py, ok_go, checkpoint + v1_keyed["checkpoint-time"])
    yield ("a format 5 pack --since the version 2 note of its checkpoint", v5, 0, ok_py, ok_go,
           checkpoint + time_note(key, log, n, 2))
    yield ("a format 5 pack --since its own version 4 note", v5, 0, ok_py, ok_go,
           checkpoint + genuine["checkpoint-time"])
    other = runmap.EMPTY
    runs2 = runmap.root({k: v[1] for k, v in log.map_at(n, 2).items()})
    msg = ("checkpoint-time: runs root %s at tree size %d, the note kept with the checkpoint given with --since signs "
           "%s at that size" % (runs2.hex(), n, other.hex()))
    yield ("a format 5 pack --since a version 4 note of its size signing another runs root", v5, 1,
           ["FAILED: " + msg], "FAIL: " + msg, checkpoint + time_note(key, log, n, 4, other))


def iso(us):
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=us)
    return "%s (%d us)" % (t.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), us)


def main():
    verify_py, lvg, work = sys.argv[1:4]
    key = Key(ORIGIN, SEED)
    vkey = os.path.join(work, "vkey")
    with open(vkey, "w") as f:
        f.write(key.vkey + "\n")
    log = build_log()
    failures = 0
    for name, files, code, py_lines, go_line, *kept in itertools.chain(cases(key, log), format5_cases(key, log)):
        pack = os.path.join(work, "pack.tar.gz")
        write_pack(files, pack)
        since = []
        if kept:
            since = ["--since", os.path.join(work, "kept")]
            with open(since[1], "wb") as f:
                f.write(kept[0])
        for tool, cmd, want in (
                ("verify_pack.py", ["/usr/bin/python3", verify_py, pack, "--vkey", vkey] + since, "\n".join(py_lines)),
                ("ledger-verify-go", [lvg, "--vkey", vkey, pack] + since, go_line)):
            p = subprocess.run(cmd, capture_output=True, text=True)
            got = (p.stdout + p.stderr).strip()
            if p.returncode != code or got != want:
                print("FAIL: %s: %s exited %d (expected %d):\n  got:  %s\n  want: %s"
                      % (name, tool, p.returncode, code, got.replace("\n", "\n        "),
                         want.replace("\n", "\n        ")))
                failures += 1
            else:
                print("%s: %s exit %d: %s" % (name, tool, code, got.splitlines()[-1][:160]))
    if failures:
        print("%d failures" % failures)
        sys.exit(1)
    print("hand-made format 3 and 5 packs: verify_pack.py and ledger-verify-go agree, with section 7's reasons")


if __name__ == "__main__":
    main()
