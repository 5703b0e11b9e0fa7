package main

// Packs of format 8 (CONTRACT section 8), made by a real ledgerd through
// tests/erasure_testlib.py (testdata/erasure): genuine, and broken one way
// each and re-signed with that ledger's key (testdata/erasure/signing.key,
// a key made for these packs alone).

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

func erasureVkey(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join("testdata", "erasure", "vkey"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func verifyErasurePack(t *testing.T, path string) (string, int) {
	t.Helper()
	return run(options{pack: path, vkey: erasureVkey(t)})
}

func TestErasedEntriesVerifyAndArePrinted(t *testing.T) {
	want := []string{
		"entry 1: erased by redaction 6 (tool_call of team acme, run run-7): GDPR art. 17 request 881; requested by cn:alice-admin, approved by cn:bob-admin.",
		"entry 3: erased by redaction 5 (agent_exec of team acme, run run-7): court order 2026-117; requested by cn:alice-admin, approved by cn:bob-admin.",
	}
	for _, name := range []string{"run", "seqs", "team"} {
		got, code := verifyErasurePack(t, filepath.Join("testdata", "erasure", name+".tar.gz"))
		lines := strings.Split(strings.TrimSpace(got), "\n")
		if code != 0 || len(lines) < 3 || !strings.HasPrefix(lines[0], "OK ") ||
			strings.Join(lines[len(lines)-2:], "\n") != strings.Join(want, "\n") ||
			strings.Contains(got, "no completion in the log") {
			t.Errorf("%s: exit %d:\n%s", name, code, got)
		}
	}
	// Exported before the erasure: the leaf itself, format 7.
	if got, code := verifyErasurePack(t, filepath.Join("testdata", "erasure", "before.tar.gz")); code != 0 ||
		strings.Contains(got, "erased") {
		t.Errorf("before: exit %d: %s", code, got)
	}
}

// erasurePack reads a pack of testdata/erasure to be rewritten and signed
// with the ledger's own key.
func erasurePack(t *testing.T, name string) *builtPack {
	t.Helper()
	return ledgerPack(t, "erasure", name)
}

// ledgerPack reads pack name of testdata/dir, made by a real ledgerd, to be
// rewritten and signed with that ledger's key (dir/signing.key).
func ledgerPack(t *testing.T, dir, name string) *builtPack {
	t.Helper()
	p, err := readPack(filepath.Join("testdata", dir, name+".tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join("testdata", dir, "signing.key"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(strings.TrimSpace(string(key)))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]interface{}{}
	dec := json.NewDecoder(bytes.NewReader(p.files["manifest.json"]))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for k, v := range p.files {
		if k != "manifest.json" && k != "manifest.sig" {
			files[k] = v
		}
	}
	return &builtPack{files: files, manifest: m, signer: s}
}

func TestBrokenErasuresAreRefused(t *testing.T) {
	entryLines := func(b *builtPack) []string {
		return strings.SplitAfter(strings.TrimSuffix(string(b.files["entries.jsonl"]), "\n"), "\n")
	}
	cases := []struct {
		name, want string
		edit       func(b *builtPack)
	}{
		{"a redacted line whose leaf hash is forged", "FAIL: entries.jsonl: line 2: seq 1: not the redacted line of redaction 6",
			func(b *builtPack) {
				l := entryLines(b)
				i := strings.Index(l[1], `"leaf_hash":"`) + len(`"leaf_hash":"`)
				l[1] = l[1][:i] + strings.Repeat("0", 64) + l[1][i+64:]
				b.files["entries.jsonl"] = []byte(strings.Join(l, "") + "\n")
			}},
		{"redactions.jsonl removed", "FAIL: redactions.jsonl: missing: entries.jsonl line 2 is redacted by seq 6",
			func(b *builtPack) { delete(b.files, "redactions.jsonl") }},
		{"a redaction removed", "FAIL: entries.jsonl: line 2: seq 1: redacted by 6, which redactions.jsonl does not hold",
			func(b *builtPack) {
				r := strings.SplitAfter(string(b.files["redactions.jsonl"]), "\n")
				b.files["redactions.jsonl"] = []byte(r[0])
			}},
		{"the pack called format 7", "FAIL: redactions.jsonl: only a pack of format 8 carries redactions",
			func(b *builtPack) { b.manifest["format"] = 7 }},
		{"a redaction's reason rewritten", "FAIL: multiproof.txt: the entries and the multiproof lead to root",
			func(b *builtPack) {
				b.files["redactions.jsonl"] = bytes.Replace(b.files["redactions.jsonl"], []byte("court order"),
					[]byte("routine tidy"), 1)
			}},
	}
	for _, c := range cases {
		b := erasurePack(t, "run")
		c.edit(b)
		got, code := verifyErasurePack(t, b.write(t))
		if code == 0 || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: exit %d:\n got: %s\nwant: %s...", c.name, code, got, c.want)
		}
	}
}
