package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// The contract's golden vectors (tests/vectors), data only.
const vectors = "../../../tests/vectors/"

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
		{`{"a":1,"a":1}`, `key a twice`},
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

func TestEntryFieldsOfFormatVersionsOneAndTwo(t *testing.T) {
	prev := strings.Repeat("0", 64)
	cases := []struct{ leaf, want string }{
		{`{"emitter":"x","extra":1,"logged_at_us":1,"prev":"` + prev + `","receipt":{"team":"t"},"seq":0,"v":1}`, `unknown key "extra"`},
		{`{"emitter":"x","logged_at_us":1,"prev":"` + prev + `","receipt":{"team":"t"},"seq":0,"v":3}`, "v: expected 1 or 2"},
		{`{"emitter":"x","logged_at_us":1,"prev":"` + prev + `","receipt":{"team":"t"},"seq":3,"team_prev":1,"v":1}`, `unknown key "team_prev"`},
		{`{"emitter":"x","logged_at_us":1,"prev":"` + prev + `","receipt":{"team":"t"},"seq":3,"team_prev":3,"v":2}`, "seq 3: team_prev: expected a seq below 3"},
		{`{"emitter":"x","logged_at_us":1,"prev":"` + prev + `","receipt":{"team":"t"},"seq":3,"team_prev":-1,"v":2}`, "seq 3: team_prev: expected a seq below 3"},
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

// The run-head map's golden vectors (CONTRACT section 6a): keys, value and
// leaf hashes, the roots after each step (from the tree's definition,
// below), the inclusion and absence proofs, and every tampered proof
// refused with the message the vectors give.
func TestRunMapVectors(t *testing.T) {
	checkMapVectors(t, "runmap.json", func(team, runID string) (mapHash, error) { return runKey(team, runID, 1) })
}

// The run-head map's vectors under run keys of version 2 (section 6a,
// "Which run key"), the same file's shape: every key of a team starts with
// the first 8 bytes of its team key, so each absence proof's leaf of a run
// of a team with runs is a run of that team.
func TestRunMapVectorsOfRunKeysV2(t *testing.T) {
	keyOf := func(team, runID string) (mapHash, error) { return runKey(team, runID, 2) }
	checkMapVectors(t, "runmap_v2.json", keyOf)
	raw, err := os.ReadFile(vectors + "runmap_v2.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Absence []struct {
			Team  string `json:"team"`
			RunID string `json:"run_id"`
			Leaf  *struct {
				Key string `json:"key"`
			} `json:"leaf"`
		} `json:"absence"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	leaves := 0
	for _, p := range v.Absence {
		tk, _ := teamKey(p.Team)
		if p.Leaf != nil {
			leaves++
			if !strings.HasPrefix(p.Leaf.Key, hex.EncodeToString(tk[:8])) {
				t.Errorf("absence of %s/%s: the leaf %s is not a run of the team", p.Team, p.RunID, p.Leaf.Key)
			}
		}
	}
	if leaves == 0 {
		t.Error("runmap_v2.json: no absence proof with a leaf")
	}
}

// The team-head map's golden vectors (section 6a, "The team-head map"): the
// same map keyed by the team key, no run_id.
func TestTeamMapVectors(t *testing.T) {
	checkMapVectors(t, "teammap.json", func(team, runID string) (mapHash, error) {
		if runID != "" {
			return mapHash{}, fmt.Errorf("teammap.json: a run_id %q", runID)
		}
		return teamKey(team)
	})
}

// checkMapVectors checks a map's vectors file, keys made by keyOf.
func checkMapVectors(t *testing.T, file string, keyOf func(team, runID string) (mapHash, error)) {
	raw, err := os.ReadFile(vectors + file)
	if err != nil {
		t.Fatal(err)
	}
	type head struct {
		Count    int64  `json:"count"`
		LastSeq  int64  `json:"last_seq"`
		LastLeaf string `json:"last_leaf_hash"`
	}
	type proof struct {
		Kind string `json:"kind"`
		Key  string `json:"key"`
		Head *head  `json:"head"`
		Leaf *struct {
			Key       string `json:"key"`
			ValueHash string `json:"value_hash"`
		} `json:"leaf"`
		Siblings []string `json:"siblings"`
		Error    string   `json:"error"`
		Reason   string   `json:"reason"`
	}
	var v struct {
		Empty string `json:"empty_root"`
		Steps []struct {
			Team      string `json:"team"`
			RunID     string `json:"run_id"`
			Key       string `json:"key"`
			Head      head   `json:"head"`
			ValueHash string `json:"value_hash"`
			LeafHash  string `json:"leaf_hash"`
			Root      string `json:"root"`
		} `json:"steps"`
		Root      string `json:"root"`
		Inclusion []struct {
			proof
			Team  string `json:"team"`
			RunID string `json:"run_id"`
		} `json:"inclusion"`
		Absence []struct {
			proof
			Team  string `json:"team"`
			RunID string `json:"run_id"`
		} `json:"absence"`
		Tampered   []proof `json:"tampered"`
		LongPrefix struct {
			Team       string   `json:"team"`
			RunIDs     []string `json:"run_ids"`
			Teams      []string `json:"teams"`
			CommonBits int      `json:"common_bits"`
		} `json:"long_prefix"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	h := func(s string) mapHash {
		x, ok := parseHash(s)
		if !ok {
			t.Fatalf("not a hash: %q", s)
		}
		return x
	}
	if len(v.Steps) == 0 || len(v.Inclusion) == 0 || len(v.Absence) == 0 || len(v.Tampered) == 0 {
		t.Fatalf("%s: steps, inclusion, absence or tampered empty", file)
	}
	toHead := func(x head) runHead { return runHead{x.Count, x.LastSeq, h(x.LastLeaf)} }
	if hex.EncodeToString(emptyMap[:]) != v.Empty {
		t.Errorf("empty: %x, want %s", emptyMap, v.Empty)
	}
	runs := map[mapHash]mapHash{}
	for i, s := range v.Steps {
		key, err := keyOf(s.Team, s.RunID)
		if err != nil || hex.EncodeToString(key[:]) != s.Key {
			t.Fatalf("steps[%d]: key %x (%v), want %s", i, key, err, s.Key)
		}
		val, err := valueHash(toHead(s.Head))
		if err != nil || hex.EncodeToString(val[:]) != s.ValueHash {
			t.Fatalf("steps[%d]: value hash %x (%v), want %s", i, val, err, s.ValueHash)
		}
		if leaf := mapLeafHash(key, val); hex.EncodeToString(leaf[:]) != s.LeafHash {
			t.Fatalf("steps[%d]: leaf hash %x, want %s", i, leaf, s.LeafHash)
		}
		runs[key] = val
		if root := mapRoot(runs); hex.EncodeToString(root[:]) != s.Root {
			t.Fatalf("steps[%d]: root %x, want %s", i, root, s.Root)
		}
	}
	root := h(v.Root)
	if mapRoot(runs) != root {
		t.Fatalf("root: want %s", v.Root)
	}
	siblings := func(p proof) []mapHash {
		var out []mapHash
		for _, s := range p.Siblings {
			out = append(out, h(s))
		}
		return out
	}
	verify := func(key mapHash, p proof) error {
		var got mapHash
		var err error
		if p.Head != nil {
			got, err = inclusionRoot(key, toHead(*p.Head), siblings(p))
		} else {
			var leaf *mapLeaf
			if p.Leaf != nil {
				leaf = &mapLeaf{h(p.Leaf.Key), h(p.Leaf.ValueHash)}
			}
			got, err = absenceRoot(key, siblings(p), leaf)
		}
		if err == nil && got != root {
			err = fmt.Errorf("proof: leads to root %x, expected %x", got, root)
		}
		return err
	}
	for i, p := range v.Inclusion {
		key, _ := keyOf(p.Team, p.RunID)
		if p.Head == nil || hex.EncodeToString(key[:]) != p.Key {
			t.Fatalf("inclusion[%d]: not an inclusion proof of %s/%s", i, p.Team, p.RunID)
		}
		if err := verify(key, p.proof); err != nil {
			t.Errorf("inclusion[%d] %s/%s: %v", i, p.Team, p.RunID, err)
		}
	}
	for i, p := range v.Absence {
		key, _ := keyOf(p.Team, p.RunID)
		if p.Head != nil || hex.EncodeToString(key[:]) != p.Key {
			t.Fatalf("absence[%d]: not an absence proof of %s/%s", i, p.Team, p.RunID)
		}
		if err := verify(key, p.proof); err != nil {
			t.Errorf("absence[%d] %s/%s: %v", i, p.Team, p.RunID, err)
		}
	}
	for i, p := range v.Tampered {
		if (p.Kind == "inclusion") != (p.Head != nil) {
			t.Fatalf("tampered[%d]: kind %s", i, p.Kind)
		}
		if err := verify(h(p.Key), p); err == nil || err.Error() != p.Error {
			t.Errorf("tampered[%d] (%s): got %v, want %s", i, p.Reason, err, p.Error)
		}
	}
	var a, b mapHash
	if len(v.LongPrefix.Teams) == 2 {
		a, _ = keyOf(v.LongPrefix.Teams[0], "")
		b, _ = keyOf(v.LongPrefix.Teams[1], "")
	} else {
		a, _ = keyOf(v.LongPrefix.Team, v.LongPrefix.RunIDs[0])
		b, _ = keyOf(v.LongPrefix.Team, v.LongPrefix.RunIDs[1])
	}
	common := 0
	for keyBit(a, common) == keyBit(b, common) {
		common++
	}
	if common != v.LongPrefix.CommonBits {
		t.Errorf("long_prefix: the keys share %d bits, want %d", common, v.LongPrefix.CommonBits)
	}
}

// mapRoot is the root of section 6a's tree over runs (key -> value hash),
// from its definition: empty, a lone leaf, or a node over both halves.
func mapRoot(runs map[mapHash]mapHash) mapHash {
	var keys []mapHash
	for k := range runs {
		keys = append(keys, k)
	}
	return mapSubtree(runs, keys, 0)
}

// mapSubtree is the hash of the subtree at depth holding keys of m.
func mapSubtree(m map[mapHash]mapHash, keys []mapHash, depth int) mapHash {
	switch len(keys) {
	case 0:
		return emptyMap
	case 1:
		return mapLeafHash(keys[0], m[keys[0]])
	}
	var left, right []mapHash
	for _, k := range keys {
		if keyBit(k, depth) == 0 {
			left = append(left, k)
		} else {
			right = append(right, k)
		}
	}
	return mapNodeHash(depth, mapSubtree(m, left, depth+1), mapSubtree(m, right, depth+1))
}

// The golden checkpoint-time notes, versions 1 to 4 (CONTRACT section 5).
func TestGoldenCheckpointTimeNotes(t *testing.T) {
	raw, err := os.ReadFile(vectors + "checkpoint_time.json")
	if err != nil {
		t.Fatal(err)
	}
	type vec struct {
		Vkey   string `json:"verifier_key"`
		Origin string `json:"origin"`
		Size   int64  `json:"tree_size"`
		Root   string `json:"root_hex"`
		Runs   string `json:"runs_hex"`
		Teams  string `json:"teams_hex"`
		Time   int64  `json:"time_us"`
		Note   string `json:"note"`
	}
	var v struct {
		vec
		V2 vec `json:"v2"`
		V3 vec `json:"v3"`
		V4 vec `json:"v4"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	verifier, err := note.NewVerifier(v.Vkey)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []vec{v.vec, v.V2, v.V3, v.V4} {
		got, err := openTimeNote([]byte(want.Note), note.VerifierList(verifier))
		if err != nil {
			t.Fatalf("%q: %v", want.Note, err)
		}
		if got.version != i+1 {
			t.Errorf("%q: version %d, want %d", want.Note, got.version, i+1)
		}
		runs, teams := "", ""
		if got.runs != nil {
			runs = hex.EncodeToString(got.runs[:])
		}
		if got.teams != nil {
			teams = hex.EncodeToString(got.teams[:])
		}
		if got.cp.origin != want.Origin || got.cp.size != want.Size || hex.EncodeToString(got.cp.root[:]) != want.Root ||
			runs != want.Runs || teams != want.Teams || got.timeUs != want.Time {
			t.Errorf("%q: read %+v runs %q teams %q", want.Note, got, runs, teams)
		}
	}
	if v.V2.Runs == "" || v.V3.Teams == "" || v.V3.Runs == "" || v.V4.Runs == "" {
		t.Error("checkpoint_time.json: no v2, v3 or v4 vector")
	}
	// The same log: v4's teams root is v3's; its runs root, of other keys, is
	// the v2-keyed map's.
	if v.V4.Teams != v.V3.Teams || v.V4.Runs == v.V3.Runs || v.V4.Root != v.V3.Root {
		t.Errorf("checkpoint_time.json: v4 runs %s teams %s, v3 runs %s teams %s", v.V4.Runs, v.V4.Teams, v.V3.Runs, v.V3.Teams)
	}
}

// The golden leaves of versions 1 and 2 (CONTRACT section 2): each is read,
// hashes as pinned and is the canonical encoding of its entry; the tree's
// root and the team-head map root (section 6a) of the entries are pinned.
func TestGoldenLeavesOfVersionsOneAndTwo(t *testing.T) {
	raw, err := os.ReadFile(vectors + "leaf_v2.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Entries []struct {
			Entry    json.RawMessage `json:"entry"`
			Leaf     string          `json:"leaf_bytes_utf8"`
			LeafHash string          `json:"leaf_hash_hex"`
		} `json:"entries"`
		Root  string `json:"root_hex"`
		Teams string `json:"teams_root_hex"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var hashes []tlog.Hash
	heads := map[string]runHead{}
	versions := map[int64]int{}
	for i, e := range v.Entries {
		got, err := readEntry([]byte(e.Leaf))
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if hex.EncodeToString(got.hash[:]) != e.LeafHash || got.seq != int64(i) {
			t.Errorf("vector %d: leaf hash %x seq %d, want %s seq %d", i, got.hash, got.seq, e.LeafHash, i)
		}
		parsed, err := parseJSON(e.Entry)
		if err != nil {
			t.Fatal(err)
		}
		var enc bytes.Buffer
		encodeCanonical(&enc, parsed)
		if enc.String() != e.Leaf {
			t.Errorf("vector %d: encoded\n%s\nwant\n%s", i, enc.String(), e.Leaf)
		}
		if got.version == 2 {
			want := fmt.Sprintf(`,"seq":%d,"v":2}`, got.seq)
			if got.hasTeamPrev {
				want = fmt.Sprintf(`,"seq":%d,"team_prev":%d,"v":2}`, got.seq, got.teamPrev)
			}
			if !strings.HasSuffix(e.Leaf, want) {
				t.Errorf("vector %d: a version 2 leaf ending %q", i, e.Leaf[len(e.Leaf)-30:])
			}
		}
		versions[got.version]++
		hashes = append(hashes, got.hash)
		h, seen := heads[got.team]
		if got.version == 2 && (got.hasTeamPrev != seen || seen && got.teamPrev != h.lastSeq) {
			t.Errorf("vector %d: team_prev %d (present %v), the team's previous entry %d (present %v)",
				i, got.teamPrev, got.hasTeamPrev, h.lastSeq, seen)
		}
		heads[got.team] = runHead{h.count + 1, got.seq, got.hash}
	}
	if versions[1] == 0 || versions[2] == 0 {
		t.Errorf("leaf_v2.json: leaves of version 1 (%d) and 2 (%d) expected", versions[1], versions[2])
	}
	if root := merkleRoot(hashes); hex.EncodeToString(root[:]) != v.Root {
		t.Errorf("root %x, want %s", root, v.Root)
	}
	m := map[mapHash]mapHash{}
	for team, h := range heads {
		k, err := teamKey(team)
		if err != nil {
			t.Fatal(err)
		}
		if m[k], err = valueHash(h); err != nil {
			t.Fatal(err)
		}
	}
	if root := mapRoot(m); hex.EncodeToString(root[:]) != v.Teams {
		t.Errorf("teams root %x, want %s", root, v.Teams)
	}
}
