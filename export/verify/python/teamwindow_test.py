#!/usr/bin/env python3
"""export/verify/python/teamwindow.py on windows of a made-up log of team `t` (CONTRACT.md
section 7, "Closed team windows (format 4)"): the walk's three endings and
its two refusals, the head's, the bounds' and the file form's refusals,
each with its exact message. Cases a real ledger cannot be made to write
(a second first entry, a leaf of version 3) are here; tests/team_window_pack_test.py
covers real packs. Inclusion proofs are checked by packproof.py's RFC 9162
code (through verify_pack.py) in the real packs; here a fake accepts every
proof but one seq's.

Usage: teamwindow_test.py   (exit 0 when every case holds, 1 naming those that do not)
"""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import completeness  # noqa: E402
import runmap  # noqa: E402
import teamwindow  # noqa: E402

SCOPE = {"kind": "team", "team": "t", "from_us": 300, "to_us": 700, "from_seq": 3, "to_seq": 8}
SIZE, ROOT, BAD_PROOF = 20, b"\x00" * 32, 13


def leaf(seq, logged, v=2, team_prev=None, team="t"):
    e = {"v": v, "seq": seq, "prev": "0" * 64, "logged_at_us": logged, "emitter": "local",
         "receipt": {"receipt_id": "r%d" % seq, "kind": "tool_call", "team": team, "run_id": "run-%d" % seq,
                     "tool": "git", "decision": "allow", "occurred_at_us": logged, "attempt": 1}}
    if team_prev is not None:
        e["team_prev"] = team_prev
    return json.dumps(e, sort_keys=True, separators=(",", ":")).encode()


def entries(*leaves):
    return [(json.loads(x), hashlib.sha256(b"\x00" + x).digest()) for x in leaves]


def bound(x):
    return {"seq": json.loads(x)["seq"], "leaf": x.decode(), "inclusion": []}


def head_of(last_leaf, count=1):
    """(teams root, head proof) of a map holding team t alone, its last entry last_leaf."""
    key = runmap.team_key(b"t")
    h = (count, json.loads(last_leaf)["seq"], hashlib.sha256(b"\x00" + last_leaf).digest())
    root = runmap.leaf_hash(key, runmap.value_hash(*h))
    return root, {"key": key.hex(), "head": {"count": h[0], "last_seq": h[1], "last_leaf_hash": h[2].hex()},
                  "siblings": []}


def absent():
    return runmap.EMPTY, {"key": runmap.team_key(b"t").hex(), "siblings": []}


def inclusion(seq, size, leaf_hash, path, root):
    return seq != BAD_PROOF


def run(label, obj, pack, teams_root, want):
    """want: the line the check returns, or "FAIL: " and its message."""
    data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    try:
        got = teamwindow.check(data, SCOPE, SIZE, ROOT, teams_root, pack, inclusion)
    except completeness.Failure as e:
        got = "FAIL: %s" % e
    if got != want:
        print("FAIL: %s:\n  got:  %s\n  want: %s" % (label, got, want))
        return 1
    print("%s: %s" % (label, got))
    return 0


def main():
    b2 = leaf(2, 250, team_prev=1)
    w3, w5, w7 = leaf(3, 310, team_prev=2), leaf(5, 320, team_prev=3), leaf(7, 690, team_prev=5)
    a9 = leaf(9, 710, team_prev=7)
    v1 = {n: leaf(n, 300 + n, v=1) for n in range(3, 8)}
    root7, head7 = head_of(w7, 4)
    done = "complete: every entry of team t logged in [300, 700) up to seq 19 (team chain, %d entries)"
    walk = "FAIL: team-window.json: entry %d follows the team's entry %d (team_prev), which the pack does not hold"
    cases = [
        ("before, entries, after", {"before": bound(b2), "after": bound(a9)}, entries(w3, w5, w7), None, done % 3),
        ("before, entries, head", {"before": bound(b2), "head": head7}, entries(w3, w5, w7), root7, done % 3),
        ("no entry: before and its head", {"before": bound(b2), "head": head_of(b2)[1]}, [], head_of(b2)[0],
         done % 0),
        ("no entry, no before: an absence proof", {"head": absent()[1]}, [], absent()[0], done % 0),
        ("the team's first entry at the bottom", {"after": bound(a9)},
         entries(leaf(3, 310), w5, w7), None, done % 3),
        ("a second first entry above the bottom", {"before": bound(b2), "after": bound(a9)},
         entries(w3, leaf(5, 320), w7), None,
         "FAIL: team-window.json: entry 5 has no team_prev, so it is its team's first entry, but the pack holds "
         "the team's entry 3 below it"),
        ("an entry left out", {"before": bound(b2), "after": bound(a9)}, entries(w3, w7), None, walk % (7, 5)),
        ("no before", {"after": bound(a9)}, entries(w3, w5, w7), None, walk % (3, 2)),
        ("version 1 leaves up to seq 5", {"after": bound(a9)},
         entries(v1[3], v1[5], w7), None,
         "complete after seq 5: every entry of team t logged in [300, 700) after seq 5 up to seq 19 (team chain); "
         "the window's entries up to seq 5 are version 1 leaves, written before the ledger kept team chains: that "
         "none of them was left out is not proven"),
        ("version 1 leaves, after them a version 1 leaf", {"after": bound(leaf(9, 710, v=1))},
         entries(v1[3], v1[5]), None,
         "not proven complete: the team's entries around the window are version 1 leaves, written before the ledger "
         "kept team chains"),
        ("the head one entry short", {"before": bound(b2), "head": head_of(w5, 3)[1]}, entries(w3, w5, w7),
         head_of(w5, 3)[0],
         "FAIL: team-window.json: head: the team's last entry up to tree size 20 is seq 5 with leaf hash %s, the "
         "pack's last is seq 7 with leaf hash %s" % (entries(w5)[0][1].hex(), entries(w7)[0][1].hex())),
        ("the head against another root", {"before": bound(b2), "head": head7}, entries(w3, w5, w7), runmap.EMPTY,
         "FAIL: team-window.json: head: the proof leads to map root %s, the checkpoint-time note signs %s"
         % (root7.hex(), runmap.EMPTY.hex())),
        ("an absence proof with a before", {"before": bound(b2), "head": absent()[1]}, [], absent()[0],
         "FAIL: team-window.json: head: the map shows no entry of team t up to tree size 20, the pack holds 1"),
        ("a head with nothing to match", {"head": head7}, [], root7,
         "FAIL: team-window.json: head: the team's last entry up to tree size 20 is seq 7 with leaf hash %s, the "
         "pack holds no entry and no before" % entries(w7)[0][1].hex()),
        ("another team's head", {"before": bound(b2), "head": dict(head7, key=runmap.team_key(b"u").hex())},
         entries(w3, w5, w7), root7,
         "FAIL: team-window.json: head: key %s is not the team key of team t (%s)"
         % (runmap.team_key(b"u").hex(), runmap.team_key(b"t").hex())),
        ("neither after nor head", {"before": bound(b2)}, entries(w3), None,
         "FAIL: team-window.json: want exactly one of after and head"),
        ("a key of no team window", {"after": bound(a9), "note": 1}, entries(w3), None,
         "FAIL: team-window.json: note: not a field of team-window.json"),
        ("a key given twice", b'{"after":1,"after":2}', [], None,
         "FAIL: team-window.json: key after twice"),
        ("a bound without its proof", {"after": {"seq": 9, "leaf": a9.decode()}}, entries(w3), None,
         "FAIL: team-window.json: after.inclusion: missing"),
        ("a head's count not an integer", {"head": dict(head7, head=dict(head7["head"], count="4"))}, [], root7,
         "FAIL: team-window.json: head.head.count: want a JSON integer"),
        ("a leaf of version 3", {"after": bound(leaf(9, 710, v=3, team_prev=7))}, entries(w7), None,
         "FAIL: team-window.json: after.leaf: not a leaf of version 1 or 2"),
        ("a version 1 leaf with a team_prev", {"after": bound(leaf(9, 710, v=1, team_prev=7))}, entries(w7), None,
         "FAIL: team-window.json: after.leaf: not a leaf of version 1 or 2"),
        ("a bound whose seq is not its leaf's", {"after": dict(bound(a9), seq=10)}, entries(w7), None,
         "FAIL: team-window.json: after.leaf: the leaf's seq is 9, not 10 (after.seq)"),
        ("a bound beyond the tree", {"after": bound(leaf(20, 710, team_prev=7))}, entries(w7), None,
         "FAIL: team-window.json: after.seq: 20 is not below the tree size 20"),
        ("a bound of another team", {"after": bound(leaf(9, 710, team="u"))}, entries(w7), None,
         "FAIL: team-window.json: after: entry 9 is of team u, not the window's team t"),
        ("a bound whose proof fails", {"after": bound(leaf(BAD_PROOF, 710, team_prev=7))}, entries(w7), None,
         "FAIL: team-window.json: after: the inclusion proof of entry 13 does not lead to the checkpoint's root"),
        ("before not below the pack's first entry", {"before": bound(leaf(4, 250, team_prev=1)),
                                                     "after": bound(a9)}, entries(w3, w5, w7), None,
         "FAIL: team-window.json: before: entry 4 is not below the pack's first entry 3"),
        ("after not above the pack's last entry", {"after": bound(leaf(6, 710, team_prev=5))}, entries(w3, w5, w7),
         None, "FAIL: team-window.json: after: entry 6 is not above the pack's last entry 7"),
    ]
    failures = sum(run(*c) for c in cases)
    if failures:
        print("%d of %d cases failed" % (failures, len(cases)))
        return 1
    print("OK: %d team windows checked by export/verify/python/teamwindow.py" % len(cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
