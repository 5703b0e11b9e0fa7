// Command tiles checks a pruned ledger's C2SP tlog-tiles API over HTTP
// with Go's golang.org/x/mod/sumdb packages, which the ledger's authors did
// not write (CONTRACT sections 6b and 9): from hash tiles alone, which
// tlog's TileHashReader authenticates against the latest checkpoint,
//   - each entry named kept:SEQ is a leaf in its entry bundle, and its
//     inclusion proof (tlog.ProveRecord, CheckRecord) verifies;
//   - each entry named pruned:SEQ is a pruned line in its bundle,
//     {"pruned":{"leaf_hash":H,"seq":SEQ}}, whose H is the tile's level-0
//     hash, and its inclusion proof verifies with H;
//   - every checkpoint in CHECKPOINTS (JSON lines {"size":S,"note":N},
//     each signed by the key) is consistent with the latest (tlog.ProveTree,
//     CheckTree).
//
// Usage: tiles BASE_URL VKEY_FILE CHECKPOINTS (kept|pruned):SEQ...
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
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

// tileServer reads tiles from the ledger's /tlog/tile/, keeping what it read.
type tileServer struct {
	base  string
	cache map[string][]byte
	reads int
}

func (s *tileServer) Height() int { return height }

func (s *tileServer) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	var out [][]byte
	for _, t := range tiles {
		path := "/tlog/tile/" + strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/", height))
		if data, ok := s.cache[path]; ok {
			out = append(out, data)
			continue
		}
		data, err := get(s.base + path)
		if err != nil {
			return nil, err
		}
		if len(data) != t.W*tlog.HashSize {
			return nil, fmt.Errorf("%s: %d bytes, want %d", path, len(data), t.W*tlog.HashSize)
		}
		s.cache[path] = data
		s.reads++
		out = append(out, data)
	}
	return out, nil
}

func (s *tileServer) SaveTiles(tiles []tlog.Tile, data [][]byte) {}

func get(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// open verifies a signed checkpoint note and returns its tree.
func open(msg []byte, verifiers note.Verifiers) (tlog.Tree, error) {
	n, err := note.Open(msg, verifiers)
	if err != nil {
		return tlog.Tree{}, fmt.Errorf("note.Open: %v", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return tlog.Tree{}, fmt.Errorf("checkpoint: want three lines, got %q", n.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return tlog.Tree{}, fmt.Errorf("checkpoint size: %v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return tlog.Tree{}, fmt.Errorf("checkpoint root: not base64 of 32 bytes")
	}
	var root tlog.Hash
	copy(root[:], raw)
	return tlog.Tree{N: size, Hash: root}, nil
}

// line reads entry seq's line from its bundle in the tree of size n.
func line(base string, n, seq int64) ([]byte, error) {
	t := tlog.Tile{H: height, L: 0, N: seq >> height, W: 1 << height}
	if (t.N+1)<<height > n {
		t.W = int(n - t.N<<height)
	}
	path := "/tlog/tile/entries/" + strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/0/", height))
	data, err := get(base + path)
	if err != nil {
		return nil, err
	}
	for i := int64(0); len(data) >= 2; i++ {
		size := int(data[0])<<8 | int(data[1])
		if len(data) < 2+size {
			return nil, fmt.Errorf("%s: truncated", path)
		}
		if t.N<<height+i == seq {
			return data[2 : 2+size], nil
		}
		data = data[2+size:]
	}
	return nil, fmt.Errorf("%s: no entry %d", path, seq)
}

// prunedHash is H of a pruned line of seq, exactly those bytes.
func prunedHash(l []byte, seq int64) (tlog.Hash, error) {
	var h tlog.Hash
	var v struct {
		Pruned struct {
			LeafHash string `json:"leaf_hash"`
			Seq      int64  `json:"seq"`
		} `json:"pruned"`
	}
	if err := json.Unmarshal(l, &v); err != nil {
		return h, fmt.Errorf("entry %d: not a pruned line: %q", seq, l)
	}
	raw, err := hex.DecodeString(v.Pruned.LeafHash)
	if err != nil || len(raw) != tlog.HashSize || v.Pruned.Seq != seq {
		return h, fmt.Errorf("entry %d: not its pruned line: %q", seq, l)
	}
	copy(h[:], raw)
	want := fmt.Sprintf(`{"pruned":{"leaf_hash":"%s","seq":%d}}`, v.Pruned.LeafHash, seq)
	if string(l) != want {
		return h, fmt.Errorf("entry %d: %q is not exactly %q", seq, l, want)
	}
	return h, nil
}

func run(base string, verifiers note.Verifiers, checkpoints string, wants []string) error {
	msg, err := get(base + "/tlog/checkpoint")
	if err != nil {
		return err
	}
	tree, err := open(msg, verifiers)
	if err != nil {
		return fmt.Errorf("/tlog/checkpoint: %v", err)
	}
	server := &tileServer{base: base, cache: map[string][]byte{}}
	hashes := tlog.TileHashReader(tree, server)
	kept, pruned := 0, 0
	for _, w := range wants {
		kind, number, _ := strings.Cut(w, ":")
		seq, err := strconv.ParseInt(number, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %v", w, err)
		}
		l, err := line(base, tree.N, seq)
		if err != nil {
			return err
		}
		var record tlog.Hash
		switch kind {
		case "kept":
			if !strings.HasPrefix(string(l), `{"emitter":`) {
				return fmt.Errorf("entry %d: want its leaf, found %.80q", seq, l)
			}
			record = tlog.RecordHash(l)
			kept++
		case "pruned":
			if record, err = prunedHash(l, seq); err != nil {
				return err
			}
			pruned++
		default:
			return fmt.Errorf("%s: want kept:SEQ or pruned:SEQ", w)
		}
		got, err := hashes.ReadHashes([]int64{tlog.StoredHashIndex(0, seq)})
		if err != nil {
			return fmt.Errorf("entry %d: level-0 hash: %v", seq, err)
		}
		if got[0] != record {
			return fmt.Errorf("entry %d: its line gives %v, the tile holds %v", seq, record, got[0])
		}
		proof, err := tlog.ProveRecord(tree.N, seq, hashes)
		if err != nil {
			return fmt.Errorf("entry %d: ProveRecord: %v", seq, err)
		}
		if err := tlog.CheckRecord(proof, tree.N, tree.Hash, seq, record); err != nil {
			return fmt.Errorf("entry %d: CheckRecord: %v", seq, err)
		}
	}
	f, err := os.Open(checkpoints)
	if err != nil {
		return err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	consistent := 0
	for scanner.Scan() {
		var c struct {
			Size int64  `json:"size"`
			Note string `json:"note"`
		}
		if err := json.Unmarshal(scanner.Bytes(), &c); err != nil {
			return fmt.Errorf("%s: %v", checkpoints, err)
		}
		old, err := open([]byte(c.Note), verifiers)
		if err != nil || old.N != c.Size {
			return fmt.Errorf("checkpoint of size %d: %v", c.Size, err)
		}
		if old.N > tree.N {
			return fmt.Errorf("checkpoint of size %d is beyond the latest, %d", old.N, tree.N)
		}
		proof, err := tlog.ProveTree(tree.N, old.N, hashes)
		if err != nil {
			return fmt.Errorf("ProveTree %d -> %d: %v", old.N, tree.N, err)
		}
		if err := tlog.CheckTree(proof, tree.N, tree.Hash, old.N, old.Hash); err != nil {
			return fmt.Errorf("CheckTree %d -> %d: %v", old.N, tree.N, err)
		}
		consistent++
	}
	if err := scanner.Err(); err != nil {
		return err
	}
	fmt.Printf("OK: tree of %d: %d kept and %d pruned entries proved, %d checkpoints consistent with it, from %d tiles\n",
		tree.N, kept, pruned, consistent, server.reads)
	return nil
}

func main() {
	if len(os.Args) < 5 {
		fmt.Fprintln(os.Stderr, "usage: tiles BASE_URL VKEY_FILE CHECKPOINTS (kept|pruned):SEQ...")
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
	if err := run(os.Args[1], note.VerifierList(verifier), os.Args[3], os.Args[4:]); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}
