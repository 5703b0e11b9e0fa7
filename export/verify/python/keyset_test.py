#!/usr/bin/env python3
"""export/verify/python/keyset.py and verify_pack.py's --key-set and
--key-history (CONTRACT.md section 5d, written from its text, not from
the vectors' generator nor the C++) against every case of
tests/vectors/key_rotation.json, then cases of their own made with the
vectors' seeds:

- key_sets: each set accepted with exactly the vector's ranges (after the
  key history when the vector gives it) and each checkpoint of the vectors
  passing or failing as it says, opened with the key trusted at its size;
  each set refused with an error holding the vector's error;
- bad_rotations: each leaf, put at seq 3 of the vectors' log in place of
  the good one, with its own tree, inclusion proof and a checkpoint signed
  by the new key, refused naming the field its rule names (the good leaf
  in the same place followed);
- own key sets: comments and empty lines, each malformed line, names,
  overlaps and ranges, each refusal naming its line;
- own histories: two rotations followed, the old key's until kept, the
  auditor's own key winning over a rotation, and each rule of "Following
  rotations" broken once;
- notes opened at a size: the key trusted there or a refusal naming the
  size and the key;
- verify_pack.py run on packs built here: a pack past the rotation whose
  consistency.json holds a checkpoint signed by the old key, a transition
  pack, a pack signed by the old key after the rotation, a log that never
  rotated (the same lines as with --vkey, and the keys line), and the
  flags' usage errors;
- key_rotation entries in a pack: the genuine one's line, and statements
  forged (signed by the old key alone, of another log, of another seq, the
  vectors' bad rotations) refused as entries.jsonl seq 3: key_rotation.

Usage: keyset_test.py   (exit 0 when every case holds, 1 naming those that do not)
"""
import base64
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import keyset  # noqa: E402
from packerror import Failure  # noqa: E402

VECTORS = os.path.join(HERE, "..", "..", "..", "tests", "vectors", "key_rotation.json")
VERIFY = os.path.join(HERE, "verify_pack.py")
FAILURES = []
CHECKED = [0]


def expect(name, got, want):
    """got must be want; a want starting with '~' need only be within got."""
    CHECKED[0] += 1
    ok = want[1:] in got if isinstance(want, str) and want.startswith("~") and isinstance(got, str) else got == want
    if not ok:
        FAILURES.append("%s:\n  got:  %s\n  want: %s" % (name, got, want))


def refusal(fn):
    """The message of the Failure fn() raises, or "accepted"."""
    try:
        fn()
    except Failure as e:
        return str(e)
    return "accepted"


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Signer:
    """A key of the vectors' origin from a seed (section 5)."""

    def __init__(self, seed, origin):
        self.private = Ed25519PrivateKey.from_private_bytes(seed)
        self.public = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.origin = origin
        self.key_id = hashlib.sha256(origin.encode() + b"\n\x01" + self.public).digest()[:4]
        self.vkey = "%s+%s+%s" % (origin, self.key_id.hex(), base64.b64encode(b"\x01" + self.public).decode())
        self.ident = "%s+%s" % (origin, self.key_id.hex())

    def line(self, text):
        sig = self.private.sign(text.encode())
        return "\u2014 %s %s\n" % (self.origin, base64.b64encode(self.key_id + sig).decode())


def sign(text, *signers):
    return text + "\n" + "".join(s.line(text) for s in signers)


def leaf_hash(leaf):
    return hashlib.sha256(b"\x00" + leaf.encode()).digest()


def node(a, b):
    return hashlib.sha256(b"\x01" + a + b).digest()


def split(n):
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(hashes):
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = split(len(hashes))
    return node(mth(hashes[:k]), mth(hashes[k:]))


def path(index, hashes):
    """RFC 9162 2.1.3.1, leaf upwards."""
    if len(hashes) <= 1:
        return []
    k = split(len(hashes))
    if index < k:
        return path(index, hashes[:k]) + [mth(hashes[k:])]
    return path(index - k, hashes[k:]) + [mth(hashes[:k])]


def consistency(m, hashes, whole=True):
    """RFC 9162 2.1.4.1, SUBPROOF(m, D[n], whole)."""
    n = len(hashes)
    if m == n:
        return [] if whole else [mth(hashes)]
    k = split(n)
    if m <= k:
        return consistency(m, hashes[:k], whole) + [mth(hashes[k:])]
    return consistency(m - k, hashes[k:], False) + [mth(hashes[:k])]


def checkpoint_text(origin, leaves):
    return "%s\n%d\n%s\n" % (origin, len(leaves), base64.b64encode(mth([leaf_hash(x) for x in leaves])).decode())


class Log:
    """The vectors' log, and logs made like it: tool calls and rotations."""

    def __init__(self, v, signers):
        self.v, self.origin, self.s = v, v["origin"], signers
        self.leaves = [e["leaf_bytes_utf8"] for e in v["entries"]]

    def history(self, leaves, rotations, *signers):
        """A key history at the checkpoint of `leaves`, signed by signers,
        listing the leaves at the seqs `rotations`."""
        hashes = [leaf_hash(x) for x in leaves]
        return canonical({"checkpoint": sign(checkpoint_text(self.origin, leaves), *signers), "rotations": [
            {"inclusion": [h.hex() for h in path(s, hashes)], "leaf": leaves[s], "seq": s} for s in rotations]})

    def rotation_leaf(self, seq, prev_leaf, old, new, n=1, receipt=None, entry=None, note=None, run_prev=None):
        """A key_rotation leaf at seq from old to new (Signers), its note
        signed by both; receipt and entry: fields replaced (None removes)."""
        text = keyset.statement(self.origin, seq, old.vkey, new.vkey)
        r = {"receipt_id": "ledger.key.%d" % n, "kind": "key_rotation", "team": "ledger", "run_id": "ledger.keys",
             "attempt": 1, "occurred_at_us": 1767225600500000 + seq, "old_key": old.vkey, "new_key": new.vkey,
             "note": sign(text, old, new) if note is None else note}
        e = {"v": 2, "seq": seq, "prev": leaf_hash(prev_leaf).hex(), "logged_at_us": 1767225600000000 + seq,
             "emitter": "ledger", "receipt": r}
        if run_prev is not None:
            e["run_prev"] = e["team_prev"] = run_prev
        for fields, target in ((receipt or {}, r), (entry or {}, e)):
            for k, val in fields.items():
                if val is None:
                    target.pop(k, None)
                else:
                    target[k] = val
        return canonical(e)

    def tool_call(self, seq, prev_leaf):
        e = {"v": 2, "seq": seq, "prev": leaf_hash(prev_leaf).hex(), "logged_at_us": 1767225600000000 + seq,
             "emitter": "uri:spiffe://example/gateway", "receipt": {
                 "receipt_id": "call-%d" % seq, "kind": "tool_call", "team": "team-a", "run_id": "run-1",
                 "tool": "git", "decision": "allow", "occurred_at_us": 1767225599000000 + seq, "attempt": 1}}
        return canonical(e)


def vector_key_sets(v):
    for ks in v["key_sets"]:
        name = "key_sets: %s" % ks["about"]
        got = {}

        def run():
            s = keyset.parse(ks["key_set"].encode())
            if ks["history"]:
                s = s.follow(v["key_history"].encode())
            got["set"] = s

        message = refusal(run)
        if not ks["accepted"]:
            expect(name, message, "~" + ks["error"])
            continue
        expect(name, message, "accepted")
        if "set" not in got:
            continue
        s = got["set"]
        expect(name + ": ranges", s.as_list(), ks["ranges"])
        for cp, passes in sorted(ks["checkpoints"].items()):
            opened = refusal(lambda: s.checkpoint(v["checkpoints"][cp].encode()))
            expect("%s: checkpoint %s" % (name, cp), opened == "accepted", passes)
            if not passes:
                size = int(v["checkpoints"][cp].split("\n")[1])
                trusted = s.key_at(size)
                expect("%s: checkpoint %s names its size and the key" % (name, cp), opened,
                       "~at size %d" % size)
                if trusted is not None:
                    expect("%s: checkpoint %s names the key trusted" % (name, cp), opened,
                           "~no signature by %s, the key trusted at size %d" % (trusted.ident(), size))


def vector_bad_rotations(v, log):
    old, new = log.s["old"], log.s["new"]
    start = keyset.single(old.vkey)
    good = log.leaves[3]
    cases = [("the good leaf", good, None)] + [(b["rule"], b["leaf_bytes_utf8"], b["rule"].split(":")[0])
                                               for b in v["bad_rotations"]]
    for rule, leaf, field in cases:
        leaves = log.leaves[:3] + [leaf] + log.leaves[4:]
        history = log.history(leaves, [3], new)
        got = refusal(lambda: start.follow(history.encode()))
        if field is None:
            expect("bad_rotations: the control, %s" % rule, got, "accepted")
            continue
        expect("bad_rotations: %s: refused" % rule, got.startswith("key history: the rotation at seq 3: "), True)
        expect("bad_rotations: %s: names the field" % rule, got, "~seq 3: %s: " % field)


def own_key_sets(log):
    old, new, third = log.s["old"], log.s["new"], log.s["third"]
    other = Signer(bytes(range(32)), "example.com/other")

    def ranges(text):
        r = []
        got = refusal(lambda: r.append(keyset.parse(text.encode())))
        return [(x["key"][-6:], x["from"], x["until"]) for x in r[0].as_list()] if r else got

    cases = [
        ("comments and empty lines", "# keys\n\n%s until 3\n#%s\n\n%s from 4\n" % (old.vkey, third.vkey, new.vkey),
         [(old.vkey[-6:], 0, 3), (new.vkey[-6:], 4, None)]),
        ("listed by any order, read by from", "%s from 4\n%s until 3\n" % (new.vkey, old.vkey),
         [(old.vkey[-6:], 0, 3), (new.vkey[-6:], 4, None)]),
        ("from and until of one size", "%s from 3 until 3\n" % old.vkey, [(old.vkey[-6:], 3, 3)]),
        ("a gap between two keys", "%s until 2\n%s from 4\n" % (old.vkey, new.vkey),
         [(old.vkey[-6:], 0, 2), (new.vkey[-6:], 4, None)]),
        ("three keys", "%s until 3\n%s from 4 until 5\n%s from 6\n" % (old.vkey, new.vkey, third.vkey),
         [(old.vkey[-6:], 0, 3), (new.vkey[-6:], 4, 5), (third.vkey[-6:], 6, None)]),
        ("an empty file", "", "key set: no key (a key set lists at least one verifier key)"),
        ("comments only", "# nothing\n\n", "key set: no key (a key set lists at least one verifier key)"),
        ("no newline at the end", "%s\n%s from 4" % (old.vkey, new.vkey),
         "key set: no newline at the end of the last line (line 2)"),
        ("until before from", "%s until 3 from 1\n" % old.vkey,
         "key set: want '<verifier key>[ from <size>][ until <size>]', each word after one space, found "
         "'until 3 from 1' after the key (line 1)"),
        ("two spaces", "# a\n%s  from 4\n" % old.vkey,
         "key set: want '<verifier key>[ from <size>][ until <size>]', each word after one space, found "
         "' from 4' after the key (line 2)"),
        ("a space at the end", "%s \n" % old.vkey,
         "key set: want '<verifier key>[ from <size>][ until <size>]', each word after one space, found "
         "'' after the key (line 1)"),
        ("from without a size", "%s from\n" % old.vkey,
         "key set: want '<verifier key>[ from <size>][ until <size>]', each word after one space, found "
         "'from' after the key (line 1)"),
        ("from twice", "%s from 1 from 2\n" % old.vkey,
         "key set: want '<verifier key>[ from <size>][ until <size>]', each word after one space, found "
         "'from 1 from 2' after the key (line 1)"),
        ("a tab", "%s\tfrom 4\n" % old.vkey, "~(line 1)"),
        ("a CR", "%s\r\n" % old.vkey,
         "key set: verifier key: key: want canonical standard base64 of 0x01 and a 32-byte Ed25519 public key "
         "(line 1)"),
        ("a leading zero", "%s from 04\n" % old.vkey,
         "key set: from: want a decimal number (digits only, no leading zero), found '04' (line 1)"),
        ("a negative size", "%s until -1\n" % old.vkey,
         "key set: until: want a decimal number (digits only, no leading zero), found '-1' (line 1)"),
        ("a size of 2^63", "%s until 9223372036854775808\n" % old.vkey,
         "key set: until: want a decimal number (digits only, no leading zero), found '9223372036854775808' "
         "(line 1)"),
        ("a comment after the key", "%s # old\n" % old.vkey, "~found '# old' after the key (line 1)"),
        ("an indented comment", " # old\n%s\n" % old.vkey,
         "key set: verifier key: want NAME+ID+KEY, found '' (line 1)"),
        ("a line of spaces", "%s until 3\n  \n" % old.vkey,
         "key set: verifier key: want NAME+ID+KEY, found '' (line 2)"),
        ("upper-case key ID", "%s\n" % old.vkey.replace(old.key_id.hex(), old.key_id.hex().upper()),
         "key set: verifier key: key ID: want 8 lower-case hex digits, found '%s' (line 1)"
         % old.key_id.hex().upper()),
        ("the key ID of another key", "%s\n" % old.vkey.replace(old.key_id.hex(), new.key_id.hex()),
         "key set: verifier key: key ID %s is not the ID of the key (%s) (line 1)"
         % (new.key_id.hex(), old.key_id.hex())),
        ("a key of another type", "%s\n" % (old.vkey[:-44] + base64.b64encode(b"\x04" + old.public).decode()),
         "key set: verifier key: key: want canonical standard base64 of 0x01 and a 32-byte Ed25519 public key "
         "(line 1)"),
        ("base64 with stray bits", "%s\n" % (old.vkey[:-2] + chr(ord(old.vkey[-2]) + 1) + "="),
         "key set: verifier key: key: want canonical standard base64 of 0x01 and a 32-byte Ed25519 public key "
         "(line 1)"),
        ("keys of different names", "%s until 3\n%s from 4\n" % (old.vkey, other.vkey),
         "key set: the key's name 'example.com/other' is not 'example.com/ledger', the name of the key of line 1: "
         "every key of a set has the log's origin as its name (line 2)"),
        ("not UTF-8", "%s\n# \xff\n" % old.vkey, "accepted-bytes"),
        ("a key twice, the second line's range overlapping", "%s until 3\n# x\n%s from 2\n" % (old.vkey, old.vkey),
         "key set: a key is listed twice (lines 1 and 3)"),
        ("overlap at the first size of the later", "%s until 9\n%s from 4 until 5\n" % (old.vkey, new.vkey),
         "key set: the ranges of two keys overlap at size 4 (lines 1 and 2)"),
        ("overlap of two unbounded keys", "%s\n%s\n" % (old.vkey, new.vkey),
         "key set: the ranges of two keys overlap at size 0 (lines 1 and 2)"),
        ("overlap with the third line", "%s until 3\n%s from 6\n%s from 4 until 6\n" % (old.vkey, new.vkey,
                                                                                      third.vkey),
         "key set: the ranges of two keys overlap at size 6 (lines 2 and 3)"),
    ]
    for name, text, want in cases:
        if want == "accepted-bytes":
            data = text.encode("latin-1")
            expect("key set: %s" % name, refusal(lambda: keyset.parse(data)), "key set: not UTF-8 (line 2)")
            continue
        expect("key set: %s" % name, ranges(text), want)


def own_histories(v, log):
    old, new, third = log.s["old"], log.s["new"], log.s["third"]
    leaves = list(log.leaves)
    start = keyset.single(old.vkey)

    def follow(history, keys=start):
        got = []
        message = refusal(lambda: got.append(keys.follow(history.encode() if isinstance(history, str) else history)))
        if got:
            return [(x["key"][-6:], x["from"], x["until"]) for x in got[0].as_list()]
        return message

    old6, new6, third6 = old.vkey[-6:], new.vkey[-6:], third.vkey[-6:]
    expect("history: the vectors'", follow(v["key_history"]), [(old6, 0, 3), (new6, 4, None)])
    spaced = json.dumps(json.loads(v["key_history"]), indent=2)
    expect("history: any spacing", follow(spaced), [(old6, 0, 3), (new6, 4, None)])
    h = json.loads(v["key_history"])
    reordered = json.dumps({"rotations": [dict(reversed(list(r.items()))) for r in h["rotations"]],
                            "checkpoint": h["checkpoint"]})
    expect("history: keys in another order", follow(reordered), [(old6, 0, 3), (new6, 4, None)])
    expect("history: the old key's until kept for the new key",
           follow(v["key_history"], keyset.parse(("%s until 10\n" % old.vkey).encode())),
           [(old6, 0, 3), (new6, 4, 10)])
    expect("history: the auditor's own key for the sizes after its old key's until",
           follow(v["key_history"], keyset.parse(("%s until 3\n%s from 4\n" % (old.vkey, new.vkey)).encode())),
           [(old6, 0, 3), (new6, 4, None)])
    expect("history: the auditor's other key wins over the rotation's new key",
           follow(v["key_history"], keyset.parse(("%s until 3\n%s from 4\n" % (old.vkey, third.vkey)).encode())),
           "key history: checkpoint: no signature by %s, the key trusted at size 5 (signed by %s)"
           % (third.ident, new.ident))
    expect("history: a key the verifier was never given",
           follow(v["key_history"], keyset.single(third.vkey)),
           "key history: the rotation at seq 3: its old key is not trusted at size 3 (old_key %s; the key trusted "
           "at size 3 is %s)" % (old.ident, third.ident))
    expect("history: a key trusted from a size above the seq",
           follow(v["key_history"], keyset.parse(("%s from 4\n" % old.vkey).encode())),
           "key history: the rotation at seq 3: its old key is not trusted at size 3 (old_key %s; no key is trusted "
           "at size 3)" % old.ident)
    # No rotation: the checkpoint by the key of its size.
    expect("history: no rotation, the checkpoint by the old key",
           follow(log.history(leaves[:3], [], old)), [(old6, 0, None)])
    expect("history: no rotation, the checkpoint by another key",
           follow(log.history(leaves[:3], [], new)),
           "key history: checkpoint: no signature by %s, the key trusted at size 3 (signed by %s)"
           % (old.ident, new.ident))
    # Two rotations: old to new at 3, new to third at 5.
    two = leaves[:5]
    two.append(log.rotation_leaf(5, two[4], new, third, n=2, run_prev=3))
    two.append(log.tool_call(6, two[5]))
    expect("history: two rotations", follow(log.history(two, [3, 5], third)),
           [(old6, 0, 3), (new6, 4, 5), (third6, 6, None)])
    expect("history: two rotations, the checkpoint by the middle key", follow(log.history(two, [3, 5], new)),
           "key history: checkpoint: no signature by %s, the key trusted at size 7; the line by %s (trusted for "
           "sizes 4 to 5) counts for nothing at size 7" % (third.ident, new.ident))
    expect("history: two rotations, the second listed alone", follow(log.history(two, [5], third)),
           "key history: the rotation at seq 5: receipt_id: 'ledger.key.2', want ledger.key.1 (the rotation's place "
           "in the history, counted from 1)")
    second_as_first = list(two)
    second_as_first[5] = log.rotation_leaf(5, two[4], new, third, n=1, run_prev=3)
    expect("history: two rotations, the second numbered 1", follow(log.history(second_as_first, [3, 5], third)),
           "key history: the rotation at seq 5: receipt_id: 'ledger.key.1', want ledger.key.2 (the rotation's place "
           "in the history, counted from 1)")
    back = list(two)
    back[5] = log.rotation_leaf(5, two[4], old, third, n=2, run_prev=3)
    expect("history: the second rotation from the first's old key", follow(log.history(back, [3, 5], third)),
           "key history: the rotation at seq 5: its old key is not trusted at size 5 (old_key %s; the key trusted "
           "at size 5 is %s)" % (old.ident, new.ident))
    beyond = json.loads(log.history(two[:5], [3], third))
    beyond["rotations"].append(json.loads(log.history(two, [5], third))["rotations"][0])
    expect("history: a rotation beyond the checkpoint", follow(json.dumps(beyond)),
           "key history: the rotation at seq 5: the history's checkpoint is of size 5, not above the rotation's seq")

    def edited(edit):
        h = json.loads(v["key_history"])
        edit(h)
        return json.dumps(h)

    where = "key history: the rotation at seq 3: "
    structural = [
        ("a key of no history", lambda h: h.update(note="x"), "key history: note: not a field"),
        ("no rotations", lambda h: h.pop("rotations"), "key history: rotations: missing"),
        ("rotations not an array", lambda h: h.update(rotations={}), "key history: rotations: want a JSON array"),
        ("checkpoint not a string", lambda h: h.update(checkpoint=5), "key history: checkpoint: want a JSON string"),
        ("a key of no rotation", lambda h: h["rotations"][0].update(size=5),
         "key history: rotations[0]: size: not a field"),
        ("a rotation without its proof", lambda h: h["rotations"][0].pop("inclusion"),
         "key history: rotations[0]: inclusion: missing"),
        ("seq a string", lambda h: h["rotations"][0].update(seq="3"),
         "key history: rotations[0]: seq: want a JSON integer from 0 to 2^63-1"),
        ("seq true", lambda h: h["rotations"][0].update(seq=True),
         "key history: rotations[0]: seq: want a JSON integer from 0 to 2^63-1"),
        ("a rotation twice", lambda h: h["rotations"].append(dict(h["rotations"][0])),
         "key history: rotations[1]: seq 3 is not above the seq 3 of the rotation before (the rotations are listed "
         "by ascending seq)"),
        ("a hash in upper case", lambda h: h["rotations"][0]["inclusion"].__setitem__(
            0, h["rotations"][0]["inclusion"][0].upper()),
         where + "inclusion: want a JSON array of hashes, 64 lower-case hex digits each"),
        ("a hash of the proof altered", lambda h: h["rotations"][0]["inclusion"].__setitem__(0, "00" * 32),
         where + "inclusion: the proof does not lead to the root of the history's checkpoint (size 5)"),
        ("a hash of the proof dropped", lambda h: h["rotations"][0]["inclusion"].pop(),
         where + "inclusion: the proof does not lead to the root of the history's checkpoint (size 5)"),
        ("the leaf at another seq", lambda h: h["rotations"][0].update(seq=2),
         "key history: the rotation at seq 2: leaf: seq: 3, the history says 2"),
        ("the checkpoint by the old key", lambda h: h.update(checkpoint=v["checkpoints"]["size5_old"]),
         "key history: checkpoint: no signature by %s, the key trusted at size 5; the line by %s (trusted for "
         "sizes 0 to 3) counts for nothing at size 5" % (new.ident, old.ident)),
        ("the checkpoint by the new key then the old", lambda h: h.update(
            checkpoint=v["checkpoints"]["size5_new_then_old"]), "accepted"),
        ("the checkpoint of size 3", lambda h: h.update(checkpoint=v["checkpoints"]["size3_old"]),
         where + "the history's checkpoint is of size 3, not above the rotation's seq"),
        ("a checkpoint of another log", lambda h: h.update(checkpoint=h["checkpoint"].replace(
            "example.com/ledger\n", "example.com/other\n", 1)),
         "key history: checkpoint: origin 'example.com/other', the keys' name is 'example.com/ledger'"),
        ("a checkpoint signature altered", lambda h: h.update(checkpoint=h["checkpoint"][:-30] + (
            "A" if h["checkpoint"][-30] != "A" else "B") + h["checkpoint"][-29:]),
         "key history: checkpoint: the signature by %s, the key trusted at size 5, does not verify" % new.ident),
    ]
    for name, edit, want in structural:
        got = follow(edited(edit))
        expect("history: %s" % name, "accepted" if isinstance(got, list) else got, want)
    expect("history: not JSON", follow("{"), "~key history: not JSON")
    expect("history: a key twice", follow('{"checkpoint":"x","checkpoint":"y","rotations":[]}'),
           "key history: key checkpoint twice")
    expect("history: not UTF-8", follow(b'{"checkpoint":"\xff","rotations":[]}'), "key history: not UTF-8")

    # Each rule of a rotation's leaf, the leaf put in the log at seq 3.
    def rotation_case(name, want, **kw):
        leaf = kw.pop("leaf", None) or log.rotation_leaf(3, leaves[2], kw.pop("old", old), kw.pop("new", new), **kw)
        changed = leaves[:3] + [leaf] + leaves[4:]
        got = follow(log.history(changed, [3], new))
        expect("rotation: %s" % name, "accepted" if isinstance(got, list) else got,
               want if want == "accepted" else where + want)

    rotation_case("as the vectors make it", "accepted", leaf=leaves[3])
    rotation_case("made here as the vectors make it", "accepted")
    rotation_case("a leaf of version 1", "accepted", entry={"v": 1})
    flipped = sign(keyset.statement(log.origin, 3, old.vkey, new.vkey), old, new)
    sig_at = flipped.index("\u2014 ") + len("\u2014 ") + len(log.origin) + 1 + 10
    flipped = flipped[:sig_at] + ("A" if flipped[sig_at] != "A" else "B") + flipped[sig_at + 1:]
    third_text = keyset.statement(log.origin, 3, old.vkey, new.vkey)
    rules = [
        ("kind", "kind: 'tool_call', want key_rotation", {"receipt": {"kind": "tool_call"}}),
        ("team", "team: 'team-a', want ledger", {"receipt": {"team": "team-a"}}),
        ("run", "run_id: 'ledger.epochs', want ledger.keys", {"receipt": {"run_id": "ledger.epochs"}}),
        ("receipt_id 0", "receipt_id: 'ledger.key.0', want ledger.key.1 (the rotation's place in the history, "
         "counted from 1)", {"receipt": {"receipt_id": "ledger.key.0"}}),
        ("receipt_id with a leading zero", "receipt_id: 'ledger.key.01', want ledger.key.1 (the rotation's place in "
         "the history, counted from 1)", {"receipt": {"receipt_id": "ledger.key.01"}}),
        ("a step_id", "step_id: a key_rotation entry has none", {"receipt": {"step_id": "s"}}),
        ("attempt 2", "attempt: want 1", {"receipt": {"attempt": 2}}),
        ("no attempt", "attempt: want 1", {"receipt": {"attempt": None}}),
        ("no occurred_at_us", "occurred_at_us: want the ledger's clock, a non-negative integer",
         {"receipt": {"occurred_at_us": None}}),
        ("no note", "note: want a JSON string", {"receipt": {"note": None}}),
        ("a field of no key_rotation", "workflow: not a field of a key_rotation receipt",
         {"receipt": {"workflow": "w"}}),
        ("a field of no leaf", "leaf: extra: not a field of a leaf", {"entry": {"extra": 1}}),
        ("no prev", "leaf: prev: missing", {"entry": {"prev": None}}),
        ("a team_prev in a leaf of version 1", "leaf: team_prev: a leaf of version 1 has none",
         {"entry": {"v": 1, "team_prev": 2}}),
        ("a leaf of version 3", "leaf: v: want 1 or 2", {"entry": {"v": 3}}),
        ("a null", "leaf.receipt.agent: null: a canonical leaf holds no null, false or float",
         {"leaf": log.rotation_leaf(3, leaves[2], old, new).replace('"attempt":1', '"agent":null,"attempt":1')}),
        ("false", "leaf.receipt.urgent: false: a canonical leaf holds no null, false or float",
         {"receipt": {"urgent": False}}),
        ("a float", "leaf.receipt.attempt: 1.5: a canonical leaf holds no null, false or float",
         {"receipt": {"attempt": 1.5}}),
        ("an integer above 2^53-1", "leaf.logged_at_us: 9007199254740992: a canonical leaf's integers are within "
         "2^53-1", {"entry": {"logged_at_us": 1 << 53}}),
        ("an empty string", "leaf.receipt.workflow: an empty string or object: a canonical leaf omits it",
         {"receipt": {"workflow": ""}}),
        ("old_key not a key", "old_key: not a verifier key: want NAME+ID+KEY, found 'x'",
         {"receipt": {"old_key": "x"}}),
        ("new_key of another name", "new_key: its name 'example.com/other' is not the log's origin "
         "'example.com/ledger'", {"receipt": {"new_key": Signer(bytes(range(32, 64)), "example.com/other").vkey}}),
        ("the statement of another origin", "note: line 2 of its text is 'example.com/other', the statement of seq 3 "
         "from old_key to new_key has 'example.com/ledger'",
         {"receipt": {"note": sign(third_text.replace("example.com/ledger\n", "example.com/other\n", 1), old,
                                   new)}}),
        ("the statement of another header", "note: line 1 of its text is 'evidence-ledger/key-rotation/v2', the "
         "statement of seq 3 from old_key to new_key has 'evidence-ledger/key-rotation/v1'",
         {"receipt": {"note": sign(third_text.replace("/v1\n", "/v2\n", 1), old, new)}}),
        ("the statement with a line more", "note: line 6 of its text is 'extra', the statement of seq 3 from old_key "
         "to new_key has no such line", {"receipt": {"note": sign(third_text + "extra\n", old, new)}}),
        ("the statement without its last line", "note: line 5 of its text is missing, the statement of seq 3 from "
         "old_key to new_key has 'new %s'" % new.vkey,
         {"receipt": {"note": sign(third_text[:third_text.index("new ")], old, new)}}),
        ("three signature lines", "note: want exactly two signature lines, old_key's then new_key's, found 3",
         {"receipt": {"note": sign(third_text, old, new, third)}}),
        ("a signature line malformed", "note: signature line 2: malformed",
         {"receipt": {"note": sign(third_text, old) + "\u2014 example.com/ledger x\n"}}),
        ("the old key's signature altered", "note: signature line 1, by old_key %s, does not verify" % old.ident,
         {"receipt": {"note": flipped}}),
        ("the note without its final newline", "note: the note does not end in a newline",
         {"receipt": {"note": sign(third_text, old, new)[:-1]}}),
        ("the leaf not canonical", "leaf: not canonical JSON (section 2)", {"leaf": log.rotation_leaf(
            3, leaves[2], old, new).replace('{"emitter"', '{ "emitter"')}),
    ]
    for name, want, kw in rules:
        rotation_case(name, want, **kw)


def opened_at_size(v, log):
    old, new = log.s["old"], log.s["new"]
    both = keyset.parse(("%s until 3\n%s from 4\n" % (old.vkey, new.vkey)).encode())
    cp5 = "\n".join(v["checkpoints"]["size5_new"].split("\n")[:3]) + "\n"
    twice = sign(cp5, new, new)
    expect("open: signed twice by the key trusted", refusal(lambda: both.checkpoint(twice.encode())),
           "signed twice by the ledger's key (%s, the key trusted at size 5)" % new.ident)
    expect("open: the manifest's note at size 5 by the old key",
           refusal(lambda: both.open(sign("0" * 64 + "\n", old).encode(), 5)),
           "no signature by %s, the key trusted at size 5; the line by %s (trusted for sizes 0 to 3) counts for "
           "nothing at size 5" % (new.ident, old.ident))
    expect("open: the same note at size 3", both.open(sign("0" * 64 + "\n", old).encode(), 3), "0" * 64 + "\n")
    expect("open: a note by an unknown key",
           refusal(lambda: both.open(sign("x\n", log.s["third"]).encode(), 9)),
           "no signature by %s, the key trusted at size 9 (signed by %s)" % (new.ident, log.s["third"].ident))
    expect("open: a malformed signature line", refusal(lambda: both.open(b"x\n\n\xe2\x80\x94 a b\n", 9)),
           "signature line 1: malformed")
    expect("open: key_at between ranges", keyset.parse(("%s until 2\n%s from 4\n" % (old.vkey, new.vkey)).encode())
           .key_at(3), None)
    expect("open: single trusts every size", keyset.single(old.vkey).key_at((1 << 63) - 1).ident(), old.ident)


# -- verify_pack.py on packs made here ----------------------------------------------------------------------------

def tar_gz(files):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo("evidence/" + name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[name]))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as z:
        z.write(raw.getvalue())
    return out.getvalue()


def make_pack(log, leaves, signer, vkey_line, time_signers=None, manifest_signers=None, old_size=None,
              old_signers=None):
    """A pack of format 5, the seq range of every leaf, against the
    checkpoint of `leaves` signed by signer (a tuple of Signers); with
    old_size, consistency.json from the checkpoint of the first old_size
    leaves signed by old_signers."""
    hashes = [leaf_hash(x) for x in leaves]
    size, root = len(leaves), mth(hashes)
    cp_text = checkpoint_text(log.origin, leaves)
    b64 = base64.b64encode(root).decode()
    time_text = "evidence-ledger/checkpoint-time/v4\n%s\n%d\n%s\nruns %s\nteams %s\ntime %d\n" % (
        log.origin, size, b64, b64, b64, 1767225601000000)
    files = {
        "checkpoint": sign(cp_text, *signer).encode(),
        "checkpoint-time": sign(time_text, *(time_signers or signer)).encode(),
        "ledger.vkey": (vkey_line + "\n").encode(),
        "entries.jsonl": "".join(x + "\n" for x in leaves).encode(),
        "proofs.jsonl": "".join(canonical({"seq": i, "leaf_hash": hashes[i].hex(),
                                           "inclusion": [h.hex() for h in path(i, hashes)]}) + "\n"
                                for i in range(size)).encode(),
        "outcomes.json": b"{}\n",
        "report.html": b"<!doctype html>\n",
    }
    if old_size is not None:
        old_cp = sign(checkpoint_text(log.origin, leaves[:old_size]), *old_signers)
        files["consistency.json"] = canonical({"old_checkpoint": old_cp, "proof": [
            h.hex() for h in consistency(old_size, hashes)]}).encode()
    manifest = {"counts": {"entries": size}, "files": {n: hashlib.sha256(d).hexdigest() for n, d in files.items()},
                "format": 5, "origin": log.origin, "root": root.hex(),
                "scope": {"from_seq": 0, "kind": "seq", "to_seq": size}, "tree_size": size, "unknown_grace_ms": 0}
    files["manifest.json"] = (canonical(manifest) + "\n").encode()
    files["manifest.sig"] = sign(hashlib.sha256(files["manifest.json"]).hexdigest() + "\n",
                                 *(manifest_signers or signer)).encode()
    return tar_gz(files)


def run_verify(args):
    r = subprocess.run([sys.executable, VERIFY] + args + ["--no-progress"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def pack_cases(v, log):
    old, new = log.s["old"], log.s["new"]
    leaves = log.leaves
    with tempfile.TemporaryDirectory() as d:
        def write(name, data):
            p = os.path.join(d, name)
            with open(p, "wb" if isinstance(data, bytes) else "w") as f:
                f.write(data)
            return p

        rotated = write("rotated.tar.gz", make_pack(log, leaves, (new,), new.vkey, old_size=3, old_signers=(old,)))
        transition = write("transition.tar.gz", make_pack(log, leaves, (new, old), new.vkey, old_size=3,
                                                          old_signers=(old,)))
        by_old = write("by_old.tar.gz", make_pack(log, leaves, (old,), old.vkey))
        checkpoint_by_old = write("checkpoint_by_old.tar.gz", make_pack(log, leaves, (old,), new.vkey,
                                                                        time_signers=(new,), manifest_signers=(new,)))
        time_by_old = write("time_by_old.tar.gz", make_pack(log, leaves, (new,), new.vkey, time_signers=(old,)))
        consistency_by_new = write("consistency_by_new.tar.gz", make_pack(log, leaves, (new,), new.vkey, old_size=3,
                                                                          old_signers=(new,)))
        never = write("never.tar.gz", make_pack(log, leaves[:3], (old,), old.vkey))
        history = write("history.json", v["key_history"])
        both = write("both.keys", "%s until 3\n%s from 4\n" % (old.vkey, new.vkey))
        old_only = write("old.keys", "%s\n" % old.vkey)
        compromised = write("compromised.keys", "%s until 2\n%s from 4\n" % (old.vkey, new.vkey))
        overlap = write("overlap.keys", "%s until 4\n%s from 4\n" % (old.vkey, new.vkey))
        old_vkey = write("old.vkey", old.vkey + "\n")
        since3 = write("since3", v["checkpoints"]["size3_old"])

        ok = ("OK: 5 entries of {\"from_seq\":0,\"kind\":\"seq\",\"to_seq\":5} verified against the checkpoint of "
              "example.com/ledger at tree size 5, root %s, signed at 2026-01-01T00:00:01.000000Z (1767225601000000 "
              "us)." % v["root_hex"])
        consistent = ("The checkpoint is consistent with the earlier one at size 3, root %s."
                      % leaf_hash_root(leaves[:3]))
        keys_rotated = ("keys: the pack's notes checked against %s, the key trusted at tree size 5; the key set "
                        "trusts %s for sizes 0 to 3, %s for sizes from 4%s.")
        # The vectors' log holds its rotation at seq 3: every pack of it says so.
        moved = ("key rotation at seq 3: the log's key moved from %s to %s (a statement both keys signed)."
                 % (old.vkey, new.vkey))
        cases = [
            ("rotated, --vkey old and the history", [rotated, "--vkey", old_vkey, "--key-history", history],
             0, "\n".join([ok, consistent, moved, keys_rotated % (
                 new.ident, old.ident, new.ident, " (the key history's rotation at seq 3 followed)")])),
            ("rotated, --key-set of both", [rotated, "--key-set", both],
             0, "\n".join([ok, consistent, moved, keys_rotated % (new.ident, old.ident, new.ident, "")])),
            ("rotated, --key-set old and the history, --since the size 3 checkpoint",
             [rotated, "--key-set", old_only, "--key-history", history, "--since", since3], 0,
             "\n".join([ok, consistent[:-1] + " (the one given with --since).", moved,
                        keys_rotated % (new.ident, old.ident, new.ident,
                                        " (the key history's rotation at seq 3 followed)")])),
            ("rotated, --vkey-string new alone: the old checkpoint of consistency.json by the old key",
             [rotated, "--vkey-string", new.vkey], 1,
             "FAILED: consistency.json: old_checkpoint: no signature by example.com/ledger"),
            ("rotated, --key-set old alone: the pack's notes by a key not trusted at size 5",
             [rotated, "--key-set", old_only], 1,
             "FAILED: manifest.sig: no signature by %s, the key trusted at size 5 (signed by %s)"
             % (old.ident, new.ident)),
            ("rotated, the old key compromised as of size 2: no key at size 3",
             [rotated, "--key-set", compromised], 1,
             "FAILED: consistency.json: old_checkpoint: no key of the key set is trusted at size 3 (the set trusts "
             "%s for sizes 0 to 2, %s for sizes from 4)" % (old.ident, new.ident)),
            ("rotated, the old key compromised as of size 2 and the history", [rotated, "--key-set", compromised,
                                                                               "--key-history", history], 2,
             "verify_pack.py: --key-history %s: key history: the rotation at seq 3: its old key is not trusted at "
             "size 3 (old_key %s; no key is trusted at size 3)" % (history, old.ident)),
            ("transition, --key-set of both", [transition, "--key-set", both],
             0, "\n".join([ok, consistent, moved, keys_rotated % (new.ident, old.ident, new.ident, "")])),
            ("by the old key after the rotation, --key-set of both", [by_old, "--key-set", both], 1,
             "FAILED: manifest.sig: no signature by %s, the key trusted at size 5; the line by %s (trusted for sizes "
             "0 to 3) counts for nothing at size 5" % (new.ident, old.ident)),
            ("by the old key after the rotation, --vkey old: as before", [by_old, "--vkey", old_vkey], 0,
             "\n".join([ok, moved])),
            ("checkpoint by the old key, --key-set of both", [checkpoint_by_old, "--key-set", both], 1,
             "FAILED: checkpoint: no signature by %s, the key trusted at size 5; the line by %s (trusted for "
             "sizes 0 to 3) counts for nothing at size 5" % (new.ident, old.ident)),
            ("time note by the old key, --key-set of both", [time_by_old, "--key-set", both], 1,
             "FAILED: checkpoint-time: no signature by %s, the key trusted at size 5; the line by %s (trusted for "
             "sizes 0 to 3) counts for nothing at size 5" % (new.ident, old.ident)),
            ("consistency.json's old checkpoint by the new key, --key-set of both",
             [consistency_by_new, "--key-set", both], 1,
             "FAILED: consistency.json: old_checkpoint: no signature by %s, the key trusted at size 3; the line by %s "
             "(trusted for sizes from 4) counts for nothing at size 3" % (old.ident, new.ident)),
            ("ledger.vkey not the key of the pack's size", [transition, "--key-set", write(
                "old_until_5.keys", "%s until 5\n%s from 6\n" % (old.vkey, new.vkey))], 1,
             "FAILED: ledger.vkey: not %s, the key trusted at the pack's tree size 5" % old.ident),
            ("--since by the new key at size 3", [rotated, "--key-set", both, "--since", write(
                "since3new", sign(checkpoint_text(log.origin, leaves[:3]), new))], 2,
             "verify_pack.py: --since: no signature by %s, the key trusted at size 3; the line by %s (trusted for "
             "sizes from 4) counts for nothing at size 3" % (old.ident, new.ident)),
            ("--not-older-than by the old key at size 5", [rotated, "--key-set", both, "--not-older-than", write(
                "nolder5old", v["checkpoints"]["size5_old"])], 2,
             "verify_pack.py: --not-older-than: no signature by %s, the key trusted at size 5; the line by %s "
             "(trusted for sizes 0 to 3) counts for nothing at size 5" % (new.ident, old.ident)),
            ("never rotated, --vkey old", [never, "--vkey", old_vkey], 0, None),
            ("--key-set with --vkey", [rotated, "--key-set", both, "--vkey", old_vkey], 2,
             "verify_pack.py: verify: give one of --key-set, --vkey"),
            ("--key-set with --trust-pack-key", [rotated, "--key-set", both, "--trust-pack-key"], 2,
             "verify_pack.py: verify: --trust-pack-key with --key-set: the keys trusted are the auditor's, not the "
             "pack's"),
            ("--key-history alone", [rotated, "--key-history", history], 2,
             "verify_pack.py: verify: --key-history needs the key the history starts from: --vkey FILE, "
             "--vkey-string S or --key-set FILE"),
            ("--key-history with --trust-pack-key", [rotated, "--key-history", history, "--trust-pack-key"], 2,
             "verify_pack.py: verify: --trust-pack-key with --key-history: the keys trusted are the auditor's, not "
             "the pack's"),
            ("--key-set refused", [rotated, "--key-set", overlap], 2,
             "verify_pack.py: --key-set %s: key set: the ranges of two keys overlap at size 4 (lines 1 and 2)"
             % overlap),
            ("--key-set unreadable", [rotated, "--key-set", os.path.join(d, "none")], 2,
             "verify_pack.py: --key-set: cannot read %s" % os.path.join(d, "none")),
        ]
        outputs = {}
        for name, args, code, want in cases:
            got_code, out, err = run_verify(args)
            outputs[name] = out
            text = (out + err).strip()
            expect("verify_pack.py: %s: exit code" % name, got_code, code)
            if want is not None:
                expect("verify_pack.py: %s: output" % name, text, want if code == 0 else "~" + want)
        # A log that never rotated: with a key set, the lines of --vkey and the keys line after them.
        got_code, out, _ = run_verify([never, "--key-set", old_only])
        expect("verify_pack.py: never rotated, --key-set old: exit code", got_code, 0)
        expect("verify_pack.py: never rotated, --key-set old: the lines of --vkey, then the keys line", out,
               outputs["never rotated, --vkey old"] + "keys: the pack's notes checked against %s, the key trusted at "
               "tree size 3; the key set trusts %s for every size.\n" % (old.ident, old.ident))
        expect("verify_pack.py: never rotated, --vkey old: an OK line", outputs["never rotated, --vkey old"],
               "~OK: 3 entries of")


def pack_rotation_entries(v, log):
    """verify_pack.py on packs of the vectors' seqs 0 to 3 whose seq 3 is a
    key_rotation entry (section 5d, "What a pack's entries say of a
    rotation"): the genuine one adds its line; a statement signed by the
    old key alone, one of another origin, and each bad rotation of the
    vectors whose rule is the statement's or the emitter's are refused as
    entries.jsonl seq 3: key_rotation."""
    old, new, third = log.s["old"], log.s["new"], log.s["third"]
    text = keyset.statement(log.origin, 3, old.vkey, new.vkey)
    ok = ("OK: 4 entries of {\"from_seq\":0,\"kind\":\"seq\",\"to_seq\":4} verified against the checkpoint of "
          "example.com/ledger at tree size 4, root %s, signed at 2026-01-01T00:00:01.000000Z (1767225601000000 us)."
          % leaf_hash_root(log.leaves[:4]))
    refused = "FAILED: entries.jsonl seq 3: key_rotation: "
    cases = [
        ("the genuine rotation", log.leaves[3], 0, ok + "\nkey rotation at seq 3: the log's key moved from %s to %s "
         "(a statement both keys signed)." % (old.vkey, new.vkey)),
        ("the statement signed by the old key alone", log.rotation_leaf(3, log.leaves[2], old, new,
                                                                         note=sign(text, old)), 1,
         refused + "note: want exactly two signature lines, old_key's then new_key's, found 1"),
        ("the statement signed by the old key, then by a third key as the new", log.rotation_leaf(
            3, log.leaves[2], old, new, note=sign(text, old, third)), 1,
         refused + "new_key: %s did not sign the statement: its signature line 2 is by %s" % (new.ident, third.ident)),
        ("the statement of another log", log.rotation_leaf(3, log.leaves[2], old, new, note=sign(
            text.replace(log.origin + "\n", "example.com/other\n", 1), old, new)), 1,
         refused + "note: line 2 of its text is 'example.com/other', the statement of seq 3 from old_key to new_key "
         "has 'example.com/ledger'"),
        ("the statement of seq 2", log.rotation_leaf(3, log.leaves[2], old, new, note=sign(
            keyset.statement(log.origin, 2, old.vkey, new.vkey), old, new)), 1,
         refused + "note: line 3 of its text is 'seq 2', the statement of seq 3 from old_key to new_key has 'seq 3'"),
    ]
    for b in v["bad_rotations"]:
        field = b["rule"].split(":")[0]
        if field in ("note", "new_key", "emitter"):  # the receipt_id's number is a key history's to check
            cases.append(("bad rotation: %s" % b["rule"], b["leaf_bytes_utf8"], 1, "~" + refused + field))
    with tempfile.TemporaryDirectory() as d:
        for name, leaf, code, want in cases:
            pack = os.path.join(d, "pack.tar.gz")
            with open(pack, "wb") as f:
                f.write(make_pack(log, log.leaves[:3] + [leaf], (new,), new.vkey))
            got_code, out, err = run_verify([pack, "--vkey-string", new.vkey])
            expect("key_rotation entry: %s: exit code" % name, got_code, code)
            expect("key_rotation entry: %s: output" % name, (out + err).strip(), want)


def leaf_hash_root(leaves):
    return mth([leaf_hash(x) for x in leaves]).hex()


def main():
    with open(VECTORS) as f:
        v = json.load(f)
    signers = {"old": Signer(bytes.fromhex(v["keys"]["old"]["seed_hex"]), v["origin"]),
               "new": Signer(bytes.fromhex(v["keys"]["new"]["seed_hex"]), v["origin"]),
               "third": Signer(bytes(range(64, 96)), v["origin"])}
    for name in ("old", "new"):
        expect("keys: %s: verifier key" % name, signers[name].vkey, v["keys"][name]["vkey"])
        expect("keys: %s: read by keyset.parse_key" % name, keyset.parse_key(v["keys"][name]["vkey"]).key_id.hex(),
               v["keys"][name]["key_id_hex"])
    log = Log(v, signers)
    expect("statement: the vectors' text", keyset.statement(v["origin"], v["rotation_seq"], v["keys"]["old"]["vkey"],
                                                            v["keys"]["new"]["vkey"]), v["statement_text"])
    expect("log: the vectors' root", leaf_hash_root(log.leaves), v["root_hex"])
    vector_key_sets(v)
    vector_bad_rotations(v, log)
    own_key_sets(log)
    own_histories(v, log)
    opened_at_size(v, log)
    pack_cases(v, log)
    pack_rotation_entries(v, log)
    for failure in FAILURES:
        print("FAIL: %s" % failure)
    if FAILURES:
        print("%d of %d checks failed" % (len(FAILURES), CHECKED[0]))
        return 1
    print("OK: all %d checks of key_rotation.json and keyset.py's own cases, and verify_pack.py's --key-set and "
          "--key-history on packs made here" % CHECKED[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
