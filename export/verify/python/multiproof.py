"""Multiproofs (CONTRACT.md section 6, "Multiproofs") and multiproof.txt
(section 7, "Shared inclusion proofs (format 6)"), with the standard library
only, written from the contract's text.

The multiproof of a set S of seqs in the tree of size N lists the hashes of
the largest subtrees of RFC 9162's split that hold no seq of S, left to
right. root() evaluates ROOT(0, N) in one pass over the entries (ascending
seqs) and the list, holding one pending left-hand hash per level of the
tree (at most 63 levels: a tree size is below 2^63), whatever the size of S;
it derives one seq's RFC 9162 inclusion proof on the way when asked.

The grammar of multiproof.txt, one hash a line:

  multiproof.txt = *( 64(%x30-39 / %x61-66) %x0A )

Every failure is a packerror.Failure naming multiproof.txt.
"""
import hashlib
import re

from packerror import Failure
from packread import each_line

FILE = "multiproof.txt"
_LINE = re.compile(rb"[0-9a-f]{64}")


def hashes(data):
    """The hashes of multiproof.txt (bytes), 32 bytes each, read one line at
    a time as they are asked for; a line outside the grammar is a Failure
    when it is reached, a last line without its LF before the first hash."""
    for n, line in enumerate(each_line(data, FILE), 1):
        if not _LINE.fullmatch(line):
            raise Failure("%s: line %d: want 64 lower-case hex digits" % (FILE, n))
        yield bytes.fromhex(line.decode("ascii"))


def _split(width):
    """k of RFC 9162 section 2.1.1: the largest power of two below width (> 1)."""
    return 1 << ((width - 1).bit_length() - 1)


def _node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


class _Ahead:
    """An iterator with its next item read ahead (None at its end)."""

    def __init__(self, items):
        self._items = iter(items)
        self.next = next(self._items, None)

    def take(self):
        item, self.next = self.next, next(self._items, None)
        return item


class Walk:
    """The result of root(): the root computed, used (the hashes of the list
    it consumed) and path, the RFC 9162 inclusion proof (leaf to root) of
    the seq asked for, or None when that seq is not among the entries."""

    def __init__(self, root, used, path):
        self.root, self.used, self.path = root, used, path


def root(size, leaves, proof, keep=None):
    """ROOT(0, size) of section 6 from leaves, the (seq, leaf hash) of the
    entries, and proof, the hashes of the list, each an iterable consumed
    once from its start. The seqs MUST ascend and be below size (the caller
    checks both with each entry: a lookahead of one entry is read before a
    hash past it is). keep: a seq whose inclusion proof is derived. A list
    used up is a Failure (`the multiproof ends after H hashes`); the root,
    and the hashes left over, the caller checks (check()). The empty tree
    (size 0) reads no hash: its root is SHA-256 of no bytes."""
    entries, rest = _Ahead(leaves), iter(proof)
    used, path, kept = [0], [], [False]

    def next_hash():
        h = next(rest, None)
        if h is None:
            raise Failure("%s: the multiproof ends after %d hashes; the entries' inclusion needs more"
                          % (FILE, used[0]))
        used[0] += 1
        return h

    def subtree(lo, hi):
        seq = None if entries.next is None else entries.next[0]
        if seq is None or seq >= hi:
            return next_hash()
        assert lo <= seq, "seqs ascending"
        if hi - lo == 1:
            kept[0] = kept[0] or seq == keep
            return entries.take()[1]
        mid = lo + _split(hi - lo)
        left = subtree(lo, mid)
        right = subtree(mid, hi)
        if keep is not None and lo <= keep < hi:
            path.append(right if keep < mid else left)
        return _node(left, right)

    top = subtree(0, size) if size > 0 else hashlib.sha256(b"").digest()
    assert entries.next is None, "seqs below the tree size"
    return Walk(top, used[0], path if kept[0] else None)


def check(size, leaves, data, want_root):
    """multiproof.txt (data) with the entries (leaves, as for root()) in one
    pass: the grammar of every line, the root the checkpoint's (want_root),
    then every hash used, in that order. Returns the number of hashes."""
    proof = hashes(data)
    walk = root(size, leaves, proof)
    held = walk.used + sum(1 for _ in proof)
    if walk.root != want_root:
        raise Failure("%s: the entries and the multiproof lead to root %s, the checkpoint's is %s"
                      % (FILE, walk.root.hex(), want_root.hex()))
    if held != walk.used:
        raise Failure("%s: the multiproof holds %d hashes; the entries' inclusion uses %d" % (FILE, held, walk.used))
    return held
