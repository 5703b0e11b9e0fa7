#!/usr/bin/env python3
"""Writes, or checks byte for byte, tests/vectors/runmap_v2.json: the
run-head map of CONTRACT.md section 6a under run keys of version 2 ("Which
run key"), made from the contract's text with Python's standard library
(export/verify/python/runmap.py), not from the ledger's code.

Laid out exactly like runmap.json (run keys of version 1): `empty_root`;
`steps`, runs added one at a time (the last replaces the head of the first
run), each with its team, run_id, key, head, value hash, leaf hash and the
root after it; `root`; `inclusion` and `absence` proofs against it, each
with its team and run_id; `tampered` proofs that MUST be refused, each with
its `kind`, `reason` and the message export/verify/python/runmap.py gives; `long_prefix`,
two runs of one team whose keys share their first `common_bits` bits.

The runs are of three teams, two or three each. What v2 keys change ("What
a proof reveals") is checked while the file is made: every key of a team
starts with the first 8 bytes of its team key, so `long_prefix` shares more
than 64 bits, and the `leaf` of each absence proof (one with a leaf and one
without for each team) is a run of the team the proof is for. A run's proof
under v1 keys, and its v1 key with its v2 proof, are among the tampered
proofs. No proof is given for a team with no run: the ledger proves none
(section 6a).

Usage: runmap_v2_vectors.py [--write]
  without --write, recomputes the file and compares it with the stored one;
  exit 0 when they are the same, 1 naming the file that differs.
"""
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "export", "verify", "python"))
import runmap  # noqa: E402
from team_vectors import head_json, path_to, refusal  # noqa: E402  (one proof builder for both maps' vectors)

NAME = "runmap_v2.json"
V2 = 2


def h(text):
    return hashlib.sha256(text.encode()).digest()


def key(team, run_id, version=V2):
    return runmap.run_key(team.encode(), run_id.encode(), version)


def common_bits(a, b):
    return next(i for i in range(256) if runmap.bit(a, i) != runmap.bit(b, i))


def long_prefix_pair(team):
    """Two run ids of the form run-N of team whose v2 keys share the most
    leading bits among the first 4096 such ids (always more than 64)."""
    keys = sorted((key(team, "run-%d" % n), "run-%d" % n) for n in range(4096))
    return max((common_bits(a, b), ra, rb) for (a, ra), (b, rb) in zip(keys, keys[1:]))


def map_steps(heads, version=V2):
    """{key: value hash} after heads [(team, run_id, count, last_seq,
    last_leaf_hash)] added in order, and the steps of the vectors."""
    runs, steps = {}, []
    for team, run_id, count, last_seq, last_hash in heads:
        k = key(team, run_id, version)
        vhash = runmap.value_hash(count, last_seq, last_hash)
        runs[k] = vhash
        steps.append({"team": team, "run_id": run_id, "key": k.hex(), "head": head_json(count, last_seq, last_hash),
                      "value_hash": vhash.hex(), "leaf_hash": runmap.leaf_hash(k, vhash).hex(),
                      "root": runmap.root(runs).hex()})
    return runs, steps


def inclusion_proof(items, team, run_id, head, version=V2):
    k = key(team, run_id, version)
    siblings, _ = path_to(items, k)
    return {"team": team, "run_id": run_id, "key": k.hex(), "head": head, "siblings": [s.hex() for s in siblings]}


def absence_proof(items, team, run_id):
    """The absence proof of team/run_id; its leaf, when there is one, must be
    a run of the same team (section 6a, "What a proof reveals")."""
    k = key(team, run_id)
    siblings, left = path_to(items, k)
    proof = {"team": team, "run_id": run_id, "key": k.hex(), "siblings": [s.hex() for s in siblings]}
    if left:
        other = left[0][0]
        assert other[:8] == runmap.team_key(team.encode())[:8], "%s/%s: a leaf of another team" % (team, run_id)
        proof["leaf"] = {"key": other.hex(), "value_hash": left[0][1].hex()}
    return proof


def absences(items, team):
    """The first absent run-absent-N of team whose proof ends at a leaf, and
    the first whose proof ends at an empty subtree."""
    out = {}
    for n in range(1000):
        p = absence_proof(items, team, "run-absent-%d" % n)
        out.setdefault("leaf" in p, p)
        if len(out) == 2:
            return [out[True], out[False]]
    raise AssertionError("%s: no absent run of both kinds" % team)


def runmap_v2():
    common, lp_a, lp_b = long_prefix_pair("alpha")
    assert common > 64, common
    heads = [("alpha", "run-checkout-42", 3, 17, h("alpha/run-checkout-42@17")),
             ("beta", "run-checkout-42", 1, 4, h("beta/run-checkout-42@4")),
             ("alpha", lp_a, 2, 30, h("alpha/%s@30" % lp_a)),
             ("alpha", lp_b, 5, 31, h("alpha/%s@31" % lp_b)),
             ("gamma-2", "nightly/\u00e9t\u00e9 #7", 4096, 9000, h("gamma-2/nightly@9000")),
             ("beta", "run-nightly-1", 2, 35, h("beta/run-nightly-1@35")),
             ("gamma-2", "run-7", 1, 36, h("gamma-2/run-7@36")),
             ("alpha", "run-checkout-42", 4, 42, h("alpha/run-checkout-42@42"))]
    runs, steps = map_steps(heads)
    items = sorted(runs.items())
    root = runmap.root(runs)
    last = {(s["team"], s["run_id"]): s for s in steps}
    inclusion = [inclusion_proof(items, team, run_id, last[(team, run_id)]["head"])
                 for team, run_id in [("beta", "run-checkout-42"), ("alpha", lp_a), ("alpha", lp_b),
                                      ("gamma-2", "nightly/\u00e9t\u00e9 #7"), ("alpha", "run-checkout-42"),
                                      ("beta", "run-nightly-1"), ("gamma-2", "run-7")]]
    absence = absences(items, "alpha") + absences(items, "beta") + absences(items, "gamma-2")
    v1_runs, _ = map_steps(heads, version=1)
    v1_proof = inclusion_proof(sorted(v1_runs.items()), "alpha", "run-checkout-42",
                               last[("alpha", "run-checkout-42")]["head"], version=1)
    return {"empty_root": runmap.EMPTY.hex(), "steps": steps, "root": root.hex(), "inclusion": inclusion,
            "absence": absence, "tampered": tampered(root, inclusion, absence, steps, v1_proof),
            "long_prefix": {"team": "alpha", "run_ids": [lp_a, lp_b], "common_bits": common}}


def tampered(root, inclusion, absence, steps, v1_proof):
    """Proofs a verifier MUST refuse, each with the message runmap.py gives."""
    out = []

    def add(kind, reason, proof):
        out.append(refusal(root, kind, reason, proof))

    deep = max(inclusion, key=lambda p: len(p["siblings"]))
    head = deep["head"]
    add("inclusion", "a shorter count than committed (the run's last entry dropped)",
        dict(deep, head=dict(head, count=head["count"] - 1)))
    add("inclusion", "another last_seq than committed", dict(deep, head=dict(head, last_seq=head["last_seq"] - 1)))
    add("inclusion", "the deepest sibling dropped: the leaf is placed one level too high",
        dict(deep, siblings=deep["siblings"][1:]))
    s = deep["siblings"]
    j = next(i for i in range(1, len(s)) if s[i] != s[0])
    add("inclusion", "two siblings swapped", dict(deep, siblings=[s[j]] + s[1:j] + [s[0]] + s[j + 1:]))
    checkout = next(p for p in inclusion if (p["team"], p["run_id"]) == ("alpha", "run-checkout-42"))
    add("inclusion", "the head of an older state presented as current", dict(checkout, head=steps[0]["head"]))
    add("inclusion", "a run of the team that is not in the map claimed with another run's proof",
        dict(checkout, key=absence[0]["key"]))
    add("inclusion", "the run's proof under run keys of version 1 (its v1 key, the v1 map's siblings)", v1_proof)
    add("inclusion", "the run's version 1 key with its version 2 proof", dict(checkout, key=v1_proof["key"]))
    occupied = next(p for p in absence if "leaf" in p)
    add("absence", "the leaf that occupies the key's position replaced by an empty subtree",
        {k: occupied[k] for k in ("key", "siblings")})
    add("absence", "absence claimed for the key of the occupying leaf, a present run",
        dict(occupied, key=occupied["leaf"]["key"]))
    lp_a, lp_b = (p for p in inclusion if p["team"] == "alpha" and p["run_id"] != "run-checkout-42")
    add("absence", "absence of a present run claimed by an empty subtree in its place",
        {"key": lp_a["key"], "siblings": lp_a["siblings"]})
    neighbour = next(st for st in reversed(steps) if st["key"] == lp_b["key"])
    add("absence", "absence of a present run claimed with its neighbour's leaf in its place",
        {"key": lp_a["key"], "siblings": lp_a["siblings"],
         "leaf": {"key": lp_b["key"], "value_hash": neighbour["value_hash"]}})
    other_team = next(st for st in reversed(steps) if st["team"] == "beta")
    add("absence", "absence of a run of a team shown with another team's run in its place",
        dict(occupied, leaf={"key": other_team["key"], "value_hash": other_team["value_hash"]}))
    return out


def main():
    text = json.dumps(runmap_v2(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    path = os.path.join(HERE, NAME)
    if sys.argv[1:] == ["--write"]:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print("wrote %s" % path)
        return 0
    with open(path, encoding="utf-8") as f:
        if f.read() != text:
            print("FAIL: %s: not what the contract's text gives (rerun with --write and compare)" % NAME)
            return 1
    print("OK: %s recomputed" % NAME)
    return 0


if __name__ == "__main__":
    sys.exit(main())
