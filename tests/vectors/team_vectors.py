#!/usr/bin/env python3
"""Writes, or checks byte for byte, two golden vector files made from
CONTRACT.md's text with Python's standard library (export/verify/python/runmap.py), not
from the ledger's code:

teammap.json: the team-head map (section 6a, "The team-head map"), laid out
like runmap.json with `team` and no `run_id`: `empty_root`; `steps`, teams
added one at a time (the last replaces the head of the first team), each
with its team, key, head, value hash, leaf hash and the root after it;
`root`; `inclusion` and `absence` proofs against it, each with its team;
`tampered` proofs that MUST be refused, each with its `kind`, `reason` and
the message export/verify/python/runmap.py gives; `long_prefix`, two teams of the map
whose keys share their first `common_bits` bits.

leaf_v2.json: leaves of both versions (section 2), laid out like
leaves.json: `entries`, each with `entry` (the fields parsed), the exact
`leaf_bytes_utf8` and `leaf_hash_hex`; `root_hex`, the RFC 9162 root of the
log they form; `teams_root_hex`, its team-head map root. Seq 0 is version 1;
seqs 1 to 3 are version 2, seq 2 its team's first entry (no team_prev).

Usage: team_vectors.py [--write]
  without --write, recomputes both files and compares them with the stored
  ones, and reads each leaf of leaf_v2.json with export/verify/python/teamwindow.py; exit
  0 when all hold, 1 naming the file that differs.
"""
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "export", "verify", "python"))
import runmap  # noqa: E402
import teamwindow  # noqa: E402


def h(text):
    return hashlib.sha256(text.encode()).digest()


def refusal(root, kind, reason, proof):
    """The vector of a tampered proof: its fields, kind, reason and the
    message runmap.py refuses it with (AssertionError if it is accepted)."""
    verify = runmap.verify_inclusion_json if kind == "inclusion" else runmap.verify_absence_json
    body = {k: proof[k] for k in ("key", "head", "siblings", "leaf") if k in proof}
    try:
        verify(root, bytes.fromhex(proof["key"]), body)
    except runmap.Refused as e:
        return dict(body, kind=kind, reason=reason, error=str(e))
    raise AssertionError("tampered proof accepted: " + reason)


def path_to(items, key, depth=0):
    """(siblings bottom-up, the items left where the key's path ends) in the
    map of items [(key, value hash)] sharing their first `depth` bits."""
    if len(items) <= 1:
        return [], items
    side = [i for i in items if runmap.bit(i[0], depth) == runmap.bit(key, depth)]
    other = [i for i in items if runmap.bit(i[0], depth) != runmap.bit(key, depth)]
    below, left = path_to(side, key, depth + 1)
    return below + [runmap.subtree(other, depth + 1)], left


def head_json(count, last_seq, last_leaf_hash):
    return {"count": count, "last_seq": last_seq, "last_leaf_hash": last_leaf_hash.hex()}


def long_prefix_pair():
    """Two team names of the form team-N whose keys share the most leading
    bits among the first 4096 such names."""
    keys = sorted((runmap.team_key(b"team-%d" % n), "team-%d" % n) for n in range(4096))
    best = (0, None, None)
    for (a, ta), (b, tb) in zip(keys, keys[1:]):
        common = next(i for i in range(256) if runmap.bit(a, i) != runmap.bit(b, i))
        best = max(best, (common, ta, tb))
    return best


def teammap():
    common, lp_a, lp_b = long_prefix_pair()
    heads = [("alpha", 3, 17, h("alpha-17")), ("beta", 1, 4, h("beta-4")), ("team-code", 5, 30, h("team-code-30")),
             ("team-ops", 2, 31, h("team-ops-31")), (lp_a, 1, 40, h(lp_a)), (lp_b, 7, 41, h(lp_b)),
             ("alpha", 4, 42, h("alpha-42"))]
    teams, steps = {}, []
    for team, count, last_seq, last_hash in heads:
        key = runmap.team_key(team.encode())
        vhash = runmap.value_hash(count, last_seq, last_hash)
        teams[key] = vhash
        steps.append({"team": team, "key": key.hex(), "head": head_json(count, last_seq, last_hash),
                      "value_hash": vhash.hex(), "leaf_hash": runmap.leaf_hash(key, vhash).hex(),
                      "root": runmap.root(teams).hex()})
    items = sorted(teams.items())
    root = runmap.root(teams)
    last = {s["team"]: s for s in steps}
    inclusion = []
    for team in ("alpha", "team-ops", lp_b):
        key = runmap.team_key(team.encode())
        siblings, _ = path_to(items, key)
        inclusion.append({"team": team, "key": key.hex(), "head": last[team]["head"],
                          "siblings": [s.hex() for s in siblings]})
    absence = []
    for team in ("gamma", "team-absent", "team-support", "team-1", "team-2"):
        key = runmap.team_key(team.encode())
        siblings, left = path_to(items, key)
        proof = {"team": team, "key": key.hex(), "siblings": [s.hex() for s in siblings]}
        if left:
            proof["leaf"] = {"key": left[0][0].hex(), "value_hash": left[0][1].hex()}
        absence.append(proof)
    return {"empty_root": runmap.EMPTY.hex(), "steps": steps, "root": root.hex(), "inclusion": inclusion,
            "absence": absence, "tampered": tampered(root, inclusion, absence, steps),
            "long_prefix": {"teams": [lp_a, lp_b], "common_bits": common}}


def tampered(root, inclusion, absence, steps):
    """Proofs a verifier MUST refuse, each with the message runmap.py gives."""
    out = []
    deep = max(inclusion, key=lambda p: len(p["siblings"]))

    def add(kind, reason, proof):
        out.append(refusal(root, kind, reason, proof))

    shorter = dict(deep, head=dict(deep["head"], count=deep["head"]["count"] - 1))
    add("inclusion", "a shorter count than committed (the team's last entry dropped)", shorter)
    add("inclusion", "another last_seq than committed", dict(deep, head=dict(deep["head"],
                                                                         last_seq=deep["head"]["last_seq"] + 1)))
    add("inclusion", "the deepest sibling dropped: the leaf is placed one level too high",
        dict(deep, siblings=deep["siblings"][1:]))
    add("inclusion", "two siblings swapped", dict(deep, siblings=[deep["siblings"][1], deep["siblings"][0]]
                                                  + deep["siblings"][2:]))
    alpha = inclusion[0]
    add("inclusion", "the head of an older state presented as current", dict(alpha, head=steps[0]["head"]))
    occupied = next(p for p in absence if "leaf" in p)
    add("absence", "the leaf that occupies the key's place replaced by an empty subtree",
        {k: occupied[k] for k in ("key", "siblings")})
    add("absence", "absence claimed for the key of the occupying leaf, a present team",
        dict(occupied, key=occupied["leaf"]["key"]))
    add("absence", "absence of a present team claimed by an empty subtree in its place",
        {"key": alpha["key"], "siblings": alpha["siblings"]})
    run_key = runmap.run_key(b"alpha", b"run-1")
    add("inclusion", "a run key in place of the team key: a run-head proof is no team-head proof",
        dict(alpha, key=run_key.hex()))
    return out


def leaf_v2():
    team_a = {"attempt": 1, "decision": "allow", "kind": "agent_start", "occurred_at_us": 1767225600000000,
              "receipt_id": "v2-1", "run_id": "run-1", "step_id": "s1", "team": "team-a", "timeout_ms": 60000,
              "attributes": {"note": "caf\u00e9 \u65e5\u672c \"q\" \\ tab\t nl\n ctl\u0001"}}
    receipts = [
        ({"receipt_id": "v1-0", "kind": "tool_call", "team": "team-a", "run_id": "run-0", "tool": "git",
          "decision": "allow", "occurred_at_us": 1767225599000000, "attempt": 1}, 1),
        (team_a, 2),
        ({"receipt_id": "v2-2", "kind": "model_call", "team": "team-b", "run_id": "run-9", "route": "local/m",
          "decision": "allow", "occurred_at_us": 1767225600000500, "input_tokens": 0, "attempt": 1}, 2),
        ({"receipt_id": "v2-3", "kind": "agent_exec", "team": "team-a", "run_id": "run-1", "step_id": "s1",
          "start_receipt_id": "v2-1", "status": "succeeded", "exit_code": 0, "occurred_at_us": 1767225601000000,
          "attempt": 1}, 2),
    ]
    prev, last_of_team, last_of_run, out, hashes, heads = "0" * 64, {}, {}, [], [], {}
    for seq, (r, v) in enumerate(receipts):
        entry = {"v": v, "seq": seq, "prev": prev, "logged_at_us": 1767225600000100 + seq, "emitter": "local",
                 "receipt": r}
        if (r["team"], r["run_id"]) in last_of_run:
            entry["run_prev"] = last_of_run[(r["team"], r["run_id"])]
        if v == 2 and r["team"] in last_of_team:
            entry["team_prev"] = last_of_team[r["team"]]
        leaf = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        leaf_hash = hashlib.sha256(b"\x00" + leaf.encode()).digest()
        out.append({"entry": entry, "leaf_bytes_utf8": leaf, "leaf_hash_hex": leaf_hash.hex()})
        key = runmap.team_key(r["team"].encode())
        heads[key] = (heads[key][0] + 1 if key in heads else 1, seq, leaf_hash)
        prev, last_of_team[r["team"]], last_of_run[(r["team"], r["run_id"])] = leaf_hash.hex(), seq, seq
        hashes.append(leaf_hash)
    return {"note": "leaf_bytes_utf8 is the exact leaf (CONTRACT section 2, versions 1 and 2); an encoder must "
                    "reproduce it byte for byte from the entry. Made by tests/vectors/team_vectors.py from the "
                    "contract's text, not the ledger's code",
            "entries": out, "root_hex": mth(hashes).hex(),
            "teams_root_hex": runmap.root({k: runmap.value_hash(*v) for k, v in heads.items()}).hex()}


def mth(hashes):
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(hashes[:k]) + mth(hashes[k:])).digest()


def main():
    failures = 0
    for name, make in (("teammap.json", teammap), ("leaf_v2.json", leaf_v2)):
        text = json.dumps(make(), indent=1, ensure_ascii=False) + "\n"
        path = os.path.join(HERE, name)
        if sys.argv[1:] == ["--write"]:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print("wrote %s" % path)
            continue
        with open(path, encoding="utf-8") as f:
            if f.read() != text:
                print("FAIL: %s: not what the contract's text gives (rerun with --write and compare)" % name)
                failures += 1
            else:
                print("OK: %s recomputed" % name)
    with open(os.path.join(HERE, "leaf_v2.json"), encoding="utf-8") as f:
        for e in json.load(f)["entries"]:
            leaf = e["leaf_bytes_utf8"].encode()
            if teamwindow.leaf_entry(leaf) != e["entry"]:
                print("FAIL: leaf_v2.json seq %d: export/verify/python/teamwindow.py does not read it" % e["entry"]["seq"])
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
