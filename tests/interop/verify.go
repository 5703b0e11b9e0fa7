// Command verify checks a ledger's output with Go's golang.org/x/mod/sumdb
// packages, which the ledger's authors did not write: the signed checkpoints
// with note.Open, every entry's inclusion proof with tlog.CheckRecord, and a
// consistency proof between two checkpoints with tlog.CheckTree.
//
// Usage: verify DIR, where DIR holds (as written by run.sh from ledgerctl)
// the files below; verify -consistency DIR checks only the two checkpoints
// and the consistency proof (vkey, old.note, new.note, consistency.json):
//
//	vkey            the verifier key line
//	old.note        a signed checkpoint
//	new.note        a later signed checkpoint
//	entries.jsonl   the leaves 0..new size-1, one per line
//	proofs.jsonl    ledgerctl prove output for each entry against new size
//	consistency.json ledgerctl consistency output from old to new size
//
// verify -pack PACK_DIR VKEY checks an extracted evidence pack: its
// checkpoint, each entry's proof (from proofs.jsonl, or in a pack of format
// 6 derived from multiproof.txt) with tlog.CheckRecord, and consistency.json.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

func openCheckpoint(verifiers note.Verifiers, path string) (checkpoint, error) {
	msg, err := os.ReadFile(path)
	if err != nil {
		return checkpoint{}, err
	}
	n, err := note.Open(msg, verifiers)
	if err != nil {
		return checkpoint{}, fmt.Errorf("%s: note.Open: %v", path, err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return checkpoint{}, fmt.Errorf("%s: want three lines, got %q", path, n.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return checkpoint{}, fmt.Errorf("%s: size: %v", path, err)
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return checkpoint{}, fmt.Errorf("%s: root is not base64 of 32 bytes", path)
	}
	var root tlog.Hash
	copy(root[:], raw)
	return checkpoint{lines[0], size, root}, nil
}

func parseHashes(list []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(list))
	for i, h := range list {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != tlog.HashSize {
			return nil, fmt.Errorf("bad hash %q", h)
		}
		copy(out[i][:], b)
	}
	return out, nil
}

func run(dir string, withEntries bool) error {
	vkey, err := os.ReadFile(filepath.Join(dir, "vkey"))
	if err != nil {
		return err
	}
	verifier, err := note.NewVerifier(strings.TrimSpace(string(vkey)))
	if err != nil {
		return fmt.Errorf("note.NewVerifier: %v", err)
	}
	verifiers := note.VerifierList(verifier)
	oldCp, err := openCheckpoint(verifiers, filepath.Join(dir, "old.note"))
	if err != nil {
		return err
	}
	newCp, err := openCheckpoint(verifiers, filepath.Join(dir, "new.note"))
	if err != nil {
		return err
	}
	if oldCp.origin != verifier.Name() || newCp.origin != verifier.Name() {
		return fmt.Errorf("checkpoint origin is not the key name %q", verifier.Name())
	}

	var n int64
	if withEntries {
		entries, err := os.Open(filepath.Join(dir, "entries.jsonl"))
		if err != nil {
			return err
		}
		defer entries.Close()
		proofs, err := os.Open(filepath.Join(dir, "proofs.jsonl"))
		if err != nil {
			return err
		}
		defer proofs.Close()
		es := bufio.NewScanner(entries)
		es.Buffer(make([]byte, 1<<20), 1<<20)
		ps := bufio.NewScanner(proofs)
		ps.Buffer(make([]byte, 1<<20), 1<<20)
		var prev tlog.Hash // zero: the genesis prev
		for es.Scan() {
			if !ps.Scan() {
				return fmt.Errorf("fewer proofs than entries")
			}
			leaf := es.Bytes()
			var p struct {
				Seq       int64    `json:"seq"`
				LeafHash  string   `json:"leaf_hash"`
				TreeSize  int64    `json:"tree_size"`
				Inclusion []string `json:"inclusion"`
			}
			if err := json.Unmarshal(ps.Bytes(), &p); err != nil {
				return fmt.Errorf("proof %d: %v", n, err)
			}
			var fields struct {
				Seq  int64  `json:"seq"`
				Prev string `json:"prev"`
			}
			if err := json.Unmarshal(leaf, &fields); err != nil {
				return fmt.Errorf("entry %d: %v", n, err)
			}
			if fields.Seq != n || p.Seq != n || p.TreeSize != newCp.size {
				return fmt.Errorf("entry %d: seq or tree size out of order", n)
			}
			if fields.Prev != hex.EncodeToString(prev[:]) {
				return fmt.Errorf("entry %d: prev %s, want %s", n, fields.Prev, hex.EncodeToString(prev[:]))
			}
			h := tlog.RecordHash(leaf)
			if hex.EncodeToString(h[:]) != p.LeafHash {
				return fmt.Errorf("entry %d: leaf hash %s, ledger said %s", n, hex.EncodeToString(h[:]), p.LeafHash)
			}
			proof, err := parseHashes(p.Inclusion)
			if err != nil {
				return fmt.Errorf("proof %d: %v", n, err)
			}
			if err := tlog.CheckRecord(tlog.RecordProof(proof), newCp.size, newCp.root, n, h); err != nil {
				return fmt.Errorf("entry %d: tlog.CheckRecord: %v", n, err)
			}
			prev = h
			n++
		}
		if n != newCp.size {
			return fmt.Errorf("checked %d entries, checkpoint has %d", n, newCp.size)
		}
	}

	raw, err := os.ReadFile(filepath.Join(dir, "consistency.json"))
	if err != nil {
		return err
	}
	var c struct {
		From  int64    `json:"from_size"`
		To    int64    `json:"to_size"`
		Proof []string `json:"proof"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	if c.From != oldCp.size || c.To != newCp.size {
		return fmt.Errorf("consistency proof is for %d->%d, checkpoints are %d->%d", c.From, c.To, oldCp.size, newCp.size)
	}
	cproof, err := parseHashes(c.Proof)
	if err != nil {
		return err
	}
	// x/mod's CheckTree refuses old size 0; the ledger's checkpoints used
	// here always have entries.
	if err := tlog.CheckTree(tlog.TreeProof(cproof), newCp.size, newCp.root, oldCp.size, oldCp.root); err != nil {
		return fmt.Errorf("tlog.CheckTree %d->%d: %v", oldCp.size, newCp.size, err)
	}
	// A tampered proof must fail: the check above can fail.
	if len(cproof) > 0 {
		bad := append([]tlog.Hash(nil), cproof...)
		bad[0][0] ^= 1
		if tlog.CheckTree(tlog.TreeProof(bad), newCp.size, newCp.root, oldCp.size, oldCp.root) == nil {
			return fmt.Errorf("tlog.CheckTree accepted a tampered proof")
		}
	}
	if bytes.Equal(oldCp.root[:], newCp.root[:]) && oldCp.size != newCp.size {
		return fmt.Errorf("different sizes with one root")
	}
	if !withEntries {
		fmt.Printf("go interop: checkpoints %d and %d open with note.Open and are consistent by tlog.CheckTree\n", oldCp.size, newCp.size)
		return nil
	}
	fmt.Printf("go interop: %d entries, checkpoints %d and %d, all verified with x/mod sumdb\n", n, oldCp.size, newCp.size)
	return nil
}

// runPack checks an extracted evidence pack (its top folder): the
// checkpoint with note.Open, every entry's proof with tlog.CheckRecord, and
// the consistency proof, when present, with tlog.CheckTree.
func runPack(dir, vkeyText string) error {
	verifier, err := note.NewVerifier(strings.TrimSpace(vkeyText))
	if err != nil {
		return fmt.Errorf("note.NewVerifier: %v", err)
	}
	verifiers := note.VerifierList(verifier)
	cp, err := openCheckpoint(verifiers, filepath.Join(dir, "checkpoint"))
	if err != nil {
		return err
	}
	entries, err := os.ReadFile(filepath.Join(dir, "entries.jsonl"))
	if err != nil {
		return err
	}
	leaves := bytes.Split(bytes.TrimSuffix(entries, []byte("\n")), []byte("\n"))
	if len(entries) == 0 {
		leaves = nil
	}
	seqs, proofs, err := packProofs(dir, cp, leaves)
	if err != nil {
		return err
	}
	for i, leaf := range leaves {
		if err := tlog.CheckRecord(tlog.RecordProof(proofs[i]), cp.size, cp.root, seqs[i], tlog.RecordHash(leaf)); err != nil {
			return fmt.Errorf("seq %d: tlog.CheckRecord: %v", seqs[i], err)
		}
	}
	consistent := ""
	if raw, err := os.ReadFile(filepath.Join(dir, "consistency.json")); err == nil {
		var c struct {
			Old   string   `json:"old_checkpoint"`
			Proof []string `json:"proof"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return err
		}
		oldPath := filepath.Join(os.TempDir(), fmt.Sprintf("old-%d.note", os.Getpid()))
		defer os.Remove(oldPath)
		if err := os.WriteFile(oldPath, []byte(c.Old), 0o600); err != nil {
			return err
		}
		old, err := openCheckpoint(verifiers, oldPath)
		if err != nil {
			return err
		}
		proof, err := parseHashes(c.Proof)
		if err != nil {
			return err
		}
		if old.size > 0 && old.size < cp.size {
			if err := tlog.CheckTree(tlog.TreeProof(proof), cp.size, cp.root, old.size, old.root); err != nil {
				return fmt.Errorf("tlog.CheckTree %d->%d: %v", old.size, cp.size, err)
			}
		}
		consistent = fmt.Sprintf(", consistent with the checkpoint at size %d", old.size)
	}
	fmt.Printf("go interop: pack of %d entries verified with x/mod sumdb against size %d%s\n", len(leaves), cp.size, consistent)
	return nil
}

// packProofs returns the seq and the RFC 9162 inclusion proof (leaf to
// root) of each entry of a pack: its line of proofs.jsonl, or in a pack of
// format 6 derived from multiproof.txt (CONTRACT section 6, "Multiproofs").
// A derived proof is not trusted: tlog.CheckRecord checks it.
func packProofs(dir string, cp checkpoint, leaves [][]byte) ([]int64, [][]tlog.Hash, error) {
	seqs := make([]int64, len(leaves))
	proofs := make([][]tlog.Hash, len(leaves))
	if multiproof, err := os.ReadFile(filepath.Join(dir, "multiproof.txt")); err == nil {
		for i, leaf := range leaves {
			var e struct {
				Seq int64 `json:"seq"`
			}
			if err := json.Unmarshal(leaf, &e); err != nil {
				return nil, nil, fmt.Errorf("entry %d: %v", i, err)
			}
			seqs[i] = e.Seq
		}
		var nodes []string
		if len(multiproof) > 0 {
			nodes = strings.Split(strings.TrimSuffix(string(multiproof), "\n"), "\n")
		}
		hashes, err := parseHashes(nodes)
		if err != nil {
			return nil, nil, fmt.Errorf("multiproof.txt: %v", err)
		}
		return seqs, proofs, deriveProofs(cp, seqs, leaves, hashes, proofs)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "proofs.jsonl"))
	if err != nil {
		return nil, nil, err
	}
	lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	if len(raw) == 0 {
		lines = nil
	}
	if len(leaves) != len(lines) {
		return nil, nil, fmt.Errorf("%d entries, %d proofs", len(leaves), len(lines))
	}
	for i := range leaves {
		var p struct {
			Seq       int64    `json:"seq"`
			Inclusion []string `json:"inclusion"`
		}
		if err := json.Unmarshal(lines[i], &p); err != nil {
			return nil, nil, fmt.Errorf("proof %d: %v", i, err)
		}
		seqs[i] = p.Seq
		if proofs[i], err = parseHashes(p.Inclusion); err != nil {
			return nil, nil, err
		}
	}
	return seqs, proofs, nil
}

// deriveProofs fills proofs with each seq's path: ROOT(0, N) of section 6
// computed over the leaves (ascending seqs) and the multiproof's hashes,
// keeping every subtree's hash, then each seq's siblings read from the root
// down. Every hash must be used; with no entry, the one hash is the root.
func deriveProofs(cp checkpoint, seqs []int64, leaves [][]byte, hashes []tlog.Hash, proofs [][]tlog.Hash) error {
	known := map[[2]int64]tlog.Hash{}
	next, used := 0, 0
	var root func(lo, hi int64) error
	root = func(lo, hi int64) error {
		var h tlog.Hash
		switch {
		case next == len(seqs) || seqs[next] >= hi:
			if used == len(hashes) {
				return fmt.Errorf("multiproof.txt: %d hashes, the entries need more", len(hashes))
			}
			h, used = hashes[used], used+1
		case hi-lo == 1:
			h, next = tlog.RecordHash(leaves[next]), next+1
		default:
			k := split(hi - lo)
			if err := root(lo, lo+k); err != nil {
				return err
			}
			if err := root(lo+k, hi); err != nil {
				return err
			}
			h = tlog.NodeHash(known[[2]int64{lo, lo + k}], known[[2]int64{lo + k, hi}])
		}
		known[[2]int64{lo, hi}] = h
		return nil
	}
	size := cp.size
	if size == 0 {
		size = 1 // the empty tree's one hash: that of [0, 1), which holds no seq
	}
	if err := root(0, size); err != nil {
		return err
	}
	if used != len(hashes) || next != len(seqs) {
		return fmt.Errorf("multiproof.txt: %d hashes, the entries use %d (%d of %d entries placed)", len(hashes), used,
			next, len(seqs))
	}
	if len(seqs) == 0 && known[[2]int64{0, size}] != cp.root {
		return fmt.Errorf("multiproof.txt: root %x, the checkpoint's is %x", known[[2]int64{0, size}], cp.root)
	}
	for i, seq := range seqs {
		var path []tlog.Hash
		for lo, hi := int64(0), size; hi-lo > 1; {
			k := split(hi - lo)
			sibling := [2]int64{lo + k, hi}
			if seq >= lo+k {
				sibling, lo = [2]int64{lo, lo + k}, lo+k
			} else {
				hi = lo + k
			}
			h, ok := known[sibling]
			if !ok {
				return fmt.Errorf("seq %d: multiproof.txt has no hash of the subtree [%d, %d)", seq, sibling[0], sibling[1])
			}
			path = append([]tlog.Hash{h}, path...)
		}
		proofs[i] = path
	}
	return nil
}

// split is the largest power of two below n (RFC 9162 2.1.1), n >= 2.
func split(n int64) int64 {
	k := int64(1)
	for k*2 < n {
		k *= 2
	}
	return k
}

func main() {
	var err error
	switch {
	case len(os.Args) == 2:
		err = run(os.Args[1], true)
	case len(os.Args) == 3 && os.Args[1] == "-consistency":
		err = run(os.Args[2], false)
	case len(os.Args) == 4 && os.Args[1] == "-pack":
		err = runPack(os.Args[2], os.Args[3])
	default:
		fmt.Fprintln(os.Stderr, "usage: verify DIR | verify -consistency DIR | verify -pack PACK_DIR VKEY")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}
