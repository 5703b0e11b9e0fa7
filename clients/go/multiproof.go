package ledger

// Multiproofs (CONTRACT.md section 6, "Multiproofs"): one proof of the
// inclusion of a set of entries, shared by all of them. A pack of format 6
// carries the multiproof of its entries' seqs in multiproof.txt, in place of
// proofs.jsonl's path per entry.
//
// ROOT(0, N) is computed by recursion over the RFC 9162 split, left subtree
// first, reading the entries and the multiproof's hashes each once from the
// start: a frame holds one pending left-hand hash, at most 64 frames.
//
// Thread safety: pure functions.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/bits"

	"golang.org/x/mod/sumdb/tlog"
)

// VerifyMultiproof checks that leaves (the entries' exact bytes) are the
// entries seqs (ascending, below tree.N, one leaf each) of tree, by their
// multiproof: the hashes of NODES(0, N), left to right.
func VerifyMultiproof(tree tlog.Tree, seqs []int64, leaves [][]byte, multiproof []tlog.Hash) error {
	_, err := walkMultiproof(tree, seqs, leaves, multiproof, -1)
	return err
}

// MultiproofInclusion checks the multiproof as VerifyMultiproof does and
// returns the RFC 9162 inclusion proof of the entry at seq, one of seqs,
// leaf to root: the hashes of the subtrees that ROOT computes as the
// sibling of a subtree holding seq (section 6, "One entry's proof from a
// multiproof"), which tlog.CheckRecord accepts.
func MultiproofInclusion(tree tlog.Tree, seqs []int64, leaves [][]byte, multiproof []tlog.Hash, seq int64) ([]tlog.Hash, error) {
	held := false
	for _, s := range seqs {
		held = held || s == seq
	}
	if !held {
		return nil, fmt.Errorf("seq %d is not one of the multiproof's seqs", seq)
	}
	return walkMultiproof(tree, seqs, leaves, multiproof, seq)
}

func walkMultiproof(tree tlog.Tree, seqs []int64, leaves [][]byte, multiproof []tlog.Hash, keep int64) ([]tlog.Hash, error) {
	if len(seqs) != len(leaves) {
		return nil, fmt.Errorf("%d seqs for %d leaves", len(seqs), len(leaves))
	}
	for i, s := range seqs {
		if s < 0 || s >= tree.N {
			return nil, fmt.Errorf("entry %d: seq %d is not in the checkpoint's tree of size %d", i+1, s, tree.N)
		}
		if i > 0 && s <= seqs[i-1] {
			return nil, fmt.Errorf("entry %d: seq %d after seq %d: seqs ascend", i+1, s, seqs[i-1])
		}
	}
	w := &multiproofWalk{seqs: seqs, leaves: leaves, hashes: multiproof, keep: keep}
	// The empty tree's multiproof is empty, its root SHA-256 of no bytes.
	var root tlog.Hash = sha256.Sum256(nil)
	var err error
	if tree.N > 0 {
		root, err = w.root(0, tree.N)
	}
	switch {
	case err != nil:
		return nil, err
	case root != tree.Hash:
		return nil, fmt.Errorf("the entries and the multiproof lead to root %s, the checkpoint's is %s",
			hex.EncodeToString(root[:]), hex.EncodeToString(tree.Hash[:]))
	case w.used != len(multiproof):
		return nil, fmt.Errorf("the multiproof holds %d hashes; the entries' inclusion uses %d", len(multiproof), w.used)
	}
	return w.path, nil
}

// multiproofWalk is one evaluation of ROOT(0, N): the entries and hashes
// consumed so far, and keep's proof (keep -1: none).
type multiproofWalk struct {
	seqs   []int64
	leaves [][]byte
	next   int // the next entry
	hashes []tlog.Hash
	used   int
	keep   int64
	path   []tlog.Hash
}

// root is ROOT(lo, hi) of section 6.
func (w *multiproofWalk) root(lo, hi int64) (tlog.Hash, error) {
	if w.next == len(w.seqs) || w.seqs[w.next] >= hi {
		if w.used == len(w.hashes) {
			return tlog.Hash{}, fmt.Errorf("the multiproof ends after %d hashes; the entries' inclusion needs more", w.used)
		}
		w.used++
		return w.hashes[w.used-1], nil
	}
	if hi-lo == 1 {
		w.next++
		return leafHash(w.leaves[w.next-1]), nil
	}
	k := int64(1) << (bits.Len64(uint64(hi-lo-1)) - 1) // the largest power of two below hi - lo
	left, err := w.root(lo, lo+k)
	if err != nil {
		return left, err
	}
	right, err := w.root(lo+k, hi)
	if err != nil {
		return right, err
	}
	// Children finish before their parent: the sibling nearest the leaf
	// comes first.
	if lo <= w.keep && w.keep < lo+k {
		w.path = append(w.path, right)
	} else if lo+k <= w.keep && w.keep < hi {
		w.path = append(w.path, left)
	}
	return tlog.NodeHash(left, right), nil
}

// leafHash is a line's leaf hash: RFC 9162's of a leaf, or the one an
// erased entry's redacted line states (CONTRACT.md section 8; all zeros
// when it states none, which no tree holds).
func leafHash(line []byte) tlog.Hash {
	if !bytes.HasPrefix(line, []byte(`{"redacted":`)) {
		return tlog.RecordHash(line)
	}
	var r struct {
		Redacted struct {
			LeafHash string `json:"leaf_hash"`
		} `json:"redacted"`
	}
	var h tlog.Hash
	if json.Unmarshal(line, &r) == nil {
		if b, err := hex.DecodeString(r.Redacted.LeafHash); err == nil && len(b) == tlog.HashSize {
			copy(h[:], b)
		}
	}
	return h
}
