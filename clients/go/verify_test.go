package ledger_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	ledger "evidence-ledger/clients/go"
)

func ledgerctl(t *testing.T, l *testLedger, args ...string) string {
	t.Helper()
	return string(runScript(t, filepath.Join(buildDir(t), "cmd", "ledgerctl"), append([]string{"--server", l.Address}, args...)...))
}

// exportPacks logs two runs, keeps a checkpoint, logs more, and exports
// team-a/run-1 with --since the kept checkpoint and the export flags given
// (none: the latest format, 7). The ledger still runs.
func exportPacks(t *testing.T, flags ...string) (l *testLedger, pack, vkey string) {
	l = startLedger(t)
	e := newEmitter(t, l.Address, ledger.Options{})
	emitAll(t, e, calls(t, 120, "p"))
	if err := e.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(l.work, "old.note")
	if err := os.WriteFile(old, []byte(ledgerctl(t, l, "checkpoint", "--at-least", "120")), 0o644); err != nil {
		t.Fatal(err)
	}
	emitAll(t, e, calls(t, 180, "q"))
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ledgerctl(t, l, "checkpoint", "--at-least", "300")
	pack = filepath.Join(l.work, "run.tar.gz")
	ledgerctl(t, l, append([]string{"export", "--run", "team-a/run-1", "--out", pack, "--since", old}, flags...)...)
	return l, pack, strings.TrimSpace(ledgerctl(t, l, "vkey"))
}

func TestVerifyPackProofsOfARealPack(t *testing.T) {
	for format, flags := range map[int][]string{7: nil, 6: {"--pack-format", "6"}, 5: {"--pack-format", "5"}} {
		_, pack, vkey := exportPacks(t, flags...)
		got, err := ledger.VerifyPackProofs(pack, vkey)
		if err != nil {
			t.Fatal(err)
		}
		// run-1 is receipts 50-99 of each batch: 100 entries, in a tree of 300.
		if got.Format != format || got.Entries != 100 || got.Checkpoint.Tree.N < 300 || got.Since == nil ||
			got.Since.Tree.N < 120 || got.Since.Tree.N > got.Checkpoint.Tree.N ||
			got.Checkpoint.Origin != strings.Split(vkey, "+")[0] {
			t.Fatalf("format %d, %d entries, checkpoint %+v, since %+v", got.Format, got.Entries, got.Checkpoint, got.Since)
		}
	}
}

// Each entry's proof derived from a real format 6 pack is the one the
// ledger serves at the pack's tree size, and tlog.CheckRecord takes it.
func TestPackEntryProofOfARealPackIsTheLedgersProof(t *testing.T) {
	l, pack, vkey := exportPacks(t)
	files := packFiles(t, pack)
	if _, ok := files["multiproof.txt"]; !ok {
		t.Fatal("the pack has no multiproof.txt")
	}
	size := strings.Split(string(files["checkpoint"]), "\n")[1]
	for i, leaf := range strings.Split(strings.TrimSuffix(string(files["entries.jsonl"]), "\n"), "\n") {
		var entry struct {
			Seq int64 `json:"seq"`
		}
		if err := json.Unmarshal([]byte(leaf), &entry); err != nil {
			t.Fatal(err)
		}
		if i%10 != 0 && i != 99 {
			continue
		}
		got, err := ledger.PackEntryProof(pack, vkey, entry.Seq)
		if err != nil {
			t.Fatalf("seq %d: %v", entry.Seq, err)
		}
		tree := got.Checkpoint.Tree
		if string(got.Leaf) != leaf || tlog.CheckRecord(got.Proof, tree.N, tree.Hash, entry.Seq, tlog.RecordHash(got.Leaf)) != nil {
			t.Fatalf("seq %d: %+v", entry.Seq, got)
		}
		var served struct {
			Inclusion []string `json:"inclusion"`
		}
		if err := json.Unmarshal([]byte(ledgerctl(t, l, "prove", "--seq", fmt.Sprint(entry.Seq), "--size", size)), &served); err != nil {
			t.Fatal(err)
		}
		if derived := hexesOf(got.Proof); strings.Join(derived, ",") != strings.Join(served.Inclusion, ",") {
			t.Errorf("seq %d: derived %v, the ledger serves %v", entry.Seq, derived, served.Inclusion)
		}
	}
}

func hexesOf(hs []tlog.Hash) []string {
	var out []string
	for _, h := range hs {
		out = append(out, hex.EncodeToString(h[:]))
	}
	return out
}

// packFiles returns the pack's files by name (without the top folder).
func packFiles(t *testing.T, pack string) map[string][]byte {
	t.Helper()
	f, err := os.Open(pack)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name[strings.Index(h.Name, "/")+1:]], _ = io.ReadAll(tr)
	}
}

// rewrite writes a copy of the pack with some files replaced.
func rewrite(t *testing.T, pack string, replace map[string][]byte) string {
	t.Helper()
	files := packFiles(t, pack)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		data := files[name]
		if r, ok := replace[name]; ok {
			data = r
		}
		tw.WriteHeader(&tar.Header{Name: "evidence/" + name, Mode: 0o644, Size: int64(len(data)), //nolint:errcheck
			Typeflag: tar.TypeReg})
		tw.Write(data) //nolint:errcheck // into a bytes.Buffer
	}
	tw.Close()
	zw.Close()
	path := filepath.Join(t.TempDir(), "tampered.tar.gz")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func leafHash(leaf string) string {
	h := tlog.RecordHash([]byte(leaf))
	return hex.EncodeToString(h[:])
}

func TestVerifyPackProofsRefusesATamperedPack(t *testing.T) {
	_, pack, vkey := exportPacks(t, "--pack-format", "5")
	files := packFiles(t, pack)
	entries := strings.SplitN(string(files["entries.jsonl"]), "\n", 2)
	proofs := strings.SplitN(string(files["proofs.jsonl"]), "\n", 2)
	seq := strings.TrimPrefix(strings.Split(proofs[0], ",")[0], `{"seq":`)
	checkpoint := strings.Split(string(files["checkpoint"]), "\n")
	root, _ := base64.StdEncoding.DecodeString(checkpoint[2])

	// The first entry rewritten (fewer tokens): its leaf hash is not the one
	// proofs.jsonl names.
	changed := strings.Replace(entries[0], `"input_tokens":50`, `"input_tokens":5`, 1)
	if changed == entries[0] {
		t.Fatalf("the first entry has no input_tokens 50: %s", entries[0])
	}
	edited := rewrite(t, pack, map[string][]byte{"entries.jsonl": []byte(changed + "\n" + entries[1])})
	_, err := ledger.VerifyPackProofs(edited, vkey)
	want := fmt.Sprintf("entries.jsonl line 1 (seq %s): leaf hash %s, proofs.jsonl says %s", seq, leafHash(changed),
		leafHash(entries[0]))
	if err == nil || err.Error() != want {
		t.Fatalf("an entry rewritten: %v\nwant %s", err, want)
	}

	// As an attacker would: proofs.jsonl names the new leaf hash too. The
	// inclusion proof no longer leads to the signed root.
	forged := rewrite(t, pack, map[string][]byte{
		"entries.jsonl": []byte(changed + "\n" + entries[1]),
		"proofs.jsonl":  []byte(strings.Replace(proofs[0], leafHash(entries[0]), leafHash(changed), 1) + "\n" + proofs[1]),
	})
	_, err = ledger.VerifyPackProofs(forged, vkey)
	want = fmt.Sprintf("proofs.jsonl line 1: seq %s: the inclusion proof of leaf hash %s does not lead to root %x of size %s",
		seq, leafHash(changed), root, checkpoint[1])
	if err == nil || err.Error() != want {
		t.Fatalf("an entry and its leaf hash rewritten: %v\nwant %s", err, want)
	}

	// The checkpoint signed by a key of the ledger's name that is not the
	// ledger's.
	origin := checkpoint[0]
	skey, _, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	signed, err := note.Sign(&note.Note{Text: strings.Join(checkpoint[:3], "\n") + "\n"}, signer)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ledger.VerifyPackProofs(rewrite(t, pack, map[string][]byte{"checkpoint": signed}), vkey)
	if err == nil || err.Error() != "checkpoint: not signed by "+origin+": note has no verifiable signatures" {
		t.Fatalf("a checkpoint signed by another key: %v", err)
	}

	// consistency.json's proof without its last hash.
	c := files["consistency.json"]
	i := bytes.LastIndex(c, []byte(`,"`))
	cut := append(append([]byte{}, c[:i]...), []byte("]}")...)
	_, err = ledger.VerifyPackProofs(rewrite(t, pack, map[string][]byte{"consistency.json": cut}), vkey)
	if err == nil || !strings.HasPrefix(err.Error(), "consistency.json: consistency: the proof does not lead from size ") {
		t.Fatalf("a consistency proof cut short: %v", err)
	}
}

func TestVerifyPackProofsRefusesATamperedFormat6Pack(t *testing.T) {
	_, pack, vkey := exportPacks(t)
	files := packFiles(t, pack)
	entries := strings.SplitN(string(files["entries.jsonl"]), "\n", 2)
	root, _ := base64.StdEncoding.DecodeString(strings.Split(string(files["checkpoint"]), "\n")[2])
	wrongRoot := regexp.MustCompile(`^multiproof\.txt: the entries and the multiproof lead to root [0-9a-f]{64}, ` +
		`the checkpoint's is ` + hex.EncodeToString(root) + `$`)

	// The first entry rewritten (fewer tokens): the multiproof no longer
	// leads to the signed root.
	changed := strings.Replace(entries[0], `"input_tokens":50`, `"input_tokens":5`, 1)
	if changed == entries[0] {
		t.Fatalf("the first entry has no input_tokens 50: %s", entries[0])
	}
	_, err := ledger.VerifyPackProofs(rewrite(t, pack, map[string][]byte{"entries.jsonl": []byte(changed + "\n" + entries[1])}), vkey)
	if err == nil || !wrongRoot.MatchString(err.Error()) {
		t.Errorf("an entry rewritten: %v", err)
	}
	// The first entry dropped: the run's entries are consecutive seqs, so
	// the leaf left empty has a sibling holding entries and takes a hash of
	// its own, which the list does not have; a hash left out likewise.
	mp := files["multiproof.txt"]
	hashes := bytes.Count(mp, []byte("\n"))
	for name, c := range map[string]struct {
		file string
		data []byte
		used int
	}{
		"the first entry dropped": {"entries.jsonl", []byte(entries[1]), hashes},
		"a hash left out":         {"multiproof.txt", mp[65:], hashes - 1},
	} {
		_, err := ledger.VerifyPackProofs(rewrite(t, pack, map[string][]byte{c.file: c.data}), vkey)
		want := fmt.Sprintf("multiproof.txt: the multiproof ends after %d hashes; the entries' inclusion needs more", c.used)
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", name, err, want)
		}
	}
}

// A run pack across the retention line (format 9, CONTRACT.md section 9),
// made by a real ledgerd over a pruned store (tests/retention_packs.py):
// its multiproof walks the pack's retention entry with the entries, and
// each entry's proof derived from it is one tlog.CheckRecord takes.
func TestVerifyPackProofsOfARunPackAcrossTheRetentionLine(t *testing.T) {
	dir := t.TempDir()
	runScript(t, "/usr/bin/python3", filepath.Join("..", "..", "tests", "retention_packs.py"), "make", buildDir(t), dir)
	pack := filepath.Join(dir, "run9.tar.gz")
	key, err := os.ReadFile(filepath.Join(dir, "vkey"))
	if err != nil {
		t.Fatal(err)
	}
	vkey := strings.TrimSpace(string(key))
	got, err := ledger.VerifyPackProofs(pack, vkey)
	if err != nil {
		t.Fatal(err)
	}
	files := packFiles(t, pack)
	leaves := strings.Split(strings.TrimSuffix(string(files["entries.jsonl"]), "\n"), "\n")
	if got.Format != 9 || got.Entries != len(leaves) || len(leaves) < 2 {
		t.Fatalf("format %d, %d entries (entries.jsonl holds %d)", got.Format, got.Entries, len(leaves))
	}
	for _, i := range []int{0, len(leaves) / 2, len(leaves) - 1} {
		var entry struct {
			Seq int64 `json:"seq"`
		}
		if err := json.Unmarshal([]byte(leaves[i]), &entry); err != nil {
			t.Fatal(err)
		}
		e, err := ledger.PackEntryProof(pack, vkey, entry.Seq)
		if err != nil {
			t.Fatalf("seq %d: %v", entry.Seq, err)
		}
		tree := e.Checkpoint.Tree
		if string(e.Leaf) != leaves[i] || tlog.CheckRecord(e.Proof, tree.N, tree.Hash, entry.Seq, tlog.RecordHash(e.Leaf)) != nil {
			t.Fatalf("seq %d: %+v", entry.Seq, e)
		}
	}
	// Without the retention entry the multiproof does not lead to the root.
	delete(files, "retention.jsonl")
	if _, err := ledger.VerifyPackProofs(writePack(t, files), vkey); err == nil {
		t.Fatal("a format 9 pack without its retention entry was accepted")
	}
}
