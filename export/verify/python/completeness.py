"""Proven completeness of a run pack of format 3 or later (CONTRACT.md
section 7), with the standard library only: run-head.json read in its JSON
form (section 6a), its key (of the run key version the note's version says,
section 6a "Which run key") and root checked against the scope and the
checkpoint-time note's `runs` root, and the run's entries in the pack
against the head (in a run pack from a seq, format 9, the run's entries
from that seq, section 9).

Every failure is a packerror.Failure whose message starts with the file it
is about.
"""
import re

import packread
import runmap
from packerror import Failure
from packread import shown

HEX64 = re.compile(r"[0-9a-f]{64}\Z")


def _fail(rule, where="run-head.json"):
    return Failure("%s: %s" % (where, rule))


def load_json(data, where):
    """data parsed strictly: no key twice, no NaN or Infinity."""
    return packread.load_json(data, where)


class _Reader:
    """Reads the JSON form of a section 6a proof; errors start with `where`
    and name the field, prefixed with `field` ("head." in team-window.json)."""

    def __init__(self, where, field="", kind="run-head"):
        self.where, self.field, self.kind = where, field, kind

    def fail(self, rule):
        return _fail(rule, self.where)

    def hash(self, value, field):
        if not isinstance(value, str) or not HEX64.match(value):
            raise self.fail("%s%s: want 64 lower-case hex digits" % (self.field, field))
        return bytes.fromhex(value)

    def integer(self, value, field):
        if type(value) is not int:
            raise self.fail("%s%s: want a JSON integer" % (self.field, field))
        return value

    def exact(self, obj, field, keys):
        """obj is a JSON object of exactly `keys` (any order)."""
        name = (self.field + field).rstrip(".") or "proof"
        if not isinstance(obj, dict):
            raise self.fail("%s: want a JSON object" % name)
        for k in sorted(keys):
            if k not in obj:
                raise self.fail("%s%s%s: missing" % (self.field, field, k))
        for k in sorted(obj):
            if k not in keys:
                raise self.fail("%s: not a field of a %s proof" % (shown(self.field + field + k), self.kind))

    def proof(self, p):
        inclusion = isinstance(p, dict) and "head" in p
        keys = {"key", "siblings"} | ({"head"} if inclusion else {"leaf"} & set(p or ()))
        self.exact(p, "", keys)
        out = {"kind": "inclusion" if inclusion else "absence", "key": self.hash(p["key"], "key"),
               "head": None, "leaf": None}
        if not isinstance(p["siblings"], list):
            raise self.fail("%ssiblings: want a JSON array of hashes" % self.field)
        if len(p["siblings"]) > 256:
            raise self.fail("%ssiblings: %d hashes, a proof has at most 256" % (self.field, len(p["siblings"])))
        out["siblings"] = [self.hash(s, "siblings[%d]" % i) for i, s in enumerate(p["siblings"])]
        if inclusion:
            h = p["head"]
            self.exact(h, "head.", {"count", "last_seq", "last_leaf_hash"})
            out["head"] = (self.integer(h["count"], "head.count"), self.integer(h["last_seq"], "head.last_seq"),
                           self.hash(h["last_leaf_hash"], "head.last_leaf_hash"))
        elif "leaf" in p:
            self.exact(p["leaf"], "leaf.", {"key", "value_hash"})
            out["leaf"] = (self.hash(p["leaf"]["key"], "leaf.key"),
                           self.hash(p["leaf"]["value_hash"], "leaf.value_hash"))
        return out


def read_proof(data):
    """run-head.json as a dict: kind ("inclusion" or "absence"), key,
    siblings, and head (count, last_seq, last_leaf_hash) or leaf (key,
    value hash) or None. Any spacing and key order; no other key."""
    p = load_json(data, "run-head.json")
    if not isinstance(p, dict):
        raise _fail("want a JSON object")
    return _Reader("run-head.json").proof(p)


def read_map_proof(obj, where, field):
    """A section 6a proof already parsed (the head of team-window.json):
    read_proof's dict; errors start with `where` and name `field`."""
    return _Reader(where, field, "team-head").proof(obj)


def map_root(p):
    """The map root the proof (read_proof) leads to; Refused as Failure."""
    try:
        if p["kind"] == "inclusion":
            return runmap.inclusion_root(p["key"], *p["head"], p["siblings"])
        return runmap.absence_root(p["key"], p["siblings"], p["leaf"])
    except runmap.Refused as e:
        raise Failure(str(e))


def check_proof(data, team, run_id, runs_root, run_keys):
    """Step 2 of section 7: the proof read, its key the scope's run key of
    version run_keys (1 under a note of version 2 or 3, 2 under one of
    version 4), and the map root it leads to the one the checkpoint-time
    note signs. Returns the proof (read_proof)."""
    p = read_proof(data)
    try:
        key = runmap.run_key(team.encode(), run_id.encode(), run_keys)
    except runmap.Refused as e:
        raise _fail("the scope's run has no run key: %s" % e)
    if p["key"] != key:
        raise _fail("key %s is not the run key of %s/%s (%s)" % (p["key"].hex(), shown(team), shown(run_id), key.hex()))
    try:
        root = map_root(p)
    except Failure as e:
        raise _fail(str(e))
    if root != runs_root:
        raise _fail("the proof leads to map root %s, the checkpoint-time note signs %s"
                    % (root.hex(), runs_root.hex()))
    return p


def run_head_proof(files, manifest, runs_root, run_keys):
    """Steps 1 and 2 of "Proven completeness (format 3)" (CONTRACT.md section
    7), after the note's version was checked against the format
    (packtime.note_version): run-head.json in a run pack whose note signs
    a runs root (version 2, 3 or 4), whatever the manifest's format, and in
    no other pack; its proof, keyed by run keys of version run_keys, to the
    note's runs root. The proof (for step 3, check_entries) of such a run
    pack, else None."""
    scope = manifest["scope"]
    if scope["kind"] != "run" or runs_root is None:
        if "run-head.json" in files:
            raise _fail("only a run pack carries a run-head proof")
        return None
    if "run-head.json" not in files:
        raise _fail("missing: a run pack whose checkpoint-time note signs a run-head map root "
                    "carries its run's head proof")
    return check_proof(files["run-head.json"], scope["team"], scope["run_id"], runs_root, run_keys)
def check_entries(p, team, run_id, tree_size, entries, pruned=None):
    """Step 3 of section 7: entries, [(seq, leaf hash)] of the run in the
    pack in seq order, are exactly the run the head commits to (an absence
    proof: none). In a run pack from a seq (format 9; pruned, its
    retention.Pruned) the entries are the run's from that seq, fewer than
    the head's count (section 9's step 7). Returns what the OK line says of
    it."""
    if p["kind"] == "absence":
        if entries:
            raise _fail("the map shows no entry of %s/%s up to tree size %d, the pack holds %d"
                        % (shown(team), shown(run_id), tree_size, len(entries)))
        return "complete: the run has no entry up to seq %d (absence proof)" % (tree_size - 1)
    count, last_seq, last_hash = p["head"]
    if pruned is not None:
        if len(entries) >= count:
            raise _fail("the run has %d entries up to tree size %d, the pack holds %d from seq %d: a run pack from a "
                        "seq holds fewer entries than its run" % (count, tree_size, len(entries), pruned.from_seq))
    elif len(entries) != count:
        raise _fail("the run has %d entries up to tree size %d, the pack holds %d" % (count, tree_size, len(entries)))
    if entries[-1] != (last_seq, last_hash):
        raise _fail("the run's last entry up to tree size %d is seq %d with leaf hash %s, the pack's last is seq %d "
                    "with leaf hash %s" % (tree_size, last_seq, last_hash.hex(), entries[-1][0], entries[-1][1].hex()))
    if pruned is not None:
        return pruned.complete(count, len(entries), tree_size)
    return "complete: every entry of the run up to seq %d (run-head proof, %d entries)" % (tree_size - 1, count)


def unsettled_steps(steps, tree_size):
    """The lines for the steps the run's entries leave pending or unknown with
    no completion (packsteps.steps()): in a complete run pack, none was
    logged before tree_size. A step whose start or completion was erased is
    not among them: its erasure line says what happened (CONTRACT.md
    section 8)."""
    return ["%s/%s/%s attempt %d (%s): no completion in the log up to seq %d (proven)."
            % (shown(s.team), shown(s.run_id), shown(s.step_id), s.attempt, s.state, tree_size - 1)
            for s in steps if s.state in ("pending", "unknown") and not s.completed and not s.redacted]
