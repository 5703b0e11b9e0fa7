package main

// Multiproofs (CONTRACT section 6, "Multiproofs") and multiproof.txt, the
// file that carries one in a pack of format 6 (section 7, "Shared
// inclusion proofs (format 6)").
//
// ROOT(0, N) is evaluated by recursion over the RFC 9162 split, left
// subtree first, pulling the entries (ascending seqs) and the hashes of
// multiproof.txt each in one pass: a frame holds one pending left-hand
// hash, and there are at most 64 frames, whatever the number of entries.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/bits"

	"golang.org/x/mod/sumdb/tlog"
)

// multiproofLeaves gives the entries of the set S in ascending seq order.
type multiproofLeaves interface {
	// peek returns the seq of the next entry without consuming it, ok
	// false when every entry is consumed; an error of the entry (its line
	// refused) ends the walk.
	peek() (seq int64, ok bool, err error)
	// take consumes the entry peek named and returns its leaf hash.
	take() tlog.Hash
}

// multiproofFile reads multiproof.txt a line at a time. Grammar (section 7):
//
//	multiproof.txt = *( 64 lower-case hex digits LF )
//
// no empty line, nothing else.
type multiproofFile struct {
	rest []byte
	used int64 // the lines read
}

const multiproofName = "multiproof.txt"

// next returns the next hash, ok false when the file is used up.
func (f *multiproofFile) next() (tlog.Hash, bool, error) {
	var h tlog.Hash
	if len(f.rest) == 0 {
		return h, false, nil
	}
	line := f.rest
	end := bytes.IndexByte(line, '\n')
	if end < 0 {
		return h, false, fmt.Errorf("%s: line %d: no newline at its end", multiproofName, f.used+1)
	}
	line, f.rest = line[:end], line[end+1:]
	if !isHash(string(line)) {
		return h, false, fmt.Errorf("%s: line %d: want 64 lower-case hex digits", multiproofName, f.used+1)
	}
	f.used++
	hex.Decode(h[:], line)
	return h, true, nil
}

// multiproof is one evaluation of ROOT(0, N) (section 6).
type multiproof struct {
	leaves multiproofLeaves
	file   *multiproofFile
	// keep is the seq whose RFC 9162 inclusion proof is gathered in path,
	// leaf to root ("One entry's proof from a multiproof"); -1 for none.
	keep int64
	path []tlog.Hash
}

// split is the k of RFC 9162 2.1.1: the largest power of two smaller than
// n (n >= 2).
func split(n int64) int64 {
	return 1 << (bits.Len64(uint64(n-1)) - 1)
}

// root computes ROOT(lo, hi).
func (m *multiproof) root(lo, hi int64) (tlog.Hash, error) {
	seq, ok, err := m.leaves.peek()
	if err != nil {
		return tlog.Hash{}, err
	}
	if !ok || seq >= hi {
		h, ok, err := m.file.next()
		if err == nil && !ok {
			err = fmt.Errorf("%s: the multiproof ends after %d hashes; the entries' inclusion needs more",
				multiproofName, m.file.used)
		}
		return h, err
	}
	if seq < lo {
		panic(fmt.Sprintf("multiproof: seq %d before the subtree [%d, %d): the entries do not ascend", seq, lo, hi))
	}
	if hi-lo == 1 {
		return m.leaves.take(), nil
	}
	k := split(hi - lo)
	left, err := m.root(lo, lo+k)
	if err != nil {
		return left, err
	}
	right, err := m.root(lo+k, hi)
	if err != nil {
		return right, err
	}
	// Post-order: the sibling nearest the leaf is appended first.
	if lo <= m.keep && m.keep < lo+k {
		m.path = append(m.path, right)
	} else if lo+k <= m.keep && m.keep < hi {
		m.path = append(m.path, left)
	}
	return tlog.NodeHash(left, right), nil
}

// multiproofRoot computes ROOT(0, size) of the leaves and the file. It
// returns keep's inclusion proof too, leaf to root, when keep is one of the
// leaves' seqs. The empty tree (size 0) has an empty multiproof and the
// root SHA-256 of no bytes (CONTRACT section 6).
func multiproofRoot(leaves multiproofLeaves, file *multiproofFile, size, keep int64) (tlog.Hash, []tlog.Hash, error) {
	m := &multiproof{leaves: leaves, file: file, keep: keep}
	var got tlog.Hash
	var err error
	if size == 0 {
		got = sha256.Sum256(nil)
	} else if got, err = m.root(0, size); err != nil {
		return got, nil, err
	}
	// An entry after the walk is refused with the entries (peek reads it),
	// before the multiproof is read past it.
	if _, ok, err := leaves.peek(); err != nil {
		return got, nil, err
	} else if ok {
		panic("multiproof: an entry left after ROOT(0, N) that the entries' checks let through")
	}
	return got, m.path, nil
}

// checkMultiproof requires ROOT(0, size) of the leaves and the file to be
// root, and every hash of the file used (its lines after the last one used
// are read by the grammar first).
func checkMultiproof(leaves multiproofLeaves, file *multiproofFile, size int64, root tlog.Hash) error {
	got, _, err := multiproofRoot(leaves, file, size, -1)
	if err != nil {
		return err
	}
	if got != root {
		return fmt.Errorf("%s: the entries and the multiproof lead to root %s, the checkpoint's is %s",
			multiproofName, hex.EncodeToString(got[:]), hex.EncodeToString(root[:]))
	}
	used := file.used
	for {
		_, ok, err := file.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
	}
	if file.used != used {
		return fmt.Errorf("%s: the multiproof holds %d hashes; the entries' inclusion uses %d",
			multiproofName, file.used, used)
	}
	return nil
}
