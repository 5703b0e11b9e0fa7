#!/usr/bin/env python3
"""export/verify/python/multiproof.py and the format 6 check of packproof.py
(CONTRACT.md section 6, "Multiproofs"; section 7, "Shared inclusion proofs
(format 6)"), each case with its exact outcome:

- every case of tests/vectors/multiproof.json leads to its root, every hash
  of its list used, and each seq's derived inclusion proof is the vector's;
  every `broken` list is refused with its reason's message;
- on random trees, NODES written from the definition and evaluated by
  multiproof.root() give the tree's root, and each derived proof verifies
  with packproof's RFC 9162 code;
- a tree of size 2^62 is walked for two seqs (the walk's work and memory
  follow the tree's depth, not its size);
- the grammar of multiproof.txt, and a seq range of format 6 checked by
  packproof.check_entries: genuine, and broken the ways section 7 names.

Usage: multiproof_test.py   (exit 0 when every case holds, 1 naming those that do not)
"""
import hashlib
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import multiproof  # noqa: E402
import packproof  # noqa: E402
from packerror import Failure  # noqa: E402

VECTORS = os.path.join(HERE, "..", "..", "..", "tests", "vectors")
FAILURES = []


def expect(name, got, want):
    if got != want:
        FAILURES.append("%s:\n  got:  %s\n  want: %s" % (name, got, want))


def refusal(fn):
    """The message of the Failure fn() raises, or "accepted"."""
    try:
        fn()
    except Failure as e:
        return str(e)
    return "accepted"


def leaf_hash(data):
    return hashlib.sha256(b"\x00" + data).digest()


def node(a, b):
    return hashlib.sha256(b"\x01" + a + b).digest()


def split(width):
    k = 1
    while k * 2 < width:
        k *= 2
    return k


def mth(hashes):
    if len(hashes) == 1:
        return hashes[0]
    k = split(len(hashes))
    return node(mth(hashes[:k]), mth(hashes[k:]))


def nodes(hashes, seqs, lo, hi):
    """NODES(lo, hi) of section 6, as the definition reads."""
    if not any(lo <= s < hi for s in seqs):
        return [mth(hashes[lo:hi])]
    if hi - lo == 1:
        return []
    k = split(hi - lo)
    return nodes(hashes, seqs, lo, lo + k) + nodes(hashes, seqs, lo + k, hi)


def text(hashes):
    """multiproof.txt holding hashes."""
    return b"".join(h.hex().encode() + b"\n" for h in hashes)


def vector_cases():
    with open(os.path.join(VECTORS, "multiproof.json")) as f:
        vectors = json.load(f)
    with open(os.path.join(VECTORS, "merkle.json")) as f:
        merkle_leaves = [bytes.fromhex(x) for x in json.load(f)["leaves_hex"]]

    def hash_of(case, seq):
        data = merkle_leaves[seq] if case["leaves"] == "merkle.json" else b"leaf %d" % seq
        return leaf_hash(data)

    for case in vectors["cases"]:
        name = "vector: tree size %d, seqs %s" % (case["tree_size"], case["seqs"])
        leaves = [(s, hash_of(case, s)) for s in case["seqs"]]
        proof = [bytes.fromhex(h) for h in case["nodes"]]
        walk = multiproof.root(case["tree_size"], leaves, proof)
        expect(name + ": root", walk.root.hex(), case["root"])
        expect(name + ": hashes used", walk.used, len(proof))
        expect(name + ": multiproof.txt", refusal(lambda: multiproof.check(
            case["tree_size"], leaves, text(proof), bytes.fromhex(case["root"]))), "accepted")
        for seq, want in sorted(case["inclusion"].items()):
            walk = multiproof.root(case["tree_size"], leaves, proof, keep=int(seq))
            expect("%s: the inclusion proof of seq %s" % (name, seq), [h.hex() for h in walk.path], want)

    base = next(c for c in vectors["cases"] if c["tree_size"] == 37 and c["seqs"] == [1, 2, 3, 17, 31, 32, 33])
    for broken in vectors["broken"]:
        seqs = broken.get("seqs", base["seqs"])
        leaves = [(s, hash_of(base, s)) for s in seqs]
        proof = [bytes.fromhex(h) for h in broken["nodes"]]
        if broken["refusal"] == "ends early":
            want = ("multiproof.txt: the multiproof ends after %d hashes; the entries' inclusion needs more"
                    % len(proof))
        elif broken["refusal"] == "left over":
            want = ("multiproof.txt: the multiproof holds %d hashes; the entries' inclusion uses %d"
                    % (len(proof), len(nodes([hash_of(base, i) for i in range(37)], seqs, 0, 37))))
        else:
            want = ("multiproof.txt: the entries and the multiproof lead to root %s, the checkpoint's is %s"
                    % (reference_root(37, dict(leaves), proof), base["root"]))
        expect("broken: " + broken["why"], refusal(lambda: multiproof.check(
            37, leaves, text(proof), bytes.fromhex(base["root"]))), want)
    return len(vectors["cases"]), len(vectors["broken"])


def reference_root(size, leaves, proof):
    """ROOT(0, size) of section 6 as the definition reads, over a dict of
    the entries' leaf hashes and a list: the root a refused list leads to."""
    rest = list(proof)

    def root(lo, hi):
        if not any(lo <= s < hi for s in leaves):
            return rest.pop(0)
        if hi - lo == 1:
            return leaves[lo]
        k = split(hi - lo)
        left = root(lo, lo + k)
        return node(left, root(lo + k, hi))
    return root(0, size).hex()


def random_cases(rounds=300):
    rng = random.Random(6)
    for _ in range(rounds):
        size = rng.randint(1, 70)
        hashes = [leaf_hash(b"r%d" % i) for i in range(size)]
        seqs = sorted(rng.sample(range(size), rng.randint(0, min(size, 9))))
        proof = nodes(hashes, seqs, 0, size)
        name = "random: tree size %d, seqs %s" % (size, seqs)
        leaves = [(s, hashes[s]) for s in seqs]
        walk = multiproof.root(size, leaves, proof)
        expect(name + ": root", (walk.root, walk.used), (mth(hashes), len(proof)))
        for seq in seqs:
            path = multiproof.root(size, leaves, proof, keep=seq).path
            expect("%s: seq %d's proof verifies" % (name, seq),
                   packproof.verify_inclusion(seq, size, hashes[seq], path, mth(hashes)), True)
        absent = next((i for i in range(size) if i not in seqs), None)
        if absent is not None:
            expect("%s: no proof of seq %d, not among them" % (name, absent),
                   multiproof.root(size, leaves, proof, keep=absent).path, None)
    return rounds


def deep_tree():
    """Seqs 0 and 2^62 - 1 of a tree of size 2^62: the list is the 61
    subtrees right of 0 from the leaf up, then the 61 left of the last
    from the root down; the first seq's proof is its half of the list and
    the root's other child, the last's likewise."""
    size = 1 << 62
    first, last = leaf_hash(b"first"), leaf_hash(b"last")
    right = [hashlib.sha256(b"R%d" % i).digest() for i in range(61)]
    left = [hashlib.sha256(b"L%d" % i).digest() for i in range(61)]
    low, high = first, last
    for h in right:
        low = node(low, h)
    for h in reversed(left):
        high = node(h, high)
    leaves = [(0, first), (size - 1, last)]
    walk = multiproof.root(size, leaves, right + left, keep=0)
    expect("size 2^62: root", walk.root, node(low, high))
    expect("size 2^62: seq 0's proof", walk.path, right + [high])
    walk = multiproof.root(size, leaves, right + left, keep=size - 1)
    expect("size 2^62: seq 2^62 - 1's proof", walk.path, list(reversed(left)) + [low])


GRAMMAR = [
    ("a hash in upper case", b"AB" * 32 + b"\n", "multiproof.txt: line 2: want 64 lower-case hex digits"),
    ("a CR before the LF", b"ab" * 32 + b"\r\n", "multiproof.txt: line 2: want 64 lower-case hex digits"),
    ("a space after the hash", b"ab" * 32 + b" \n", "multiproof.txt: line 2: want 64 lower-case hex digits"),
    ("an empty line", b"\n", "multiproof.txt: line 2: want 64 lower-case hex digits"),
    ("63 digits", b"a" * 63 + b"\n", "multiproof.txt: line 2: want 64 lower-case hex digits"),
    ("65 digits", b"a" * 65 + b"\n", "multiproof.txt: line 2: want 64 lower-case hex digits"),
    ("no LF after the last hash", b"ab" * 32, "multiproof.txt: line 2: no newline at its end"),
]


def grammar_cases():
    good = b"cd" * 32 + b"\n"
    expect("two hashes", list(multiproof.hashes(good + b"ab" * 32 + b"\n")),
           [b"\xcd" * 32, b"\xab" * 32])
    expect("an empty file", list(multiproof.hashes(b"")), [])
    for name, line, want in GRAMMAR:
        expect("multiproof.txt: " + name, refusal(lambda: list(multiproof.hashes(good + line))), want)
    return len(GRAMMAR) + 2


class Log:
    """A log of version 1 leaves, each a tool call of run r in team t."""

    def __init__(self, size):
        self.leaves, self.hashes = [], []
        for seq in range(size):
            e = {"v": 1, "seq": seq, "prev": (self.hashes[-1] if self.hashes else bytes(32)).hex(),
                 "logged_at_us": 1000 + seq, "emitter": "local",
                 "receipt": {"receipt_id": "r%d" % seq, "kind": "tool_call", "team": "t", "run_id": "run-%d" % seq,
                             "tool": "git", "decision": "allow", "occurred_at_us": 1000 + seq, "attempt": 1}}
            leaf = json.dumps(e, sort_keys=True, separators=(",", ":")).encode()
            self.leaves.append(leaf)
            self.hashes.append(leaf_hash(leaf))

    def pack(self, lo, hi, size=None):
        """(files, manifest) of the seq range [lo, hi) of format 6 against the tree of size."""
        size = len(self.leaves) if size is None else size
        entries = b"".join(self.leaves[s] + b"\n" for s in range(lo, hi))
        files = {"entries.jsonl": entries, "multiproof.txt": text(nodes(self.hashes[:size], range(lo, hi), 0, size))}
        manifest = {"format": 6, "counts": {"entries": hi - lo},
                    "scope": {"kind": "seq", "from_seq": lo, "to_seq": hi}}
        return files, manifest


def pack_cases():
    log = Log(37)
    root = mth(log.hashes)
    ticks = []

    def check(files, manifest, size=37, want_root=root):
        return refusal(lambda: packproof.check_entries(files, manifest, size, want_root, ticks.append))

    files, manifest = log.pack(5, 21)
    expect("a seq range of format 6", check(files, manifest), "accepted")
    expect("the entries counted as the walk takes them", ticks, list(range(1, 17)))
    expect("a range's multiproof holds at most 2 x ceil(log2 N) hashes",
           files["multiproof.txt"].count(b"\n") <= 2 * (37 - 1).bit_length(), True)
    whole, whole_manifest = log.pack(0, 37)
    expect("the whole tree: an empty multiproof.txt", (whole["multiproof.txt"], check(whole, whole_manifest)),
           (b"", "accepted"))

    lines = files["entries.jsonl"].split(b"\n")[:-1]
    hashes = files["multiproof.txt"].split(b"\n")[:-1]

    def edited(entries=None, proof=None, **m):
        f = dict(files)
        if entries is not None:
            f["entries.jsonl"] = b"".join(x + b"\n" for x in entries)
        if proof is not None:
            f["multiproof.txt"] = b"".join(x + b"\n" for x in proof)
        return f, dict(manifest, **m)

    wrong = hashlib.sha256(b"wrong").digest()
    rows = [
        ("a hash removed", edited(proof=hashes[:-1]),
         "multiproof.txt: the multiproof ends after %d hashes; the entries' inclusion needs more" % (len(hashes) - 1)),
        ("a hash added at the end", edited(proof=hashes + [hashes[0]]),
         "multiproof.txt: the multiproof holds %d hashes; the entries' inclusion uses %d"
         % (len(hashes) + 1, len(hashes))),
        ("a hash altered", edited(proof=[wrong.hex().encode()] + hashes[1:]),
         "multiproof.txt: the entries and the multiproof lead to root %s, the checkpoint's is %s"
         % (reference_root(37, {s: log.hashes[s] for s in range(5, 21)}, [wrong] + [bytes.fromhex(
             h.decode()) for h in hashes[1:]]), root.hex())),
        ("a hash in upper case", edited(proof=hashes[:2] + [hashes[2].upper()] + hashes[3:]),
         "multiproof.txt: line 3: want 64 lower-case hex digits"),
        ("a malformed line after the hashes the entries use", edited(proof=hashes + [b""]),
         "multiproof.txt: line %d: want 64 lower-case hex digits" % (len(hashes) + 1)),
        ("no newline at the end", ({**files, "multiproof.txt": files["multiproof.txt"][:-1]}, manifest),
         "multiproof.txt: line %d: no newline at its end" % len(hashes)),
        ("the last entry dropped", edited(entries=lines[:-1], counts={"entries": 15},
                                          scope={"kind": "seq", "from_seq": 5, "to_seq": 20}),
         "multiproof.txt: the entries and the multiproof lead to root %s, the checkpoint's is %s"
         % (reference_root(37, {s: log.hashes[s] for s in range(5, 20)},
                               [bytes.fromhex(h.decode()) for h in hashes]), root.hex())),
        ("an entry not in the tree", (log.pack(5, 21, size=20)[0], manifest),
         "entries.jsonl: line 16: seq 20 is not in the checkpoint's tree of size 20"),
        ("the manifest counting another number of entries", edited(counts={"entries": 15}),
         "entries.jsonl: 16 entries, manifest says 15"),
        ("two entries swapped", edited(entries=lines[:3] + [lines[4], lines[3]] + lines[5:]),
         "entries.jsonl seq 9: seq expected 8 (the range has a gap)"),
        ("the last entry altered", edited(entries=lines[:-1] + [lines[-1].replace(b'"git"', b'"gix"')]),
         "multiproof.txt: the entries and the multiproof lead to root %s, the checkpoint's is %s"
         % (reference_root(37, {s: log.hashes[s] if s < 20 else leaf_hash(lines[-1].replace(b'"git"', b'"gix"'))
                                for s in range(5, 21)}, [bytes.fromhex(h.decode()) for h in hashes]), root.hex())),
    ]
    for name, (f, m), want in rows:
        size = 20 if name == "an entry not in the tree" else 37
        want_root = mth(log.hashes[:size])
        expect("format 6 pack: " + name, check(f, m, size, want_root), want)
    return len(rows) + 2


def main():
    counts = vector_cases()
    n = random_cases()
    deep_tree()
    g = grammar_cases()
    p = pack_cases()
    if FAILURES:
        print("\n".join("FAIL: " + f for f in FAILURES))
        print("%d failures" % len(FAILURES))
        return 1
    print("OK: multiproof.json's %d cases and %d broken lists, %d random trees, a tree of size 2^62, %d lines of "
          "multiproof.txt and %d format 6 packs checked by export/verify/python/multiproof.py" % (counts + (n, g, p)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
