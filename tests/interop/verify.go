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
	proofs, err := os.ReadFile(filepath.Join(dir, "proofs.jsonl"))
	if err != nil {
		return err
	}
	leaves := bytes.Split(bytes.TrimSuffix(entries, []byte("\n")), []byte("\n"))
	lines := bytes.Split(bytes.TrimSuffix(proofs, []byte("\n")), []byte("\n"))
	if len(entries) == 0 {
		leaves, lines = nil, nil
	}
	if len(leaves) != len(lines) {
		return fmt.Errorf("%d entries, %d proofs", len(leaves), len(lines))
	}
	for i, leaf := range leaves {
		var p struct {
			Seq       int64    `json:"seq"`
			Inclusion []string `json:"inclusion"`
		}
		if err := json.Unmarshal(lines[i], &p); err != nil {
			return fmt.Errorf("proof %d: %v", i, err)
		}
		proof, err := parseHashes(p.Inclusion)
		if err != nil {
			return err
		}
		if err := tlog.CheckRecord(tlog.RecordProof(proof), cp.size, cp.root, p.Seq, tlog.RecordHash(leaf)); err != nil {
			return fmt.Errorf("seq %d: tlog.CheckRecord: %v", p.Seq, err)
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
