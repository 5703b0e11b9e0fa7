package ledger

// Offline verification of a pack's checkpoint and proofs (CONTRACT.md
// sections 5 to 7) with Go's sumdb packages, and of format 6's multiproof
// (multiproof.go). This checks what the proofs
// prove: the checkpoint is signed by the ledger's key, every entry of the
// pack is in the tree it names, and an earlier checkpoint is a prefix of
// it. It is not the whole pack verifier (manifest, chains, scope,
// outcomes, report, times): ledgerctl verify and ledger-verify-go do that.
//
// Thread safety: pure functions.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is a verified checkpoint: the tree of Size entries with Root,
// of the log named Origin.
type Checkpoint struct {
	Origin string
	Tree   tlog.Tree
}

// VerifyCheckpoint opens a signed checkpoint (a C2SP signed note:
// "<origin>\n<size>\n<base64 root>\n", a blank line, signature lines) with
// the ledger's verifier key ("<name>+<key id>+<base64 key>"), and requires
// the key's name to be the origin. Other signature lines (a witness's
// cosignatures) are allowed and not checked.
func VerifyCheckpoint(signed []byte, vkey string) (Checkpoint, error) {
	verifier, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("vkey: %w", err)
	}
	n, err := note.Open(signed, note.VerifierList(verifier))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: not signed by %s: %w", verifier.Name(), err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[3] != "" || lines[0] == "" {
		return Checkpoint{}, errors.New("checkpoint: want three lines: origin, tree size, root hash")
	}
	if lines[0] != verifier.Name() {
		return Checkpoint{}, fmt.Errorf("checkpoint: origin %q is not the key's name %q", lines[0], verifier.Name())
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return Checkpoint{}, fmt.Errorf("checkpoint: tree size %q: want a decimal number", lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize || base64.StdEncoding.EncodeToString(root) != lines[2] {
		return Checkpoint{}, fmt.Errorf("checkpoint: root hash %q: want 32 bytes in standard base64", lines[2])
	}
	c := Checkpoint{Origin: lines[0], Tree: tlog.Tree{N: size}}
	copy(c.Tree.Hash[:], root)
	return c, nil
}

// VerifyInclusion checks that leaf (the entry's exact bytes) is entry seq
// of tree, by its RFC 9162 inclusion proof (leaf to root).
func VerifyInclusion(tree tlog.Tree, seq int64, leaf []byte, proof []tlog.Hash) error {
	if seq < 0 || seq >= tree.N {
		return fmt.Errorf("seq %d: not below the tree size %d", seq, tree.N)
	}
	h := tlog.RecordHash(leaf)
	if err := tlog.CheckRecord(proof, tree.N, tree.Hash, seq, h); err != nil {
		return fmt.Errorf("seq %d: the inclusion proof of leaf hash %x does not lead to root %x of size %d",
			seq, h[:], tree.Hash[:], tree.N)
	}
	return nil
}

// VerifyConsistency checks that old is a prefix of tree, by their RFC 9162
// consistency proof.
func VerifyConsistency(old, tree tlog.Tree, proof []tlog.Hash) error {
	if old.N > tree.N {
		return fmt.Errorf("consistency: the old tree (size %d) is larger than the new (size %d)", old.N, tree.N)
	}
	if err := tlog.CheckTree(proof, tree.N, tree.Hash, old.N, old.Hash); err != nil {
		return fmt.Errorf("consistency: the proof does not lead from size %d root %x to size %d root %x",
			old.N, old.Hash[:], tree.N, tree.Hash[:])
	}
	return nil
}

// PackProofs is what VerifyPackProofs found.
type PackProofs struct {
	Checkpoint Checkpoint
	Format     int         // the manifest's format: 6 proves the entries with one multiproof
	Entries    int         // entries in the pack, each proven in Checkpoint's tree
	Since      *Checkpoint // the earlier checkpoint of consistency.json, when the pack has one
}

// VerifyPackProofs reads an evidence pack (.tar.gz, one top folder) and
// checks its checkpoint against vkey, the entries of entries.jsonl in the
// checkpoint's tree, and consistency.json when there. The entries are
// proven as the manifest's format says: in format 6 all at once by
// multiproof.txt (CONTRACT.md section 6, "Multiproofs"), in formats 1 to 5
// each by its line of proofs.jsonl (same seq, leaf hash of the line's
// bytes, an inclusion proof to the checkpoint). Errors name the file, the
// line and the seq.
func VerifyPackProofs(path, vkey string) (*PackProofs, error) {
	p, _, err := verifyPack(path, vkey, -1)
	return p, err
}

// EntryProof is an entry of a pack and its RFC 9162 inclusion proof in the
// pack's checkpoint: tlog.CheckRecord(Proof, Checkpoint.Tree.N,
// Checkpoint.Tree.Hash, Seq, tlog.RecordHash(Leaf)) accepts it.
type EntryProof struct {
	Checkpoint Checkpoint
	Seq        int64
	Leaf       []byte      // the entry's exact bytes, its line of entries.jsonl
	Proof      []tlog.Hash // leaf to root
}

// PackEntryProof verifies the pack as VerifyPackProofs does and returns
// the entry at seq with its inclusion proof: derived from multiproof.txt in
// a pack of format 6 (section 6, "One entry's proof from a multiproof"),
// its line of proofs.jsonl in formats 1 to 5. A seq the pack does not hold
// is an error ("seq S is not in the pack").
func PackEntryProof(path, vkey string, seq int64) (*EntryProof, error) {
	_, e, err := verifyPack(path, vkey, seq)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, fmt.Errorf("seq %d is not in the pack", seq)
	}
	return e, nil
}

// verifyPack makes VerifyPackProofs' checks and returns the entry at keep
// with its proof, nil when the pack does not hold it (keep -1: none).
func verifyPack(path, vkey string, keep int64) (*PackProofs, *EntryProof, error) {
	files, err := readPack(path)
	if err != nil {
		return nil, nil, err
	}
	format, err := packFormat(files)
	if err != nil {
		return nil, nil, err
	}
	if err := proofFiles(files, format); err != nil {
		return nil, nil, err
	}
	cp, err := VerifyCheckpoint(files["checkpoint"], vkey)
	if err != nil {
		return nil, nil, err
	}
	out := &PackProofs{Checkpoint: cp, Format: format}
	var e *EntryProof
	if format >= 6 {
		out.Entries, e, err = verifyMultiproofFile(cp.Tree, files["entries.jsonl"], files["redactions.jsonl"],
			files["retention.jsonl"], files["multiproof.txt"], keep)
	} else {
		out.Entries, e, err = verifyEntries(cp.Tree, files["entries.jsonl"], files["proofs.jsonl"], keep)
	}
	if err != nil {
		return nil, nil, err
	}
	if doc, ok := files["consistency.json"]; ok {
		if out.Since, err = verifyConsistencyFile(cp, doc, vkey); err != nil {
			return nil, nil, err
		}
	}
	if e != nil {
		e.Checkpoint = cp
	}
	return out, e, nil
}

// packFormat reads the manifest's format, 1 to 9.
func packFormat(files map[string][]byte) (int, error) {
	doc, ok := files["manifest.json"]
	if !ok {
		return 0, errors.New("manifest.json: missing from the pack")
	}
	var m struct {
		Format *int `json:"format"`
	}
	if err := json.Unmarshal(doc, &m); err != nil || m.Format == nil || *m.Format < 1 || *m.Format > 9 {
		return 0, errors.New("manifest.json: format: want 1, 2, 3, 4, 5, 6, 7, 8 or 9")
	}
	return *m.Format, nil
}

// proofFiles requires the checkpoint, the entries and the file that proves
// them in a pack of format: multiproof.txt in format 6, proofs.jsonl in
// formats 1 to 5; the other is refused (CONTRACT.md section 7).
func proofFiles(files map[string][]byte, format int) error {
	proofs, other := "proofs.jsonl", "multiproof.txt"
	if format >= 6 {
		proofs, other = other, proofs
	}
	for _, name := range []string{"checkpoint", "entries.jsonl", proofs} {
		if _, ok := files[name]; !ok {
			return fmt.Errorf("%s: missing from the pack", name)
		}
	}
	if _, ok := files[other]; ok && format >= 6 {
		return errors.New("proofs.jsonl: a pack of format 6 proves inclusion with multiproof.txt")
	} else if ok {
		return errors.New("multiproof.txt: only a pack of format 6 carries a multiproof")
	}
	return nil
}

type proofLine struct {
	Seq       *int64   `json:"seq"`
	LeafHash  string   `json:"leaf_hash"`
	Inclusion []string `json:"inclusion"`
}

func verifyEntries(tree tlog.Tree, entries, proofs []byte, keep int64) (int, *EntryProof, error) {
	leaves, lines := splitLines(entries), splitLines(proofs)
	if len(leaves) != len(lines) {
		return 0, nil, fmt.Errorf("proofs.jsonl: %d lines for the %d entries of entries.jsonl", len(lines), len(leaves))
	}
	var kept *EntryProof
	for i, leaf := range leaves {
		var p proofLine
		dec := json.NewDecoder(bytes.NewReader(lines[i]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil || p.Seq == nil {
			return 0, nil, fmt.Errorf("proofs.jsonl line %d: want {\"seq\":N,\"leaf_hash\":HEX,\"inclusion\":[HEX,...]}", i+1)
		}
		if got := tlog.RecordHash(leaf); hex.EncodeToString(got[:]) != p.LeafHash {
			return 0, nil, fmt.Errorf("entries.jsonl line %d (seq %d): leaf hash %x, proofs.jsonl says %s", i+1, *p.Seq,
				got[:], p.LeafHash)
		}
		hashes, err := parseHashes(p.Inclusion)
		if err != nil {
			return 0, nil, fmt.Errorf("proofs.jsonl line %d: inclusion: %w", i+1, err)
		}
		if err := VerifyInclusion(tree, *p.Seq, leaf, hashes); err != nil {
			return 0, nil, fmt.Errorf("proofs.jsonl line %d: %w", i+1, err)
		}
		if *p.Seq == keep {
			kept = &EntryProof{Seq: keep, Leaf: leaf, Proof: hashes}
		}
	}
	return len(leaves), kept, nil
}

// verifyMultiproofFile checks the entries (their seqs read from their
// lines) by multiproof.txt: lines of 64 lower-case hex digits, each ending
// in a newline. In a pack of format 8 (CONTRACT.md section 8) an erased
// entry's line is its redacted line, whose leaf hash it states, and the
// redaction entries of redactions.jsonl are walked with the entries, each
// seq once; that a redacted line is its redaction's is ledger-verify-go's
// and ledgerctl verify's to check. In a pack of format 9 (section 9, "A
// run pack across the line") the retention entry of retention.jsonl is
// walked with them too.
func verifyMultiproofFile(tree tlog.Tree, entries, redactions, retention, multiproof []byte, keep int64) (int, *EntryProof, error) {
	leaves := splitLines(entries)
	seqs := make([]int64, len(leaves))
	kept := -1
	for i, leaf := range leaves {
		seq, ok := lineSeq(leaf)
		if !ok {
			return 0, nil, fmt.Errorf("entries.jsonl: line %d: want an entry with its seq", i+1)
		}
		seqs[i] = seq
		if seqs[i] < 0 || seqs[i] >= tree.N {
			return 0, nil, fmt.Errorf("entries.jsonl: line %d: seq %d is not in the checkpoint's tree of size %d", i+1,
				seqs[i], tree.N)
		}
		if i > 0 && seqs[i] <= seqs[i-1] {
			return 0, nil, fmt.Errorf("entries.jsonl: line %d: seq %d after seq %d: seqs ascend", i+1, seqs[i], seqs[i-1])
		}
		if seqs[i] == keep {
			kept = i
		}
	}
	count, keptLeaf := len(leaves), []byte(nil)
	if kept >= 0 {
		keptLeaf = leaves[kept]
	}
	for _, f := range []struct {
		name  string
		lines []byte
	}{{"redactions.jsonl", redactions}, {"retention.jsonl", retention}} {
		if len(f.lines) > 0 {
			var err error
			if seqs, leaves, err = withLedgerLines(f.name, seqs, leaves, f.lines); err != nil {
				return 0, nil, err
			}
		}
	}
	var hashes []tlog.Hash
	for n, rest := 1, multiproof; len(rest) > 0; n++ {
		end := bytes.IndexByte(rest, '\n')
		if end < 0 {
			return 0, nil, fmt.Errorf("multiproof.txt: line %d: no newline at its end", n)
		}
		h, err := parseHashes([]string{string(rest[:end])})
		if err != nil {
			return 0, nil, fmt.Errorf("multiproof.txt: line %d: want 64 lower-case hex digits", n)
		}
		hashes, rest = append(hashes, h[0]), rest[end+1:]
	}
	if kept < 0 {
		keep = -1
	}
	path, err := walkMultiproof(tree, seqs, leaves, hashes, keep)
	if err != nil {
		return 0, nil, fmt.Errorf("multiproof.txt: %w", err)
	}
	if kept < 0 {
		return count, nil, nil
	}
	return count, &EntryProof{Seq: keep, Leaf: keptLeaf, Proof: path}, nil
}

// lineSeq is the seq of an entry's line: a leaf's "seq", or a redacted
// line's.
func lineSeq(line []byte) (int64, bool) {
	var e struct {
		Seq      *int64 `json:"seq"`
		Redacted *struct {
			Seq *int64 `json:"seq"`
		} `json:"redacted"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return 0, false
	}
	if e.Redacted != nil && e.Redacted.Seq != nil && e.Seq == nil {
		return *e.Redacted.Seq, true
	}
	if e.Seq == nil || e.Redacted != nil {
		return 0, false
	}
	return *e.Seq, true
}

// withLedgerLines merges the lines of redactions.jsonl or retention.jsonl
// (name), the ledger's own entries, into the entries by seq, each seq once.
func withLedgerLines(name string, seqs []int64, leaves [][]byte, lines []byte) ([]int64, [][]byte, error) {
	var outSeqs []int64
	var outLeaves [][]byte
	i := 0
	for n, line := range splitLines(lines) {
		seq, ok := lineSeq(line)
		if !ok || bytes.HasPrefix(line, []byte(`{"redacted":`)) {
			return nil, nil, fmt.Errorf("%s: line %d: want a leaf with its seq", name, n+1)
		}
		for i < len(seqs) && seqs[i] < seq {
			outSeqs, outLeaves = append(outSeqs, seqs[i]), append(outLeaves, leaves[i])
			i++
		}
		if i < len(seqs) && seqs[i] == seq {
			continue // in the scope: walked as the entry
		}
		outSeqs, outLeaves = append(outSeqs, seq), append(outLeaves, line)
	}
	return append(outSeqs, seqs[i:]...), append(outLeaves, leaves[i:]...), nil
}

func verifyConsistencyFile(cp Checkpoint, doc []byte, vkey string) (*Checkpoint, error) {
	var c struct {
		OldCheckpoint string   `json:"old_checkpoint"`
		Proof         []string `json:"proof"`
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("consistency.json: want {\"old_checkpoint\":NOTE,\"proof\":[HEX,...]}: %w", err)
	}
	old, err := VerifyCheckpoint([]byte(c.OldCheckpoint), vkey)
	if err != nil {
		return nil, fmt.Errorf("consistency.json: old_checkpoint: %w", err)
	}
	hashes, err := parseHashes(c.Proof)
	if err != nil {
		return nil, fmt.Errorf("consistency.json: proof: %w", err)
	}
	if err := VerifyConsistency(old.Tree, cp.Tree, hashes); err != nil {
		return nil, fmt.Errorf("consistency.json: %w", err)
	}
	return &old, nil
}

func parseHashes(in []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(in))
	for i, s := range in {
		b, err := hex.DecodeString(s)
		if err != nil || len(b) != tlog.HashSize || hex.EncodeToString(b) != s {
			return nil, fmt.Errorf("hash %d: %q is not 64 lowercase hex digits", i, s)
		}
		copy(out[i][:], b)
	}
	return out, nil
}

// splitLines splits newline-terminated lines (the last newline optional).
func splitLines(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

// readPack returns the regular files of the pack's one top folder, by name.
func readPack(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("pack: not gzip: %w", err)
	}
	files := map[string][]byte{}
	top := ""
	t := tar.NewReader(gz)
	for {
		h, err := t.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("pack: not a tar archive: %w", err)
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		dir, name, ok := strings.Cut(h.Name, "/")
		if !ok || strings.Contains(name, "/") || (top != "" && dir != top) || h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("pack: %s: want a regular file in the one top folder", h.Name)
		}
		top = dir
		if files[name], err = io.ReadAll(io.LimitReader(t, 1<<30)); err != nil {
			return nil, fmt.Errorf("pack: %s: %w", h.Name, err)
		}
	}
}
