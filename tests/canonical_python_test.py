"""Canonical JSON interop: every leaf the ledger's encoder writes equals
Python's json.dumps(obj, sort_keys=True, separators=(",", ":"),
ensure_ascii=False) of the parsed leaf, byte for byte, and its leaf hash is
SHA-256(0x00 || leaf) as hashlib computes it.

Usage: canonical_python_test.py CORPUS_BINARY
"""
import hashlib
import json
import subprocess
import sys


def main():
    corpus = sys.argv[1]
    out = subprocess.run([corpus, "3000", "20261129"], check=True, capture_output=True).stdout
    lines = out.split(b"\n")
    assert lines[-1] == b"", "corpus must end with a newline"
    kinds = set()
    checked = 0
    for line in lines[:-1]:
        leaf, leaf_hash = line.split(b"\t")
        assert b"\n" not in leaf
        obj = json.loads(leaf.decode("utf-8"))
        again = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        if again != leaf:
            print("MISMATCH\nledger: %r\npython: %r" % (leaf, again))
            return 1
        digest = hashlib.sha256(b"\x00" + leaf).hexdigest()
        if digest.encode() != leaf_hash:
            print("leaf hash mismatch at seq %d: %s != %s" % (obj["seq"], digest, leaf_hash))
            return 1
        kinds.add(obj["receipt"]["kind"])
        checked += 1
    expected = {"agent_start", "agent_exec", "model_call", "tool_call", "step_unknown"}
    if kinds != expected:
        print("corpus lacks kinds: %s" % (expected - kinds))
        return 1
    # The check can fail: a leaf with an escaped slash is valid JSON that
    # Python would write differently.
    bad = leaf.replace(b'"seq"', b'"s\\/eq"', 1)
    redone = json.dumps(json.loads(bad), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert redone != bad
    print("%d passed, 0 failed: leaves identical to Python's json.dumps across %d kinds" % (checked, len(kinds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
