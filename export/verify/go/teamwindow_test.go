package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Closed team windows (CONTRACT section 7, format 4), checked through
// verify() on packs built here from the contract's text: leaves of versions
// 1 and 2, an RFC 9162 tree, the team-head map, notes signed with an Ed25519
// key. Tampered packs are re-signed with the same key, as an operator
// holding the ledger's key could.

const testOrigin = "team-window.test/log"

// testLog is a log built leaf by leaf; team chains are kept as the ledger
// keeps them, unless a test asks otherwise.
type testLog struct {
	leaves [][]byte
	es     []entry
	stored []tlog.Hash
}

func (l *testLog) hashes() tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = l.stored[x]
		}
		return out, nil
	})
}

// teamLast returns the seq of team's last entry below n, or -1.
func (l *testLog) teamLast(team string, n int64) int64 {
	for s := n - 1; s >= 0; s-- {
		if l.es[s].team == team {
			return s
		}
	}
	return -1
}

// add appends a leaf of version v (1 or 2) of team logged at loggedAt.
func (l *testLog) add(t *testing.T, team string, loggedAt int64, v int) {
	l.addLinked(t, team, loggedAt, v, l.teamLast(team, int64(len(l.es))))
}

// addLinked appends a leaf whose team_prev is teamPrev (none when < 0).
func (l *testLog) addLinked(t *testing.T, team string, loggedAt int64, v int, teamPrev int64) {
	seq := int64(len(l.es))
	prev := strings.Repeat("0", 64)
	if seq > 0 {
		h := l.es[seq-1].hash
		prev = hex.EncodeToString(h[:])
	}
	link := ""
	if v == 2 && teamPrev >= 0 {
		link = fmt.Sprintf(`,"team_prev":%d`, teamPrev)
	}
	leaf := fmt.Sprintf(`{"emitter":"uri:spiffe://test/gw","logged_at_us":%d,"prev":"%s","receipt":{"kind":"tool_call",`+
		`"receipt_id":"r-%d","team":"%s"},"seq":%d%s,"v":%d}`, loggedAt, prev, seq, team, seq, link, v)
	e, err := readEntry([]byte(leaf))
	if err != nil {
		t.Fatalf("leaf %s: %v", leaf, err)
	}
	hs, err := tlog.StoredHashes(seq, []byte(leaf), l.hashes())
	if err != nil {
		t.Fatal(err)
	}
	l.stored = append(l.stored, hs...)
	l.leaves = append(l.leaves, []byte(leaf))
	l.es = append(l.es, e)
}

// root is the RFC 9162 root of the first n entries: SHA-256 of nothing
// for the empty tree (tlog.TreeHash gives zeros there).
func (l *testLog) root(t *testing.T, n int64) tlog.Hash {
	if n == 0 {
		return sha256.Sum256(nil)
	}
	h, err := tlog.TreeHash(n, l.hashes())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (l *testLog) inclusion(t *testing.T, n, seq int64) []string {
	p, err := tlog.ProveRecord(n, seq, l.hashes())
	if err != nil {
		t.Fatal(err)
	}
	return hexList(p)
}

func hexList(hs []tlog.Hash) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, hex.EncodeToString(h[:]))
	}
	return out
}

// teamMap returns the team-head map of the first n entries, team key ->
// value hash (section 6a).
func (l *testLog) teamMap(t *testing.T, n int64) map[mapHash]mapHash {
	heads := map[string]runHead{}
	for _, e := range l.es[:n] {
		h := heads[e.team]
		heads[e.team] = runHead{h.count + 1, e.seq, e.hash}
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
	return m
}

// mapProofJSON is the section 6a JSON form of the proof for key in m.
func mapProofJSON(m map[mapHash]mapHash, key mapHash, head *runHead) map[string]interface{} {
	var keys []mapHash
	for k := range m {
		keys = append(keys, k)
	}
	var siblings []mapHash // top-down
	depth := 0
	for {
		var same, other []mapHash
		for _, k := range keys {
			if depth < 256 && keyBit(k, depth) == keyBit(key, depth) {
				same = append(same, k)
			} else {
				other = append(other, k)
			}
		}
		if len(keys) <= 1 {
			break
		}
		siblings = append(siblings, mapSubtree(m, other, depth+1))
		keys = same
		depth++
	}
	bottomUp := []string{}
	for i := len(siblings) - 1; i >= 0; i-- {
		bottomUp = append(bottomUp, hex.EncodeToString(siblings[i][:]))
	}
	out := map[string]interface{}{"key": hex.EncodeToString(key[:]), "siblings": bottomUp}
	switch {
	case head != nil:
		out["head"] = map[string]interface{}{"count": head.count, "last_seq": head.lastSeq,
			"last_leaf_hash": hex.EncodeToString(head.lastLeafHash[:])}
	case len(keys) == 1:
		v := m[keys[0]]
		out["leaf"] = map[string]interface{}{"key": hex.EncodeToString(keys[0][:]), "value_hash": hex.EncodeToString(v[:])}
	}
	return out
}

// testKey is the ledger's key of these tests: an Ed25519 key from a fixed
// seed, in the note package's forms.
func testKey(t *testing.T, name string) (note.Signer, note.Verifier, string) {
	skey, vkey, err := note.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 32)), name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, v, vkey
}

func sign(t *testing.T, s note.Signer, text string) []byte {
	msg, err := note.Sign(&note.Note{Text: text}, s)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func b64(h [32]byte) string { return base64.StdEncoding.EncodeToString(h[:]) }

// timeNoteText is a checkpoint-time note of version v (section 5).
func timeNoteText(v int, n int64, root tlog.Hash, runs, teams mapHash, us int64) string {
	text := fmt.Sprintf("evidence-ledger/checkpoint-time/v%d\n%s\n%d\n%s\n", v, testOrigin, n, b64(root))
	if v >= 2 {
		text += "runs " + b64(runs) + "\n"
	}
	if v >= 3 {
		text += "teams " + b64(teams) + "\n"
	}
	return text + fmt.Sprintf("time %d\n", us)
}

// windowPack is a team window and what goes into its pack, before it is
// written: tests change any part of it.
type windowPack struct {
	log          *testLog
	n            int64 // the tree size
	team         string
	fromUs, toUs int64
	format       int
	noteVersion  int
	teamsRoot    mapHash
	entries      []int64 // the seqs in entries.jsonl
	window       map[string]interface{}
	// set to make a seq-range pack instead
	seqScope bool
	extra    map[string][]byte // more files
}

// honestWindow builds what an honest exporter writes for the window
// [fromUs, toUs) of team at tree size n, from CONTRACT section 7.
func honestWindow(t *testing.T, l *testLog, n int64, team string, fromUs, toUs int64) *windowPack {
	w := &windowPack{log: l, n: n, team: team, fromUs: fromUs, toUs: toUs, format: 4, noteVersion: 3,
		window: map[string]interface{}{}}
	var teamSeqs []int64
	for _, e := range l.es[:n] {
		if e.team == team {
			teamSeqs = append(teamSeqs, e.seq)
			if e.loggedAt >= fromUs && e.loggedAt < toUs {
				w.entries = append(w.entries, e.seq)
			}
		}
	}
	tm := l.teamMap(t, n)
	w.teamsRoot = mapRoot(tm)
	bound := func(seq int64) map[string]interface{} {
		return map[string]interface{}{"seq": seq, "leaf": string(l.leaves[seq]), "inclusion": l.inclusion(t, n, seq)}
	}
	// after: walking the team chain down from the head.
	var after *entry
	for i := len(teamSeqs) - 1; i >= 0; i-- {
		e := l.es[teamSeqs[i]]
		if e.loggedAt < toUs {
			break
		}
		after = &l.es[teamSeqs[i]]
		if e.version == 1 {
			break
		}
	}
	key, _ := teamKey(team)
	if after != nil {
		w.window["after"] = bound(after.seq)
	} else if len(teamSeqs) > 0 {
		last := l.es[teamSeqs[len(teamSeqs)-1]]
		w.window["head"] = mapProofJSON(tm, key, &runHead{int64(len(teamSeqs)), last.seq, last.hash})
	} else {
		w.window["head"] = mapProofJSON(tm, key, nil)
	}
	// before: named by the first entry of the window, or the one the walk
	// reaches, or the head.
	var first *entry
	switch {
	case len(w.entries) > 0:
		first = &l.es[w.entries[0]]
	case after != nil:
		first = after
	}
	switch {
	case first != nil && first.version == 2 && first.hasTeamPrev:
		w.window["before"] = bound(first.teamPrev)
	case first == nil && len(teamSeqs) > 0:
		w.window["before"] = bound(teamSeqs[len(teamSeqs)-1])
	}
	return w
}

// seqs are the seqs [from, to) of the entries logged in [fromUs, toUs).
func (w *windowPack) seqs() (int64, int64) {
	from, to := w.n, w.n
	for s := w.n - 1; s >= 0; s-- {
		if w.log.es[s].loggedAt >= w.fromUs {
			from = s
		}
		if w.log.es[s].loggedAt >= w.toUs {
			to = s
		}
	}
	return from, to
}

// write writes the pack signed with s and returns its path.
func (w *windowPack) write(t *testing.T, s note.Signer, vkey string) string {
	l := w.log
	root := l.root(t, w.n)
	files := map[string][]byte{
		"checkpoint":  sign(t, s, fmt.Sprintf("%s\n%d\n%s\n", testOrigin, w.n, b64(root))),
		"ledger.vkey": []byte(vkey + "\n"),
		"checkpoint-time": sign(t, s, timeNoteText(w.noteVersion, w.n, root, sha256.Sum256([]byte("runs")),
			w.teamsRoot, 1_800_000_000_000_000)),
		"outcomes.json": []byte(`{"steps":[]}` + "\n"),
		"report.html":   []byte("<!doctype html>\n"),
	}
	var entries, proofs bytes.Buffer
	for _, seq := range w.entries {
		entries.Write(l.leaves[seq])
		entries.WriteByte('\n')
		h := l.es[seq].hash
		line, _ := json.Marshal(map[string]interface{}{"seq": seq, "leaf_hash": hex.EncodeToString(h[:]),
			"inclusion": l.inclusion(t, w.n, seq)})
		proofs.Write(append(line, '\n'))
	}
	files["entries.jsonl"] = entries.Bytes()
	files["proofs.jsonl"] = proofs.Bytes()
	if w.format == 6 {
		delete(files, "proofs.jsonl")
		files["multiproof.txt"] = multiproofText(l.multiproof(w.n, w.entries))
	}
	if w.window != nil {
		files["team-window.json"], _ = json.Marshal(w.window)
	}
	for name, data := range w.extra {
		files[name] = data
	}
	digests := map[string]string{}
	for name, data := range files {
		sum := sha256.Sum256(data)
		digests[name] = hex.EncodeToString(sum[:])
	}
	from, to := w.seqs()
	scope := map[string]interface{}{"kind": "team", "team": w.team, "from_us": w.fromUs, "to_us": w.toUs,
		"from_seq": from, "to_seq": to}
	if w.seqScope {
		scope = map[string]interface{}{"kind": "seq", "from_seq": w.entries[0], "to_seq": w.entries[len(w.entries)-1] + 1}
	}
	manifest, _ := json.Marshal(map[string]interface{}{"counts": map[string]int{"entries": len(w.entries)},
		"files": digests, "format": w.format, "origin": testOrigin, "root": hex.EncodeToString(root[:]),
		"scope": scope, "tree_size": w.n, "unknown_grace_ms": 30000})
	files["manifest.json"] = append(manifest, '\n')
	sum := sha256.Sum256(files["manifest.json"])
	files["manifest.sig"] = sign(t, s, hex.EncodeToString(sum[:])+"\n")

	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var out bytes.Buffer
	gz := gzip.NewWriter(&out)
	tw := tar.NewWriter(gz)
	for _, name := range names {
		h := &tar.Header{Name: "evidence/" + name, Mode: 0o644, Size: int64(len(files[name])),
			Typeflag: tar.TypeReg, ModTime: zeroTime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(files[name])
	}
	tw.Close()
	gz.Close()
	path := filepath.Join(t.TempDir(), "pack.tar.gz")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// teamLog is the log of these tests: teams t and u interleaved, every leaf
// of version 2, t's entries logged at 100, 200, ... (seqs 0, 2, 4, ...)
// and u's at 150, 250, ... (seqs 1, 3, 5, ...), 20 entries.
func teamLog(t *testing.T) *testLog {
	l := &testLog{}
	for i := int64(0); i < 10; i++ {
		l.add(t, "t", 100*(i+1), 2)
		l.add(t, "u", 100*(i+1)+50, 2)
	}
	return l
}

// checkLine verifies the pack and compares its first line, or its error,
// with want.
func checkLine(t *testing.T, name string, w *windowPack, want string, o ...func(*options)) {
	t.Helper()
	s, _, vkey := testKey(t, testOrigin)
	opts := options{pack: w.write(t, s, vkey), vkey: vkey}
	for _, f := range o {
		f(&opts)
	}
	got, _ := run(opts)
	if got != want {
		t.Errorf("%s:\n got: %s\nwant: %s", name, got, want)
	}
}

// okLine is the OK line of a team window of testLog at tree size n.
func okLine(t *testing.T, w *windowPack, complete string) string {
	root := w.log.root(t, w.n)
	from, to := w.seqs()
	return fmt.Sprintf("OK team %s from_us %d to_us %d (seqs %d:%d): %d entries, tree size %d, root %s; %s; outcomes.json not recomputed",
		w.team, w.fromUs, w.toUs, from, to, len(w.entries), w.n, hex.EncodeToString(root[:]), complete)
}

func TestClosedTeamWindowsAreProvenComplete(t *testing.T) {
	l := teamLog(t)
	cases := []struct {
		name         string
		fromUs, toUs int64
		team         string
		k            int
	}{
		{"a window with entries on both sides (before and after)", 300, 700, "t", 4},
		{"a window at the log's end (before and the head)", 300, 5000, "t", 8},
		{"a window from the team's first entry (no before)", 0, 700, "t", 6},
		{"a window with no entry between two of the team's (before and after)", 310, 390, "t", 0},
		{"a window with no entry after the team's last one (before is the head)", 5000, 6000, "t", 0},
		{"a window with no entry before the team's first one (after only)", 0, 50, "t", 0},
		{"a team with no entry (an absence proof)", 0, 5000, "nobody", 0},
	}
	for _, c := range cases {
		w := honestWindow(t, l, 20, c.team, c.fromUs, c.toUs)
		if len(w.entries) != c.k {
			t.Fatalf("%s: %d entries, want %d", c.name, len(w.entries), c.k)
		}
		checkLine(t, c.name, w, okLine(t, w, fmt.Sprintf(
			"complete: every entry of team %s logged in [%d, %d) up to seq 19 (team chain, %d entries)", c.team, c.fromUs, c.toUs, c.k)))
	}
}

// versionOneLog is a log whose first 10 entries are of version 1 (written
// before the ledger kept team chains) and the next 10 of version 2.
func versionOneLog(t *testing.T) *testLog {
	l := &testLog{}
	for i := int64(0); i < 10; i++ {
		v := 1
		if i >= 5 {
			v = 2
		}
		l.add(t, "t", 100*(i+1), v)
		l.add(t, "u", 100*(i+1)+50, v)
	}
	return l
}

func TestWindowsReachingVersionOneLeavesSayWhatIsNotProven(t *testing.T) {
	l := versionOneLog(t)
	// t's entries: seqs 0-8 (logged 100-500) are version 1, 10-18 version 2.
	w := honestWindow(t, l, 20, "t", 300, 800)
	checkLine(t, "a window over the change to version 2", w, okLine(t, w,
		"complete after seq 8: every entry of team t logged in [300, 800) after seq 8 up to seq 19 (team chain); "+
			"the window's entries up to seq 8 are version 1 leaves, written before the ledger kept team chains: "+
			"that none of them was left out is not proven"))
	if _, ok := w.window["before"]; ok {
		t.Fatal("a window whose first entry is of version 1 has a before")
	}
	w = honestWindow(t, l, 20, "t", 200, 400)
	checkLine(t, "a window of version 1 leaves", w, okLine(t, w,
		"not proven complete: the team's entries around the window are version 1 leaves, written before the ledger kept team chains"))
	w = honestWindow(t, l, 20, "t", 550, 1100)
	checkLine(t, "a window of version 2 leaves whose before is of version 1", w, okLine(t, w,
		"complete: every entry of team t logged in [550, 1100) up to seq 19 (team chain, 5 entries)"))
}

func setBound(w *windowPack, name string, seq int64, t *testing.T) {
	w.window[name] = map[string]interface{}{"seq": seq, "leaf": string(w.log.leaves[seq]), "inclusion": w.log.inclusion(t, w.n, seq)}
}

func TestTeamWindowFileIsRequiredWhereTheNoteSignsTheTeamMapAndRefusedElsewhere(t *testing.T) {
	l := teamLog(t)
	w := honestWindow(t, l, 20, "t", 300, 700)
	w.window = nil
	checkLine(t, "a window whose team-window.json was removed", w,
		"FAIL: team-window.json: missing: a team window whose checkpoint-time note signs a team-head map root carries its team chain proof")
	w.format = 3
	checkLine(t, "the same rewritten as format 3", w,
		"FAIL: checkpoint-time: format 3 pack with a version 3 note: a format 3 pack carries a version 2 note")
	w.noteVersion = 2
	checkLine(t, "the same with a version 2 note, format 4", w.withFormat(4),
		"FAIL: checkpoint-time: a format 4 pack carries a version 3 note (with the team-head map root)")
	w = honestWindow(t, l, 20, "t", 300, 700)
	w.format = 3
	checkLine(t, "a window of format 3 whose note is version 3, with its team-window.json", w,
		"FAIL: checkpoint-time: format 3 pack with a version 3 note: a format 3 pack carries a version 2 note")
	w = honestWindow(t, l, 20, "t", 300, 700)
	w.noteVersion, w.format = 2, 3
	checkLine(t, "a window of format 3 with a version 2 note and team-window.json", w,
		"FAIL: team-window.json: only a team window carries a team chain proof")
	w = honestWindow(t, l, 20, "t", 300, 700)
	w.entries = []int64{4, 5, 6}
	w.seqScope = true
	checkLine(t, "a seq range with team-window.json", w, "FAIL: team-window.json: only a team window carries a team chain proof")
}

func (w *windowPack) withFormat(f int) *windowPack {
	c := *w
	c.format = f
	return &c
}

func TestTeamWindowFileParsesNamingTheField(t *testing.T) {
	l := teamLog(t)
	cases := []struct {
		name   string
		change func(w *windowPack)
		want   string
	}{
		{"both after and head", func(w *windowPack) {
			x := honestWindow(t, l, 20, "t", 300, 5000)
			w.window["head"] = x.window["head"]
		}, "want exactly one of after and head"},
		{"neither after nor head", func(w *windowPack) { delete(w.window, "after") }, "want exactly one of after and head"},
		{"a key of no team window", func(w *windowPack) { w.window["note"] = 1 }, "note: not a field of team-window.json"},
		{"not an object", func(w *windowPack) { w.window = nil; w.extra = map[string][]byte{"team-window.json": []byte("[]")} },
			"want a JSON object"},
		{"before.seq a string", func(w *windowPack) { w.window["before"].(map[string]interface{})["seq"] = "2" },
			"before.seq: want a JSON integer"},
		{"after.leaf missing", func(w *windowPack) { delete(w.window["after"].(map[string]interface{}), "leaf") },
			"after.leaf: missing"},
		{"after.leaf not canonical", func(w *windowPack) {
			b := w.window["after"].(map[string]interface{})
			b["leaf"] = strings.Replace(b["leaf"].(string), ",", ", ", 1)
		}, "after.leaf: not canonical JSON (key order, spacing, escaping or number form) from byte 34"},
		{"before.leaf of version 3", func(w *windowPack) {
			b := w.window["before"].(map[string]interface{})
			b["leaf"] = strings.Replace(b["leaf"].(string), `"v":2`, `"v":3`, 1)
		}, "before.leaf: v: expected 1 or 2"},
		{"before.inclusion not hex", func(w *windowPack) { w.window["before"].(map[string]interface{})["inclusion"] = []string{"xy"} },
			"before.inclusion: hash 0: expected 64 lowercase hex digits"},
		{"before.extra", func(w *windowPack) { w.window["before"].(map[string]interface{})["extra"] = 1 },
			"before.extra: not a field of a team window bound"},
	}
	for _, c := range cases {
		w := honestWindow(t, l, 20, "t", 300, 700)
		c.change(w)
		checkLine(t, c.name, w, "FAIL: team-window.json: "+c.want)
	}
	w := honestWindow(t, l, 20, "t", 300, 5000)
	w.window["head"].(map[string]interface{})["head"].(map[string]interface{})["count"] = 1.5
	checkLine(t, "head.head.count a float", w, "FAIL: team-window.json: head.head.count: want a JSON integer")
	w = honestWindow(t, l, 20, "t", 300, 5000)
	w.window["head"].(map[string]interface{})["extra"] = 1
	checkLine(t, "head.extra", w, "FAIL: team-window.json: head.extra: not a field of a team-head proof")
}

func TestTeamWindowBoundsAreTheTeamsEntriesAroundTheWindow(t *testing.T) {
	l := teamLog(t)
	root := l.root(t, 20)
	rootHex := hex.EncodeToString(root[:])
	cases := []struct {
		name   string
		change func(w *windowPack)
		want   string
	}{
		{"before's seq not its leaf's", func(w *windowPack) { w.window["before"].(map[string]interface{})["seq"] = 3 },
			"before: the leaf is entry 2, the bound's seq 3"},
		{"before of another team", func(w *windowPack) { setBound(w, "before", 1, t) },
			"before: entry 1 is of team u, not the scope's team t"},
		{"after of another team", func(w *windowPack) { setBound(w, "after", 13, t) },
			"after: entry 13 is of team u, not the scope's team t"},
		{"before's proof of another seq", func(w *windowPack) {
			w.window["before"].(map[string]interface{})["inclusion"] = l.inclusion(t, 20, 0)
		}, "before: inclusion proof of entry 2 against tree size 20 root " + rootHex + ": invalid transparency proof"},
		{"before inside the window", func(w *windowPack) { setBound(w, "before", 4, t) },
			"before: entry 4 was logged at 300, not before the window's from_us 300"},
		{"after inside the window", func(w *windowPack) { setBound(w, "after", 10, t) },
			"after: entry 10 was logged at 600, inside the window, which ends at 700"},
	}
	for _, c := range cases {
		w := honestWindow(t, l, 20, "t", 300, 700)
		c.change(w)
		checkLine(t, c.name, w, "FAIL: team-window.json: "+c.want)
	}
	// A leaf beyond the checkpoint: the log at size 20 has entry 21, the
	// pack is of size 20.
	longer := teamLog(t)
	longer.add(t, "t", 1100, 2)
	longer.add(t, "t", 1200, 2)
	w := honestWindow(t, longer, 20, "t", 300, 700)
	w.window["after"] = map[string]interface{}{"seq": 21, "leaf": string(longer.leaves[21]), "inclusion": []string{}}
	checkLine(t, "after beyond the tree size", w,
		"FAIL: team-window.json: after: entry 21: expected a seq below the checkpoint's tree size 20")
	// A log whose times go backwards: the team's entry at seq 9 logged
	// before the window's first entry at seq 6.
	odd := &testLog{}
	for i, at := range []int64{100, 150, 200, 250, 300, 350, 400, 450, 500, 290, 600} {
		team := "t"
		if i%2 == 1 && i != 9 {
			team = "u"
		}
		odd.add(t, team, at, 2)
	}
	w = honestWindow(t, odd, 11, "t", 300, 550)
	setBound(w, "before", 9, t)
	checkLine(t, "before above the pack's first entry", w,
		"FAIL: team-window.json: before: entry 9 is not below the pack's first entry, seq 4")
}

func TestTeamHeadProofMatchesThePacksLastEntry(t *testing.T) {
	l := teamLog(t)
	w := honestWindow(t, l, 20, "t", 300, 5000)
	w.entries = w.entries[:len(w.entries)-1]
	last := l.es[18].hash
	before := l.es[16].hash
	checkLine(t, "the team's last entry dropped", w, fmt.Sprintf(
		"FAIL: team-window.json: head: the team's last entry up to tree size 20 is seq 18 with leaf hash %s, "+
			"the pack's last is seq 16 with leaf hash %s", hex.EncodeToString(last[:]), hex.EncodeToString(before[:])))

	w = honestWindow(t, l, 20, "t", 300, 5000)
	uKey, _ := teamKey("u")
	tKey, _ := teamKey("t")
	w.window["head"] = mapProofJSON(l.teamMap(t, 20), uKey, &runHead{10, 19, l.es[19].hash})
	checkLine(t, "another team's head", w, fmt.Sprintf("FAIL: team-window.json: head: key %s is not the team key of t (%s)",
		hex.EncodeToString(uKey[:]), hex.EncodeToString(tKey[:])))

	// The head at an earlier size (the pack cut at seq 16, its proof from
	// the map of size 17), against the note's root of size 20.
	w = honestWindow(t, l, 20, "t", 300, 5000)
	w.entries = w.entries[:len(w.entries)-1]
	old := l.teamMap(t, 17)
	w.window["head"] = mapProofJSON(old, tKey, &runHead{9, 16, l.es[16].hash})
	oldRoot := mapRoot(old)
	checkLine(t, "a stale head proof", w, fmt.Sprintf(
		"FAIL: team-window.json: head: the proof leads to map root %s, the checkpoint-time note signs %s",
		hex.EncodeToString(oldRoot[:]), hex.EncodeToString(w.teamsRoot[:])))

	// A note signed over a map without team t, its absence proved: the pack
	// still holds t's entries.
	w = honestWindow(t, l, 20, "t", 300, 5000)
	m := l.teamMap(t, 20)
	delete(m, tKey)
	w.teamsRoot = mapRoot(m)
	w.window["head"] = mapProofJSON(m, tKey, nil)
	checkLine(t, "an absence proof beside entries", w,
		"FAIL: team-window.json: head: the map shows no entry of team t up to tree size 20, the pack holds 9")

	// The window after the team's last entry: head names before; before
	// removed, the pack holds nothing the head can be.
	w = honestWindow(t, l, 20, "t", 5000, 6000)
	delete(w.window, "before")
	checkLine(t, "an empty window without before", w, fmt.Sprintf(
		"FAIL: team-window.json: head: the team's last entry up to tree size 20 is seq 18 with leaf hash %s, "+
			"the pack holds no entry of the team and no before", hex.EncodeToString(last[:])))
}

func TestTeamChainWalkFindsEveryEntryLeftOut(t *testing.T) {
	l := teamLog(t)
	w := honestWindow(t, l, 20, "t", 300, 900)
	w.entries = append(w.entries[:2:2], w.entries[3:]...) // 4, 6, [8], 10, 12, 14
	checkLine(t, "an entry dropped inside the window", w,
		"FAIL: team-window.json: entry 10 follows the team's entry 8 (team_prev), which the pack does not hold")

	w = honestWindow(t, l, 20, "t", 300, 900)
	w.entries = w.entries[:len(w.entries)-1]
	checkLine(t, "the window's last entry dropped (after names it)", w,
		"FAIL: team-window.json: entry 16 follows the team's entry 14 (team_prev), which the pack does not hold")

	w = honestWindow(t, l, 20, "t", 300, 900)
	delete(w.window, "before")
	checkLine(t, "before removed", w,
		"FAIL: team-window.json: entry 4 follows the team's entry 2 (team_prev), which the pack does not hold")

	w = honestWindow(t, l, 20, "t", 300, 900)
	w.entries = w.entries[1:]
	setBound(w, "before", 4, t)
	checkLine(t, "the window's first entry made its before", w,
		"FAIL: team-window.json: before: entry 4 was logged at 300, not before the window's from_us 300")

	// A ledger that starts team t's chain twice: seq 6 has no team_prev.
	odd := &testLog{}
	for i := int64(0); i < 6; i++ {
		if i == 3 {
			odd.addLinked(t, "t", 100*(i+1), 2, -1)
		} else {
			odd.add(t, "t", 100*(i+1), 2)
		}
	}
	w = honestWindow(t, odd, 6, "t", 0, 5000)
	checkLine(t, "a second first entry", w,
		"FAIL: team-window.json: entry 3 has no team_prev, so it is its team's first entry, but the pack holds the team's entry 2 below it")
}

// --since with a kept version 3 note: the pack's note is version 3 too.
func TestKeptVersionThreeNoteRequiresVersionThree(t *testing.T) {
	l := teamLog(t)
	s, _, _ := testKey(t, testOrigin)
	oldRoot := l.root(t, 10)
	old := sign(t, s, fmt.Sprintf("%s\n10\n%s\n", testOrigin, b64(oldRoot)))
	kept := sign(t, s, timeNoteText(3, 10, oldRoot, sha256.Sum256([]byte("runs")), mapRoot(l.teamMap(t, 10)), 1_700_000_000_000_000))
	proof, err := tlog.ProveTree(20, 10, l.hashes())
	if err != nil {
		t.Fatal(err)
	}
	consistency, _ := json.Marshal(map[string]interface{}{"old_checkpoint": string(old), "proof": hexList(proof)})
	since := func(o *options) { o.since, o.sinceTime = splitKept(append(append([]byte{}, old...), kept...)) }

	w := honestWindow(t, l, 20, "t", 300, 700)
	w.extra = map[string][]byte{"consistency.json": consistency}
	want := okLine(t, w, "complete: every entry of team t logged in [300, 700) up to seq 19 (team chain, 4 entries)")
	want = strings.Replace(want, "; complete", fmt.Sprintf(", consistent with the --since checkpoint size 10 root %s; complete",
		hex.EncodeToString(oldRoot[:])), 1)
	checkLine(t, "a window --since a version 3 note", w, want, since)

	w.window, w.noteVersion, w.format = nil, 2, 3
	checkLine(t, "a window cut short, its note re-signed as version 2", w,
		"FAIL: checkpoint-time: a version 2 note, but the checkpoint given with --since has a version 3 note: "+
			"a ledger that signs the team-head map root signs it with every later checkpoint", since)
	w.noteVersion, w.format = 1, 2
	checkLine(t, "the same re-signed as version 1", w,
		"FAIL: checkpoint-time: a version 1 note, but the checkpoint given with --since has a version 3 note: "+
			"a ledger that signs the team-head map root signs it with every later checkpoint", since)
}

func TestTimeNoteOfVersionThree(t *testing.T) {
	s, v, _ := testKey(t, testOrigin)
	root := sha256.Sum256([]byte("root"))
	runs := sha256.Sum256([]byte("runs"))
	teams := sha256.Sum256([]byte("teams"))
	got, err := openTimeNote(sign(t, s, timeNoteText(3, 7, root, runs, teams, 12)), note.VerifierList(v))
	if err != nil || got.version != 3 || *got.runs != runs || *got.teams != teams || got.timeUs != 12 || got.cp.size != 7 {
		t.Fatalf("%+v, %v", got, err)
	}
	bad := strings.Replace(timeNoteText(3, 7, root, runs, teams, 12), "teams ", "team ", 1)
	if _, err := openTimeNote(sign(t, s, bad), note.VerifierList(v)); err == nil ||
		err.Error() != fmt.Sprintf("checkpoint-time: expected 'teams ' and the team-head map root in base64, found %q", "team "+b64(teams)) {
		t.Errorf("a bad teams line: %v", err)
	}
	short := strings.Replace(timeNoteText(3, 7, root, runs, teams, 12), "teams "+b64(teams)+"\n", "", 1)
	if _, err := openTimeNote(sign(t, s, short), note.VerifierList(v)); err == nil ||
		!strings.HasPrefix(err.Error(), "checkpoint-time: expected the lines of a version 1, 2, 3 or 4 note") {
		t.Errorf("a version 3 note without teams: %v", err)
	}
	old := []byte("o\n1\n" + b64(root) + "\n\n— o abc\n")
	for _, v := range []int{1, 2, 3} {
		kept := []byte(timeNoteText(v, 7, root, runs, teams, 12))
		cp, tn := splitKept(append(append([]byte{}, old...), kept...))
		if !bytes.Equal(cp, old) || !bytes.Equal(tn, kept) {
			t.Errorf("splitKept v%d: %q, %q", v, cp, tn)
		}
	}
}
