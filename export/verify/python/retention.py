"""A run pack across the retention line, format 9 (CONTRACT.md section 9, "A
run pack across the line (format 9)"), with the standard library only,
written from the contract's text: the place of retention.jsonl and
retention-policy.txt (step 1), the ledger's `retention` entry the pack
carries (step 2), the policy it applied (step 3, retentionpolicy.py), the
rule covering the run's team (step 4), the scope's from_seq (step 5), and
what the OK line says. Steps 6 and 7 (the entries from from_seq, the
run-head's count above them) are packproof.py's and completeness.py's.

A format 9 pack's scope is {"from_seq":F,"kind":"run","run_id":S,"team":T}:
the run's entries from seq F, the line of the rule covering T in the pass
whose entry retention.jsonl holds; those before F were pruned.

Every failure is a packerror.Failure whose message starts with the file it
names.
"""
import hashlib
import json
import re

import retentionpolicy
import teamwindow
from packerror import Failure
from packnote import signed_time
from packread import load_json, shown

FILE, POLICY = "retention.jsonl", "retention-policy.txt"
HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_TEAM = re.compile(r"[a-z0-9-]{1,63}\Z")
MAX_INT = 1 << 63
# The fields of a `retention` receipt: its common fields, fixed, and those of
# its kind ("The `retention` entry"); step_id is listed to be refused by name.
FIELDS = {"receipt_id", "kind", "team", "run_id", "step_id", "attempt", "occurred_at_us", "pass", "rule_team",
          "keep_s", "cutoff_us", "below_seq", "policy_sha256"}


def presence(files, pack_format):
    """Step 1: both files in a pack of format 9, neither in any other."""
    if pack_format != 9:
        if FILE in files:
            raise Failure("%s: only a pack of format 9 carries a retention entry" % FILE)
        if POLICY in files:
            raise Failure("%s: only a pack of format 9 carries a retention policy" % POLICY)
        return
    if FILE not in files:
        raise Failure("%s: missing: a format 9 pack carries the retention entry that pruned its run's first entries"
                      % FILE)
    if POLICY not in files:
        raise Failure("%s: missing: a format 9 pack carries the policy its retention entry applied" % POLICY)


def _int(r, field, low=-MAX_INT, high=MAX_INT - 1):
    v = r.get(field)
    return type(v) is int and low <= v <= high


def receipt_rule(r):
    """(field, rule) of the first rule of "The `retention` entry" (and the
    common fields of section 3) that the receipt r (a dict, its kind
    `retention`) breaks, or None when it is a valid retention entry. The
    receipt_id expected is the one its pass and rule_team give as written,
    so that an entry whose only fault is its pass or rule_team names that
    field."""
    for k in sorted(r):
        if k not in FIELDS:
            return shown(k), "not a field of a retention entry"
    if type(r.get("pass")) is not int:
        return "pass", "required, a pass number from 1"
    rule_team = r.get("rule_team")
    if "rule_team" in r and not isinstance(rule_team, str):
        return "rule_team", "want a team (1-63 bytes of [a-z0-9-]), never ledger"
    want = ("ledger.retention.%d.default" % r["pass"] if rule_team is None
            else "ledger.retention.%d.team.%s" % (r["pass"], rule_team))
    if r.get("receipt_id") != want:
        return "receipt_id", "a retention entry's is '%s'" % shown(want)
    if r.get("team") != "ledger":
        return "team", "a retention entry's is 'ledger'"
    if r.get("run_id") != "ledger.retention":
        return "run_id", "a retention entry's is 'ledger.retention'"
    if "step_id" in r:
        return "step_id", "a retention entry has none"
    if r.get("attempt", 1) != 1 or type(r.get("attempt", 1)) is not int:
        return "attempt", "a retention entry's is 1"
    if r["pass"] < 1:
        return "pass", "required, a pass number from 1"
    if rule_team is not None and (not _TEAM.match(rule_team) or rule_team == "ledger"):
        return "rule_team", "want a team (1-63 bytes of [a-z0-9-]), never ledger"
    if not _int(r, "occurred_at_us", 1):
        return "occurred_at_us", "required, > 0"
    if "keep_s" in r:
        if not _int(r, "keep_s", retentionpolicy.KEEP_MIN_S, retentionpolicy.KEEP_MAX_S):
            return "keep_s", "want %d to %d (1h to 36500d)" % (retentionpolicy.KEEP_MIN_S, retentionpolicy.KEEP_MAX_S)
        cutoff = r["occurred_at_us"] - r["keep_s"] * 1000000
        if r.get("cutoff_us") != cutoff or type(r.get("cutoff_us")) is not int:
            return "cutoff_us", "want occurred_at_us - keep_s * 1000000 (%d)" % cutoff
    elif "cutoff_us" in r:
        return "cutoff_us", "only with keep_s (a forever rule's entry has no cutoff)"
    if not _int(r, "below_seq", 0):
        return "below_seq", "required, a seq (0 or more)"
    if "keep_s" not in r and r["below_seq"] != 0:
        return "below_seq", "0 without keep_s (a forever rule prunes nothing)"
    if not isinstance(r.get("policy_sha256"), str) or not HEX64.match(r["policy_sha256"]):
        return "policy_sha256", "want 64 lower-case hex digits"
    return None


def entry_rule(r):
    """The rule a retention receipt states, as messages name it."""
    return "default" if "rule_team" not in r else "team %s" % shown(r["rule_team"])


def _entry(data, size):
    """Step 2: retention.jsonl, one line and its LF, the canonical leaf of
    the ledger's valid `retention` receipt, in the checkpoint's tree and not
    below its own line. Returns (leaf bytes, entry)."""
    if data.count(b"\n") != 1 or not data.endswith(b"\n"):
        raise Failure("%s: want one line ending in a newline" % FILE)
    leaf, where = data[:-1], "%s: line 1" % FILE
    entry = load_json(leaf, where)
    if not isinstance(entry, dict) or teamwindow.leaf_entry(leaf) is None:
        raise Failure("%s: not a leaf of version 1 or 2" % where)
    if json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() != leaf:
        raise Failure("%s: not canonical JSON" % where)
    r = entry["receipt"]
    if r.get("kind") != "retention":
        raise Failure("%s: kind %s, want retention" % (where, shown(r.get("kind", "none"))))
    if entry.get("emitter") != "ledger":
        raise Failure("%s: emitter '%s': a retention entry is the ledger's only" % (where, shown(entry.get("emitter"))))
    broken = receipt_rule(r)
    if broken is not None:
        raise Failure("%s: %s: %s" % (where, broken[0], broken[1]))
    seq = entry["seq"]
    if not 0 <= seq < size:
        raise Failure("%s: seq %d is not in the checkpoint's tree of size %d" % (FILE, seq, size))
    if seq < r["below_seq"]:
        raise Failure("%s: seq %d is below its below_seq %d: a pass's entry is appended after its line"
                      % (FILE, seq, r["below_seq"]))
    return leaf, entry


def _policy(data, r):
    """Step 3: retention-policy.txt, the bytes the entry's policy_sha256
    names, read as a policy."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != r["policy_sha256"]:
        raise Failure("%s: SHA-256 %s, the retention entry's policy_sha256 is %s"
                      % (POLICY, digest, r["policy_sha256"]))
    try:
        return retentionpolicy.read(data)
    except retentionpolicy.PolicyError as e:
        raise Failure("%s: %s" % (POLICY, e))


def _rule(policy, r, team):
    """Step 4: the policy's rule covering team exists, is not forever, and
    is the one the entry states (its rule_team, its keep_s)."""
    rule = policy.covering(team)
    if rule is None:
        raise Failure("%s: no rule covers team %s: its entries are kept for good" % (POLICY, shown(team)))
    if rule.keep_s is None:
        raise Failure("%s: line %d: team %s's entries are kept forever" % (POLICY, rule.line, shown(team)))
    if r.get("rule_team") != rule.team or r.get("keep_s") != rule.keep_s:
        raise Failure("%s: the entry states rule %s (keep_s %s), the policy's rule for team %s is %s (line %d, "
                      "keep_s %d)" % (FILE, entry_rule(r), r.get("keep_s", "none"), shown(team), rule.name(),
                                      rule.line, rule.keep_s))
    return rule


class Pruned:
    """What a pack of format 9 states of its run's pruned entries, once
    steps 2 to 5 hold: seq, leaf and leaf_hash of retention.jsonl, receipt
    (its `retention` receipt), rule (the policy's retentionpolicy.Rule) and
    from_seq (the scope's, the entry's below_seq)."""

    def __init__(self, files, scope, size):
        self.leaf, entry = _entry(files[FILE], size)
        self.seq, self.receipt = entry["seq"], entry["receipt"]
        self.leaf_hash = hashlib.sha256(b"\x00" + self.leaf).digest()
        self.policy = _policy(files[POLICY], self.receipt)
        self.rule = _rule(self.policy, self.receipt, scope["team"])
        self.from_seq = scope["from_seq"]
        if self.from_seq != self.receipt["below_seq"]:
            raise Failure("manifest.json: scope.from_seq %d, the retention entry's below_seq is %d"
                          % (self.from_seq, self.receipt["below_seq"]))

    def same(self, leaf, n):
        """The entry at line n of entries.jsonl (leaf) holds this entry's
        seq: it must be the same leaf (each seq is in the multiproof once)."""
        if leaf != self.leaf:
            raise Failure("%s: line 1: seq %d: not the leaf of entries.jsonl line %d, which holds that seq"
                          % (FILE, self.seq, n))

    def complete(self, count, held, tree_size):
        """The line after the OK line (without its period): the pack holds
        `held` of the run's `count` entries, from from_seq up."""
        r = self.receipt
        return ("complete from seq %d: every entry of the run from seq %d up to seq %d (run-head proof, %d of its %d "
                "entries); the %d before seq %d were pruned under the retention policy (pass %d, rule %s, cutoff %s), "
                "as entry %d states" % (self.from_seq, self.from_seq, tree_size - 1, held, count, count - held,
                                        self.from_seq, r["pass"], entry_rule(r), signed_time(r["cutoff_us"]),
                                        self.seq))
