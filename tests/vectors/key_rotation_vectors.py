#!/usr/bin/env python3
"""Writes, or checks byte for byte, tests/vectors/key_rotation.json, made
from the contract's text (section 5d "Key rotation", with sections 1, 2, 5
and 6) with Python's standard library and `cryptography`, not from the
ledger's code.

The file holds:
- `keys`: the old and the new key of origin `example.com/ledger`, from
  fixed seeds (seed hex, verifier key, key ID);
- `entries`: a log of five leaves of version 2: seqs 0 to 2 an emitter's
  tool calls, seq 3 the `key_rotation` entry `ledger.key.1` (the old key to
  the new), seq 4 one more tool call; `root_hex` the root of the five;
- `statement_text` and `statement_note`, the rotation statement and the
  signed note the entry holds;
- `checkpoints`: the checkpoint of size 3 signed by the old key; of size 5
  signed by the new key alone, by the new and then the old (a transition),
  and by the old key alone (a checkpoint no verifier that knows the
  rotation accepts);
- `key_history`: the key history at the checkpoint of size 5, as
  `ledgerctl key-history` writes it;
- `bad_rotations`: rotation leaves at seq 3 that break a rule, each with
  the rule;
- `key_sets`: key set files, each with whether the key history is given,
  whether it is accepted, the ranges then trusted, and which checkpoints
  of `checkpoints` pass.

Usage: key_rotation_vectors.py [--write]
  without --write, recomputes the file and compares it with the stored one;
  exit 0 when it holds, 1 when it differs.
"""
import base64
import hashlib
import json
import os
import struct
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "key_rotation.json")
ORIGIN = "example.com/ledger"
ZERO = "0" * 64


def canonical(obj):
    # Section 2: Python's json.dumps with these arguments gives the bytes.
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Key:
    # Section 5: key ID, verifier key, signature lines.
    def __init__(self, seed):
        self.seed = seed
        self.private = Ed25519PrivateKey.from_private_bytes(seed)
        self.public = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.key_id = hashlib.sha256(ORIGIN.encode() + b"\n\x01" + self.public).digest()[:4]

    def vkey(self):
        return "%s+%s+%s" % (ORIGIN, self.key_id.hex(), base64.b64encode(b"\x01" + self.public).decode())

    def line(self, text):
        sig = self.private.sign(text.encode())
        return "\u2014 %s %s\n" % (ORIGIN, base64.b64encode(self.key_id + sig).decode())


def sign(text, *keys):
    return text + "\n" + "".join(k.line(text) for k in keys)


def leaf_hash(leaf):
    return hashlib.sha256(b"\x00" + leaf.encode()).digest()


def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(n):
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def root(hashes):
    # RFC 9162 section 2.1.1.
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = split(len(hashes))
    return node(root(hashes[:k]), root(hashes[k:]))


def inclusion(index, hashes):
    # RFC 9162 section 2.1.3.1: the audit path, leaf upwards.
    if len(hashes) <= 1:
        return []
    k = split(len(hashes))
    if index < k:
        return inclusion(index, hashes[:k]) + [root(hashes[k:])]
    return inclusion(index - k, hashes[k:]) + [root(hashes[:k])]


def statement(seq, old, new):
    return "evidence-ledger/key-rotation/v1\n%s\nseq %d\nold %s\nnew %s\n" % (ORIGIN, seq, old, new)


def checkpoint_text(size, r):
    return "%s\n%d\n%s\n" % (ORIGIN, size, base64.b64encode(r).decode())


def build():
    old = Key(bytes(range(32)))
    new = Key(bytes(range(32, 64)))
    entries, hashes = [], []
    run_heads, team_heads = {}, {}

    def entry_of(emitter, receipt, seq):
        entry = {"v": 2, "seq": seq, "prev": hashes[seq - 1].hex() if seq else ZERO,
                 "logged_at_us": 1767225600000000 + seq, "emitter": emitter, "receipt": receipt}
        run = (receipt["team"], receipt["run_id"])
        if run in run_heads:
            entry["run_prev"] = run_heads[run]
        if receipt["team"] in team_heads:
            entry["team_prev"] = team_heads[receipt["team"]]
        return entry

    def add(emitter, receipt):
        seq = len(entries)
        entry = entry_of(emitter, receipt, seq)
        run_heads[(receipt["team"], receipt["run_id"])] = seq
        team_heads[receipt["team"]] = seq
        leaf = canonical(entry)
        entries.append({"entry": entry, "leaf_bytes_utf8": leaf, "leaf_hash_hex": leaf_hash(leaf).hex()})
        hashes.append(leaf_hash(leaf))

    def tool_call(i):
        add("uri:spiffe://example/gateway", {
            "receipt_id": "call-%d" % i, "kind": "tool_call", "team": "team-a", "run_id": "run-1",
            "tool": "git", "decision": "allow", "occurred_at_us": 1767225599000000 + i, "attempt": 1})

    def rotation(seq, note, old_key, new_key, receipt_id="ledger.key.1"):
        return {"receipt_id": receipt_id, "kind": "key_rotation", "team": "ledger", "run_id": "ledger.keys",
                "attempt": 1, "occurred_at_us": 1767225600500000, "old_key": old_key, "new_key": new_key,
                "note": note}

    for i in range(3):
        tool_call(i)
    seq = len(entries)
    text = statement(seq, old.vkey(), new.vkey())
    note = sign(text, old, new)
    # The bad leaves are built before the good one is added: the chains they
    # extend are those of seq 3.
    third = Key(bytes(range(64, 96)))
    bad = []

    def bad_leaf(rule, receipt):
        bad.append({"rule": rule, "leaf_bytes_utf8": canonical(entry_of("ledger", receipt, seq))})

    bad_leaf("note: its text names seq 4, the entry is seq 3",
             rotation(seq, sign(statement(seq + 1, old.vkey(), new.vkey()), old, new), old.vkey(), new.vkey()))
    bad_leaf("note: its first signature line is the new key's, the old key's comes first",
             rotation(seq, sign(text, new, old), old.vkey(), new.vkey()))
    bad_leaf("note: no signature line by new_key",
             rotation(seq, sign(text, old), old.vkey(), new.vkey()))
    bad_leaf("new_key: a key other than the one the note was signed by",
             rotation(seq, sign(statement(seq, old.vkey(), third.vkey()), old, new), old.vkey(), third.vkey()))
    bad_leaf("new_key: the same key as old_key",
             rotation(seq, sign(statement(seq, old.vkey(), old.vkey()), old, old), old.vkey(), old.vkey()))
    bad_leaf("receipt_id: ledger.key.2 for the log's first rotation",
             rotation(seq, note, old.vkey(), new.vkey(), "ledger.key.2"))
    bad_leaf("emitter: an emitter's key_rotation",
             rotation(seq, note, old.vkey(), new.vkey()))
    bad[-1]["leaf_bytes_utf8"] = canonical(dict(entry_of("uri:spiffe://example/gateway",
                                                         rotation(seq, note, old.vkey(), new.vkey()), seq)))
    add("ledger", rotation(seq, note, old.vkey(), new.vkey()))
    tool_call(3)

    cp3 = checkpoint_text(3, root(hashes[:3]))
    cp5 = checkpoint_text(5, root(hashes))
    checkpoints = {
        "size3_old": sign(cp3, old),
        "size5_new": sign(cp5, new),
        "size5_new_then_old": sign(cp5, new, old),
        "size5_old": sign(cp5, old),
    }
    history = canonical({"checkpoint": checkpoints["size5_new"], "rotations": [
        {"inclusion": [h.hex() for h in inclusion(seq, hashes)], "leaf": entries[seq]["leaf_bytes_utf8"],
         "seq": seq}]})

    def ranges(*rs):
        return [{"key": k.vkey(), "from": f, "until": u} for k, f, u in rs]

    all_pass = {"size3_old": True, "size5_new": True, "size5_new_then_old": True, "size5_old": False}
    key_sets = [
        {"about": "the old key alone, the history given: the rotation is followed",
         "key_set": old.vkey() + "\n", "history": True, "accepted": True,
         "ranges": ranges((old, 0, 3), (new, 4, None)), "checkpoints": all_pass},
        {"about": "the old key alone, no history: the new key is not known",
         "key_set": old.vkey() + "\n", "history": False, "accepted": True,
         "ranges": ranges((old, 0, None)),
         "checkpoints": {"size3_old": True, "size5_new": False, "size5_new_then_old": True, "size5_old": True}},
        {"about": "both keys with their ranges, no history",
         "key_set": "# the ledger's keys\n%s until 3\n\n%s from 4\n" % (old.vkey(), new.vkey()),
         "history": False, "accepted": True, "ranges": ranges((old, 0, 3), (new, 4, None)),
         "checkpoints": all_pass},
        {"about": "the old key compromised as of size 2: its rotation at seq 3 is not followed",
         "key_set": old.vkey() + " until 2\n", "history": True, "accepted": False,
         "error": "the rotation at seq 3: its old key is not trusted at size 3"},
        {"about": "the old key compromised as of size 2 and the new key from the auditor: the history agrees",
         "key_set": "%s until 2\n%s from 4\n" % (old.vkey(), new.vkey()), "history": True, "accepted": False,
         "error": "the rotation at seq 3: its old key is not trusted at size 3"},
        {"about": "the old key compromised as of size 2, the new key from the auditor, no history",
         "key_set": "%s until 2\n%s from 4\n" % (old.vkey(), new.vkey()), "history": False, "accepted": True,
         "ranges": ranges((old, 0, 2), (new, 4, None)),
         "checkpoints": {"size3_old": False, "size5_new": True, "size5_new_then_old": True, "size5_old": False}},
        {"about": "two keys whose ranges overlap",
         "key_set": "%s until 4\n%s from 4\n" % (old.vkey(), new.vkey()), "history": False, "accepted": False,
         "error": "key set: the ranges of two keys overlap at size 4"},
        {"about": "one key twice",
         "key_set": "%s until 3\n%s from 4\n" % (old.vkey(), old.vkey()), "history": False, "accepted": False,
         "error": "key set: a key is listed twice"},
        {"about": "from above until",
         "key_set": "%s from 5 until 4\n" % old.vkey(), "history": False, "accepted": False,
         "error": "key set: from 5 is above until 4"},
    ]
    return {
        "note": "CONTRACT section 5d. leaf_bytes_utf8 is the exact leaf; seq 3 is the key_rotation ledger.key.1 "
                "from keys.old to keys.new. Made by tests/vectors/key_rotation_vectors.py from the contract's "
                "text, not the ledger's code",
        "origin": ORIGIN,
        "keys": {name: {"seed_hex": k.seed.hex(), "vkey": k.vkey(), "key_id_hex": k.key_id.hex()}
                 for name, k in (("old", old), ("new", new))},
        "entries": entries,
        "rotation_seq": seq,
        "root_hex": root(hashes).hex(),
        "statement_text": text,
        "statement_note": note,
        "checkpoints": checkpoints,
        "key_history": history,
        "bad_rotations": bad,
        "key_sets": key_sets,
    }


def main():
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if sys.argv[1:] == ["--write"]:
        with open(PATH, "w") as f:
            f.write(text)
        return 0
    with open(PATH) as f:
        if f.read() != text:
            print("FAIL: key_rotation.json: not what the contract's text gives (rerun with --write and compare)")
            return 1
    print("OK: key_rotation.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
