// Command tiles checks a ledger's C2SP tlog-tiles API over HTTP with Go's
// golang.org/x/mod/sumdb packages, which the ledger's authors did not write:
// the checkpoint with note.Open, then, from hash tiles alone (tlog's
// TileHashReader authenticates every tile it reads against the checkpoint's
// root), inclusion of several entries with tlog.ProveRecord and CheckRecord
// and consistency with an older checkpoint with tlog.ProveTree and
// CheckTree; every entry bundle read holds the leaves whose hashes the tiles
// give. A tile altered in transit must be refused.
//
// Usage: tiles BASE_URL VKEY_FILE OLD_NOTE_FILE SEQ...
// where BASE_URL is the HTTP port (http://HOST:PORT), OLD_NOTE_FILE an older
// signed checkpoint, and each SEQ an entry to prove.
package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const height = 8

// tileServer reads tiles from the ledger's /tlog/tile/ (tlog's paths without
// the height element: "tile/8/0/x001/067" is served as "tile/0/x001/067").
type tileServer struct {
	base    string
	fetched map[string]bool // paths read
	reads   int
	tamper  bool // flip a bit of every tile read, as a dishonest server would
}

func (s *tileServer) Height() int { return height }

func (s *tileServer) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	var out [][]byte
	for _, t := range tiles {
		path := "/tlog/tile/" + strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/", height))
		data, header, err := get(s.base + path)
		if err != nil {
			return nil, err
		}
		if len(data) != t.W*tlog.HashSize {
			return nil, fmt.Errorf("%s: %d bytes, want %d", path, len(data), t.W*tlog.HashSize)
		}
		want := "public, max-age=60"
		if t.W == 1<<height {
			want = "public, max-age=31536000, immutable"
		}
		if got := header.Get("Cache-Control"); got != want {
			return nil, fmt.Errorf("%s: Cache-Control %q, want %q", path, got, want)
		}
		if s.tamper {
			data[len(data)-1] ^= 1
		}
		if s.fetched == nil {
			s.fetched = map[string]bool{}
		}
		s.fetched[path] = true
		s.reads++
		out = append(out, data)
	}
	return out, nil
}

func (s *tileServer) SaveTiles(tiles []tlog.Tile, data [][]byte) {}

func get(url string) ([]byte, http.Header, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != 200 {
		return nil, nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return body, resp.Header, nil
}

func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// open verifies a signed checkpoint note and returns its tree.
func open(msg []byte, verifiers note.Verifiers) (string, tlog.Tree, error) {
	n, err := note.Open(msg, verifiers)
	if err != nil {
		return "", tlog.Tree{}, fmt.Errorf("note.Open: %v", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return "", tlog.Tree{}, fmt.Errorf("checkpoint: want three lines, got %q", n.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return "", tlog.Tree{}, fmt.Errorf("checkpoint size: %v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return "", tlog.Tree{}, fmt.Errorf("checkpoint root: not base64 of 32 bytes")
	}
	var root tlog.Hash
	copy(root[:], raw)
	return lines[0], tlog.Tree{N: size, Hash: root}, nil
}

// bundle reads the entry bundle that holds seq in the tree of size n.
func bundle(base string, n, seq int64) ([][]byte, tlog.Tile, error) {
	t := tlog.Tile{H: height, L: 0, N: seq >> height, W: 1 << height}
	if (t.N+1)<<height > n {
		t.W = int(n - t.N<<height)
	}
	path := "/tlog/tile/entries/" + strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/0/", height))
	data, _, err := get(base + path)
	if err != nil {
		return nil, t, err
	}
	var leaves [][]byte
	for len(data) > 0 {
		if len(data) < 2 {
			return nil, t, fmt.Errorf("%s: truncated after %d entries", path, len(leaves))
		}
		size := int(data[0])<<8 | int(data[1])
		if len(data) < 2+size {
			return nil, t, fmt.Errorf("%s: truncated after %d entries", path, len(leaves))
		}
		leaves = append(leaves, data[2:2+size])
		data = data[2+size:]
	}
	if len(leaves) != t.W {
		return nil, t, fmt.Errorf("%s: %d entries, want %d", path, len(leaves), t.W)
	}
	return leaves, t, nil
}

func run(base string, verifiers note.Verifiers, oldNote []byte, seqs []int64) error {
	msg, _, err := get(base + "/tlog/checkpoint")
	if err != nil {
		return err
	}
	origin, tree, err := open(msg, verifiers)
	if err != nil {
		return fmt.Errorf("/tlog/checkpoint: %v", err)
	}
	oldOrigin, old, err := open(oldNote, verifiers)
	if err != nil {
		return fmt.Errorf("old checkpoint: %v", err)
	}
	if origin != oldOrigin || old.N >= tree.N {
		return fmt.Errorf("old checkpoint %s %d is not older than %s %d", oldOrigin, old.N, origin, tree.N)
	}
	server := &tileServer{base: base}
	hashes := tlog.TileHashReader(tree, server)
	for _, seq := range seqs {
		leaves, t, err := bundle(base, tree.N, seq)
		if err != nil {
			return err
		}
		// The bundle's leaves hash to the level-0 hashes the tiles give.
		indexes := make([]int64, len(leaves))
		for i := range leaves {
			indexes[i] = tlog.StoredHashIndex(0, t.N<<height+int64(i))
		}
		got, err := hashes.ReadHashes(indexes)
		if err != nil {
			return fmt.Errorf("level-0 hashes of bundle %d: %v", t.N, err)
		}
		for i, leaf := range leaves {
			if tlog.RecordHash(leaf) != got[i] {
				return fmt.Errorf("entry %d: the bundle's leaf hashes to %v, the tile holds %v",
					t.N<<height+int64(i), tlog.RecordHash(leaf), got[i])
			}
		}
		proof, err := tlog.ProveRecord(tree.N, seq, hashes)
		if err != nil {
			return fmt.Errorf("entry %d: ProveRecord: %v", seq, err)
		}
		if err := tlog.CheckRecord(proof, tree.N, tree.Hash, seq, tlog.RecordHash(leaves[seq-t.N<<height])); err != nil {
			return fmt.Errorf("entry %d: CheckRecord: %v", seq, err)
		}
	}
	proof, err := tlog.ProveTree(tree.N, old.N, hashes)
	if err != nil {
		return fmt.Errorf("ProveTree %d -> %d: %v", old.N, tree.N, err)
	}
	if err := tlog.CheckTree(proof, tree.N, tree.Hash, old.N, old.Hash); err != nil {
		return fmt.Errorf("CheckTree %d -> %d: %v", old.N, tree.N, err)
	}
	// The tree's partial tiles at levels 0, 1 and 2 were among those read.
	for level, width := range []int64{tree.N % 256, tree.N >> height % 256, tree.N >> (2 * height) % 256} {
		t := tlog.Tile{H: height, L: level, N: tree.N >> (height * (level + 1)), W: int(width)}
		path := "/tlog/tile/" + strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/", height))
		if width == 0 || !server.fetched[path] {
			return fmt.Errorf("the partial tile %s was not read (read: %d tiles)", path, len(server.fetched))
		}
	}
	// The older tree's own partial tiles are served too.
	oldHashes := tlog.TileHashReader(old, &tileServer{base: base})
	if h, err := tlog.TreeHash(old.N, oldHashes); err != nil || h != old.Hash {
		return fmt.Errorf("the tree of %d from its own tiles: %v %v", old.N, h, err)
	}
	// Tiles and bundles beyond the checkpoint, and paths not in the
	// canonical form, are refused.
	n := tree.N
	for path, want := range map[string]int{
		fmt.Sprintf("/tlog/tile/0/%03d.p/%d", n>>height, n%256+1):       404,
		fmt.Sprintf("/tlog/tile/entries/%03d.p/%d", n>>height, n%256+1): 404,
		"/tlog/tile/3/000.p/1":   404,
		"/tlog/tile/0/x000/001":  400,
		"/tlog/tile/8/0/000":     400,
		"/tlog/tile/0/000.p/256": 400,
	} {
		if got := status(base + path); got != want {
			return fmt.Errorf("GET %s: %d, want %d", path, got, want)
		}
	}
	// A tile altered in transit does not verify.
	tampered := tlog.TileHashReader(tree, &tileServer{base: base, tamper: true})
	if _, err := tlog.ProveRecord(tree.N, seqs[0], tampered); err == nil {
		return fmt.Errorf("a tampered tile was accepted")
	} else {
		fmt.Printf("a tampered tile is refused: %v\n", err)
	}
	fmt.Printf("%s: %d entries proved and consistency %d -> %d checked from %d tiles alone (%d reads)\n", origin, len(seqs),
		old.N, tree.N, len(server.fetched), server.reads)
	return nil
}

func main() {
	if len(os.Args) < 5 {
		fmt.Fprintln(os.Stderr, "usage: tiles BASE_URL VKEY_FILE OLD_NOTE_FILE SEQ...")
		os.Exit(2)
	}
	vkey, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	verifier, err := note.NewVerifier(strings.TrimSpace(string(vkey)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "verifier key:", err)
		os.Exit(1)
	}
	oldNote, err := os.ReadFile(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var seqs []int64
	for _, a := range os.Args[4:] {
		seq, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "seq:", err)
			os.Exit(2)
		}
		seqs = append(seqs, seq)
	}
	if err := run(os.Args[1], note.VerifierList(verifier), oldNote, seqs); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}
