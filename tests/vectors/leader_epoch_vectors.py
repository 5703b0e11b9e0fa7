#!/usr/bin/env python3
"""Writes, or checks byte for byte, tests/vectors/leader_epoch.json, made
from CONTRACT.md's text (section 2 leaf bytes, section 3 "Leader epochs",
section 1 hashes) with Python's standard library, not from the ledger's code.

The file holds a log of five leaves of version 2: seqs 0 to 2 an emitter's
tool calls under epoch 1's leader, seq 3 the leader_epoch of epoch 2 (its
`previous_size` 3, its `previous_root` the root of leaves 0 to 2), seq 4 one
more tool call. Laid out like leaf_v2.json: `entries` (each `entry`, the
exact `leaf_bytes_utf8`, `leaf_hash_hex`), `root_hex` of the five, and
`epoch_seq`, the seq of the leader_epoch entry.

Usage: leader_epoch_vectors.py [--write]
  without --write, recomputes the file and compares it with the stored one;
  exit 0 when it holds, 1 when it differs.
"""
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "leader_epoch.json")
ZERO = "0" * 64


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


def build():
    entries, hashes = [], []
    run_heads, team_heads = {}, {}

    def add(emitter, receipt):
        seq = len(entries)
        entry = {"v": 2, "seq": seq, "prev": hashes[-1].hex() if hashes else ZERO,
                 "logged_at_us": 1767225600000000 + seq, "emitter": emitter, "receipt": receipt}
        run = (receipt["team"], receipt["run_id"])
        if run in run_heads:
            entry["run_prev"] = run_heads[run]
        if receipt["team"] in team_heads:
            entry["team_prev"] = team_heads[receipt["team"]]
        run_heads[run] = seq
        team_heads[receipt["team"]] = seq
        leaf = canonical(entry)
        entries.append({"entry": entry, "leaf_bytes_utf8": leaf, "leaf_hash_hex": leaf_hash(leaf).hex()})
        hashes.append(leaf_hash(leaf))

    def tool_call(i):
        add("uri:spiffe://example/gateway", {
            "receipt_id": "call-%d" % i, "kind": "tool_call", "team": "team-a", "run_id": "run-1",
            "tool": "git", "decision": "allow", "occurred_at_us": 1767225599000000 + i, "attempt": 1})

    for i in range(3):
        tool_call(i)
    # Section 3, "Leader epochs": node b takes epoch 2 over the tree of size 3.
    epoch_seq = len(entries)
    add("ledger", {
        "receipt_id": "ledger.epoch.2", "kind": "leader_epoch", "team": "ledger", "run_id": "ledger.epochs",
        "attempt": 1, "occurred_at_us": 1767225600500000,
        "epoch": 2, "node": "node-b", "previous_size": epoch_seq, "previous_root": root(hashes).hex()})
    tool_call(3)
    return {
        "note": "leaf_bytes_utf8 is the exact leaf (CONTRACT sections 2 and 3, 'Leader epochs'); seq epoch_seq "
                "is a leader_epoch whose previous_root is the root of the leaves before it. Made by "
                "tests/vectors/leader_epoch_vectors.py from the contract's text, not the ledger's code",
        "entries": entries,
        "epoch_seq": epoch_seq,
        "root_hex": root(hashes).hex(),
    }


def main():
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if sys.argv[1:] == ["--write"]:
        with open(PATH, "w") as f:
            f.write(text)
        return 0
    with open(PATH) as f:
        if f.read() != text:
            print("FAIL: leader_epoch.json: not what the contract's text gives (rerun with --write and compare)")
            return 1
    print("OK: leader_epoch.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
