#!/usr/bin/env python3
"""How many hashes each way of proving a pack's inclusion takes, for the
seq sets packs hold (CONTRACT section 6, "Multiproofs"; section 7):

  paths      a full RFC 9162 path per entry (proofs.jsonl, formats 1-5)
  cut paths  each entry's path cut where it meets the previous entry's
             (the hashes below the level where the two leaves' paths join)
  multiproof NODES(0, N) of the pack's seqs (multiproof.txt, format 6)
  tiles      the C2SP hash tiles (256 hashes wide, height 8) that hold the
             pack's leaves and the path above them: what a pack carrying
             tiles would carry (the leaf tiles alone, partial at the edge)

and how many SHA-256 node hashes a verifier computes for each (leaf hashes
aside, the same for all): paths verified one by one, paths verified with
the last one's shared top skipped (InclusionVerifier), the multiproof's
walk (one per internal node it climbs).

Usage: bench/multiproof_sizes.py [ENTRIES]   (default 1,000,000)
Prints one JSON line per scenario.
"""
import json
import sys


def split(n):
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def multiproof(seqs, n):
    """(hashes in NODES(0, n), node hashes ROOT computes) for sorted seqs."""
    hashes = internal = 0
    stack = [(0, n, 0, len(seqs))]  # range and the seqs [a, b) inside it
    while stack:
        lo, hi, a, b = stack.pop()
        if a == b:
            hashes += 1
        elif hi - lo > 1:
            internal += 1
            k = lo + split(hi - lo)
            m = a
            while m < b and seqs[m] < k:  # seqs are few per range near the leaves
                m += 1
            if m - a > 64:  # binary search for big ranges
                lo_i, hi_i = a, b
                while lo_i < hi_i:
                    mid = (lo_i + hi_i) // 2
                    if seqs[mid] < k:
                        lo_i = mid + 1
                    else:
                        hi_i = mid
                m = lo_i
            stack.append((k, hi, m, b))
            stack.append((lo, k, a, m))
    return hashes, internal


def path_len(i, n):
    """Hashes in the RFC 9162 path of leaf i in a tree of n."""
    length, lo, hi = 0, 0, n
    while hi - lo > 1:
        k = lo + split(hi - lo)
        length += 1
        if i < k:
            hi = k
        else:
            lo = k
    return length


def join_depth(i, j, n):
    """Levels of the path of j below the subtree where i's and j's paths join."""
    lo, hi, depth = 0, n, 0
    while hi - lo > 1:
        k = lo + split(hi - lo)
        if (i < k) != (j < k):
            break
        depth += 1
        if j < k:
            hi = k
        else:
            lo = k
    return path_len(j, n) - depth


def tiles(seqs, n):
    """Hashes of the level-0 tiles holding the seqs, and of the tiles above
    them on the way to the root (each 256 wide, the last partial)."""
    total, level_n, level_idx = 0, n, sorted({s // 256 for s in seqs})
    while True:
        for t in level_idx:
            total += min(256, level_n - t * 256)
        level_n //= 256
        if level_n == 0:
            break
        level_idx = sorted({t // 256 for t in level_idx})
    return total


def scenario(name, seqs, n):
    paths = sum(path_len(i, n) for i in seqs)
    cut = sum(join_depth(p, i, n) if k else path_len(i, n) for k, (p, i) in enumerate(zip([0] + seqs, seqs)))
    mp, internal = multiproof(seqs, n)
    return {"scenario": name, "tree_size": n, "entries": len(seqs),
            "hashes": {"paths": paths, "cut_paths": cut, "multiproof": mp, "tiles": tiles(seqs, n)},
            "bytes_hex_lines": {"paths_jsonl": paths * 67 + len(seqs) * 110, "multiproof_txt": mp * 65},
            "node_hashes_to_verify": {"paths": paths, "paths_shared_top_skipped": cut, "multiproof": internal}}


def main():
    e = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
    step = 6  # a step's entries: start, three model calls, a tool call, exec
    out = [
        scenario("run alone in the log (pack_bench)", list(range(e)), e),
        scenario("seq range in the middle of a log of 2x", list(range(e // 2, e // 2 + e)), 2 * e),
        scenario("team window, team alone in its stretch of a log of 3x", list(range(e, 2 * e)), 3 * e),
    ]
    for runs in (2, 10, 100):
        seqs = [i for i in range(e * runs) if (i // step) % runs == 0]
        out.append(scenario("run taking turns with %d others, a step at a time" % (runs - 1), seqs, e * runs))
    for line in out:
        print(json.dumps(line))


if __name__ == "__main__":
    main()
