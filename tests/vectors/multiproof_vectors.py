#!/usr/bin/env python3
"""Writes tests/vectors/multiproof.json: multiproofs (CONTRACT section 6,
"Multiproofs", docs/contract/proofs-and-maps.md) of sets of seqs in trees of
several sizes, with the root they lead to, the RFC 9162 inclusion proofs of
some of their seqs derived from them, and broken lists with the refusal each must get.

Leaves: the RFC 6962 test leaves of merkle.json for trees of up to 8 leaves;
for the larger trees, leaf i is the ASCII bytes of "leaf i".

Usage: multiproof_vectors.py            writes multiproof.json beside itself
       multiproof_vectors.py --check    exits 1 when the file differs
"""
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def leaf_hash(data):
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(n):
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(d, lo, hi):
    if hi - lo == 1:
        return d[lo]
    k = split(hi - lo)
    return node_hash(mth(d, lo, lo + k), mth(d, lo + k, hi))


def nodes(d, s, lo, hi, out):
    if not any(lo <= x < hi for x in s):
        out.append(mth(d, lo, hi))
        return
    if hi - lo == 1:
        return
    k = split(hi - lo)
    nodes(d, s, lo, lo + k, out)
    nodes(d, s, lo + k, hi, out)


def audit_path(d, i, lo, hi):
    """RFC 9162 inclusion proof of i in d[lo:hi], leaf to root."""
    if hi - lo == 1:
        return []
    k = split(hi - lo)
    if i < lo + k:
        return audit_path(d, i, lo, lo + k) + [mth(d, lo + k, hi)]
    return audit_path(d, i, lo + k, hi) + [mth(d, lo, lo + k)]


def case(leaves, s):
    d = [leaf_hash(x) for x in leaves]
    out = []
    nodes(d, s, 0, len(d), out)
    sample = s if len(s) <= 8 else [s[0], s[1], s[len(s) // 2], s[-2], s[-1]]
    return {
        "tree_size": len(d),
        "seqs": s,
        "nodes": [h.hex() for h in out],
        "root": mth(d, 0, len(d)).hex(),
        "inclusion": {str(i): [h.hex() for h in audit_path(d, i, 0, len(d))] for i in sorted(set(sample))},
    }


def main():
    rfc = [bytes.fromhex(x) for x in json.load(open(os.path.join(HERE, "merkle.json")))["leaves_hex"]]
    sets = []
    for n in range(1, 9):
        for s in ([], [0], [n - 1], list(range(n)), list(range(n // 3, n - n // 3)), list(range(0, n, 2))):
            if s and s in [c[1] for c in sets if c[0] == n]:
                continue
            sets.append((n, sorted(set(s))))
    big = [f"leaf {i}".encode() for i in range(1000)]
    for n, s in ((37, [5]), (37, [36]), (37, [0, 36]), (37, list(range(9, 30))), (37, [1, 2, 3, 17, 31, 32, 33]),
                 (37, list(range(0, 37, 3))), (1000, list(range(100, 900))), (1000, [0, 511, 512, 999]),
                 (1000, list(range(3, 1000, 7)))):
        sets.append((n, s))
    cases = []
    for n, s in sets:
        cases.append(dict(case(rfc[:n] if n <= 8 else big[:n], s), leaves="merkle.json" if n <= 8 else "leaf i"))

    # Broken lists of the case (37, [1, 2, 3, 17, 31, 32, 33]): what a
    # verifier must say of each.
    base = next(c for c in cases if c["tree_size"] == 37 and c["seqs"] == [1, 2, 3, 17, 31, 32, 33])
    good = base["nodes"]
    moved = list(good)
    moved[1], moved[2] = moved[2], moved[1]
    altered = list(good)
    altered[3] = hashlib.sha256(b"altered").hexdigest()
    broken = [
        {"why": "a hash removed", "nodes": good[:-1], "refusal": "ends early"},
        {"why": "a hash added", "nodes": good + [good[0]], "refusal": "left over"},
        {"why": "two hashes swapped", "nodes": moved, "refusal": "root"},
        {"why": "a hash altered", "nodes": altered, "refusal": "root"},
        {"why": "seq 17 left out of the entries", "nodes": good, "seqs": [1, 2, 3, 31, 32, 33], "refusal": "root"},
        {"why": "seq 18 in place of 17", "nodes": good, "seqs": [1, 2, 3, 18, 31, 32, 33], "refusal": "root"},
    ]
    doc = {
        "about": "CONTRACT section 6, Multiproofs: leaves are merkle.json's leaves_hex for tree sizes up to 8, "
                 "else leaf i is the ASCII bytes of \"leaf i\"; nodes are NODES(0, tree_size) of seqs; inclusion "
                 "is the RFC 9162 proof of each seq (of up to 5 seqs of a case), leaf to root. broken: lists (and seqs) of the case tree_size 37, "
                 "seqs [1, 2, 3, 17, 31, 32, 33] that a verifier refuses: 'ends early' (the list is used up), "
                 "'left over' (hashes remain), 'root' (another root).",
        "cases": cases,
        "broken": broken,
    }
    text = json.dumps(doc, indent=1) + "\n"
    path = os.path.join(HERE, "multiproof.json")
    if "--check" in sys.argv:
        if open(path).read() != text:
            print("multiproof.json differs from what multiproof_vectors.py writes", file=sys.stderr)
            return 1
        return 0
    open(path, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
