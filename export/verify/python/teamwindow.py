"""Closed team windows of format 4 or 5 (CONTRACT.md section 7), with the
standard library only: team-window.json read in its JSON form, its bounds
(`before`, `after`) checked as entries of the log, its `head` as a
team-head map proof (section 6a, through completeness.py and runmap.py)
against the checkpoint-time note's `teams` root, and the walk down the team
chain (`team_prev`, section 1) from the top of the window to its bottom.

    {"before":BOUND,"after":BOUND,"head":PROOF}      exactly one of after, head
    BOUND = {"seq":S,"leaf":"<leaf bytes>","inclusion":["<hex>",...]}

Every failure is a completeness.Failure (packerror.Failure) whose message
starts with `team-window.json: `.
"""
import hashlib
import json

import completeness
import runmap
from packread import shown

WHERE = "team-window.json"
Failure = completeness.Failure


def _fail(rule):
    return Failure("%s: %s" % (WHERE, rule))


def presence(files, scope, teams_root):
    """Step 1, the file's place: required in a team window whose note is
    version 3 or 4 (teams_root not None), whatever the manifest's format, and
    refused in any other pack. Returns the file's bytes, or None."""
    window = scope["kind"] == "team" and teams_root is not None
    if WHERE in files and not window:
        raise _fail("only a team window carries a team chain proof")
    if WHERE not in files and window:
        raise _fail("missing: a team window whose checkpoint-time note signs a team-head map root carries its "
                    "team chain proof")
    return files.get(WHERE)


def _bound(b, name):
    """A BOUND read: (seq, leaf bytes, [inclusion hashes])."""
    if not isinstance(b, dict):
        raise _fail("%s: want a JSON object" % name)
    for k in ("seq", "leaf", "inclusion"):
        if k not in b:
            raise _fail("%s.%s: missing" % (name, k))
    for k in sorted(b):
        if k not in ("seq", "leaf", "inclusion"):
            raise _fail("%s.%s: not a field of a bound" % (name, shown(k)))
    if type(b["seq"]) is not int:
        raise _fail("%s.seq: want a JSON integer" % name)
    if not isinstance(b["leaf"], str):
        raise _fail("%s.leaf: want a JSON string" % name)
    try:
        leaf = b["leaf"].encode("utf-8")
    except UnicodeEncodeError:
        raise _fail("%s.leaf: not UTF-8 (a lone surrogate)" % name)
    if not isinstance(b["inclusion"], list):
        raise _fail("%s.inclusion: want a JSON array of hashes" % name)
    path = []
    for i, h in enumerate(b["inclusion"]):
        if not isinstance(h, str) or not completeness.HEX64.match(h):
            raise _fail("%s.inclusion[%d]: want 64 lower-case hex digits" % (name, i))
        path.append(bytes.fromhex(h))
    return b["seq"], leaf, path


def parse(data):
    """Step 1, the file's form: {"before", "after", "head"} with each bound
    read (_bound) and the head read as a section 6a proof."""
    obj = completeness.load_json(data, WHERE)
    if not isinstance(obj, dict):
        raise _fail("want a JSON object")
    for k in sorted(obj):
        if k not in ("before", "after", "head"):
            raise _fail("%s: not a field of team-window.json" % shown(k))
    if ("after" in obj) == ("head" in obj):
        raise _fail("want exactly one of after and head")
    out = {k: _bound(obj[k], k) if k in obj else None for k in ("before", "after")}
    out["head"] = completeness.read_map_proof(obj["head"], WHERE, "head.") if "head" in obj else None
    return out


def leaf_entry(leaf):
    """The entry of leaf bytes of version 1 or 2 (section 2), or None: a JSON
    object with `v` 1 or 2 (`team_prev` in version 2 only, an integer), an
    integer `seq` and `logged_at_us`, and a receipt with a string `team`."""
    try:
        e = json.loads(leaf)
    except ValueError:
        return None
    if not isinstance(e, dict) or type(e.get("v")) is not int or e["v"] not in (1, 2):
        return None
    if "team_prev" in e and (e["v"] == 1 or type(e["team_prev"]) is not int):
        return None
    r = e.get("receipt")
    if type(e.get("seq")) is not int or type(e.get("logged_at_us")) is not int or not isinstance(r, dict):
        return None
    return e if isinstance(r.get("team"), str) else None


def _check_bound(name, bound, scope, size, root, verify_inclusion):
    """Step 2 for one bound, but its place against the pack's entries:
    returns its entry and leaf hash."""
    seq, leaf, path = bound
    e = leaf_entry(leaf)
    if e is None:
        raise _fail("%s.leaf: not a leaf of version 1 or 2" % name)
    if e["seq"] != seq:
        raise _fail("%s.leaf: the leaf's seq is %d, not %d (%s.seq)" % (name, e["seq"], seq, name))
    if not 0 <= seq < size:
        raise _fail("%s.seq: %d is not below the tree size %d" % (name, seq, size))
    if e["receipt"]["team"] != scope["team"]:
        raise _fail("%s: entry %d is of team %s, not the window's team %s" % (name, seq, shown(e["receipt"]["team"]),
                                                                              shown(scope["team"])))
    leaf_hash = hashlib.sha256(b"\x00" + leaf).digest()
    if not verify_inclusion(seq, size, leaf_hash, path, root):
        raise _fail("%s: the inclusion proof of entry %d does not lead to the checkpoint's root" % (name, seq))
    return e, leaf_hash


def _check_bounds(tw, scope, size, root, entries, verify_inclusion):
    """Step 2: each bound an entry of the team outside the window, below
    (before) or above (after) every entry of the pack."""
    before = after = None
    if tw["before"] is not None:
        before = _check_bound("before", tw["before"], scope, size, root, verify_inclusion)
        seq, logged = before[0]["seq"], before[0]["logged_at_us"]
        if logged >= scope["from_us"]:
            raise _fail("before: entry %d was logged at %d, not before the window's from_us %d"
                        % (seq, logged, scope["from_us"]))
        if entries and seq >= entries[0][0]["seq"]:
            raise _fail("before: entry %d is not below the pack's first entry %d" % (seq, entries[0][0]["seq"]))
    if tw["after"] is not None:
        after = _check_bound("after", tw["after"], scope, size, root, verify_inclusion)
        seq, logged = after[0]["seq"], after[0]["logged_at_us"]
        if logged < scope["to_us"]:
            raise _fail("after: entry %d was logged at %d, inside the window, which ends at %d"
                        % (seq, logged, scope["to_us"]))
        if entries and seq <= entries[-1][0]["seq"]:
            raise _fail("after: entry %d is not above the pack's last entry %d" % (seq, entries[-1][0]["seq"]))
        if before is not None and seq <= before[0]["seq"]:
            raise _fail("after: entry %d is not above before's entry %d" % (seq, before[0]["seq"]))
    return before, after


def _check_head(p, scope, size, teams_root, entries, before):
    """Step 3: the team-head map proof of the scope's team, leading to the
    note's teams root, whose head is the pack's last entry (or before's)."""
    team = scope["team"]
    try:
        key = runmap.team_key(team.encode())
    except runmap.Refused as e:
        raise _fail("the scope's team has no team key: %s" % e)
    if p["key"] != key:
        raise _fail("head: key %s is not the team key of team %s (%s)" % (p["key"].hex(), shown(team), key.hex()))
    try:
        got = completeness.map_root(p)
    except Failure as e:
        raise _fail("head: %s" % e)
    if got != teams_root:
        raise _fail("head: the proof leads to map root %s, the checkpoint-time note signs %s"
                    % (got.hex(), teams_root.hex()))
    if p["kind"] == "absence":
        held = len(entries) + (before is not None)
        if held:
            raise _fail("head: the map shows no entry of team %s up to tree size %d, the pack holds %d"
                        % (shown(team), size, held))
        return
    _, last_seq, last_hash = p["head"]
    last = entries[-1] if entries else before
    if last is None:
        raise _fail("head: the team's last entry up to tree size %d is seq %d with leaf hash %s, the pack holds no "
                    "entry and no before" % (size, last_seq, last_hash.hex()))
    if (last[0]["seq"], last[1]) != (last_seq, last_hash):
        raise _fail("head: the team's last entry up to tree size %d is seq %d with leaf hash %s, the pack's last is "
                    "seq %d with leaf hash %s" % (size, last_seq, last_hash.hex(), last[0]["seq"], last[1].hex()))


def _walk(x):
    """Step 4 over x, [(entry, is before)] in seq order: None when the window
    is proven whole, else the seq of the version 1 leaf the walk stopped at."""
    i = len(x) - 1
    while i >= 0:
        cur, is_before = x[i]
        if is_before:
            return None
        if cur["v"] == 1:
            return cur["seq"]
        prev = cur.get("team_prev")
        if prev is None:
            if i != 0:
                raise _fail("entry %d has no team_prev, so it is its team's first entry, but the pack holds the "
                            "team's entry %d below it" % (cur["seq"], x[i - 1][0]["seq"]))
            return None
        if type(prev) is not int:
            raise _fail("entry %d: team_prev: want a JSON integer" % cur["seq"])
        if i == 0 or x[i - 1][0]["seq"] != prev:
            raise _fail("entry %d follows the team's entry %d (team_prev), which the pack does not hold"
                        % (cur["seq"], prev))
        i -= 1
    return None


def check(data, scope, size, root, teams_root, entries, verify_inclusion):
    """Steps 1 (the form) to 4 of "Closed team windows (format 4)" (format
    5 likewise) on the bytes of team-window.json. entries: [(entry, leaf
    hash)] of the pack in seq order, already checked against the
    checkpoint; verify_inclusion: RFC 9162 (index, size, leaf hash, path,
    root) -> bool. Returns what the line after the OK line says."""
    tw = parse(data)
    before, after = _check_bounds(tw, scope, size, root, entries, verify_inclusion)
    if tw["head"] is not None:
        _check_head(tw["head"], scope, size, teams_root, entries, before)
    x = ([(before[0], True)] if before else []) + [(e, False) for e, _ in entries]
    x += [(after[0], False)] if after else []
    stop = _walk(x)
    team, a, b, n = shown(scope["team"]), scope["from_us"], scope["to_us"], size - 1
    if stop is None:
        return "complete: every entry of team %s logged in [%d, %d) up to seq %d (team chain, %d entries)" % (
            team, a, b, n, len(entries))
    if stop == x[-1][0]["seq"]:
        return ("not proven complete: the team's entries around the window are version 1 leaves, written before "
                "the ledger kept team chains")
    return ("complete after seq %d: every entry of team %s logged in [%d, %d) after seq %d up to seq %d (team chain); "
            "the window's entries up to seq %d are version 1 leaves, written before the ledger kept team chains: "
            "that none of them was left out is not proven" % (stop, team, a, b, stop, n, stop))
