// Command pack_proof checks the inclusion proofs that ledgerctl pack-proof
// derives from an evidence pack (CONTRACT section 7, "Shared inclusion
// proofs") with Go's golang.org/x/mod/sumdb packages, which the ledger's
// authors did not write: the checkpoint opened with note.Open and the
// ledger's key, the proof checked with tlog.CheckRecord from the leaf hash
// of the entry's exact bytes to the checkpoint's root.
//
// Usage: go run pack_proof.go VKEY_FILE CHECKPOINT_FILE ENTRIES_FILE PROOF_FILE...
//
// CHECKPOINT_FILE and ENTRIES_FILE are the pack's checkpoint and
// entries.jsonl. A PROOF_FILE is a c2sp.org/tlog-proof@v1 (whose checkpoint
// must be the pack's, byte for byte) or the JSON form
// {"seq":S,"tree_size":N,"leaf_hash":"<hex>","inclusion":["<hex>",...]}.
// Prints "PROOF_FILE: seq S: proven in tree size N" for each proof and
// exits 0, or "PROOF_FILE: REASON" and exits 1 at the first proof refused.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type checkpoint struct {
	size int64
	root tlog.Hash
}

// openCheckpoint opens a signed checkpoint with the ledger's key: three
// lines, the origin the key's name.
func openCheckpoint(msg []byte, v note.Verifier) (checkpoint, error) {
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return checkpoint{}, fmt.Errorf("checkpoint: note.Open: %v", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[3] != "" || lines[0] != v.Name() {
		return checkpoint{}, fmt.Errorf("checkpoint: want the three lines of %s's checkpoint, got %q", v.Name(), n.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 {
		return checkpoint{}, fmt.Errorf("checkpoint: size %q", lines[1])
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return checkpoint{}, errors.New("checkpoint: the root is not base64 of 32 bytes")
	}
	c := checkpoint{size: size}
	copy(c.root[:], raw)
	return c, nil
}

// parseTlogProof reads c2sp.org/tlog-proof@v1: the header line, an
// optional extra line, "index N", the path in base64 one hash a line, an
// empty line, then the checkpoint.
func parseTlogProof(text []byte) (int64, []tlog.Hash, []byte, error) {
	head, cp, ok := bytes.Cut(text, []byte("\n\n"))
	if !ok {
		return 0, nil, nil, errors.New("tlog-proof: no empty line before the checkpoint")
	}
	lines := strings.Split(string(head), "\n")
	if lines[0] != "c2sp.org/tlog-proof@v1" {
		return 0, nil, nil, fmt.Errorf("tlog-proof: header %q", lines[0])
	}
	lines = lines[1:]
	if len(lines) > 0 && strings.HasPrefix(lines[0], "extra ") {
		lines = lines[1:]
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "index ") {
		return 0, nil, nil, errors.New("tlog-proof: no index line")
	}
	index, err := strconv.ParseInt(strings.TrimPrefix(lines[0], "index "), 10, 64)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("tlog-proof: %q", lines[0])
	}
	var path []tlog.Hash
	for _, l := range lines[1:] {
		raw, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(raw) != tlog.HashSize {
			return 0, nil, nil, fmt.Errorf("tlog-proof: hash %q", l)
		}
		var h tlog.Hash
		copy(h[:], raw)
		path = append(path, h)
	}
	return index, path, cp, nil
}

type jsonProof struct {
	Seq       *int64   `json:"seq"`
	TreeSize  *int64   `json:"tree_size"`
	LeafHash  string   `json:"leaf_hash"`
	Inclusion []string `json:"inclusion"`
}

func hexHash(s string) (tlog.Hash, error) {
	var h tlog.Hash
	raw, err := hex.DecodeString(s)
	if err != nil || len(raw) != tlog.HashSize {
		return h, fmt.Errorf("hash %q: want 64 hex digits", s)
	}
	copy(h[:], raw)
	return h, nil
}

// check checks one proof file against the pack's checkpoint and entries
// (by seq) and returns the seq it proves.
func check(proof, packCheckpoint []byte, cp checkpoint, v note.Verifier, leaves map[int64][]byte) (int64, error) {
	var seq int64
	var path []tlog.Hash
	var claimed *tlog.Hash // the leaf hash the proof states, when it states one
	if bytes.HasPrefix(proof, []byte("c2sp.org/tlog-proof@v1\n")) {
		var its []byte
		var err error
		if seq, path, its, err = parseTlogProof(proof); err != nil {
			return 0, err
		}
		// The proof's own checkpoint must open with the key, and be the
		// pack's.
		if _, err := openCheckpoint(its, v); err != nil {
			return 0, fmt.Errorf("tlog-proof: %v", err)
		}
		if !bytes.Equal(its, packCheckpoint) {
			return 0, errors.New("tlog-proof: its checkpoint is not the pack's")
		}
	} else {
		var p jsonProof
		dec := json.NewDecoder(bytes.NewReader(proof))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil || p.Seq == nil || p.TreeSize == nil {
			return 0, fmt.Errorf("json: want {\"seq\",\"tree_size\",\"leaf_hash\",\"inclusion\"}: %v", err)
		}
		if *p.TreeSize != cp.size {
			return 0, fmt.Errorf("json: tree_size %d, the checkpoint's is %d", *p.TreeSize, cp.size)
		}
		h, err := hexHash(p.LeafHash)
		if err != nil {
			return 0, fmt.Errorf("json: leaf_hash: %v", err)
		}
		seq, claimed = *p.Seq, &h
		for _, s := range p.Inclusion {
			h, err := hexHash(s)
			if err != nil {
				return 0, fmt.Errorf("json: inclusion: %v", err)
			}
			path = append(path, h)
		}
	}
	leaf, ok := leaves[seq]
	if !ok {
		return seq, fmt.Errorf("seq %d: not an entry of the pack", seq)
	}
	h := tlog.RecordHash(leaf)
	if claimed != nil && *claimed != h {
		return seq, fmt.Errorf("seq %d: leaf_hash %x, the entry's is %x", seq, claimed[:], h[:])
	}
	if err := tlog.CheckRecord(path, cp.size, cp.root, seq, h); err != nil {
		return seq, fmt.Errorf("seq %d: tlog.CheckRecord: %v", seq, err)
	}
	return seq, nil
}

func run(args []string) error {
	if len(args) < 4 {
		return errors.New("usage: pack_proof VKEY_FILE CHECKPOINT_FILE ENTRIES_FILE PROOF_FILE...")
	}
	vkey, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	v, err := note.NewVerifier(strings.TrimSpace(string(vkey)))
	if err != nil {
		return fmt.Errorf("note.NewVerifier: %v", err)
	}
	packCheckpoint, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	cp, err := openCheckpoint(packCheckpoint, v)
	if err != nil {
		return err
	}
	entries, err := os.ReadFile(args[2])
	if err != nil {
		return err
	}
	leaves := map[int64][]byte{}
	for i, line := range bytes.Split(bytes.TrimSuffix(entries, []byte("\n")), []byte("\n")) {
		var e struct {
			Seq *int64 `json:"seq"`
		}
		if err := json.Unmarshal(line, &e); err != nil || e.Seq == nil {
			return fmt.Errorf("entries line %d: no seq", i+1)
		}
		leaves[*e.Seq] = line
	}
	for _, file := range args[3:] {
		proof, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		seq, err := check(proof, packCheckpoint, cp, v, leaves)
		if err != nil {
			return fmt.Errorf("%s: %v", file, err)
		}
		fmt.Printf("%s: seq %d: proven in tree size %d\n", file, seq, cp.size)
	}
	return nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}
