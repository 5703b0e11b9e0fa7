#!/usr/bin/env python3
"""The run-head map of CONTRACT.md section 6a, with the standard library only.

Written from the contract's text: the run keys (versions 1 and 2, "Which
run key"), the head, value, leaf, node and empty hashes, the root of a set
of runs computed from the definition (not incrementally), and the
verification of inclusion and absence proofs.

Usage: runmap.py --vectors FILE... [--vectors-v2 FILE...]
  recomputes every root of the golden vectors from their runs (or teams:
  tests/vectors/teammap.json, the team-head map of section 6a keyed by team
  key), verifies their inclusion and absence proofs, and refuses every
  tampered proof; the files of --vectors key runs by run keys of version 1
  (tests/vectors/runmap.json), those of --vectors-v2 by run keys of version
  2 (tests/vectors/runmap_v2.json). Exit 0 when all hold; 1, naming the
  first that does not.
"""
import argparse
import hashlib
import json
import re
import sys

T = b"evidence-ledger/run-map/v1"
KEY_TAGS = {1: b"evidence-ledger/run-key/v1", 2: b"evidence-ledger/run-key/v2"}
TEAM_KEY_TAG = b"evidence-ledger/team-key/v1"
MAX_SAFE = 2**53 - 1
TEAM_RE = re.compile(rb"[a-z0-9-]{1,63}")


class Refused(Exception):
    """A proof or value that does not hold; the message says why."""


def sha256(data):
    return hashlib.sha256(data).digest()


def run_key(team, run_id, version=1):
    """The run key of (team, run_id), bytes, of version 1 or 2 (section 6a):

    v1  SHA-256("evidence-ledger/run-key/v1" || 0x00 || u8 len(team) || team || run_id)
    v2  team key(team)[0:8] || SHA-256("evidence-ledger/run-key/v2" || 0x00 || u8 len(team) || team || run_id)[0:24]

    Under v2 every key of a team starts with the same 64 bits, so a proof's
    path along a key of a team that has runs ends among that team's runs.
    """
    if not TEAM_RE.fullmatch(team):
        raise Refused("team: must be 1-63 bytes of [a-z0-9-]")
    if not 1 <= len(run_id) <= 128:
        raise Refused("run_id: must be 1-128 bytes")
    digest = sha256(KEY_TAGS[version] + b"\x00" + bytes([len(team)]) + team + run_id)
    return digest if version == 1 else team_key(team)[:8] + digest[:24]


def team_key(team):
    """The key of a team in the team-head map (section 6a, "The team-head map")."""
    if not TEAM_RE.fullmatch(team):
        raise Refused("team: must be 1-63 bytes of [a-z0-9-]")
    return sha256(TEAM_KEY_TAG + b"\x00" + bytes([len(team)]) + team)


def check_head(count, last_seq, last_leaf_hash):
    if type(count) is not int or type(last_seq) is not int:
        raise Refused("head: count and last_seq must be integers")
    if not 1 <= count <= last_seq + 1 <= MAX_SAFE:
        raise Refused("head: want 1 <= count <= last_seq + 1 <= 2^53 - 1, found count %d, last_seq %d"
                      % (count, last_seq))
    if len(last_leaf_hash) != 32:
        raise Refused("head: last_leaf_hash must be 32 bytes")


def value_hash(count, last_seq, last_leaf_hash):
    check_head(count, last_seq, last_leaf_hash)
    head = count.to_bytes(8, "big") + last_seq.to_bytes(8, "big") + last_leaf_hash
    return sha256(b"\x02" + T + head)


def leaf_hash(key, vhash):
    return sha256(b"\x03" + T + key + vhash)


def node_hash(depth, left, right):
    return sha256(b"\x04" + T + bytes([depth]) + left + right)


EMPTY = sha256(b"\x05" + T)


def bit(key, i):
    return (key[i // 8] >> (7 - i % 8)) & 1


def subtree(runs, depth):
    """runs: list of (key, value hash) whose keys share their first `depth` bits."""
    if not runs:
        return EMPTY
    if len(runs) == 1:
        return leaf_hash(*runs[0])
    left = [r for r in runs if bit(r[0], depth) == 0]
    right = [r for r in runs if bit(r[0], depth) == 1]
    return node_hash(depth, subtree(left, depth + 1), subtree(right, depth + 1))


def root(runs):
    """runs: dict key -> value hash."""
    return subtree(sorted(runs.items()), 0)


def fold(key, h, siblings):
    d = len(siblings)
    for i in range(d - 1, -1, -1):
        s = siblings[d - 1 - i]
        h = node_hash(i, h, s) if bit(key, i) == 0 else node_hash(i, s, h)
    return h


def check_root(trusted, computed):
    if computed != trusted:
        raise Refused("proof: leads to root %s, expected %s" % (computed.hex(), trusted.hex()))


def inclusion_root(key, count, last_seq, last_leaf_hash, siblings):
    """The root an inclusion proof leads to (verification steps 1 to 3)."""
    if len(siblings) > 256:
        raise Refused("proof: more than 256 siblings")
    return fold(key, leaf_hash(key, value_hash(count, last_seq, last_leaf_hash)), siblings)


def absence_root(key, siblings, leaf=None):
    """The root an absence proof leads to (verification steps 1 to 3).
    leaf: None, or (key, value hash) of the run occupying the key's place."""
    d = len(siblings)
    if d > 256:
        raise Refused("proof: more than 256 siblings")
    h = EMPTY
    if leaf is not None:
        other, vhash = leaf
        if other == key:
            raise Refused("leaf.key: is the key whose absence is claimed")
        if any(bit(other, i) != bit(key, i) for i in range(d)):
            raise Refused("leaf.key: must share the first %d bits of the key (the leaf's depth)" % d)
        h = leaf_hash(other, vhash)
    return fold(key, h, siblings)


def verify_inclusion(trusted_root, key, count, last_seq, last_leaf_hash, siblings):
    check_root(trusted_root, inclusion_root(key, count, last_seq, last_leaf_hash, siblings))


def verify_absence(trusted_root, key, siblings, leaf=None):
    check_root(trusted_root, absence_root(key, siblings, leaf))


# JSON forms: lowercase hex, exactly the keys the contract names.

def hex32(text, field):
    if not isinstance(text, str) or not re.fullmatch(r"[0-9a-f]{64}", text):
        raise Refused("%s: must be 64 lowercase hex digits" % field)
    return bytes.fromhex(text)


def exact_keys(obj, keys, field):
    if not isinstance(obj, dict) or set(obj) != set(keys):
        raise Refused("%s: must hold exactly the keys %s" % (field, ", ".join(sorted(keys))))


def siblings_of(proof):
    if not isinstance(proof["siblings"], list):
        raise Refused("siblings: must be a list")
    return [hex32(s, "siblings") for s in proof["siblings"]]


def verify_inclusion_json(trusted_root, key, proof):
    exact_keys(proof, {"key", "head", "siblings"}, "inclusion")
    if hex32(proof["key"], "key") != key:
        raise Refused("key: is not the key of the run asked about")
    head = proof["head"]
    exact_keys(head, {"count", "last_seq", "last_leaf_hash"}, "head")
    verify_inclusion(trusted_root, key, head["count"], head["last_seq"],
                     hex32(head["last_leaf_hash"], "head.last_leaf_hash"), siblings_of(proof))


def verify_absence_json(trusted_root, key, proof):
    keys = {"key", "siblings"} | ({"leaf"} if "leaf" in proof else set())
    exact_keys(proof, keys, "absence")
    if hex32(proof["key"], "key") != key:
        raise Refused("key: is not the key of the run asked about")
    leaf = None
    if "leaf" in proof:
        exact_keys(proof["leaf"], {"key", "value_hash"}, "leaf")
        leaf = (hex32(proof["leaf"]["key"], "leaf.key"),
                hex32(proof["leaf"]["value_hash"], "leaf.value_hash"))
    verify_absence(trusted_root, key, siblings_of(proof), leaf)


def key_of(obj, run_keys=1):
    """The run key (of version run_keys) of a vector with a run_id, else the
    team key of its team (tests/vectors/teammap.json)."""
    if "run_id" in obj:
        return run_key(obj["team"].encode(), obj["run_id"].encode(), run_keys)
    return team_key(obj["team"].encode())


def check_vectors(v, run_keys=1):
    """Raises Refused naming the first vector that does not hold; run_keys
    is the version of the run keys of the vectors' runs."""
    if EMPTY.hex() != v["empty_root"]:
        raise Refused("empty_root: computed %s" % EMPTY.hex())
    runs = {}
    for n, step in enumerate(v["steps"]):
        key = key_of(step, run_keys)
        if key.hex() != step["key"]:
            raise Refused("steps[%d].key: computed %s" % (n, key.hex()))
        head = step["head"]
        vhash = value_hash(head["count"], head["last_seq"], bytes.fromhex(head["last_leaf_hash"]))
        if vhash.hex() != step["value_hash"] or leaf_hash(key, vhash).hex() != step["leaf_hash"]:
            raise Refused("steps[%d]: value or leaf hash differs" % n)
        runs[key] = vhash
        if root(runs).hex() != step["root"]:
            raise Refused("steps[%d].root: computed %s" % (n, root(runs).hex()))
    lp = v["long_prefix"]
    a, b = ((run_key(lp["team"].encode(), r.encode(), run_keys) for r in lp["run_ids"]) if "run_ids" in lp
            else (team_key(t.encode()) for t in lp["teams"]))
    common = next(i for i in range(256) if bit(a, i) != bit(b, i))
    if common != lp["common_bits"]:
        raise Refused("long_prefix: the keys share %d bits, the vectors say %d" % (common, lp["common_bits"]))
    trusted = bytes.fromhex(v["root"])
    if root(runs) != trusted:
        raise Refused("root: computed %s" % root(runs).hex())
    for p in v["inclusion"]:
        key = key_of(p, run_keys)
        verify_inclusion_json(trusted, key, {k: p[k] for k in ("key", "head", "siblings")})
    for p in v["absence"]:
        key = key_of(p, run_keys)
        verify_absence_json(trusted, key, {k: p[k] for k in ("key", "siblings", "leaf") if k in p})
    for n, t in enumerate(v["tampered"]):
        key = bytes.fromhex(t["key"])
        proof = {k: t[k] for k in t if k not in ("kind", "reason", "error")}
        verify = verify_inclusion_json if t["kind"] == "inclusion" else verify_absence_json
        try:
            verify(trusted, key, proof)
        except Refused as e:
            if str(e) != t["error"]:
                raise Refused("tampered[%d] (%s): refused with '%s', the vectors say '%s'"
                              % (n, t["reason"], e, t["error"]))
            print("refused, as it must be (%s): %s" % (t["reason"], e))
            continue
        raise Refused("tampered[%d] accepted: %s" % (n, t["reason"]))


def main():
    ap = argparse.ArgumentParser(description="Check the run-head map's golden vectors.")
    ap.add_argument("--vectors", required=True, nargs="+")
    ap.add_argument("--vectors-v2", nargs="+", default=[])
    args = ap.parse_args()
    for path, run_keys in [(p, 1) for p in args.vectors] + [(p, 2) for p in args.vectors_v2]:
        with open(path, encoding="utf-8") as f:
            v = json.load(f)
        try:
            check_vectors(v, run_keys)
        except Refused as e:
            print("FAIL: %s: %s" % (path, e))
            return 1
        print("OK: %s: %d roots, %d inclusion and %d absence proofs, %d tampered proofs refused"
              % (path, len(v["steps"]), len(v["inclusion"]), len(v["absence"]), len(v["tampered"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
