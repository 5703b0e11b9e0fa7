"""The golden checkpoint-time notes (tests/vectors/checkpoint_time.json,
CONTRACT.md section 5), rebuilt with Python's cryptography and the run-head
map of export/verify/python/runmap.py (section 6a), and read by export/verify/python/verify_pack.py.

Version 1 (the file's top-level keys) is the time note of checkpoint.json's
checkpoint. Version 2 (key "v2") is the time note of the log of the three
entries of leaves.json: its root is their RFC 9162 root, its `runs` line the
run-head map root of those entries (one run, three entries), so every line
of it can be recomputed from the vectors. Version 3 (key "v3") is the time
note of the same checkpoint with, after its `runs` line, the `teams` line:
the team-head map root (section 6a, "The team-head map") of those entries
(one team, three entries). Version 4 (key "v4") is the time note of the same
checkpoint with the lines of version 3, its `runs` line the root of the map
under run keys of version 2 (section 6a, "Which run key"), its `teams` line
that of version 3. Ed25519 signatures are deterministic: the notes are
compared byte for byte.

Usage: checkpoint_time_vectors_test.py [--write]
  --write adds (or rewrites) the "v2", "v3" and "v4" keys, leaving the others
  as they are.
"""
import base64
import hashlib
import json
import os
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "vectors")
sys.path.insert(0, os.path.join(HERE, "..", "export", "verify", "python"))
import runmap  # noqa: E402
import verify_pack  # noqa: E402


def load(name):
    with open(os.path.join(VECTORS, name), encoding="utf-8") as f:
        return json.load(f)


def sign(seed_hex, name, key_id_hex, text):
    sig = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(seed_hex)).sign(text.encode())
    return text + "\n\u2014 %s %s\n" % (name, base64.b64encode(bytes.fromhex(key_id_hex) + sig).decode())


def mth(hashes):
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(hashes[:k]) + mth(hashes[k:])).digest()


def log_roots(leaves, run_keys):
    """(leaf hashes, run-head map root under run keys of version run_keys,
    team-head map root) of the log of leaves.json's entries."""
    hashes, heads, team_heads = [], {}, {}
    for e in leaves["entries"]:
        leaf = e["leaf_bytes_utf8"].encode()
        hashes.append(hashlib.sha256(b"\x00" + leaf).digest())
        r = json.loads(leaf)["receipt"]
        key = runmap.run_key(r["team"].encode(), r["run_id"].encode(), run_keys)
        count = heads[key][0] + 1 if key in heads else 1
        heads[key] = (count, json.loads(leaf)["seq"], hashes[-1])
        key = runmap.team_key(r["team"].encode())
        team_heads[key] = (team_heads[key][0] + 1 if key in team_heads else 1, json.loads(leaf)["seq"], hashes[-1])
    runs = runmap.root({k: runmap.value_hash(*h) for k, h in heads.items()})
    teams = runmap.root({k: runmap.value_hash(*h) for k, h in team_heads.items()})
    return hashes, runs, teams


def run_keys_of(version):
    """The run key version of a note of version 2, 3 or 4 (section 6a,
    "Which run key")."""
    return 2 if version == 4 else 1


COMMENTS = {
    3: "The checkpoint-time note version 3 (CONTRACT section 5) of the checkpoint of v2: its root, the run-head map "
       "root and the team-head map root (section 6a) of leaves.json's entries; signed with the key above; made with "
       "Python's cryptography by tests/checkpoint_time_vectors_test.py --write, not the ledger's code.",
    4: "The checkpoint-time note version 4 (CONTRACT section 5) of the checkpoint of v2: the lines of v3, its runs "
       "root that of the run-head map under run keys of version 2 (section 6a, \"Which run key\") of leaves.json's "
       "entries; signed with the key above; made with Python's cryptography by "
       "tests/checkpoint_time_vectors_test.py --write, not the ledger's code.",
}


def v2_vector(v1, checkpoint, leaves, version=2):
    """The version 2 (or 3, or 4) note of the log of leaves.json's entries."""
    hashes, runs, teams = log_roots(leaves, run_keys_of(version))
    root = mth(hashes)
    if version >= 3:
        body = "evidence-ledger/checkpoint-time/v%d\n%s\n%d\n%s\nruns %s\nteams %s\ntime %d\n" % (
            version, v1["origin"], len(hashes), base64.b64encode(root).decode(), base64.b64encode(runs).decode(),
            base64.b64encode(teams).decode(), v1["time_us"])
        return {
            "comment": COMMENTS[version],
            "origin": v1["origin"],
            "tree_size": len(hashes),
            "root_hex": root.hex(),
            "runs_hex": runs.hex(),
            "teams_hex": teams.hex(),
            "time_us": v1["time_us"],
            "body": body,
            "note": sign(v1["ed25519_seed_hex"], v1["origin"], checkpoint["key_id_hex"], body),
        }
    body = "evidence-ledger/checkpoint-time/v2\n%s\n%d\n%s\nruns %s\ntime %d\n" % (
        v1["origin"], len(hashes), base64.b64encode(root).decode(), base64.b64encode(runs).decode(), v1["time_us"])
    return {
        "comment": "The checkpoint-time note version 2 (CONTRACT section 5) of the log of leaves.json's entries: "
                   "its root, and the run-head map root (section 6a) of those entries; signed with the key above; "
                   "made with Python's cryptography by tests/checkpoint_time_vectors_test.py --write, not the "
                   "ledger's code.",
        "origin": v1["origin"],
        "tree_size": len(hashes),
        "root_hex": root.hex(),
        "runs_hex": runs.hex(),
        "time_us": v1["time_us"],
        "body": body,
        "note": sign(v1["ed25519_seed_hex"], v1["origin"], checkpoint["key_id_hex"], body),
    }


def read_back(vec, version):
    """What verify_pack.checkpoint_time must read of a vector's note."""
    def root(field):
        return bytes.fromhex(vec[field]) if field in vec else None
    return (vec["origin"], vec["tree_size"], bytes.fromhex(vec["root_hex"]), vec["time_us"], root("runs_hex"),
            root("teams_hex"), version)


def check(v1, checkpoint, leaves):
    """Failures, as strings."""
    failures = []
    want = {v: v2_vector(v1, checkpoint, leaves, v) for v in (2, 3, 4)}
    for v in (2, 3, 4):
        if v1.get("v%d" % v) != want[v]:
            failures.append("v%d: the file holds %s, recomputed %s"
                            % (v, json.dumps(v1.get("v%d" % v)), json.dumps(want[v])))
    if sign(v1["ed25519_seed_hex"], v1["origin"], checkpoint["key_id_hex"], v1["body"]) != v1["note"]:
        failures.append("v1: note: not the signature of body by the seed")
    key = verify_pack.parse_vkey(v1["verifier_key"])
    v2, v3, v4 = (v1.get("v%d" % v, want[v]) for v in (2, 3, 4))
    if v4["runs_hex"] == v3["runs_hex"] or v4["teams_hex"] != v3["teams_hex"]:
        failures.append("v4: want a runs root other than v3's (other run keys) and v3's teams root")
    for vec, version in ((v1, 1), (v2, 2), (v3, 3), (v4, 4)):
        got = verify_pack.checkpoint_time(vec["note"].encode(), key)
        if got != read_back(vec, version):
            failures.append("verify_pack.checkpoint_time: read %r, expected %r" % (got, read_back(vec, version)))
    # Neither version's header on the other's lines.
    for body, header in ((v2["body"], "evidence-ledger/checkpoint-time/v1"),
                         (v1["body"], "evidence-ledger/checkpoint-time/v2"),
                         (v3["body"], "evidence-ledger/checkpoint-time/v2"),
                         (v2["body"], "evidence-ledger/checkpoint-time/v3"),
                         (v4["body"], "evidence-ledger/checkpoint-time/v2"),
                         (v2["body"], "evidence-ledger/checkpoint-time/v4"),
                         (v1["body"], "evidence-ledger/checkpoint-time/v4")):
        text = header + body[body.index("\n"):]
        note = sign(v1["ed25519_seed_hex"], v1["origin"], checkpoint["key_id_hex"], text).encode()
        try:
            verify_pack.checkpoint_time(note, key)
            failures.append("%s with the other version's lines: accepted" % header)
        except verify_pack.Failure as e:
            print("refused, as it must be (%s on another version's lines): %s" % (header[-2:], e))
    # A v2 note whose runs line, a v3 note whose teams line, is not base64 of
    # 32 bytes; a v3 note with its runs and teams lines swapped.
    lines = v3["body"].split("\n")
    for what, text in (("a runs line that is not a hash", v2["body"].replace("runs ", "runs x")),
                       ("a teams line that is not a hash", v3["body"].replace("teams ", "teams x")),
                       ("the runs and teams lines swapped", "\n".join(lines[:4] + [lines[5], lines[4]] + lines[6:]))):
        try:
            verify_pack.checkpoint_time(sign(v1["ed25519_seed_hex"], v1["origin"], checkpoint["key_id_hex"],
                                             text).encode(), key)
            failures.append("%s: accepted" % what)
        except verify_pack.Failure as e:
            print("refused, as it must be (%s): %s" % (what, e))
    return failures


def main():
    path = os.path.join(VECTORS, "checkpoint_time.json")
    v1, checkpoint, leaves = load("checkpoint_time.json"), load("checkpoint.json"), load("leaves.json")
    if sys.argv[1:] == ["--write"]:
        for v in (2, 3, 4):
            v1["v%d" % v] = v2_vector(v1, checkpoint, leaves, v)
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(v1, indent=1))
        print("wrote %s: v2, v3, v4" % path)
        return 0
    failures = check(v1, checkpoint, leaves)
    for f in failures:
        print("FAIL: %s" % f)
    if failures:
        return 1
    print("OK: the version 1, 2, 3 and 4 checkpoint-time vectors rebuilt, signed and read")
    return 0


if __name__ == "__main__":
    sys.exit(main())
