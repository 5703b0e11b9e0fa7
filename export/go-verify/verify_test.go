package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// The contract's golden vectors (tests/vectors), data only.
const vectors = "../../tests/vectors/"

func TestGoldenLeavesAreCanonicalAndHashAsPinned(t *testing.T) {
	raw, err := os.ReadFile(vectors + "leaves.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Entries []struct {
			Entry    json.RawMessage `json:"entry"`
			Leaf     string          `json:"leaf_bytes_utf8"`
			LeafHash string          `json:"leaf_hash_hex"`
		} `json:"entries"`
		Root string `json:"root_hex"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var hashes []tlog.Hash
	for i, e := range v.Entries {
		got, err := readEntry([]byte(e.Leaf))
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if hex.EncodeToString(got.hash[:]) != e.LeafHash || got.seq != int64(i) {
			t.Errorf("vector %d: leaf hash %x seq %d, want %s seq %d", i, got.hash, got.seq, e.LeafHash, i)
		}
		// The pretty-printed entry re-encodes to the exact leaf.
		parsed, err := parseJSON(e.Entry)
		if err != nil {
			t.Fatal(err)
		}
		var enc bytes.Buffer
		encodeCanonical(&enc, parsed)
		if enc.String() != e.Leaf {
			t.Errorf("vector %d: encoded\n%s\nwant\n%s", i, enc.String(), e.Leaf)
		}
		hashes = append(hashes, got.hash)
	}
	if root := merkleRoot(hashes); hex.EncodeToString(root[:]) != v.Root {
		t.Errorf("root %x, want %s", root, v.Root)
	}
}

// merkleRoot is RFC 9162 2.1.1 over leaf hashes: split at the largest power
// of two below n.
func merkleRoot(leaves []tlog.Hash) tlog.Hash {
	if len(leaves) == 1 {
		return leaves[0]
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	return tlog.NodeHash(merkleRoot(leaves[:k]), merkleRoot(leaves[k:]))
}

func TestGoldenCheckpointOpens(t *testing.T) {
	raw, err := os.ReadFile(vectors + "checkpoint.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Vkey string `json:"verifier_key"`
		Size int64  `json:"tree_size"`
		Root string `json:"root_hex"`
		Note string `json:"checkpoint_note"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	verifier, err := note.NewVerifier(v.Vkey)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := openCheckpoint("checkpoint", []byte(v.Note), note.VerifierList(verifier), verifier.Name())
	if err != nil {
		t.Fatal(err)
	}
	if cp.size != v.Size || hex.EncodeToString(cp.root[:]) != v.Root {
		t.Errorf("got %s, want size %d root %s", cp, v.Size, v.Root)
	}
	bad := strings.Replace(v.Note, "\n8\n", "\n9\n", 1)
	if _, err := openCheckpoint("checkpoint", []byte(bad), note.VerifierList(verifier), verifier.Name()); err == nil ||
		err.Error() != "checkpoint: signature: invalid signature for key evidence-ledger.test/vectors+3d39d633" {
		t.Errorf("a changed size: %v", err)
	}
}

func TestLeavesOutsideCanonicalFormAreRefusedWithTheRule(t *testing.T) {
	cases := []struct{ leaf, want string }{
		{`{"a":1, "b":2}`, "not canonical JSON (key order, spacing, escaping or number form) from byte 7"},
		{`{"b":1,"a":2}`, "not canonical JSON (key order, spacing, escaping or number form) from byte 2"},
		{`{"a":"\u00e9"}`, "not canonical JSON (key order, spacing, escaping or number form) from byte 6"},
		{`{"a":"\/"}`, "not canonical JSON (key order, spacing, escaping or number form) from byte 6"},
		{`{"a":"\u001F"}`, "not canonical JSON (key order, spacing, escaping or number form) from byte 11"},
		{`{"a":"\u000a"}`, "not canonical JSON (key order, spacing, escaping or number form) from byte 7"},
		{`{"a":1.0}`, "leaf.a: 1.0 is not an integer in [-(2^53-1), 2^53-1]"},
		{`{"a":1e3}`, "leaf.a: 1e3 is not an integer in [-(2^53-1), 2^53-1]"},
		{`{"a":9007199254740992}`, "leaf.a: 9007199254740992 is not an integer in [-(2^53-1), 2^53-1]"},
		{`{"a":-0}`, "not canonical JSON (key order, spacing, escaping or number form) from byte 5"},
		{`{"a":01}`, "JSON at byte 7: malformed number"},
		{`{"a":null}`, "leaf.a: null is not allowed"},
		{`{"a":false}`, "leaf.a: false must be omitted"},
		{`{"a":""}`, "leaf.a: an empty string must be omitted"},
		{`{"a":{}}`, "leaf.a: an empty object must be omitted"},
		{`{"A":1}`, `leaf: key "A" is not ASCII [a-z0-9_.-]`},
		{`{"a":1,"a":1}`, `JSON at byte 10: duplicate key "a"`},
		{"{\"a\":\"\xff\"}", "JSON at byte 6: invalid UTF-8"},
		{"{\"a\":\"\x01\"}", "JSON at byte 6: raw control character in a string"},
		{`{"a":"\ud800"}`, "JSON at byte 12: unpaired surrogate escape"},
		{`{"a":1}` + "\n", "not canonical JSON (key order, spacing, escaping or number form) from byte 7"},
		{`[1]`, "a leaf is a JSON object"},
	}
	for _, c := range cases {
		_, err := canonical([]byte(c.leaf))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: got %v, want %s", c.leaf, err, c.want)
		}
	}
	ok := []string{`{"a":"\u0001\"\\\b\f\n\r\t/` + "\x7f\u2028é😀" + `","b":-9007199254740991,"c":true,"d":[1,{"e":0}]}`}
	for _, leaf := range ok {
		if _, err := canonical([]byte(leaf)); err != nil {
			t.Errorf("%q: %v", leaf, err)
		}
	}
}

func TestEntryFieldsOfFormatVersionOne(t *testing.T) {
	prev := strings.Repeat("0", 64)
	cases := []struct{ leaf, want string }{
		{`{"emitter":"x","extra":1,"logged_at_us":1,"prev":"` + prev + `","receipt":{"team":"t"},"seq":0,"v":1}`, `unknown key "extra"`},
		{`{"emitter":"x","logged_at_us":1,"prev":"` + prev + `","receipt":{"team":"t"},"seq":0,"v":2}`, "v: expected 1"},
		{`{"emitter":"x","logged_at_us":1,"prev":"` + strings.Repeat("A", 64) + `","receipt":{"team":"t"},"seq":0,"v":1}`, "seq 0: prev: expected 64 lowercase hex digits"},
		{`{"emitter":"x","logged_at_us":1,"prev":"` + prev + `","receipt":{"team":"t"},"run_prev":3,"seq":3,"v":1}`, "seq 3: run_prev: expected a seq below 3"},
		{`{"emitter":"x","logged_at_us":1,"prev":"` + prev + `","receipt":{"team":"t"},"run_prev":1,"seq":3,"v":1}`, "seq 3: run_prev: expected none, the receipt has no run_id"},
		{`{"emitter":"x","logged_at_us":1,"prev":"` + prev + `","receipt":{"run_id":"r"},"seq":3,"v":1}`, "seq 3: receipt.team: expected a string"},
	}
	for _, c := range cases {
		_, err := readEntry([]byte(c.leaf))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v, want %s", c.leaf, err, c.want)
		}
	}
}

func TestWindowRunChains(t *testing.T) {
	e := func(seq, runPrev int64, run string) entry {
		return entry{seq: seq, runPrev: runPrev, hasPrev: runPrev >= 0, team: "t", runID: run}
	}
	cases := []struct {
		entries []entry
		want    string
	}{
		{[]entry{e(10, 4, "a"), e(11, 10, "a"), e(12, -1, "b"), e(13, 12, "b")}, ""},
		{[]entry{e(10, 4, "a"), e(12, 11, "a")}, "entries.jsonl seq 12: run_prev: expected 10 (the run's previous entry in the pack), found 11"},
		{[]entry{e(12, 11, "a")}, "entries.jsonl seq 12: run_prev: expected an entry of the run in the pack, found 11"},
		{[]entry{e(10, -1, "a"), e(12, -1, "a")}, "entries.jsonl seq 12: run_prev: expected 10 (the run's previous entry in the pack), found none"},
		{[]entry{e(10, -1, "a"), e(12, 3, "a")}, "entries.jsonl seq 12: run_prev: expected 10 (the run's previous entry in the pack), found 3"},
	}
	for i, c := range cases {
		err := checkRunsFrom(10, c.entries)
		if (err == nil) != (c.want == "") || (err != nil && err.Error() != c.want) {
			t.Errorf("case %d: got %v, want %q", i, err, c.want)
		}
	}
}
