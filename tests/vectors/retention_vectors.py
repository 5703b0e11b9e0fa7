#!/usr/bin/env python3
"""Writes, or checks byte for byte, tests/vectors/retention.json, made from
the contract's text (section 9 "Retention", with section 1's hashes and
chains, section 2's leaf bytes, section 3's receipts, section 6b's entry
bundles and section 8's redacted line) with Python's standard library, not
from the ledger's code.

The file holds:
- `policies`: `accepted`, policy files (UTF-8 text) the text accepts, each
  with the rules a reader takes from it, in line order (`line`, `kind`
  `default` or `team`, `team` or null, `keep` as written, `keep_s` or null
  for `forever`); `refused`, policy files the text refuses, each with the
  exact message of section 9 "The policy" (`retention policy line N: ...`);
- `pass`: the first pass that appends entries: its policy file, the file's
  SHA-256, the clock's `now_us`, the checkpoint-time notes it reads (`size`,
  `time_us`), and for each rule of the policy, in its line order, the
  cutoff (null for `forever`), the line (`below_seq`, 0 for `forever`) and
  the seq of its `retention` entry;
- `entries`: a log of thirteen leaves of version 2, laid out like
  leaf_v2.json (each `entry`, the exact `leaf_bytes_utf8`, `leaf_hash_hex`):
  seqs 0, 1 an `agent_start` and its `agent_exec` (team `acme`), seq 2 a
  `tool_call` of team `globex`, seq 3 an `agent_start` of `acme` never
  completed, seq 4 the ledger's `step_unknown` for it (team `acme`), seq 5 an
  `acme` `tool_call`, seq 6 the ledger's `redaction` erasing seq 5 (section
  8), seq 7 a `globex` `model_call`, seq 8 an `acme` `model_call`, seq 9 an
  `acme` `tool_call`, seqs 10 to 12 the ledger's `retention` entries of
  pass 1 (`team acme 7d`, `team initech forever`, `default 30d`, in the
  policy's line order); `root_hex` the RFC 9162 root, `size` 13;
- `redacted_lines`: the redacted line of seq 5 (erased before the pass);
- `pruned`: the seqs pass 1 prunes, each with its team, the rule that covers
  it, the rule's line and its pruned line (section 9 "The pruned line");
  `kept`: the seqs it does not prune; the script asserts that the pass's
  `retention` entries alone, read as section 9 says a team's entries are
  covered, give the same seqs;
- `bundle_before_hex` and `bundle_hex`: the entry bundle of seqs 0 to 12
  (section 6b: each line as uint16 big-endian length || bytes), before the
  pass (seq 5's redacted line in place of its leaf) and after it (pruned
  lines in place of the pruned entries); the script asserts that the root
  recomputed from each bundle's lines is `root_hex`;
- `accepted`: the three genuine `retention` receipts, with their emitter;
- `refused`: `retention` receipts a validator must refuse, each breaking
  one rule of section 9 "The `retention` entry", with the emitter, the
  contract field its refusal names (`field`) and `why`. The script checks
  each against its own reading of the rules (`violations`): the accepted
  break none, each refused breaks exactly its `field`.

Usage: retention_vectors.py [--write]
  without --write, recomputes the file and compares it with the stored one;
  exit 0 when it holds, 1 when it differs.
"""
# Readings: where the contract's text is silent or ambiguous, the reading
# these vectors take (the most literal one):
#
# P1. Lines are split at LF; a final LF ends the last line (no extra line).
#     N and M count every line from 1, blank lines and comments included. A
#     CR is part of its line (a CRLF file's KEEP ends in CR and is refused);
#     no vector holds a CR.
# P2. "Blank" is an empty line (zero bytes). A line of spaces is not blank:
#     it has spaces at its ends and is refused with the shape message. A
#     comment is a line whose first byte is `#`; a `#` after a space, or
#     after a rule on the same line, is not a comment.
# P3. Words are split at single spaces (U+0020 only; a tab is part of a
#     word). A line with a space at either end, or two spaces in a row, or
#     any word count and first word other than `default KEEP` / `team T
#     KEEP`, is refused with `want 'default KEEP' or 'team T KEEP'`: the
#     text lists no message of its own for the spacing rules.
# P4. The messages are the backquoted texts of section 9 with the line
#     break inside the code span read as one space, T, K the words as
#     written, M the line of the first such rule.
# P5. One message per file: the first line, in file order, that breaks a
#     rule. Within a line the words are checked left to right, each word's
#     rules before the next word's: for `team T KEEP`, T's bytes, then T
#     `ledger`, then a second rule for T, then KEEP; for `default KEEP`, a
#     second default, then KEEP. (No vector breaks two rules on one line.)
# P6. `team ledger` is refused whatever its KEEP, `forever` included. A
#     second rule for a team, or a second default, is refused whatever the
#     KEEPs of the two, and even when both are equal.
# P7. KEEP: `forever`, or [1-9][0-9]* then `d` or `h` (ASCII digits only),
#     whose seconds are from 3,600 to 3,153,600,000: "from 1h to 36500d" is
#     read as a range of durations, so `876000h` (= 36500d) is accepted and
#     `876001h` refused. `0h`, `0d` are refused (below 1h).
# P8. A file with no rule (empty, or comments only) is accepted: every
#     team's entries are kept for good. Invalid UTF-8 is not tested.
# R1. The pass before the first has every line at 0; a rule's line is the
#     greatest tree size among the checkpoint-time notes whose time is at or
#     before its cutoff (times never decrease, so it is also the latest).
# R2. When a pass appends, every rule of the policy gets an entry, also one
#     whose line did not move. A `forever` rule's entry has no `keep_s` and
#     no `cutoff_us`, and `below_seq` 0; a rule with a KEEP other than
#     `forever` has all three. A receipt with `keep_s` is read as a rule
#     with a KEEP (its `cutoff_us` and `below_seq` required), one without
#     as a `forever` rule's.
# R3. The rule that covers an entry is its team's rule if the policy has
#     one, else the default rule, else none (kept for good); a `forever` rule
#     prunes nothing. An entry's team is its receipt's `team` (for an erased
#     entry, its redaction's `entry_team`). "The ledger's own entries" are
#     those of team `ledger`; a `step_unknown` (emitter `ledger`) is of the
#     team of its step and is pruned with it.
# R4. `occurred_at_us` of each entry of a pass is the pass's `now`; their
#     `logged_at_us` are the ledger's clock at the append, after `now`, one
#     apart (one batch, consecutive seqs).
# R5. `cutoff_us` may be negative (a KEEP longer than the time since the
#     epoch): the text sets no bound but the equality. `keep_s` is not
#     required to be a multiple of 3,600 (the text says "out of range" only),
#     though every KEEP gives one.
# R6. `rule_team` "not a team": not 1-63 bytes of [a-z0-9-] (section 3). A
#     team rule's entry without `rule_team` has a `receipt_id` naming a team
#     its fields do not give: refused naming `receipt_id`. The expected
#     `receipt_id` is made from `pass` and `rule_team` as written, so a
#     receipt whose only fault is `pass` 0 or a bad `rule_team` (with the id
#     they give) names only that field.
# R7. `attempt` absent reads as 1 (section 3's default); the ledger writes
#     it. A field the kind does not list (besides section 3's common ones
#     the text allows) is refused naming it; a present `rule_team` that is
#     not a string is "not a team".
# R8. An emitter's `retention` is refused as a whole, at the first of:
#     section 3's namespace rule on `receipt_id`, on `run_id`, then `kind:
#     retention is written by the ledger only`; its other fields are not
#     read.
# R9. Before the pass, the bundle holds seq 5's redacted line (section 6b);
#     after it, seq 5's pruned line (section 9: an erased entry that is
#     pruned gives its pruned line). The redaction at seq 6, the ledger's,
#     stays.
# R10. A step_unknown's `deadline_us` is its start's `logged_at_us` +
#     `timeout_ms` + 30 s of grace (section 4); it holds the step's `run_id`
#     and `step_id`.
import hashlib
import json
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "retention.json")
ZERO = "0" * 64
MARKER = "ERASE-ME-5151"
HEX64 = re.compile(r"[0-9a-f]{64}\Z")
TEAM = re.compile(r"[a-z0-9-]{1,63}\Z")
KEEP = re.compile(r"([1-9][0-9]*)([dh])\Z")
SECOND = 1000000
DAY = 86400 * SECOND
T0 = 1767225600000000
KEEP_MIN, KEEP_MAX = 3600, 36500 * 86400
PREFIX = "retention policy line %d: "
SHAPE = "want 'default KEEP' or 'team T KEEP'"
MAX_INT = 2 ** 53 - 1


def canonical(obj):
    # Section 2: Python's json.dumps with these arguments gives the bytes.
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def leaf_hash(leaf):
    return hashlib.sha256(b"\x00" + leaf.encode()).digest()


def root(hashes):
    # RFC 9162 section 2.1: split at the largest power of two below n.
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return hashlib.sha256(b"\x01" + root(hashes[:k]) + root(hashes[k:])).digest()


def bundle(lines):
    # Section 6b: each line as uint16 big-endian length || its bytes.
    out = b""
    for line in lines:
        data = line.encode()
        assert len(data) <= 65535
        out += struct.pack(">H", len(data)) + data
    return out


def unbundle(data):
    lines, i = [], 0
    while i < len(data):
        (n,) = struct.unpack(">H", data[i:i + 2])
        lines.append(data[i + 2:i + 2 + n].decode())
        i += 2 + n
    assert i == len(data)
    return lines


# ---- The policy (section 9, "The policy") ----

class PolicyError(Exception):
    pass


def keep_seconds(word):
    """Reading P7: None for forever, the seconds otherwise; raises on a bad KEEP."""
    if word == "forever":
        return None
    m = KEEP.match(word)
    if m:
        seconds = int(m.group(1)) * (86400 if m.group(2) == "d" else 3600)
        if KEEP_MIN <= seconds <= KEEP_MAX:
            return seconds
    raise ValueError(word)


def read_policy(text):
    """The rules of a policy file, in line order; raises PolicyError with section 9's message."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()  # Reading P1: a final LF ends the last line.
    rules, default_line, team_lines = [], None, {}
    for n, line in enumerate(lines, 1):
        if line == "" or line.startswith("#"):
            continue
        words = line.split(" ")  # Reading P3: an empty word is a space too many.
        if "" in words or not ((len(words) == 2 and words[0] == "default")
                                or (len(words) == 3 and words[0] == "team")):
            raise PolicyError(PREFIX % n + SHAPE)
        if words[0] == "default":
            if default_line is not None:
                raise PolicyError(PREFIX % n + "a second default rule (the first is on line %d)" % default_line)
            team, keep = None, words[1]
        else:
            team, keep = words[1], words[2]
            if not TEAM.match(team):
                raise PolicyError(PREFIX % n + "team '%s': want 1-63 bytes of [a-z0-9-]" % team)
            if team == "ledger":
                raise PolicyError(PREFIX % n + "team 'ledger': the ledger's own entries are never pruned")
            if team in team_lines:
                raise PolicyError(PREFIX % n + "team '%s': a second rule for the team (the first is on line %d)"
                                  % (team, team_lines[team]))
        try:
            seconds = keep_seconds(keep)
        except ValueError:
            raise PolicyError(PREFIX % n + "keep '%s': want forever, or 1h to 36500d as a decimal count and d or h"
                              % keep)
        if team is None:
            default_line = n
        else:
            team_lines[team] = n
        rules.append({"line": n, "kind": "default" if team is None else "team", "team": team, "keep": keep,
                      "keep_s": seconds})
    return rules


def rule_name(rule):
    return "default" if rule["kind"] == "default" else "team " + rule["team"]


def covering_rule(rules, team):
    """Reading R3: the team's own rule, else the default, else none; team ledger never."""
    if team == "ledger":
        return None
    for rule in rules:
        if rule["kind"] == "team" and rule["team"] == team:
            return rule
    for rule in rules:
        if rule["kind"] == "default":
            return rule
    return None


PASS_POLICY = ("# Retention of the vectors' ledger (CONTRACT section 9)\n"
               "\n"
               "team acme 7d\n"
               "# initech keeps everything\n"
               "team initech forever\n"
               "default 30d\n")

LONG_TEAM = "t" + "0123456789" * 6 + "-x"  # 63 bytes


def policies():
    accepted_texts = [
        ("the pass's policy: comments, a blank line, a forever rule, a default after team rules", PASS_POLICY),
        ("default 1h, the shortest KEEP", "default 1h\n"),
        ("36500d, the longest KEEP, and its 876000h; no final LF", "team acme 36500d\nteam globex 876000h"),
        ("default forever and a team of 63 bytes of [a-z0-9-]", "default forever\nteam %s 24h\n" % LONG_TEAM),
        ("a team of digits and hyphens, a comment with no space after #", "#no rules but this one\nteam 4-2 1d\n"),
        ("comments and blank lines only: no rule, every team kept for good", "# nothing yet\n\n#\n"),
        ("an empty file: no rule", ""),
    ]
    refused_texts = [
        ("a line of two words not starting with default", "keep everything\n"),
        ("uppercase Default", "Default 30d\n"),
        ("team without a KEEP", "team acme\n"),
        ("default with a team", "default acme 30d\n"),
        ("a comment after a rule", "default 30d # a month\n"),
        ("a space at the end of a line", "default 30d \n"),
        ("a space at the start of a line", " default 30d\n"),
        ("two spaces between words", "team  acme 7d\n"),
        ("a tab between words", "default\t30d\n"),
        ("a line of one space (not blank)", "default 30d\n \n"),
        ("a # after a space is not a comment", "default 30d\n # a month\n"),
        ("a second default (line 4; the first on line 2)", "# two defaults\ndefault 30d\n\ndefault 90d\n"),
        ("a second default, both forever", "default forever\ndefault forever\n"),
        ("a second rule for team acme", "team acme 7d\nteam globex 30d\nteam acme 7d\n"),
        ("a second rule for a team, the first forever", "team acme forever\n#\nteam acme 1d\n"),
        ("team ledger", "default 30d\nteam ledger 30d\n"),
        ("team ledger, forever", "team ledger forever\n"),
        ("an uppercase team", "team Acme 7d\n"),
        ("a team with an underscore", "team acme_eu 7d\n"),
        ("a team of 64 bytes", "team %sy 7d\n" % LONG_TEAM),
        ("keep 0h", "default 0h\n"),
        ("keep 0d", "team acme 0d\n"),
        ("keep 36501d", "default 36501d\n"),
        ("keep 876001h", "default 876001h\n"),
        ("keep with a leading zero", "team acme 07d\n"),
        ("keep without a unit", "default 30\n"),
        ("keep in minutes", "default 90m\n"),
        ("keep with an uppercase unit", "default 30D\n"),
        ("keep with a sign", "default +30d\n"),
        ("keep negative", "default -1d\n"),
        ("keep as a fraction", "default 1.5d\n"),
        ("keep Forever", "default Forever\n"),
        ("keep with no count", "team acme h\n"),
        ("keep of non-ASCII digits", "default \u0663\u0660d\n"),
        ("the first bad line is reported (line 2, before line 3)", "team acme 7d\nteam globex 0h\ndefault  30d\n"),
    ]
    accepted, refused = [], []
    for name, text in accepted_texts:
        accepted.append({"name": name, "text_utf8": text, "rules": read_policy(text)})
    for name, text in refused_texts:
        try:
            read_policy(text)
        except PolicyError as e:
            refused.append({"name": name, "text_utf8": text, "error": str(e)})
        else:
            raise AssertionError("accepted: " + name)
    # Spot checks of the reader against the text, written out by hand.
    assert accepted[0]["rules"] == [
        {"line": 3, "kind": "team", "team": "acme", "keep": "7d", "keep_s": 604800},
        {"line": 5, "kind": "team", "team": "initech", "keep": "forever", "keep_s": None},
        {"line": 6, "kind": "default", "team": None, "keep": "30d", "keep_s": 2592000}]
    assert [r["keep_s"] for r in accepted[2]["rules"]] == [3153600000, 3153600000]
    assert accepted[5]["rules"] == [] and accepted[6]["rules"] == []
    errors = {c["name"]: c["error"] for c in refused}
    assert errors["a second default (line 4; the first on line 2)"] == \
        "retention policy line 4: a second default rule (the first is on line 2)"
    assert errors["a second rule for team acme"] == \
        "retention policy line 3: team 'acme': a second rule for the team (the first is on line 1)"
    assert errors["team ledger"] == "retention policy line 2: team 'ledger': the ledger's own entries are never pruned"
    assert errors["an uppercase team"] == "retention policy line 1: team 'Acme': want 1-63 bytes of [a-z0-9-]"
    assert errors["keep 36501d"] == \
        "retention policy line 1: keep '36501d': want forever, or 1h to 36500d as a decimal count and d or h"
    assert errors["a space at the end of a line"] == \
        "retention policy line 1: want 'default KEEP' or 'team T KEEP'"
    assert errors["the first bad line is reported (line 2, before line 3)"].startswith("retention policy line 2: keep")
    return {"accepted": accepted, "refused": refused}


# ---- Receipts the ledger writes ----

def redaction_receipt(seq, entry, reason, requested_by, approved_by, occurred_at_us):
    """Section 8, "The `redaction` entry": the ledger's receipt erasing `entry` (seq `seq`)."""
    receipt = entry["receipt"]
    r = {"receipt_id": "ledger.redaction.%d" % seq, "kind": "redaction", "team": "ledger",
         "run_id": "ledger.redactions", "attempt": 1, "occurred_at_us": occurred_at_us,
         "entry_seq": seq, "entry_leaf_hash": leaf_hash(canonical(entry)).hex(), "entry_v": entry["v"],
         "entry_prev": entry["prev"], "entry_logged_at_us": entry["logged_at_us"]}
    if "run_prev" in entry:
        r["entry_run_prev"] = entry["run_prev"]
    if "team_prev" in entry:
        r["entry_team_prev"] = entry["team_prev"]
    r.update({"entry_kind": receipt["kind"], "entry_team": receipt["team"], "entry_run_id": receipt["run_id"],
              "entry_receipt_id": receipt["receipt_id"]})
    if "step_id" in receipt:
        r["entry_step_id"] = receipt["step_id"]
    r["entry_attempt"] = receipt["attempt"]
    if receipt["kind"] == "agent_exec":
        r["entry_start_receipt_id"] = receipt["start_receipt_id"]
    r.update({"reason": reason, "requested_by": requested_by, "approved_by": approved_by})
    return r


def redacted_line(by, r):
    """Section 8, "The redacted line": a function of the redaction R (at seq `by`) alone."""
    receipt = {"attempt": r["entry_attempt"], "kind": r["entry_kind"], "receipt_id": r["entry_receipt_id"],
               "run_id": r["entry_run_id"], "team": r["entry_team"]}
    if "entry_start_receipt_id" in r:
        receipt["start_receipt_id"] = r["entry_start_receipt_id"]
    if "entry_step_id" in r:
        receipt["step_id"] = r["entry_step_id"]
    obj = {"by": by, "leaf_hash": r["entry_leaf_hash"], "logged_at_us": r["entry_logged_at_us"],
           "prev": r["entry_prev"], "receipt": receipt, "seq": r["entry_seq"], "v": r["entry_v"]}
    if "entry_run_prev" in r:
        obj["run_prev"] = r["entry_run_prev"]
    if "entry_team_prev" in r:
        obj["team_prev"] = r["entry_team_prev"]
    return canonical({"redacted": obj})


def pruned_line(seq, leaf_hash_hex):
    """Section 9, "The pruned line"."""
    return canonical({"pruned": {"leaf_hash": leaf_hash_hex, "seq": seq}})


def retention_receipt(pass_no, rule, now, below_seq, policy_sha256):
    """Section 9, "The `retention` entry": the entry of one rule of pass `pass_no`."""
    if rule["kind"] == "default":
        receipt_id = "ledger.retention.%d.default" % pass_no
    else:
        receipt_id = "ledger.retention.%d.team.%s" % (pass_no, rule["team"])
    r = {"receipt_id": receipt_id, "kind": "retention", "team": "ledger", "run_id": "ledger.retention",
         "attempt": 1, "occurred_at_us": now, "pass": pass_no}
    if rule["kind"] == "team":
        r["rule_team"] = rule["team"]
    if rule["keep_s"] is not None:
        r.update({"keep_s": rule["keep_s"], "cutoff_us": now - rule["keep_s"] * SECOND})
    else:
        assert below_seq == 0  # a forever rule has no line
    r.update({"below_seq": below_seq, "policy_sha256": policy_sha256})
    return r


def integer(value, low=-MAX_INT):
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= MAX_INT


def violations(receipt, emitter):
    """The fields a `retention` receipt breaks, under this script's reading of section 9."""
    # Reading R8: an emitter's is refused whole, at the first rule it meets.
    if emitter != "ledger":
        if str(receipt.get("receipt_id", "")).startswith("ledger."):
            return ["receipt_id"]
        if str(receipt.get("run_id", "")).startswith("ledger."):
            return ["run_id"]
        return ["kind"]
    bad = []

    def need(ok, field):
        if not ok and field not in bad:
            bad.append(field)

    need(receipt.get("kind") == "retention", "kind")
    p = receipt.get("pass")
    need(integer(p, 1), "pass")
    rule_team = receipt.get("rule_team")
    if "rule_team" in receipt:
        need(isinstance(rule_team, str) and TEAM.match(rule_team) is not None and rule_team != "ledger",
             "rule_team")
    if integer(p):
        if "rule_team" in receipt:
            want = "ledger.retention.%d.team.%s" % (p, rule_team)
        else:
            want = "ledger.retention.%d.default" % p
        need(receipt.get("receipt_id") == want, "receipt_id")
    else:
        need(isinstance(receipt.get("receipt_id"), str) and receipt["receipt_id"].startswith("ledger.retention."),
             "receipt_id")
    need(receipt.get("team") == "ledger", "team")
    need(receipt.get("run_id") == "ledger.retention", "run_id")
    need("step_id" not in receipt, "step_id")
    need(receipt.get("attempt", 1) == 1 and integer(receipt.get("attempt", 1)), "attempt")
    need(integer(receipt.get("occurred_at_us"), 0), "occurred_at_us")
    need(integer(receipt.get("below_seq"), 0), "below_seq")
    if "keep_s" in receipt:
        # Reading R2: a rule with a KEEP.
        keep_s = receipt["keep_s"]
        need(integer(keep_s) and KEEP_MIN <= keep_s <= KEEP_MAX, "keep_s")
        cutoff = receipt.get("cutoff_us")
        need(integer(cutoff) and integer(keep_s) and integer(receipt.get("occurred_at_us"))
             and cutoff == receipt["occurred_at_us"] - keep_s * SECOND, "cutoff_us")
    else:
        # A forever rule's: no cutoff, line 0.
        need("cutoff_us" not in receipt, "cutoff_us")
        need(receipt.get("below_seq", 0) == 0, "below_seq")
    sha = receipt.get("policy_sha256")
    need(isinstance(sha, str) and HEX64.match(sha) is not None, "policy_sha256")
    known = {"receipt_id", "kind", "team", "run_id", "step_id", "attempt", "occurred_at_us", "pass", "rule_team",
             "keep_s", "cutoff_us", "below_seq", "policy_sha256"}
    for field in sorted(set(receipt) - known):
        need(False, field)
    return bad


# ---- The log, the pass, the bundles ----

def build():
    entries, hashes = [], []
    run_heads, team_heads = {}, {}

    def add(emitter, logged_at_us, receipt):
        seq = len(entries)
        entry = {"v": 2, "seq": seq, "prev": hashes[-1].hex() if hashes else ZERO, "logged_at_us": logged_at_us,
                 "emitter": emitter, "receipt": receipt}
        assert not entries or entries[-1]["entry"]["logged_at_us"] < logged_at_us
        # Section 1: run chain per (team, run_id), team chain per team.
        run = (receipt["team"], receipt["run_id"])
        if run in run_heads:
            entry["run_prev"] = run_heads[run]
        if receipt["team"] in team_heads:
            entry["team_prev"] = team_heads[receipt["team"]]
        run_heads[run] = seq
        team_heads[receipt["team"]] = seq
        leaf = canonical(entry)
        assert "\n" not in leaf and leaf.startswith('{"emitter":')
        entries.append({"entry": entry, "leaf_bytes_utf8": leaf, "leaf_hash_hex": leaf_hash(leaf).hex()})
        hashes.append(leaf_hash(leaf))
        return seq

    acme, globex = "uri:spiffe://acme/gateway", "uri:spiffe://globex/gateway"
    add(acme, T0, {
        "receipt_id": "build-start", "kind": "agent_start", "team": "acme", "run_id": "run-7", "step_id": "build",
        "attempt": 1, "workflow": "release", "agent": "builder", "occurred_at_us": T0 - SECOND,
        "decision": "allow", "timeout_ms": 60000, "cost_reserved_micros": 5000})
    add("uri:spiffe://acme/worker", T0 + SECOND, {
        "receipt_id": "build-exec", "kind": "agent_exec", "team": "acme", "run_id": "run-7", "step_id": "build",
        "attempt": 1, "occurred_at_us": T0 + 600000, "start_receipt_id": "build-start", "status": "succeeded",
        "exit_code": 0, "duration_ms": 1400, "cost_micros": 1200})
    add(globex, T0 + DAY, {
        "receipt_id": "gx-call-1", "kind": "tool_call", "team": "globex", "run_id": "run-1", "attempt": 1,
        "occurred_at_us": T0 + DAY - 200000, "tool": "git", "decision": "allow"})
    start_at = T0 + 10 * DAY
    start = add(acme, start_at, {
        "receipt_id": "deploy-start", "kind": "agent_start", "team": "acme", "run_id": "run-7",
        "step_id": "deploy", "attempt": 1, "occurred_at_us": start_at - 300000, "decision": "allow",
        "timeout_ms": 60000})
    deadline = start_at + 60000 * 1000 + 30 * SECOND  # Reading R10.
    add("ledger", deadline + SECOND, {
        "receipt_id": "ledger.unknown.%d" % start, "kind": "step_unknown", "team": "acme", "run_id": "run-7",
        "step_id": "deploy", "attempt": 1, "occurred_at_us": deadline + 500000, "start_seq": start,
        "start_receipt_id": "deploy-start", "deadline_us": deadline})
    erased = add(acme, T0 + 12 * DAY, {
        "receipt_id": "crm-lookup", "kind": "tool_call", "team": "acme", "run_id": "run-8", "attempt": 1,
        "occurred_at_us": T0 + 12 * DAY - 400000, "tool": "crm",
        "target": "https://crm.example/customers/" + MARKER, "decision": "allow", "status_code": 200})
    redaction = redaction_receipt(erased, entries[erased]["entry"], "GDPR art. 17 request #912", "cn:alice-admin",
                                  "cn:bob-admin", T0 + 12 * DAY + 3600 * SECOND - 500000)
    by = add("ledger", T0 + 12 * DAY + 3600 * SECOND, redaction)
    add(globex, T0 + 20 * DAY, {
        "receipt_id": "gx-model-1", "kind": "model_call", "team": "globex", "run_id": "run-1", "attempt": 1,
        "occurred_at_us": T0 + 20 * DAY - 900000, "provider": "openai", "model": "gpt-4o", "route": "default",
        "decision": "allow", "input_tokens": 1200, "output_tokens": 300, "cost_micros": 4500})
    add(acme, T0 + 40 * DAY, {
        "receipt_id": "acme-model-1", "kind": "model_call", "team": "acme", "run_id": "run-8", "attempt": 1,
        "occurred_at_us": T0 + 40 * DAY - 700000, "provider": "anthropic", "model": "claude", "route": "default",
        "decision": "allow", "input_tokens": 800, "output_tokens": 200, "cost_micros": 3100})
    add(acme, T0 + 48 * DAY, {
        "receipt_id": "acme-call-9", "kind": "tool_call", "team": "acme", "run_id": "run-9", "attempt": 1,
        "occurred_at_us": T0 + 48 * DAY - 100000, "tool": "jira", "decision": "allow"})

    # The checkpoint-time notes signed so far: (tree size, time). Each time is after its last entry's.
    checkpoints = [{"size": size, "time_us": entries[size - 1]["entry"]["logged_at_us"] + SECOND}
                   for size in (2, 3, 5, 7, 8, 9, 10)]
    for i, c in enumerate(checkpoints):
        assert i == 0 or checkpoints[i - 1]["time_us"] <= c["time_us"]
        assert all(e["entry"]["logged_at_us"] < c["time_us"] for e in entries[:c["size"]])

    # The pass (section 9, "The pass"), at `now`, the first that appends: every line was 0 before (R1).
    now = T0 + 50 * DAY
    rules = read_policy(PASS_POLICY)
    policy_sha256 = hashlib.sha256(PASS_POLICY.encode()).hexdigest()
    pass_no, previous_lines = 1, {}
    lines = {}
    for rule in rules:
        if rule["keep_s"] is None:
            continue
        cutoff = now - rule["keep_s"] * SECOND
        line = max([c["size"] for c in checkpoints if c["time_us"] <= cutoff] + [0])
        lines[rule_name(rule)] = max(line, previous_lines.get(rule_name(rule), 0))
    assert any(lines[k] > previous_lines.get(k, 0) for k in lines)  # so the pass appends (step 1)
    pass_rules, accepted = [], []
    for i, rule in enumerate(rules):
        receipt = retention_receipt(pass_no, rule, now, lines.get(rule_name(rule), 0), policy_sha256)
        seq = add("ledger", now + (i + 1) * 1000, receipt)  # Reading R4.
        pass_rules.append({"rule": rule_name(rule), "policy_line": rule["line"], "keep": rule["keep"],
                           "keep_s": rule["keep_s"], "cutoff_us": receipt.get("cutoff_us"),
                           "below_seq": receipt["below_seq"], "seq": seq})
        accepted.append({"name": "%s: %s %s" % (receipt["receipt_id"], rule_name(rule), rule["keep"]), "seq": seq,
                         "emitter": "ledger", "receipt": receipt})
    assert [p["rule"] for p in pass_rules] == ["team acme", "team initech", "default"]
    assert [p["below_seq"] for p in pass_rules] == [9, 0, 7]
    assert [p["seq"] for p in pass_rules] == [10, 11, 12]
    # Whoever holds the notes checks a line: the note of size below_seq states a time at or before cutoff_us,
    # and (the ledger's statement) it is the latest such note.
    for p in pass_rules:
        if p["keep_s"] is None:
            continue
        notes = [c for c in checkpoints if c["size"] == p["below_seq"]]
        assert notes and notes[0]["time_us"] <= p["cutoff_us"]
        assert not [c for c in checkpoints if c["size"] > p["below_seq"] and c["time_us"] <= p["cutoff_us"]]
    # Section 1's chains for the ledger's own entries: team ledger (6, 10, 11), run ledger.retention (10, 11).
    assert "run_prev" not in entries[10]["entry"] and entries[10]["entry"]["team_prev"] == by
    for seq in (11, 12):
        assert entries[seq]["entry"]["run_prev"] == seq - 1 and entries[seq]["entry"]["team_prev"] == seq - 1
    assert entries[4]["entry"]["run_prev"] == 3 and entries[4]["entry"]["team_prev"] == 3

    # The erasure before the pass (section 8): seq 5's redacted line stands in the bundle.
    red_line = redacted_line(by, redaction)
    before = [e["leaf_bytes_utf8"] for e in entries]
    before[erased] = red_line
    assert MARKER not in red_line and red_line.startswith('{"redacted":')

    # What the pass prunes: by the rule covering each entry's team.
    pruned, kept, after = [], [], list(before)
    for e in entries:
        seq = e["entry"]["seq"]
        team = redaction["entry_team"] if seq == erased else e["entry"]["receipt"]["team"]
        rule = covering_rule(rules, team)
        if rule is None or rule["keep_s"] is None or seq >= lines[rule_name(rule)]:
            kept.append(seq)
            continue
        line = pruned_line(seq, e["leaf_hash_hex"])
        obj = json.loads(line)
        assert line.startswith('{"pruned":') and list(obj) == ["pruned"] and set(obj["pruned"]) == {"leaf_hash", "seq"}
        after[seq] = line
        pruned.append({"seq": seq, "team": team, "rule": rule_name(rule), "below_seq": lines[rule_name(rule)],
                       "line_utf8": line})
    assert [p["seq"] for p in pruned] == [0, 1, 2, 3, 4, 5, 8]
    assert kept == [6, 7, 9, 10, 11, 12]
    # The pass's entries alone state what it prunes (section 9, "The `retention` entry"): a team's entries
    # are covered by the entry whose rule_team is the team, else by the default rule's entry, else by none.
    stated = [e["entry"]["receipt"] for e in entries[10:13]]

    def line_of(team):
        if team == "ledger":
            return 0
        for r in stated:
            if r.get("rule_team") == team:
                return r["below_seq"]
        return next((r["below_seq"] for r in stated if "rule_team" not in r), 0)

    by_statement = sorted(s for s in range(len(entries))
                          if s < line_of(redaction["entry_team"] if s == erased else entries[s]["entry"]["receipt"]["team"]))
    assert by_statement == [p["seq"] for p in pruned]
    assert all(entries[s]["entry"]["receipt"]["team"] != "ledger" for s in [p["seq"] for p in pruned])
    # seq 7 was logged at the default rule's cutoff and is kept: no note at or before the cutoff holds it.
    assert entries[7]["entry"]["logged_at_us"] == pass_rules[2]["cutoff_us"]

    # The root depends on leaf hashes only: recomputed from either bundle's lines, it is the same.
    def hashes_of(data):
        out = []
        for line in unbundle(data):
            if line.startswith('{"emitter":'):
                out.append(leaf_hash(line))
            elif line.startswith('{"redacted":'):
                out.append(bytes.fromhex(json.loads(line)["redacted"]["leaf_hash"]))
            else:
                assert line.startswith('{"pruned":')
                out.append(bytes.fromhex(json.loads(line)["pruned"]["leaf_hash"]))
        return out

    root_hex = root(hashes).hex()
    assert root(hashes_of(bundle(before))).hex() == root_hex
    assert root(hashes_of(bundle(after))).hex() == root_hex
    assert hashes_of(bundle(after)) == hashes
    assert MARKER.encode() not in bundle(before) and MARKER.encode() not in bundle(after)
    assert red_line.encode() in bundle(before) and red_line.encode() not in bundle(after)

    good = accepted[0]["receipt"]
    forever = accepted[1]["receipt"]
    default = accepted[2]["receipt"]
    assert "keep_s" not in forever and "cutoff_us" not in forever and forever["below_seq"] == 0

    def case(name, field, why, base=None, emitter="ledger", **changes):
        receipt = dict(good if base is None else base)
        for key, value in changes.items():
            if value is None:
                del receipt[key]
            else:
                receipt[key] = value
        return {"name": name, "receipt": receipt, "emitter": emitter, "field": field, "why": why}

    cut = good["occurred_at_us"]
    refused = [
        case("an emitter's retention under the ledger's ids", "receipt_id", "section 3 namespace rule first",
             emitter=acme),
        case("an emitter's retention under its own ids", "kind", "written by the ledger only", emitter=acme,
             receipt_id="retention-1", run_id="retention"),
        case("receipt_id naming pass 2 for pass 1", "receipt_id", "not its pass's id",
             receipt_id="ledger.retention.2.team.acme"),
        case("receipt_id naming another team", "receipt_id", "not its rule_team's id",
             receipt_id="ledger.retention.1.team.globex"),
        case("receipt_id of the default rule with a rule_team", "receipt_id", "default id, team rule",
             receipt_id="ledger.retention.1.default"),
        case("receipt_id with a leading zero", "receipt_id", "pass with a leading zero",
             receipt_id="ledger.retention.01.team.acme"),
        case("rule_team missing from a team rule's entry", "receipt_id", "id names a team, no rule_team",
             rule_team=None),
        case("the default rule's entry with a team id", "receipt_id", "team id, no rule_team", base=default,
             receipt_id="ledger.retention.1.team.acme"),
        case("team not ledger", "team", "team must be ledger", team="acme"),
        case("run_id not ledger.retention", "run_id", "run_id must be ledger.retention", run_id="ledger.retentions"),
        case("a step_id", "step_id", "no step_id", step_id="pass"),
        case("attempt 2", "attempt", "attempt must be 1", attempt=2),
        case("pass 0 (with the id it gives)", "pass", "pass below 1", **{"pass": 0},
             receipt_id="ledger.retention.0.team.acme"),
        case("rule_team ledger (with the id it gives)", "rule_team", "team ledger is never pruned",
             rule_team="ledger", receipt_id="ledger.retention.1.team.ledger"),
        case("rule_team not a team: uppercase", "rule_team", "not [a-z0-9-]{1,63}", rule_team="Acme",
             receipt_id="ledger.retention.1.team.Acme"),
        case("keep_s 3599 (cutoff_us to match)", "keep_s", "below 1h", keep_s=3599, cutoff_us=cut - 3599 * SECOND),
        case("keep_s 3153600001 (cutoff_us to match)", "keep_s", "above 36500d", keep_s=3153600001,
             cutoff_us=cut - 3153600001 * SECOND),
        case("cutoff_us one more than occurred_at_us - keep_s * 1000000", "cutoff_us", "off by one",
             cutoff_us=good["cutoff_us"] + 1),
        case("below_seq -1", "below_seq", "negative", below_seq=-1),
        case("policy_sha256 in upper-case hex", "policy_sha256", "not lower-case hex",
             policy_sha256=policy_sha256.upper()),
        case("policy_sha256 of 63 digits", "policy_sha256", "not 64 hex", policy_sha256=policy_sha256[:63]),
        case("policy_sha256 missing", "policy_sha256", "required field missing", policy_sha256=None),
        case("below_seq missing, default rule", "below_seq", "required field missing", base=default, below_seq=None),
        case("a forever rule's entry with a cutoff_us", "cutoff_us", "cutoff_us without keep_s", base=forever,
             cutoff_us=forever["occurred_at_us"]),
        case("a forever rule's entry with below_seq 9", "below_seq", "not 0 without keep_s", base=forever,
             below_seq=9),
        case("a forever rule's entry without below_seq", "below_seq", "required field missing", base=forever,
             below_seq=None),
        case("a forever rule's entry naming the default rule's id", "receipt_id", "team id expected",
             base=forever, receipt_id="ledger.retention.1.default"),
    ]
    assert policy_sha256.upper() != policy_sha256 and good["keep_s"] == 604800
    for a in accepted:
        assert violations(a["receipt"], a["emitter"]) == [], (a["name"], violations(a["receipt"], a["emitter"]))
    for c in refused:
        assert violations(c["receipt"], c["emitter"]) == [c["field"]], (c["name"], violations(c["receipt"], c["emitter"]))

    return {
        "note": "CONTRACT section 9 (retention). policies: files read (with the rules a reader takes) and refused "
                "(with the exact message); entries: leaf_bytes_utf8 is the exact leaf (sections 1 and 2), seq 6 "
                "the ledger's redaction of seq 5, seqs 10 to 12 pass 1's retention entries; pruned: the seqs "
                "pass 1 prunes and their pruned lines; bundle_before_hex / bundle_hex: the entry bundle of seqs 0 "
                "to 12 (section 6b) before and after the pass. Made by tests/vectors/retention_vectors.py from "
                "the contract's text, not the ledger's code",
        "policies": policies(),
        "pass": {
            "pass": pass_no,
            "policy_text_utf8": PASS_POLICY,
            "policy_sha256": policy_sha256,
            "now_us": now,
            "checkpoints": checkpoints,
            "rules": pass_rules,
        },
        "entries": entries,
        "root_hex": root_hex,
        "size": len(entries),
        "redacted_lines": [{"seq": erased, "by": by, "line_utf8": red_line}],
        "pruned": pruned,
        "kept": kept,
        "bundle_before_hex": bundle(before).hex(),
        "bundle_hex": bundle(after).hex(),
        "accepted": accepted,
        "refused": refused,
    }


def main():
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if sys.argv[1:] == ["--write"]:
        with open(PATH, "w") as f:
            f.write(text)
        return 0
    with open(PATH) as f:
        if f.read() != text:
            print("FAIL: retention.json: not what the contract's text gives (rerun with --write and compare)")
            return 1
    print("OK: retention.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
