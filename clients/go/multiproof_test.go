package ledger_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	ledger "evidence-ledger/clients/go"
)

// Multiproofs (CONTRACT.md section 6) on the golden vectors, and packs of
// format 6 built here from the contract's text: no ledgerd.

const vectors = "../../tests/vectors/"

// split is the k of RFC 9162 2.1.1, the largest power of two below n.
func split(n int64) int64 {
	k := int64(1)
	for k*2 < n {
		k *= 2
	}
	return k
}

func subtreeHash(leaf func(int64) tlog.Hash, lo, hi int64) tlog.Hash {
	if hi-lo == 1 {
		return leaf(lo)
	}
	k := split(hi - lo)
	return tlog.NodeHash(subtreeHash(leaf, lo, lo+k), subtreeHash(leaf, lo+k, hi))
}

// nodes is NODES(lo, hi) of section 6, written from its definition.
func nodes(leaf func(int64) tlog.Hash, seqs []int64, lo, hi int64) []tlog.Hash {
	holds := false
	for _, s := range seqs {
		holds = holds || (lo <= s && s < hi)
	}
	switch {
	case !holds:
		return []tlog.Hash{subtreeHash(leaf, lo, hi)}
	case hi-lo == 1:
		return nil
	}
	k := split(hi - lo)
	return append(nodes(leaf, seqs, lo, lo+k), nodes(leaf, seqs, lo+k, hi)...)
}

func hashesOf(t *testing.T, hexes []string) []tlog.Hash {
	t.Helper()
	out := make([]tlog.Hash, len(hexes))
	for i, s := range hexes {
		if _, err := hex.Decode(out[i][:], []byte(s)); err != nil || len(s) != 64 {
			t.Fatalf("hash %q", s)
		}
	}
	return out
}

type multiproofCase struct {
	TreeSize  int64               `json:"tree_size"`
	Seqs      []int64             `json:"seqs"`
	Nodes     []string            `json:"nodes"`
	Root      string              `json:"root"`
	Inclusion map[string][]string `json:"inclusion"`
	Leaves    string              `json:"leaves"`
}

type brokenMultiproof struct {
	Why     string   `json:"why"`
	Nodes   []string `json:"nodes"`
	Seqs    []int64  `json:"seqs"`
	Refusal string   `json:"refusal"`
}

// readVectors reads multiproof.json; leaves gives a case's leaves at seqs
// (merkle.json's leaves_hex, or "leaf i").
func readVectors(t *testing.T) (cases []multiproofCase, broken []brokenMultiproof,
	leaves func(c multiproofCase, seqs []int64) [][]byte) {
	raw, err := os.ReadFile(vectors + "multiproof.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases  []multiproofCase   `json:"cases"`
		Broken []brokenMultiproof `json:"broken"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if raw, err = os.ReadFile(vectors + "merkle.json"); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Leaves []string `json:"leaves_hex"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return v.Cases, v.Broken, func(c multiproofCase, seqs []int64) [][]byte {
		var out [][]byte
		for _, s := range seqs {
			switch c.Leaves {
			case "merkle.json":
				b, _ := hex.DecodeString(m.Leaves[s])
				out = append(out, b)
			case "leaf i":
				out = append(out, []byte("leaf "+strconv.FormatInt(s, 10)))
			default:
				t.Fatalf("leaves %q", c.Leaves)
			}
		}
		return out
	}
}

func TestMultiproofVectorsGiveEachEntrysInclusionProof(t *testing.T) {
	cases, _, leavesOf := readVectors(t)
	for _, c := range cases {
		name := fmt.Sprintf("tree size %d seqs %v", c.TreeSize, c.Seqs)
		tree := tlog.Tree{N: c.TreeSize, Hash: hashesOf(t, []string{c.Root})[0]}
		leaves, list := leavesOf(c, c.Seqs), hashesOf(t, c.Nodes)
		if err := ledger.VerifyMultiproof(tree, c.Seqs, leaves, list); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for seqText, want := range c.Inclusion {
			seq, _ := strconv.ParseInt(seqText, 10, 64)
			got, err := ledger.MultiproofInclusion(tree, c.Seqs, leaves, list, seq)
			if err != nil || fmt.Sprint(got) != fmt.Sprint(hashesOf(t, want)) {
				t.Errorf("%s: seq %d: %v %v, want %v", name, seq, got, err, want)
			}
			leaf := leavesOf(c, []int64{seq})[0]
			if err := tlog.CheckRecord(got, tree.N, tree.Hash, seq, tlog.RecordHash(leaf)); err != nil {
				t.Errorf("%s: seq %d: tlog.CheckRecord: %v", name, seq, err)
			}
		}
	}
}

func TestBrokenMultiproofVectorsAreRefused(t *testing.T) {
	cases, broken, leavesOf := readVectors(t)
	var c multiproofCase
	for _, x := range cases {
		if x.TreeSize == 37 && fmt.Sprint(x.Seqs) == "[1 2 3 17 31 32 33]" {
			c = x
		}
	}
	tree := tlog.Tree{N: c.TreeSize, Hash: hashesOf(t, []string{c.Root})[0]}
	wants := map[string]string{
		"ends early": `^the multiproof ends after %d hashes; the entries' inclusion needs more$`,
		"left over":  `^the multiproof holds %d hashes; the entries' inclusion uses ` + strconv.Itoa(len(c.Nodes)) + `$`,
		"root":       `^the entries and the multiproof lead to root [0-9a-f]{64}, the checkpoint's is ` + c.Root + `$`,
	}
	for _, b := range broken {
		seqs := c.Seqs
		if b.Seqs != nil {
			seqs = b.Seqs
		}
		want := wants[b.Refusal]
		if strings.Contains(want, "%d") {
			want = fmt.Sprintf(want, len(b.Nodes))
		}
		err := ledger.VerifyMultiproof(tree, seqs, leavesOf(c, seqs), hashesOf(t, b.Nodes))
		if want == "" || err == nil || !regexp.MustCompile(want).MatchString(err.Error()) ||
			strings.Contains(err.Error(), "root "+c.Root+",") {
			t.Errorf("%s (%s): %v", b.Why, b.Refusal, err)
		}
	}
}

// testTree is a log of n entries {"seq":i,"x":"..."} and its stored hashes.
type testTree struct {
	leaves [][]byte
	stored []tlog.Hash
}

func (l *testTree) reader() tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = l.stored[x]
		}
		return out, nil
	})
}

func newTestTree(t *testing.T, n int) *testTree {
	l := &testTree{}
	for i := 0; i < n; i++ {
		leaf := []byte(fmt.Sprintf(`{"seq":%d,"x":"entry %d"}`, i, i))
		hs, err := tlog.StoredHashes(int64(i), leaf, l.reader())
		if err != nil {
			t.Fatal(err)
		}
		l.leaves, l.stored = append(l.leaves, leaf), append(l.stored, hs...)
	}
	return l
}

// packOf writes a pack of the entries seqs at the tree's size, of format 6
// (multiproof.txt) or 5 (proofs.jsonl), its checkpoint signed by a new key;
// replace changes files. It returns the pack's path and the key.
func (l *testTree) packOf(t *testing.T, seqs []int64, format int, replace map[string][]byte) (string, string) {
	t.Helper()
	n := int64(len(l.leaves))
	root, err := tlog.TreeHash(n, l.reader())
	if err != nil {
		t.Fatal(err)
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, "multiproof.test/log")
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	cp, err := note.Sign(&note.Note{Text: fmt.Sprintf("multiproof.test/log\n%d\n%s\n", n,
		base64.StdEncoding.EncodeToString(root[:]))}, signer)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"checkpoint": cp, "manifest.json": []byte(fmt.Sprintf(`{"format":%d}`+"\n", format))}
	var entries, proofs bytes.Buffer
	for _, s := range seqs {
		entries.Write(append(l.leaves[s], '\n'))
		p, err := tlog.ProveRecord(n, s, l.reader())
		if err != nil {
			t.Fatal(err)
		}
		h := tlog.RecordHash(l.leaves[s])
		line, _ := json.Marshal(map[string]interface{}{"seq": s, "leaf_hash": hex.EncodeToString(h[:]), "inclusion": hexes(p)})
		proofs.Write(append(line, '\n'))
	}
	files["entries.jsonl"] = entries.Bytes()
	if format == 6 {
		var mp bytes.Buffer
		for _, h := range nodes(func(i int64) tlog.Hash { return tlog.RecordHash(l.leaves[i]) }, seqs, 0, n) {
			mp.WriteString(hex.EncodeToString(h[:]) + "\n")
		}
		files["multiproof.txt"] = mp.Bytes()
	} else {
		files["proofs.jsonl"] = proofs.Bytes()
	}
	for name, data := range replace {
		if data == nil {
			delete(files, name)
		} else {
			files[name] = data
		}
	}
	return writePack(t, files), vkey
}

func hexes(hs []tlog.Hash) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, hex.EncodeToString(h[:]))
	}
	return out
}

func writePack(t *testing.T, files map[string][]byte) string {
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for _, name := range names {
		tw.WriteHeader(&tar.Header{Name: "evidence/" + name, Mode: 0o644, Size: int64(len(files[name])), //nolint:errcheck
			Typeflag: tar.TypeReg})
		tw.Write(files[name]) //nolint:errcheck // into a bytes.Buffer
	}
	tw.Close()
	zw.Close()
	path := filepath.Join(t.TempDir(), "pack.tar.gz")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPackEntryProofDerivesEachEntrysProofFromTheMultiproof(t *testing.T) {
	l := newTestTree(t, 100)
	seqs := []int64{3, 4, 5, 17, 60, 61, 99}
	for _, format := range []int{6, 5} {
		pack, vkey := l.packOf(t, seqs, format, nil)
		got, err := ledger.VerifyPackProofs(pack, vkey)
		if err != nil || got.Format != format || got.Entries != len(seqs) || got.Checkpoint.Tree.N != 100 {
			t.Fatalf("format %d: %+v %v", format, got, err)
		}
		for _, s := range seqs {
			e, err := ledger.PackEntryProof(pack, vkey, s)
			if err != nil {
				t.Fatalf("format %d: seq %d: %v", format, s, err)
			}
			want, _ := tlog.ProveRecord(100, s, l.reader())
			if e.Seq != s || string(e.Leaf) != string(l.leaves[s]) || fmt.Sprint(e.Proof) != fmt.Sprint(want) {
				t.Errorf("format %d: seq %d: %+v, want the proof %v", format, s, e, want)
			}
			tree := e.Checkpoint.Tree
			if err := tlog.CheckRecord(e.Proof, tree.N, tree.Hash, e.Seq, tlog.RecordHash(e.Leaf)); err != nil {
				t.Errorf("format %d: seq %d: tlog.CheckRecord: %v", format, s, err)
			}
		}
		if _, err := ledger.PackEntryProof(pack, vkey, 6); err == nil || err.Error() != "seq 6 is not in the pack" {
			t.Errorf("format %d: a seq the pack does not hold: %v", format, err)
		}
	}
	// A pack with no entry: its multiproof is the root alone.
	pack, vkey := l.packOf(t, nil, 6, nil)
	if got, err := ledger.VerifyPackProofs(pack, vkey); err != nil || got.Entries != 0 {
		t.Errorf("no entry: %+v %v", got, err)
	}
}

func TestAFormat6PackThatDoesNotProveItsEntriesIsRefused(t *testing.T) {
	l := newTestTree(t, 40)
	seqs := []int64{1, 2, 3, 17, 31, 32, 33}
	root, _ := tlog.TreeHash(40, l.reader())
	wrongRoot := regexp.MustCompile(`^multiproof\.txt: the entries and the multiproof lead to root [0-9a-f]{64}, ` +
		`the checkpoint's is ` + hex.EncodeToString(root[:]) + `$`)
	pack, _ := l.packOf(t, seqs, 6, nil)
	files := packFiles(t, pack)
	mp := string(files["multiproof.txt"])
	entries := strings.SplitAfter(string(files["entries.jsonl"]), "\n")
	h := strings.Count(mp, "\n")

	changed := strings.Replace(entries[3], "entry 17", "entry 18", 1)
	for name, c := range map[string]struct {
		replace map[string][]byte
		want    string
	}{
		"an entry changed": {map[string][]byte{"entries.jsonl": []byte(strings.Join(entries[:3], "") + changed +
			strings.Join(entries[4:], ""))}, ""},
		"an entry dropped": {map[string][]byte{"entries.jsonl": []byte(strings.Join(entries[:3], "") +
			strings.Join(entries[4:], ""))}, ""},
		"a hash removed": {map[string][]byte{"multiproof.txt": []byte(mp[65:])},
			fmt.Sprintf("multiproof.txt: the multiproof ends after %d hashes; the entries' inclusion needs more", h-1)},
		"a hash added": {map[string][]byte{"multiproof.txt": []byte(mp + mp[:65])},
			fmt.Sprintf("multiproof.txt: the multiproof holds %d hashes; the entries' inclusion uses %d", h+1, h)},
		"a hash in upper case": {map[string][]byte{"multiproof.txt": []byte(mp[:65] + strings.ToUpper(mp[65:130]) + mp[130:])},
			"multiproof.txt: line 2: want 64 lower-case hex digits"},
		"no newline at the end": {map[string][]byte{"multiproof.txt": []byte(mp[:len(mp)-1])},
			fmt.Sprintf("multiproof.txt: line %d: no newline at its end", h)},
		"an entry beyond the tree": {map[string][]byte{"entries.jsonl": []byte(strings.Join(entries, "") + `{"seq":40}` + "\n")},
			"entries.jsonl: line 8: seq 40 is not in the checkpoint's tree of size 40"},
		"proofs.jsonl beside it": {map[string][]byte{"proofs.jsonl": []byte("\n")},
			"proofs.jsonl: a pack of format 6 proves inclusion with multiproof.txt"},
		"no multiproof.txt": {map[string][]byte{"multiproof.txt": nil}, "multiproof.txt: missing from the pack"},
		"format 5":          {map[string][]byte{"manifest.json": []byte(`{"format":5}`)}, "proofs.jsonl: missing from the pack"},
		"format 10":         {map[string][]byte{"manifest.json": []byte(`{"format":10}`)}, "manifest.json: format: want 1, 2, 3, 4, 5, 6, 7, 8 or 9"},
	} {
		pack, vkey := l.packOf(t, seqs, 6, c.replace)
		_, err := ledger.VerifyPackProofs(pack, vkey)
		if c.want == "" && (err == nil || !wrongRoot.MatchString(err.Error())) || c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err2 := ledger.PackEntryProof(pack, vkey, 1); fmt.Sprint(err2) != fmt.Sprint(err) {
			t.Errorf("%s: PackEntryProof: %v", name, err2)
		}
	}
	pack, vkey := l.packOf(t, seqs, 5, map[string][]byte{"multiproof.txt": files["multiproof.txt"]})
	if _, err := ledger.VerifyPackProofs(pack, vkey); err == nil ||
		err.Error() != "multiproof.txt: only a pack of format 6 carries a multiproof" {
		t.Errorf("multiproof.txt in format 5: %v", err)
	}
}
