package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// Multiproofs (CONTRACT section 6) on the golden vectors, against tlog on
// random trees and in trees of the largest sizes.

// subtreeHash is MTH(D[lo:hi]) of RFC 9162 2.1.1.
func subtreeHash(leaf func(int64) tlog.Hash, lo, hi int64) tlog.Hash {
	if hi-lo == 1 {
		return leaf(lo)
	}
	k := split(hi - lo)
	return tlog.NodeHash(subtreeHash(leaf, lo, lo+k), subtreeHash(leaf, lo+k, hi))
}

// proveMultiproof is NODES(0, n) of section 6, written from its definition
// for the tests: the prover the verifier is checked against. The empty
// tree's is empty (its root, SHA-256 of nothing, is known without it).
func proveMultiproof(leaf func(int64) tlog.Hash, n int64, seqs []int64) []tlog.Hash {
	if n == 0 {
		return nil
	}
	in := map[int64]bool{}
	for _, s := range seqs {
		in[s] = true
	}
	var nodes func(lo, hi int64) []tlog.Hash
	nodes = func(lo, hi int64) []tlog.Hash {
		holds := false
		for s := range in {
			holds = holds || (lo <= s && s < hi)
		}
		switch {
		case !holds:
			return []tlog.Hash{subtreeHash(leaf, lo, hi)}
		case hi-lo == 1:
			return nil
		}
		k := split(hi - lo)
		return append(nodes(lo, lo+k), nodes(lo+k, hi)...)
	}
	return nodes(0, n)
}

// multiproof is the multiproof of seqs in the log's tree of size n.
func (l *testLog) multiproof(n int64, seqs []int64) []tlog.Hash {
	return proveMultiproof(func(i int64) tlog.Hash { return l.es[i].hash }, n, seqs)
}

// multiproofText is multiproof.txt of a list of hashes.
func multiproofText(hs []tlog.Hash) []byte {
	var b bytes.Buffer
	for _, h := range hs {
		b.WriteString(hex.EncodeToString(h[:]) + "\n")
	}
	return b.Bytes()
}

// listLeaves gives seqs and their leaf hashes, ascending.
type listLeaves struct {
	seqs   []int64
	hashes []tlog.Hash
	next   int
}

func (l *listLeaves) peek() (int64, bool, error) {
	if l.next == len(l.seqs) {
		return 0, false, nil
	}
	return l.seqs[l.next], true, nil
}

func (l *listLeaves) take() tlog.Hash {
	l.next++
	return l.hashes[l.next-1]
}

type multiproofCase struct {
	TreeSize  int64               `json:"tree_size"`
	Seqs      []int64             `json:"seqs"`
	Nodes     []string            `json:"nodes"`
	Root      string              `json:"root"`
	Inclusion map[string][]string `json:"inclusion"`
	Leaves    string              `json:"leaves"`
}

// multiproofVectors reads tests/vectors/multiproof.json and the leaves its
// cases name: merkle.json's leaves_hex, or "leaf i".
func multiproofVectors(t *testing.T) ([]multiproofCase, []struct {
	Why     string   `json:"why"`
	Nodes   []string `json:"nodes"`
	Seqs    []int64  `json:"seqs"`
	Refusal string   `json:"refusal"`
}, func(c multiproofCase, i int64) []byte) {
	raw, err := os.ReadFile(vectors + "multiproof.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases  []multiproofCase `json:"cases"`
		Broken []struct {
			Why     string   `json:"why"`
			Nodes   []string `json:"nodes"`
			Seqs    []int64  `json:"seqs"`
			Refusal string   `json:"refusal"`
		} `json:"broken"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile(vectors + "merkle.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Leaves []string `json:"leaves_hex"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	leaf := func(c multiproofCase, i int64) []byte {
		switch c.Leaves {
		case "merkle.json":
			b, _ := hex.DecodeString(m.Leaves[i])
			return b
		case "leaf i":
			return []byte("leaf " + strconv.FormatInt(i, 10))
		}
		t.Fatalf("case of tree size %d: leaves %q", c.TreeSize, c.Leaves)
		return nil
	}
	return v.Cases, v.Broken, leaf
}

func hexText(nodes []string) []byte {
	if len(nodes) == 0 {
		return nil
	}
	return []byte(strings.Join(nodes, "\n") + "\n")
}

func leavesOf(seqs []int64, leaf func(int64) []byte) *listLeaves {
	l := &listLeaves{seqs: seqs}
	for _, s := range seqs {
		l.hashes = append(l.hashes, tlog.RecordHash(leaf(s)))
	}
	return l
}

func TestMultiproofVectorsLeadToTheRootAndGiveEachEntrysProof(t *testing.T) {
	cases, _, leafOf := multiproofVectors(t)
	for _, c := range cases {
		name := fmt.Sprintf("tree size %d seqs %v", c.TreeSize, c.Seqs)
		leaf := func(i int64) []byte { return leafOf(c, i) }
		hash := func(i int64) tlog.Hash { return tlog.RecordHash(leaf(i)) }
		root, _ := parseHash(c.Root)
		if got := hexList(proveMultiproof(hash, c.TreeSize, c.Seqs)); strings.Join(got, ",") != strings.Join(c.Nodes, ",") {
			t.Errorf("%s: NODES(0, N) of the contract's text is %v, the vector's %v", name, got, c.Nodes)
		}
		if err := checkMultiproof(leavesOf(c.Seqs, leaf), &multiproofFile{rest: hexText(c.Nodes)}, c.TreeSize, root); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for seqText, want := range c.Inclusion {
			seq, _ := strconv.ParseInt(seqText, 10, 64)
			if !holds(c.Seqs, seq) {
				t.Fatalf("%s: an inclusion proof of seq %d, not in the case", name, seq)
			}
			got, path, err := multiproofRoot(leavesOf(c.Seqs, leaf), &multiproofFile{rest: hexText(c.Nodes)}, c.TreeSize, seq)
			if err != nil || got != root {
				t.Fatalf("%s: seq %d: root %v, %v", name, seq, got, err)
			}
			if strings.Join(hexList(path), ",") != strings.Join(want, ",") {
				t.Errorf("%s: seq %d: the proof derived from the multiproof is %v, the vector's %v", name, seq, hexList(path), want)
			}
			if err := tlog.CheckRecord(path, c.TreeSize, root, seq, hash(seq)); err != nil {
				t.Errorf("%s: seq %d: tlog.CheckRecord: %v", name, seq, err)
			}
		}
		if len(c.Inclusion) < len(c.Seqs) && len(c.Inclusion) < 5 {
			t.Errorf("%s: %d inclusion proofs", name, len(c.Inclusion))
		}
	}
}

func holds(seqs []int64, seq int64) bool {
	for _, s := range seqs {
		if s == seq {
			return true
		}
	}
	return false
}

func TestBrokenMultiproofVectorsAreRefusedAsStated(t *testing.T) {
	cases, broken, leafOf := multiproofVectors(t)
	var c multiproofCase
	for _, x := range cases {
		if x.TreeSize == 37 && fmt.Sprint(x.Seqs) == "[1 2 3 17 31 32 33]" {
			c = x
		}
	}
	leaf := func(i int64) []byte { return leafOf(c, i) }
	root, _ := parseHash(c.Root)
	if len(broken) != 6 {
		t.Fatalf("%d broken multiproofs", len(broken))
	}
	for _, b := range broken {
		seqs := c.Seqs
		if b.Seqs != nil {
			seqs = b.Seqs
		}
		var want *regexp.Regexp
		switch b.Refusal {
		case "ends early":
			want = regexp.MustCompile(fmt.Sprintf(`^multiproof\.txt: the multiproof ends after %d hashes; the entries' `+
				`inclusion needs more$`, len(b.Nodes)))
		case "left over":
			want = regexp.MustCompile(fmt.Sprintf(`^multiproof\.txt: the multiproof holds %d hashes; the entries' `+
				`inclusion uses %d$`, len(b.Nodes), len(c.Nodes)))
		case "root":
			want = regexp.MustCompile(`^multiproof\.txt: the entries and the multiproof lead to root [0-9a-f]{64}, ` +
				`the checkpoint's is ` + c.Root + `$`)
		default:
			t.Fatalf("%s: refusal %q", b.Why, b.Refusal)
		}
		err := checkMultiproof(leavesOf(seqs, leaf), &multiproofFile{rest: hexText(b.Nodes)}, c.TreeSize, root)
		if err == nil || !want.MatchString(err.Error()) || strings.Contains(err.Error(), "root "+c.Root+",") {
			t.Errorf("%s: %v, want %s", b.Why, err, want)
		}
	}
}

// A random log's tree: the multiproof of random seqs leads to its root and
// gives each seq the proof tlog.ProveRecord makes.
func TestMultiproofsOfRandomSeqsAgreeWithTlog(t *testing.T) {
	rnd := rand.New(rand.NewSource(6))
	var stored []tlog.Hash
	reader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	var hashes []tlog.Hash
	for i := 0; i < 300; i++ {
		hs, err := tlog.StoredHashes(int64(i), []byte(fmt.Sprintf("leaf %d", i)), reader)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hs...)
		hashes = append(hashes, tlog.RecordHash([]byte(fmt.Sprintf("leaf %d", i))))
	}
	hash := func(i int64) tlog.Hash { return hashes[i] }
	for round := 0; round < 200; round++ {
		n := 1 + rnd.Int63n(300)
		var seqs []int64
		every := 1 + rnd.Int63n(n)
		for s := rnd.Int63n(every); s < n; s += 1 + rnd.Int63n(every) {
			seqs = append(seqs, s)
		}
		root, err := tlog.TreeHash(n, reader)
		if err != nil {
			t.Fatal(err)
		}
		nodes := proveMultiproof(hash, n, seqs)
		list := &listLeaves{seqs: seqs}
		for _, s := range seqs {
			list.hashes = append(list.hashes, hashes[s])
		}
		if err := checkMultiproof(list, &multiproofFile{rest: multiproofText(nodes)}, n, root); err != nil {
			t.Fatalf("tree size %d seqs %v: %v", n, seqs, err)
		}
		for _, s := range seqs {
			list.next = 0
			_, path, err := multiproofRoot(list, &multiproofFile{rest: multiproofText(nodes)}, n, s)
			want, _ := tlog.ProveRecord(n, s, reader)
			if err != nil || fmt.Sprint(path) != fmt.Sprint(want) {
				t.Fatalf("tree size %d seqs %v: seq %d: %v %v, want %v", n, seqs, s, path, err, want)
			}
		}
	}
}

// In trees of up to 2^63 - 1 leaves the walk goes 63 levels down, one
// pending hash a level, and the proofs it derives are those tlog checks
// (up to tlog's bound, 2^62 leaves).
func TestMultiproofsInTheLargestTrees(t *testing.T) {
	for _, n := range []int64{1<<62 - 12345, 1<<63 - 1} {
		seqs := []int64{0, 5, 1 << 61, n - 2, n - 1}
		var hashes []tlog.Hash
		for _, s := range seqs {
			hashes = append(hashes, tlog.RecordHash([]byte(fmt.Sprint(s))))
		}
		// The hashes of the subtrees beside the seqs, made up: whatever
		// they are, the root they lead to proves each seq's leaf.
		var nodes bytes.Buffer
		for i := 0; i < 5*63; i++ {
			sum := sha256.Sum256([]byte(fmt.Sprint(i)))
			nodes.WriteString(hex.EncodeToString(sum[:]) + "\n")
		}
		file := &multiproofFile{rest: nodes.Bytes()}
		root, _, err := multiproofRoot(&listLeaves{seqs: seqs, hashes: hashes}, file, n, -1)
		if err != nil {
			t.Fatal(err)
		}
		used := file.used
		if used < 2*61 || used > 5*63 {
			t.Fatalf("tree size %d: %d hashes used", n, used)
		}
		for i, s := range seqs {
			file := &multiproofFile{rest: nodes.Bytes()}
			got, path, err := multiproofRoot(&listLeaves{seqs: seqs, hashes: hashes}, file, n, s)
			if err != nil || got != root || file.used != used {
				t.Fatalf("tree size %d seq %d: root %v, %d hashes, %v", n, s, got, len(path), err)
			}
			if n <= 1<<62 {
				if err := tlog.CheckRecord(path, n, root, s, hashes[i]); err != nil {
					t.Errorf("tree size %d seq %d: %v", n, s, err)
				}
			}
		}
	}
}
