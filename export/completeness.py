"""Proven completeness of a format 3 run pack (CONTRACT.md section 7), with
the standard library only: run-head.json read in its JSON form (section
6a), its key and root checked against the scope and the checkpoint-time
note's `runs` root, and the run's entries in the pack against the head.

Every failure is a Failure whose message starts with the file it is about;
verify_pack.py raises it as its own.
"""
import json
import re

import runmap

HEX64 = re.compile(r"[0-9a-f]{64}\Z")


class Failure(Exception):
    pass


def _fail(rule):
    return Failure("run-head.json: " + rule)


def _no_duplicates(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise _fail("%s: a key given twice" % k)
        obj[k] = v
    return obj


def _not_json(constant):
    raise ValueError("%s is not JSON" % constant)


def _hash(value, field):
    if not isinstance(value, str) or not HEX64.match(value):
        raise _fail("%s: want 64 lower-case hex digits" % field)
    return bytes.fromhex(value)


def _integer(value, field):
    if type(value) is not int:
        raise _fail("%s: want a JSON integer" % field)
    return value


def _exact(obj, field, keys):
    """obj is a JSON object of exactly `keys` (any order)."""
    if not isinstance(obj, dict):
        raise _fail("%s: want a JSON object" % field)
    prefix = field + "." if field != "proof" else ""
    for k in sorted(keys):
        if k not in obj:
            raise _fail("%s%s: missing" % (prefix, k))
    for k in sorted(obj):
        if k not in keys:
            raise _fail("%s%s: not a field of a run-head proof" % (prefix, k))


def read_proof(data):
    """run-head.json as a dict: kind ("inclusion" or "absence"), key,
    siblings, and head (count, last_seq, last_leaf_hash) or leaf (key,
    value hash) or None. Any spacing and key order; no other key."""
    try:
        p = json.loads(data, object_pairs_hook=_no_duplicates, parse_constant=_not_json)
    except ValueError as e:  # UnicodeDecodeError is one
        raise _fail("not JSON (%s)" % e)
    if not isinstance(p, dict):
        raise _fail("want a JSON object")
    inclusion = "head" in p
    keys = {"key", "siblings"} | ({"head"} if inclusion else {"leaf"} & set(p))
    _exact(p, "proof", keys)
    out = {"kind": "inclusion" if inclusion else "absence", "key": _hash(p["key"], "key"),
           "head": None, "leaf": None}
    if not isinstance(p["siblings"], list):
        raise _fail("siblings: want a JSON array of hashes")
    if len(p["siblings"]) > 256:
        raise _fail("siblings: %d hashes, a proof has at most 256" % len(p["siblings"]))
    out["siblings"] = [_hash(s, "siblings[%d]" % i) for i, s in enumerate(p["siblings"])]
    if inclusion:
        h = p["head"]
        _exact(h, "head", {"count", "last_seq", "last_leaf_hash"})
        out["head"] = (_integer(h["count"], "head.count"), _integer(h["last_seq"], "head.last_seq"),
                       _hash(h["last_leaf_hash"], "head.last_leaf_hash"))
    elif "leaf" in p:
        _exact(p["leaf"], "leaf", {"key", "value_hash"})
        out["leaf"] = (_hash(p["leaf"]["key"], "leaf.key"), _hash(p["leaf"]["value_hash"], "leaf.value_hash"))
    return out


def check_proof(data, team, run_id, runs_root):
    """Steps 2 of section 7: the proof read, its key the scope's run key, and
    the map root it leads to the one the checkpoint-time note signs.
    Returns the proof (read_proof)."""
    p = read_proof(data)
    try:
        key = runmap.run_key(team.encode(), run_id.encode())
    except runmap.Refused as e:
        raise _fail("the scope's run has no run key: %s" % e)
    if p["key"] != key:
        raise _fail("key %s is not the run key of %s/%s (%s)" % (p["key"].hex(), team, run_id, key.hex()))
    try:
        if p["kind"] == "inclusion":
            root = runmap.inclusion_root(key, *p["head"], p["siblings"])
        else:
            root = runmap.absence_root(key, p["siblings"], p["leaf"])
    except runmap.Refused as e:
        raise _fail(str(e))
    if root != runs_root:
        raise _fail("the proof leads to map root %s, the checkpoint-time note signs %s"
                    % (root.hex(), runs_root.hex()))
    return p


def check_entries(p, team, run_id, tree_size, entries):
    """Step 3 of section 7: entries, [(seq, leaf hash)] of the run in the
    pack in seq order, are exactly the run the head commits to (an absence
    proof: none). Returns what the OK line says of it."""
    if p["kind"] == "absence":
        if entries:
            raise _fail("the map shows no entry of %s/%s up to tree size %d, the pack holds %d"
                        % (team, run_id, tree_size, len(entries)))
        return "complete: the run has no entry up to seq %d (absence proof)" % (tree_size - 1)
    count, last_seq, last_hash = p["head"]
    if len(entries) != count:
        raise _fail("the run has %d entries up to tree size %d, the pack holds %d" % (count, tree_size, len(entries)))
    if entries[-1] != (last_seq, last_hash):
        raise _fail("the run's last entry up to tree size %d is seq %d with leaf hash %s, the pack's last is seq %d "
                    "with leaf hash %s" % (tree_size, last_seq, last_hash.hex(), entries[-1][0], entries[-1][1].hex()))
    return "complete: every entry of the run up to seq %d (run-head proof, %d entries)" % (tree_size - 1, count)


def unsettled_steps(outcomes, tree_size):
    """The lines for the steps outcomes.json shows pending or unknown with no
    completion: in a complete run pack, none was logged before tree_size."""
    return ["%s/%s/%s attempt %d (%s): no completion in the log up to seq %d (proven)."
            % (s["team"], s["run_id"], s["step_id"], s["attempt"], s["state"], tree_size - 1)
            for s in outcomes["steps"] if s["state"] in ("pending", "unknown") and "completion" not in s]
