package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Packs of any scope built here from CONTRACT.md's text (sections 2, 5,
// 6a and 7) for the tests of this folder: a log of version 2 leaves whose
// receipts the test gives, the run-head and team-head maps, notes signed
// with the test key, and the archive; tests change any file, the manifest
// or the archive and write the pack re-signed, as an operator holding the
// ledger's key could.

// addReceipt appends a version 2 leaf of receipt r logged at loggedAt, its
// run_prev and team_prev those of the ledger (the previous entry of its run
// and of its team). It returns the seq.
func (l *testLog) addReceipt(t *testing.T, r map[string]interface{}, loggedAt int64) int64 {
	t.Helper()
	return l.addReceiptBy(t, "uri:spiffe://test/gw", r, loggedAt)
}

// addReceiptBy is addReceipt of emitter's receipt ("ledger" for the
// ledger's own).
func (l *testLog) addReceiptBy(t *testing.T, emitter string, r map[string]interface{}, loggedAt int64) int64 {
	t.Helper()
	seq := int64(len(l.es))
	team, _ := r["team"].(string)
	run, _ := r["run_id"].(string)
	prev := strings.Repeat("0", 64)
	if seq > 0 {
		h := l.es[seq-1].hash
		prev = hex.EncodeToString(h[:])
	}
	leaf := map[string]interface{}{"emitter": emitter, "logged_at_us": loggedAt, "prev": prev,
		"receipt": r, "seq": seq, "v": 2}
	if tp := l.teamLast(team, seq); tp >= 0 {
		leaf["team_prev"] = tp
	}
	for s := seq - 1; s >= 0 && run != ""; s-- {
		if l.es[s].team == team && l.es[s].runID == run {
			leaf["run_prev"] = s
			break
		}
	}
	var enc bytes.Buffer
	raw, _ := json.Marshal(leaf)
	v, err := parseJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	encodeCanonical(&enc, v)
	l.push(t, enc.Bytes())
	return seq
}

// push appends a leaf as it is.
func (l *testLog) push(t *testing.T, leaf []byte) {
	t.Helper()
	e, err := readEntry(leaf)
	if err != nil {
		t.Fatalf("leaf %s: %v", leaf, err)
	}
	hs, err := tlog.StoredHashes(int64(len(l.es)), leaf, l.hashes())
	if err != nil {
		t.Fatal(err)
	}
	l.stored = append(l.stored, hs...)
	l.leaves = append(l.leaves, leaf)
	l.es = append(l.es, e)
}

// runMap is the run-head map of the first n entries but those in left out
// (section 6a), under run keys of version 1: what an operator who drops
// them signs.
func (l *testLog) runMap(t *testing.T, n int64, leftOut map[int64]bool) map[mapHash]mapHash {
	return l.runMapKeyed(t, n, leftOut, 1)
}

// runMapKeyed is runMap under run keys of the version given.
func (l *testLog) runMapKeyed(t *testing.T, n int64, leftOut map[int64]bool, version int) map[mapHash]mapHash {
	heads := map[[2]string]runHead{}
	for _, e := range l.es[:n] {
		if e.runID == "" || leftOut[e.seq] {
			continue
		}
		k := [2]string{e.team, e.runID}
		h := heads[k]
		heads[k] = runHead{h.count + 1, e.seq, e.hash}
	}
	m := map[mapHash]mapHash{}
	for k, h := range heads {
		key, err := runKey(k[0], k[1], version)
		if err != nil {
			t.Fatal(err)
		}
		if m[key], err = valueHash(h); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// builtPack is a pack before it is written: its files but the manifest and
// its signature, the manifest's fields, and how the archive is written.
type builtPack struct {
	files    map[string][]byte
	manifest map[string]interface{}
	// manifestText, when set, is written as manifest.json instead of the
	// manifest's compact encoding (its digests are not filled in).
	manifestText []byte
	// topDir writes the top folder's directory entry first; trailing is
	// appended after the gzip stream; mode and mtime of named members.
	topDir   bool
	trailing []byte
	mode     map[string]int64
	mtime    map[string]int64
	order    []string // member order, sorted when nil
	// signer signs manifest.sig; the test key when nil.
	signer note.Signer
}

// runPack is the format 4 pack an honest exporter writes of run team/run
// at tree size n, signed at signedAt with grace ms of grace; entries in
// left out are dropped and the run-head map signed without them (the
// operator's forgery), when given.
func runPack(t *testing.T, l *testLog, n int64, team, run string, signedAt, grace int64, leftOut map[int64]bool) *builtPack {
	t.Helper()
	return runPackOf(t, l, n, team, run, signedAt, grace, leftOut, 4)
}

// runPackOf is runPack of format 4, 5 or 6: a format 5 pack carries a
// version 4 note, its runs root and run-head.json under run keys of version
// 2; a format 6 pack likewise, with multiproof.txt for proofs.jsonl.
func runPackOf(t *testing.T, l *testLog, n int64, team, run string, signedAt, grace int64, leftOut map[int64]bool,
	format int) *builtPack {
	t.Helper()
	runKeys := 1
	if format >= 5 {
		runKeys = 2
	}
	root := l.root(t, n)
	runs := l.runMapKeyed(t, n, leftOut, runKeys)
	teams := l.teamMap(t, n)
	s, _, vkey := testKey(t, testOrigin)
	b := &builtPack{files: map[string][]byte{
		"checkpoint": sign(t, s, fmt.Sprintf("%s\n%d\n%s\n", testOrigin, n, b64(root))),
		"checkpoint-time": sign(t, s, timeNoteText(int(noteVersion(int64(format))), n, root, mapRoot(runs), mapRoot(teams),
			signedAt)),
		"ledger.vkey":   []byte(vkey + "\n"),
		"outcomes.json": []byte(`{"runs":[],"steps":[]}` + "\n"),
		"report.html":   []byte("<!doctype html>\n"),
	}}
	var seqs []int64
	var head *runHead
	for _, e := range l.es[:n] {
		if e.team == team && e.runID == run && !leftOut[e.seq] {
			seqs = append(seqs, e.seq)
			head = &runHead{int64(len(seqs)), e.seq, e.hash}
		}
	}
	b.setEntries(t, l, n, seqs)
	if format == 6 {
		b.setMultiproof(t, l, n, seqs)
	}
	key, err := runKey(team, run, runKeys)
	if err != nil {
		t.Fatal(err)
	}
	b.files["run-head.json"], _ = json.Marshal(mapProofJSON(runs, key, head))
	b.manifest = map[string]interface{}{"counts": map[string]int{"entries": len(seqs)}, "format": format,
		"origin": testOrigin, "root": hex.EncodeToString(root[:]), "tree_size": n, "unknown_grace_ms": grace,
		"scope": map[string]interface{}{"kind": "run", "team": team, "run_id": run}}
	return b
}

// setEntries writes entries.jsonl and proofs.jsonl of the seqs.
func (b *builtPack) setEntries(t *testing.T, l *testLog, n int64, seqs []int64) {
	var entries, proofs bytes.Buffer
	for _, seq := range seqs {
		entries.Write(l.leaves[seq])
		entries.WriteByte('\n')
		h := l.es[seq].hash
		line, _ := json.Marshal(map[string]interface{}{"seq": seq, "leaf_hash": hex.EncodeToString(h[:]),
			"inclusion": l.inclusion(t, n, seq)})
		proofs.Write(append(line, '\n'))
	}
	b.files["entries.jsonl"] = entries.Bytes()
	b.files["proofs.jsonl"] = proofs.Bytes()
}

// setMultiproof writes multiproof.txt of the seqs in place of proofs.jsonl,
// as a pack of format 6 holds.
func (b *builtPack) setMultiproof(t *testing.T, l *testLog, n int64, seqs []int64) {
	delete(b.files, "proofs.jsonl")
	b.files["multiproof.txt"] = multiproofText(l.multiproof(n, seqs))
}

// resignNote replaces a note's text, signed with the test key.
func (b *builtPack) resignNote(t *testing.T, name, text string) {
	s, _, _ := testKey(t, testOrigin)
	b.files[name] = sign(t, s, text)
}

// write writes the pack, the manifest over the files' digests and signed
// with the test key, and returns its path.
func (b *builtPack) write(t *testing.T) string {
	t.Helper()
	s, _, _ := testKey(t, testOrigin)
	if b.signer != nil {
		s = b.signer
	}
	files := map[string][]byte{}
	digests := map[string]string{}
	for name, data := range b.files {
		files[name] = data
		if name != "manifest.sig" {
			sum := sha256.Sum256(data)
			digests[name] = hex.EncodeToString(sum[:])
		}
	}
	m := map[string]interface{}{}
	for k, v := range b.manifest {
		m[k] = v
	}
	m["files"] = digests
	text := b.manifestText
	if text == nil {
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		text = append(raw, '\n')
	}
	files["manifest.json"] = text
	if _, ok := b.files["manifest.sig"]; !ok {
		sum := sha256.Sum256(text)
		files["manifest.sig"] = sign(t, s, hex.EncodeToString(sum[:])+"\n")
	}
	names := b.order
	if names == nil {
		for name := range files {
			names = append(names, name)
		}
		sort.Strings(names)
	}
	var out bytes.Buffer
	gz := gzip.NewWriter(&out)
	tw := tar.NewWriter(gz)
	if b.topDir {
		if err := tw.WriteHeader(&tar.Header{Name: "evidence/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: zeroTime,
			Format: tar.FormatUSTAR}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		h := &tar.Header{Name: "evidence/" + name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg,
			ModTime: zeroTime, Format: tar.FormatPAX}
		if mode, ok := b.mode[name]; ok {
			h.Mode = mode
		}
		if mtime, ok := b.mtime[name]; ok {
			h.ModTime = zeroTime.Add(time.Duration(mtime) * time.Second)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(files[name])
	}
	tw.Close()
	gz.Close()
	out.Write(b.trailing)
	path := filepath.Join(t.TempDir(), "pack.tar.gz")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// printed verifies the pack at path as main does and returns what is
// printed and the exit code.
func printed(t *testing.T, path string, o ...func(*options)) (string, int) {
	t.Helper()
	_, _, vkey := testKey(t, testOrigin)
	opts := options{pack: path, vkey: vkey}
	for _, f := range o {
		f(&opts)
	}
	return run(opts)
}

// checkPack compares what is printed of b with want.
func checkPack(t *testing.T, name string, b *builtPack, want string, o ...func(*options)) {
	t.Helper()
	if got, _ := printed(t, b.write(t), o...); got != want {
		t.Errorf("%s:\n got: %s\nwant: %s", name, got, want)
	}
}

// noteWithLines is a note's text and signature block with lines (each
// without its newline) as signature lines.
func noteWithLines(msg []byte, lines ...string) []byte {
	i := bytes.LastIndex(msg, []byte("\n\n"))
	out := append([]byte{}, msg[:i+2]...)
	for _, l := range lines {
		out = append(out, l+"\n"...)
	}
	return out
}

// sigLines are a note's signature lines, without their newlines.
func sigLines(msg []byte) []string {
	i := bytes.LastIndex(msg, []byte("\n\n"))
	return strings.Split(strings.TrimSuffix(string(msg[i+2:]), "\n"), "\n")
}
