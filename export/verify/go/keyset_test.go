package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Key rotation and key sets (CONTRACT section 5d): every case of
// tests/vectors/key_rotation.json (made from the contract's text by
// key_rotation_vectors.py), key set files and key histories read strictly,
// chains of rotations, packs of a log that rotated its key (built here,
// each note signed by the key of its size or by another), the flags, and
// packs holding a key_rotation entry (its statement genuine or forged).

type rotationVectors struct {
	Origin string `json:"origin"`
	Keys   map[string]struct {
		Seed  string `json:"seed_hex"`
		VKey  string `json:"vkey"`
		KeyID string `json:"key_id_hex"`
	} `json:"keys"`
	Entries []struct {
		Leaf string `json:"leaf_bytes_utf8"`
		Hash string `json:"leaf_hash_hex"`
	} `json:"entries"`
	RotationSeq   int64             `json:"rotation_seq"`
	Root          string            `json:"root_hex"`
	StatementText string            `json:"statement_text"`
	StatementNote string            `json:"statement_note"`
	Checkpoints   map[string]string `json:"checkpoints"`
	KeyHistory    string            `json:"key_history"`
	BadRotations  []struct {
		Rule string `json:"rule"`
		Leaf string `json:"leaf_bytes_utf8"`
	} `json:"bad_rotations"`
	KeySets []struct {
		About       string          `json:"about"`
		KeySet      string          `json:"key_set"`
		History     bool            `json:"history"`
		Accepted    bool            `json:"accepted"`
		Ranges      []vectorRange   `json:"ranges"`
		Checkpoints map[string]bool `json:"checkpoints"`
		Error       string          `json:"error"`
	} `json:"key_sets"`
}

// vectorRange is a key trusted from a size until one (nil: unbounded).
type vectorRange struct {
	Key   string `json:"key"`
	From  int64  `json:"from"`
	Until *int64 `json:"until"`
}

func readRotationVectors(t *testing.T) rotationVectors {
	t.Helper()
	raw, err := os.ReadFile(vectors + "key_rotation.json")
	if err != nil {
		t.Fatal(err)
	}
	var v rotationVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.KeySets) == 0 || len(v.BadRotations) == 0 || len(v.Checkpoints) == 0 || len(v.Entries) <= int(v.RotationSeq) {
		t.Fatalf("key_rotation.json: key sets, bad rotations, checkpoints or entries missing")
	}
	return v
}

// keyPair is a key of the tests: its signer and verifier key line.
type keyPair struct {
	s    note.Signer
	vkey string
}

// keyOf is the Ed25519 key of a 32-byte seed, named name (note.GenerateKey
// reads the seed from its reader).
func keyOf(t *testing.T, seed []byte, name string) keyPair {
	t.Helper()
	skey, vkey, err := note.GenerateKey(bytes.NewReader(seed), name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{s, vkey}
}

func seedRange(from byte) []byte {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = from + byte(i)
	}
	return seed
}

// vectorKeys are the vectors' old and new keys, and a third of their
// origin (the seed key_rotation_vectors.py gives it).
func vectorKeys(t *testing.T, v rotationVectors) (old, new, third keyPair) {
	return keyOf(t, seedRange(0), v.Origin), keyOf(t, seedRange(32), v.Origin), keyOf(t, seedRange(64), v.Origin)
}

// signWith signs text with each key, in order.
func signWith(t *testing.T, text string, keys ...keyPair) string {
	t.Helper()
	var signers []note.Signer
	for _, k := range keys {
		signers = append(signers, k.s)
	}
	msg, err := note.Sign(&note.Note{Text: text}, signers...)
	if err != nil {
		t.Fatal(err)
	}
	return string(msg)
}

// noteText is the text of a signed note.
func noteText(msg string) string {
	return msg[:strings.LastIndex(msg, "\n\n")+1]
}

func rangesOf(s *keySet) []vectorRange {
	out := []vectorRange{}
	for _, r := range s.ranges {
		vr := vectorRange{Key: r.key.vkey, From: r.from}
		if r.bounded {
			until := r.until
			vr.Until = &until
		}
		out = append(out, vr)
	}
	return out
}

func showRanges(rs []vectorRange) string {
	var parts []string
	for _, r := range rs {
		until := "on"
		if r.Until != nil {
			until = fmt.Sprintf("until %d", *r.Until)
		}
		parts = append(parts, fmt.Sprintf("%s from %d %s", r.Key, r.From, until))
	}
	return strings.Join(parts, "; ")
}

func mustKeySet(t *testing.T, text string) *keySet {
	t.Helper()
	s, err := parseKeySet([]byte(text))
	if err != nil {
		t.Fatalf("key set %q: %v", text, err)
	}
	return s
}

func TestRotationVectorsKeysAndStatement(t *testing.T) {
	v := readRotationVectors(t)
	old, new, _ := vectorKeys(t, v)
	for name, k := range map[string]keyPair{"old": old, "new": new} {
		want := v.Keys[name]
		if k.vkey != want.VKey {
			t.Errorf("%s key: the seed gives %s, the vectors %s", name, k.vkey, want.VKey)
		}
		lk, err := parseLedgerKey(want.VKey)
		if err != nil {
			t.Fatalf("%s key: %v", name, err)
		}
		if got := fmt.Sprintf("%08x", lk.hash); got != want.KeyID {
			t.Errorf("%s key: key ID %s, the vectors %s", name, got, want.KeyID)
		}
	}
	if got := rotationStatement(v.Origin, v.RotationSeq, old.vkey, new.vkey); got != v.StatementText {
		t.Errorf("statement:\n got %q\nwant %q", got, v.StatementText)
	}
	if got := signWith(t, v.StatementText, old, new); got != v.StatementNote {
		t.Errorf("statement note: signed by the old then the new key:\n got %q\nwant %q", got, v.StatementNote)
	}
	oldK, _ := parseLedgerKey(old.vkey)
	newK, _ := parseLedgerKey(new.vkey)
	if err := checkStatement(v.StatementNote, v.StatementText, oldK, newK); err != nil {
		t.Errorf("the vectors' statement: %v", err)
	}
	// Go's note.Open opens it with either key.
	for _, k := range []*ledgerKey{oldK, newK} {
		if _, err := note.Open([]byte(v.StatementNote), note.VerifierList(k.v)); err != nil {
			t.Errorf("note.Open with %s: %v", k, err)
		}
	}
	// The log: each leaf's hash, the root, and the rotation entry at its seq.
	l := &testLog{}
	for i, e := range v.Entries {
		l.push(t, []byte(e.Leaf))
		if got := hex.EncodeToString(l.es[i].hash[:]); got != e.Hash {
			t.Errorf("entry %d: leaf hash %s, the vectors %s", i, got, e.Hash)
		}
	}
	root := l.root(t, int64(len(v.Entries)))
	if got := hex.EncodeToString(root[:]); got != v.Root {
		t.Errorf("root %s, the vectors %s", got, v.Root)
	}
	if e := l.es[v.RotationSeq]; e.kind != "key_rotation" || e.emitter != "ledger" || e.receiptID != "ledger.key.1" {
		t.Errorf("entry %d: %s %s %s, want the key_rotation ledger.key.1 of the ledger", v.RotationSeq, e.kind, e.emitter,
			e.receiptID)
	}
}

// TestRotationVectorsKeySets: each key set of the vectors, with the key
// history when it says so, accepted with its ranges or refused with its
// error; each checkpoint of the vectors opened against the key trusted at
// its size passes or fails as the vectors say, a failure naming the size
// and the key trusted there.
func TestRotationVectorsKeySets(t *testing.T) {
	v := readRotationVectors(t)
	accepted, refused := 0, 0
	for _, c := range v.KeySets {
		set, err := parseKeySet([]byte(c.KeySet))
		if err == nil && c.History {
			set, err = followHistory(set, []byte(v.KeyHistory))
		}
		if !c.Accepted {
			refused++
			if c.Error == "" || err == nil || !strings.Contains(err.Error(), c.Error) {
				t.Errorf("%s: %v, want an error holding %q", c.About, err, c.Error)
			}
			continue
		}
		accepted++
		if err != nil {
			t.Errorf("%s: %v, want it accepted", c.About, err)
			continue
		}
		if got := rangesOf(set); !reflect.DeepEqual(got, c.Ranges) {
			t.Errorf("%s: ranges\n got %s\nwant %s", c.About, showRanges(got), showRanges(c.Ranges))
		}
		if len(c.Checkpoints) != len(v.Checkpoints) {
			t.Errorf("%s: %d checkpoints judged, the vectors hold %d", c.About, len(c.Checkpoints), len(v.Checkpoints))
		}
		for name, pass := range c.Checkpoints {
			msg := []byte(v.Checkpoints[name])
			keys := noteKeys{set: set}
			vs, err := keys.forCheckpoint(name, msg)
			if err == nil {
				_, err = openCheckpoint(name, msg, vs, set.name)
			}
			if (err == nil) != pass {
				t.Errorf("%s: checkpoint %s: %v, want passes=%v", c.About, name, err, pass)
				continue
			}
			if err == nil {
				continue
			}
			cp, _ := peekCheckpoint(name, msg)
			want := fmt.Sprintf("%s: no key is trusted at size %d", name, cp.size)
			if k := set.keyAt(cp.size); k != nil {
				want = fmt.Sprintf("%s: no valid signature by %s, the key trusted at size %d", name, k, cp.size)
			}
			if err.Error() != want {
				t.Errorf("%s: checkpoint %s: %v, want %s", c.About, name, err, want)
			}
		}
	}
	if accepted == 0 || refused == 0 {
		t.Errorf("the vectors hold %d key sets accepted and %d refused; want both", accepted, refused)
	}
}

// rotationLog is the vectors' log with leaf in place of the rotation entry
// (seq 3), and its key history at the checkpoint of the whole log signed by
// signers: the history an exporter writes, with inclusion the leaf's proof.
func rotationLog(t *testing.T, v rotationVectors, leaf string, signers ...keyPair) (*testLog, string) {
	t.Helper()
	l := &testLog{}
	for i, e := range v.Entries {
		if int64(i) == v.RotationSeq {
			l.push(t, []byte(leaf))
		} else {
			l.push(t, []byte(e.Leaf))
		}
	}
	n := int64(len(v.Entries))
	cp := signWith(t, fmt.Sprintf("%s\n%d\n%s\n", v.Origin, n, b64(l.root(t, n))), signers...)
	return l, historyJSON(t, cp, historyRotation{l.inclusion(t, n, v.RotationSeq), leaf, v.RotationSeq})
}

type historyRotation struct {
	Inclusion []string `json:"inclusion"`
	Leaf      string   `json:"leaf"`
	Seq       int64    `json:"seq"`
}

// historyJSON writes a key history as the exporter does: keys sorted, no
// whitespace.
func historyJSON(t *testing.T, checkpoint string, rotations ...historyRotation) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if rotations == nil {
		rotations = []historyRotation{}
	}
	if err := enc.Encode(map[string]interface{}{"checkpoint": checkpoint, "rotations": rotations}); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func TestRotationVectorsBadRotationsAreRefused(t *testing.T) {
	v := readRotationVectors(t)
	old, new, _ := vectorKeys(t, v)
	// The harness writes the vectors' history from their own leaf, and it
	// is followed.
	_, good := rotationLog(t, v, v.Entries[v.RotationSeq].Leaf, new)
	if good != v.KeyHistory {
		t.Fatalf("the history written here:\n%s\nthe vectors':\n%s", good, v.KeyHistory)
	}
	if _, err := followHistory(mustKeySet(t, old.vkey+"\n"), []byte(good)); err != nil {
		t.Fatalf("the genuine rotation: %v", err)
	}
	_, _, third := vectorKeys(t, v)
	oldID, newID, thirdID := keyName(old), keyName(new), keyName(third)
	// What each rule's refusal says, after "key history: the rotation at
	// seq 3: ".
	refusals := map[string]string{
		"note: its text names seq 4, the entry is seq 3": `note: text: line 3: want "seq 3", found "seq 4"`,
		"note: its first signature line is the new key's, the old key's comes first": "note: signature line 1: by " +
			newID + ", want the old key's, " + oldID,
		"note: no signature line by new_key": "note: want exactly two signature lines (the old key's, then the new key's), " +
			"found 1",
		"new_key: a key other than the one the note was signed by": "note: signature line 2: by " + newID +
			", want the new key's, " + thirdID,
		"new_key: the same key as old_key": "new_key: " + oldID + ", the same key ID or public key as old_key " + oldID +
			": a rotation moves to another key",
		"receipt_id: ledger.key.2 for the log's first rotation": `leaf: receipt_id: want ledger.key.1 (rotation 1 of the log), ` +
			`found "ledger.key.2"`,
		"emitter: an emitter's key_rotation": `leaf: emitter: want ledger (the ledger alone writes key_rotation entries), ` +
			`found "uri:spiffe://example/gateway"`,
	}
	for _, bad := range v.BadRotations {
		want, ok := refusals[bad.Rule]
		if !ok {
			t.Errorf("bad rotation %q: no refusal expected here for this rule", bad.Rule)
			continue
		}
		_, history := rotationLog(t, v, bad.Leaf, new)
		_, err := followHistory(mustKeySet(t, old.vkey+"\n"), []byte(history))
		if want = fmt.Sprintf("key history: the rotation at seq %d: %s", v.RotationSeq, want); err == nil ||
			err.Error() != want {
			t.Errorf("bad rotation %q:\n got %v\nwant %s", bad.Rule, err, want)
		}
	}
}

// leafWith is leaf (canonical JSON) with its receipt changed by edit, in
// canonical form again.
func leafWith(t *testing.T, leaf string, edit func(entry, receipt map[string]interface{})) string {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(leaf))
	d.UseNumber()
	var m map[string]interface{}
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	edit(m, m["receipt"].(map[string]interface{}))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	val, err := parseJSON(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	encodeCanonical(&out, val)
	return out.String()
}

func TestKeyHistoryIsReadStrictly(t *testing.T) {
	v := readRotationVectors(t)
	old, new, _ := vectorKeys(t, v)
	oldSet := mustKeySet(t, old.vkey+"\n")
	leaf := v.Entries[v.RotationSeq].Leaf
	l, good := rotationLog(t, v, leaf, new)
	n := int64(len(v.Entries))
	proof := l.inclusion(t, n, v.RotationSeq)
	cpText := noteText(v.Checkpoints["size5_new"])
	newID, oldID := keyName(new), keyName(old)
	var parts map[string]json.RawMessage
	if err := json.Unmarshal([]byte(good), &parts); err != nil {
		t.Fatal(err)
	}
	spaced := fmt.Sprintf("{ \"rotations\" : %s ,\n\t\"checkpoint\":%s }\n", parts["rotations"], parts["checkpoint"])
	noRotations, _ := json.Marshal(map[string]string{"checkpoint": v.Checkpoints["size5_new"]})
	rot := func(edit func(entry, receipt map[string]interface{})) string {
		_, h := rotationLog(t, v, leafWith(t, leaf, edit), new)
		return h
	}
	at3 := "key history: the rotation at seq 3: "
	for _, c := range []struct{ about, history, want string }{
		{"the genuine history", good, ""},
		{"the genuine history, spaced and reordered", spaced, ""},
		{"another key", strings.Replace(good, `{"checkpoint"`, `{"x":1,"checkpoint"`, 1), "key history: x: not a field"},
		{"no rotations", string(noRotations), "key history: rotations: missing"},
		{"a key twice", strings.Replace(good, `{"checkpoint"`, `{"rotations":[],"checkpoint"`, 1), "key history: key rotations twice"},
		{"not an object", "[]", "key history: want a JSON object"},
		{"a rotation with another key", strings.Replace(good, `"seq":3}`, `"seq":3,"size":5}`, 1),
			"key history: rotation 1: size: not a field"},
		{"a rotation without its proof", strings.Replace(good, `"inclusion":`, `"x":`, 1),
			"key history: rotation 1: x: not a field"},
		{"the history's seq not the leaf's", strings.Replace(good, `"seq":3}`, `"seq":2}`, 1),
			"key history: the rotation at seq 2: leaf: seq 3, the history gives 2"},
		{"a rotation listed twice", historyJSON(t, v.Checkpoints["size5_new"], historyRotation{proof, leaf, 3},
			historyRotation{proof, leaf, 3}), "key history: rotation 2: seq 3 is not above 3, the seq of the rotation " +
			"before: rotations are listed by ascending seq"},
		{"an inclusion proof altered", historyJSON(t, v.Checkpoints["size5_new"], historyRotation{append([]string{proof[1]},
			proof[0], proof[2]), leaf, 3}), at3 + "inclusion: the proof does not lead to the root of the history's checkpoint"},
		{"a leaf not canonical", historyJSON(t, v.Checkpoints["size5_new"], historyRotation{proof, strings.Replace(leaf,
			`,"seq":3`, `, "seq":3`, 1), 3}), at3 + "leaf: not canonical JSON"},
		{"the checkpoint signed by the old key alone", historyJSON(t, v.Checkpoints["size5_old"],
			historyRotation{proof, leaf, 3}), "key history: checkpoint: no valid signature by " + newID +
			", the key trusted at size 5"},
		{"the checkpoint signed by the new key, then the old", historyJSON(t, v.Checkpoints["size5_new_then_old"],
			historyRotation{proof, leaf, 3}), ""},
		{"the checkpoint not above the rotation's seq", historyJSON(t, v.Checkpoints["size3_old"],
			historyRotation{proof, leaf, 3}), at3 + "the history's checkpoint is of size 3: its size must be above every " +
			"rotation's seq"},
		{"the checkpoint's origin another", historyJSON(t, signWith(t, strings.Replace(cpText, v.Origin, "other", 1), new),
			historyRotation{proof, leaf, 3}), `key history: checkpoint: origin: expected the key name "example.com/ledger", ` +
			`found "other"`},
		{"a step_id", rot(func(_, r map[string]interface{}) { r["step_id"] = "s" }),
			at3 + `leaf: receipt: unknown key "step_id": a key_rotation receipt holds receipt_id, kind, team, run_id, ` +
				"attempt, occurred_at_us, old_key, new_key, note only"},
		{"no attempt", rot(func(_, r map[string]interface{}) { delete(r, "attempt") }), at3 + "leaf: attempt: want 1, found nothing"},
		{"attempt 2", rot(func(_, r map[string]interface{}) { r["attempt"] = 2 }), at3 + "leaf: attempt: want 1, found 2"},
		{"no occurred_at_us", rot(func(_, r map[string]interface{}) { delete(r, "occurred_at_us") }),
			at3 + "leaf: occurred_at_us: want an integer (the ledger's clock), found nothing"},
		{"another team", rot(func(_, r map[string]interface{}) { r["team"] = "team-a" }),
			at3 + `leaf: team: want ledger, found "team-a"`},
		{"another run", rot(func(_, r map[string]interface{}) { r["run_id"] = "keys" }),
			at3 + `leaf: run_id: want ledger.keys, found "keys"`},
		{"another kind", rot(func(_, r map[string]interface{}) { r["kind"] = "tool_call" }),
			at3 + `leaf: kind: want key_rotation, found "tool_call"`},
		{"no note", rot(func(_, r map[string]interface{}) { delete(r, "note") }),
			at3 + "leaf: note: want the signed rotation statement, a string"},
		{"old_key not a key", rot(func(_, r map[string]interface{}) { r["old_key"] = "example.com/ledger" }),
			at3 + "leaf: old_key: not a verifier key (name+id+base64): want NAME+ID+KEY"},
		{"new_key of another name", rot(func(_, r map[string]interface{}) { r["new_key"] = keyOf(t, seedRange(64), "other").vkey }),
			at3 + `leaf: new_key: named "other", the log's keys are named "example.com/ledger" (its origin)`},
		{"a version 3 leaf", historyJSON(t, v.Checkpoints["size5_new"], historyRotation{proof, strings.Replace(leaf,
			`"v":2}`, `"v":3}`, 1), 3}), at3 + "leaf: v: expected 1 or 2"},
		{"the note's text with a line more", rot(func(_, r map[string]interface{}) {
			r["note"] = signWith(t, v.StatementText+"more\n", old, new)
		}), at3 + `note: text: line 6: want none, found "more": the statement is 5 lines`},
		{"the note's old line not verifying", rot(func(_, r map[string]interface{}) {
			lines := strings.Split(signWith(t, v.StatementText, old, new), "\n")
			lines[6] = sigLines([]byte(signWith(t, "x\n", old)))[0]
			r["note"] = strings.Join(lines, "\n")
		}), at3 + "note: signature line 1: the old key's signature (" + oldID + ") does not verify"},
		{"the note's signature line malformed", rot(func(_, r map[string]interface{}) {
			r["note"] = strings.Replace(signWith(t, v.StatementText, old, new), "\u2014 ", "-- ", 1)
		}), at3 + "note: signature line 1: malformed"},
	} {
		_, err := followHistory(oldSet, []byte(c.history))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want it followed", c.about, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s:\n got %v\nwant %s...", c.about, err, c.want)
		}
	}
	// A history of no rotation: the set unchanged, its checkpoint signed by
	// the key of its size.
	if s, err := followHistory(oldSet, []byte(historyJSON(t, v.Checkpoints["size3_old"]))); err != nil ||
		!reflect.DeepEqual(rangesOf(s), rangesOf(oldSet)) {
		t.Errorf("no rotation, a checkpoint of the old key: %v", err)
	}
	if _, err := followHistory(oldSet, []byte(historyJSON(t, v.Checkpoints["size5_new"]))); err == nil ||
		err.Error() != "key history: checkpoint: no valid signature by "+oldID+", the key trusted at size 5" {
		t.Errorf("no rotation, a checkpoint of the new key: %v", err)
	}
}

// chainLog is a log of origin example.com/ledger: the vectors' seqs 0 to 2,
// then at each seq of rots a rotation from keys[i] to keys[i+1] numbered
// ids[i], tool calls between and one after; and its key history at the
// whole log's checkpoint signed by signers.
func chainLog(t *testing.T, v rotationVectors, keys []keyPair, rots []int64, ids []int, signers ...keyPair) string {
	t.Helper()
	l := &testLog{}
	for _, e := range v.Entries[:3] {
		l.push(t, []byte(e.Leaf))
	}
	var hr []historyRotation
	var leaves []string
	for i, seq := range rots {
		for int64(len(l.es)) < seq {
			l.addReceipt(t, other(fmt.Sprintf("o-%d", len(l.es))), t0)
		}
		r := map[string]interface{}{"receipt_id": fmt.Sprintf("ledger.key.%d", ids[i]), "kind": "key_rotation",
			"team": "ledger", "run_id": "ledger.keys", "attempt": 1, "occurred_at_us": t0, "old_key": keys[i].vkey,
			"new_key": keys[i+1].vkey, "note": signWith(t, rotationStatement(v.Origin, seq, keys[i].vkey, keys[i+1].vkey),
				keys[i], keys[i+1])}
		prev := l.es[seq-1].hash
		e := map[string]interface{}{"v": 2, "seq": seq, "prev": hex.EncodeToString(prev[:]), "logged_at_us": t0,
			"emitter": "ledger", "receipt": r}
		if last := l.teamLast("ledger", seq); last >= 0 {
			e["team_prev"], e["run_prev"] = last, last
		}
		raw, _ := json.Marshal(e)
		leaf := leafWith(t, string(raw), func(_, _ map[string]interface{}) {})
		l.push(t, []byte(leaf))
		leaves = append(leaves, leaf)
	}
	l.addReceipt(t, other("o-last"), t0)
	n := int64(len(l.es))
	for i, seq := range rots {
		hr = append(hr, historyRotation{l.inclusion(t, n, seq), leaves[i], seq})
	}
	cp := signWith(t, fmt.Sprintf("%s\n%d\n%s\n", v.Origin, n, b64(l.root(t, n))), signers...)
	return historyJSON(t, cp, hr...)
}

func TestRotationsAreFollowedInTurn(t *testing.T) {
	v := readRotationVectors(t)
	a, b, c := vectorKeys(t, v)
	keys := []keyPair{a, b, c}
	until := func(n int64) *int64 { return &n }
	bID := keyName(b)
	// a to b at seq 3, b to c at seq 6; the checkpoint of size 8 by c.
	history := chainLog(t, v, keys, []int64{3, 6}, []int{1, 2}, c)
	for _, k := range []struct {
		set    string
		ranges []vectorRange
		err    string
	}{
		{a.vkey + "\n", []vectorRange{{a.vkey, 0, until(3)}, {b.vkey, 4, until(6)}, {c.vkey, 7, nil}}, ""},
		// a compromised as of size 10: the keys after it end there too.
		{a.vkey + " until 10\n", []vectorRange{{a.vkey, 0, until(3)}, {b.vkey, 4, until(6)}, {c.vkey, 7, until(10)}}, ""},
		// a trusted until 5: b ends there, and its rotation at 6 is not followed.
		{a.vkey + " until 5\n", nil, "key history: the rotation at seq 6: its old key is not trusted at size 6: old_key is " +
			bID + ", no key is trusted there"},
		// until 7: the checkpoint of size 8 has no key.
		{a.vkey + " until 7\n", nil, "key history: checkpoint: no key is trusted at size 8"},
		// b alone: b, not a, is trusted at seq 3, where a's rotation is.
		{b.vkey + "\n", nil, "key history: the rotation at seq 3: its old key is not trusted at size 3: old_key is " +
			keyName(a) + ", the key trusted there is " + bID},
		// a from 4: not trusted at the first rotation's seq.
		{a.vkey + " from 4\n", nil, "key history: the rotation at seq 3: its old key is not trusted at size 3"},
		// The auditor's own key for the sizes after a's: a rotation agreeing
		// with it adds nothing, the trust is the set's.
		{a.vkey + " until 3\n" + b.vkey + " from 4\n", []vectorRange{{a.vkey, 0, until(3)}, {b.vkey, 4, until(6)},
			{c.vkey, 7, nil}}, ""},
	} {
		s, err := followHistory(mustKeySet(t, k.set), []byte(history))
		switch {
		case k.err != "" && (err == nil || !strings.HasPrefix(err.Error(), k.err)):
			t.Errorf("%q: %v, want %s", k.set, err, k.err)
		case k.err == "" && err != nil:
			t.Errorf("%q: %v", k.set, err)
		case k.err == "" && !reflect.DeepEqual(rangesOf(s), k.ranges):
			t.Errorf("%q: ranges\n got %s\nwant %s", k.set, showRanges(rangesOf(s)), showRanges(k.ranges))
		}
	}
	// The second rotation numbered 1, then both numbered in turn but the
	// checkpoint signed by b, whose range ended at 6.
	_, err := followHistory(mustKeySet(t, a.vkey+"\n"), []byte(chainLog(t, v, keys, []int64{3, 6}, []int{1, 1}, c)))
	if want := `key history: the rotation at seq 6: leaf: receipt_id: want ledger.key.2 (rotation 2 of the log), found ` +
		`"ledger.key.1"`; err == nil || err.Error() != want {
		t.Errorf("the second rotation numbered 1: %v, want %s", err, want)
	}
	_, err = followHistory(mustKeySet(t, a.vkey+"\n"), []byte(chainLog(t, v, keys, []int64{3, 6}, []int{1, 2}, b)))
	if want := "key history: checkpoint: no valid signature by " + keyName(c) +
		", the key trusted at size 8"; err == nil || err.Error() != want {
		t.Errorf("the checkpoint signed by a key rotated away from: %v, want %s", err, want)
	}
	// A rotation back to a key retired before: trusted again after it.
	s, err := followHistory(mustKeySet(t, a.vkey+"\n"), []byte(chainLog(t, v, []keyPair{a, b, a}, []int64{3, 5}, []int{1, 2}, a)))
	if want := []vectorRange{{a.vkey, 0, until(3)}, {b.vkey, 4, until(5)}, {a.vkey, 6, nil}}; err != nil ||
		!reflect.DeepEqual(rangesOf(s), want) {
		t.Errorf("a to b to a: %v", err)
	}
}

func TestKeySetFileGrammar(t *testing.T) {
	v := readRotationVectors(t)
	old, new, _ := vectorKeys(t, v)
	a, b := old.vkey, new.vkey
	aID := keyName(old)
	other := keyOf(t, seedRange(64), "other.example/log").vkey
	upper := strings.Replace(a, "+93727de6+", "+93727DE6+", 1)
	if upper == a {
		t.Fatal("the old key's ID is not 93727de6")
	}
	until := func(n int64) *int64 { return &n }
	syntax := "key set: want '<verifier key>[ from <size>][ until <size>]', found "
	for _, c := range []struct {
		text   string
		ranges []vectorRange
		err    string
	}{
		{"# the ledger's keys\n\n" + a + " from 0 until 3\n# then\n" + b + " from 4\n\n",
			[]vectorRange{{a, 0, until(3)}, {b, 4, nil}}, ""},
		{b + " from 10\n" + a + " until 9\n", []vectorRange{{a, 0, until(9)}, {b, 10, nil}}, ""},
		{a + " from 3 until 3\n", []vectorRange{{a, 3, until(3)}}, ""},
		{a + " until 3\n" + b + " from 5\n", []vectorRange{{a, 0, until(3)}, {b, 5, nil}}, ""},
		{a + " from 9223372036854775807\n", []vectorRange{{a, 9223372036854775807, nil}}, ""},
		{"", nil, "key set: no key"},
		{"# nothing\n\n", nil, "key set: no key"},
		{a, nil, "key set: no newline at the end of the last line (line 1)"},
		{"# c\n" + a + "\n" + b + " from 4", nil, "key set: no newline at the end of the last line (line 3)"},
		{a + "  from 1\n", nil, syntax + "\"" + a + "  from 1\" (line 1)"},
		{a + " \n", nil, syntax + "\"" + a + " \" (line 1)"},
		{a + " until 3 from 1\n", nil, syntax + "\"" + a + " until 3 from 1\" (line 1)"},
		{a + " from\n", nil, syntax + "\"" + a + " from\" (line 1)"},
		{a + " since 3\n", nil, syntax + "\"" + a + " since 3\" (line 1)"},
		{a + " from 1 from 2\n", nil, syntax + "\"" + a + " from 1 from 2\" (line 1)"},
		{a + " from 01\n", nil, "key set: from: want a tree size (decimal digits, no leading zero, below 2^63), found \"01\" (line 1)"},
		{a + " until -1\n", nil, "key set: until: want a tree size (decimal digits, no leading zero, below 2^63), found \"-1\" (line 1)"},
		{a + " until 9223372036854775808\n", nil, "key set: until: want a tree size"},
		{a + " until 3\r\n", nil, "key set: until: want a tree size (decimal digits, no leading zero, below 2^63), found \"3\r\" (line 1)"},
		{"\n" + a + "\r\n", nil, "key set: not a verifier key (name+id+base64): "},
		{" " + a + "\n", nil, "key set: not a verifier key (name+id+base64): want NAME+ID+KEY (line 1)"},
		{"   \n", nil, "key set: not a verifier key (name+id+base64): want NAME+ID+KEY (line 1)"},
		{" # indented\n", nil, "key set: not a verifier key (name+id+base64): want NAME+ID+KEY (line 1)"},
		{upper + "\n", nil, "key set: not a verifier key (name+id+base64): not in its one form " + a + " (line 1)"},
		{a + " until 3\n" + other + " from 4\n", nil, "key set: the keys have different names, example.com/ledger (line 1) " +
			"and other.example/log (line 2): every key of a log has its origin as its name"},
		{a + " from 5 until 4\n", nil, "key set: from 5 is above until 4 (line 1)"},
		{a + " until 3\n\n" + a + " from 4\n", nil, "key set: a key is listed twice, " + aID + " (lines 1 and 3)"},
		{a + "\n" + a + "\n", nil, "key set: a key is listed twice"},
		{b + " from 4\n" + a + " until 4\n", nil, "key set: the ranges of two keys overlap at size 4 (lines 1 and 2)"},
		{a + "\n" + b + " from 100\n", nil, "key set: the ranges of two keys overlap at size 100 (lines 1 and 2)"},
		{a + " from 5 until 9\n" + b + " from 2 until 5\n", nil, "key set: the ranges of two keys overlap at size 5 (lines 1 and 2)"},
	} {
		s, err := parseKeySet([]byte(c.text))
		switch {
		case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)):
			t.Errorf("%q: %v, want %s", c.text, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.text, err)
		case c.err == "" && !reflect.DeepEqual(rangesOf(s), c.ranges):
			t.Errorf("%q: ranges\n got %s\nwant %s", c.text, showRanges(rangesOf(s)), showRanges(c.ranges))
		}
	}
	// The key trusted at each size: none in a gap or past the last until.
	s := mustKeySet(t, a+" until 3\n"+b+" from 5 until 9\n")
	for size, want := range map[int64]string{0: a, 3: a, 4: "", 5: b, 9: b, 10: ""} {
		got := ""
		if k := s.keyAt(size); k != nil {
			got = k.vkey
		}
		if got != want {
			t.Errorf("the key trusted at size %d: %q, want %q", size, got, want)
		}
	}
}

// rotatedLog is stepLog (seqs 0 to 6, run t/r and team u), then the
// ledger's rotation at seq 7 from the test key to keys[1], and a tool call
// at seq 8; rotationKeys are the two keys, of the tests' origin.
func rotatedLog(t *testing.T) (*testLog, []keyPair) {
	t.Helper()
	return rotatedLogWith(t, "ledger", func(text string, keys []keyPair) string {
		return signWith(t, text, keys[0], keys[1])
	})
}

// rotatedLogWith is rotatedLog with the rotation entry's emitter, and its
// note made by note from the statement's text and the two keys.
func rotatedLogWith(t *testing.T, emitter string, note func(text string, keys []keyPair) string) (*testLog, []keyPair) {
	t.Helper()
	s, _, vkey := testKey(t, testOrigin)
	keys := []keyPair{{s, vkey}, keyOf(t, bytes.Repeat([]byte{8}, 32), testOrigin)}
	l := stepLog(t)
	prev := l.es[6].hash
	r := map[string]interface{}{"receipt_id": "ledger.key.1", "kind": "key_rotation", "team": "ledger",
		"run_id": "ledger.keys", "attempt": 1, "occurred_at_us": t0 + 2_000_001, "old_key": keys[0].vkey,
		"new_key": keys[1].vkey, "note": note(rotationStatement(testOrigin, 7, keys[0].vkey, keys[1].vkey), keys)}
	raw, _ := json.Marshal(map[string]interface{}{"v": 2, "seq": 7, "prev": hex.EncodeToString(prev[:]),
		"logged_at_us": t0 + 2_000_001, "emitter": emitter, "receipt": r})
	l.push(t, []byte(leafWith(t, string(raw), func(_, _ map[string]interface{}) {})))
	l.addReceipt(t, other("o-8"), t0+2_000_002)
	return l, keys
}

// resigned is a note's text signed by keys, in order.
func resigned(t *testing.T, msg []byte, keys ...keyPair) []byte {
	return []byte(signWith(t, noteText(string(msg)), keys...))
}

// rotatedPack is the run pack t/r of rotatedLog at size 9, every note of
// that size signed by the new key and ledger.vkey the new key's, with
// consistency.json from size 7 signed by the old key (the checkpoints an
// honest ledger signs); the old checkpoint; and the pack's OK line.
func rotatedPack(t *testing.T, l *testLog, keys []keyPair) (*builtPack, []byte, string) {
	t.Helper()
	b := runPack(t, l, 9, "t", "r", t0+3_000_000, 500, nil)
	b.files["checkpoint"] = resigned(t, b.files["checkpoint"], keys[1])
	b.files["checkpoint-time"] = resigned(t, b.files["checkpoint-time"], keys[1])
	b.files["ledger.vkey"] = []byte(keys[1].vkey + "\n")
	b.signer = keys[1].s
	old := []byte(signWith(t, fmt.Sprintf("%s\n7\n%s\n", testOrigin, b64(l.root(t, 7))), keys[0]))
	proof, err := tlog.ProveTree(9, 7, l.hashes())
	if err != nil {
		t.Fatal(err)
	}
	b.files["consistency.json"], _ = json.Marshal(map[string]interface{}{"old_checkpoint": string(old),
		"proof": hexList(proof)})
	oldRoot := l.root(t, 7)
	ok := strings.Replace(runOK(t, l, 9, 4, "s1"), "; complete", fmt.Sprintf(
		", consistent with the pack's earlier checkpoint size 7 root %s (no --since given); complete",
		hex.EncodeToString(oldRoot[:])), 1)
	return b, old, ok
}

// rotatedHistory is the key history of rotatedLog at its checkpoint of size
// 9, signed by the new key.
func rotatedHistory(t *testing.T, l *testLog, keys []keyPair) []byte {
	cp := signWith(t, fmt.Sprintf("%s\n9\n%s\n", testOrigin, b64(l.root(t, 9))), keys[1])
	return []byte(historyJSON(t, cp, historyRotation{l.inclusion(t, 9, 7), string(l.leaves[7]), 7}))
}

func withKeySet(t *testing.T, text string, history []byte) func(*options) {
	set := mustKeySet(t, text)
	return func(o *options) { o.vkey, o.keys, o.history = "", set, history }
}

// keyName is a key's name and key ID, NAME+ID.
func keyName(k keyPair) string {
	parts := strings.SplitN(k.vkey, "+", 3)
	return parts[0] + "+" + parts[1]
}

func TestPacksOfARotatedLog(t *testing.T) {
	l, keys := rotatedLog(t)
	a, b := keys[0], keys[1]
	history := rotatedHistory(t, l, keys)
	oldOnly := withKeySet(t, a.vkey+"\n", history)
	pack, old, ok := rotatedPack(t, l, keys)
	checkPack(t, "the old key and the history", pack, ok, oldOnly)
	aSet := mustKeySet(t, a.vkey+"\n")
	checkPack(t, "--vkey with the history", pack, ok, func(o *options) { o.keys, o.history = oneKey(aSet.ranges[0].key), history })
	checkPack(t, "both keys, their ranges, no history", pack, ok, withKeySet(t, a.vkey+" until 7\n"+b.vkey+" from 8\n", nil))
	checkPack(t, "--vkey alone: the old key for every size", pack, fmt.Sprintf(
		"FAIL: manifest.sig: signed by %s, not by %s (the key given)", keyName(b), keyName(a)))
	checkPack(t, "the old key alone, no history", pack, fmt.Sprintf(
		"FAIL: manifest.sig: signed by %s, not by %s (the key trusted at size 9)", keyName(b), keyName(a)),
		withKeySet(t, a.vkey+"\n", nil))
	okSince := strings.Replace(strings.Replace(ok, "the pack's earlier checkpoint", "the --since checkpoint", 1),
		" (no --since given)", "", 1)
	checkPack(t, "--since the old checkpoint", pack, okSince, oldOnly, func(o *options) { o.since = old })
	checkPack(t, "--since the old checkpoint signed by the new key", pack, fmt.Sprintf(
		"FAIL: --since: no valid signature by %s, the key trusted at size 7", keyName(a)), oldOnly,
		func(o *options) { o.since = resigned(t, old, b) })

	// Transition lines: the new key's, then the old key's; the old key's
	// line alone counts for nothing past seq 7.
	edited := func(name string, data []byte) *builtPack {
		p, _, _ := rotatedPack(t, l, keys)
		p.files[name] = data
		return p
	}
	checkPack(t, "a transition checkpoint", edited("checkpoint", resigned(t, pack.files["checkpoint"], b, a)), ok, oldOnly)
	checkPack(t, "the checkpoint by the old key alone", edited("checkpoint", resigned(t, pack.files["checkpoint"], a)),
		fmt.Sprintf("FAIL: checkpoint: no valid signature by %s, the key trusted at size 9", keyName(b)), oldOnly)
	checkPack(t, "the time note by the old key alone", edited("checkpoint-time",
		resigned(t, pack.files["checkpoint-time"], a)), fmt.Sprintf(
		"FAIL: checkpoint-time: no valid signature by %s, the key trusted at size 9", keyName(b)), oldOnly)
	checkPack(t, "the new key's line altered, the old key's valid", edited("checkpoint", noteWithLines(
		resigned(t, pack.files["checkpoint"], b, a), sigLines(resigned(t, []byte("x\n\n"), b))[0],
		sigLines(resigned(t, pack.files["checkpoint"], a))[0])), fmt.Sprintf(
		"FAIL: checkpoint: no valid signature by %s, the key trusted at size 9", keyName(b)), oldOnly)
	byOld := edited("manifest.sig", nil)
	delete(byOld.files, "manifest.sig")
	byOld.signer = a.s
	checkPack(t, "manifest.sig by the old key alone", byOld, fmt.Sprintf(
		"FAIL: manifest.sig: signed by %s, not by %s (the key trusted at size 9)", keyName(a), keyName(b)), oldOnly)
	checkPack(t, "ledger.vkey the old key's", edited("ledger.vkey", []byte(a.vkey+"\n")), fmt.Sprintf(
		"FAIL: ledger.vkey: expected the key trusted at size 9, \"%s\", found \"%s\"", b.vkey, a.vkey), oldOnly)
	var c map[string]interface{}
	json.Unmarshal(pack.files["consistency.json"], &c)
	c["old_checkpoint"] = string(resigned(t, old, b))
	newOld, _ := json.Marshal(c)
	checkPack(t, "the old checkpoint signed by the new key", edited("consistency.json", newOld), fmt.Sprintf(
		"FAIL: consistency.json: old_checkpoint: no valid signature by %s, the key trusted at size 7", keyName(a)), oldOnly)
	checkPack(t, "no key trusted at the old checkpoint's size", pack,
		"FAIL: consistency.json: old_checkpoint: no key is trusted at size 7",
		withKeySet(t, a.vkey+" until 6\n"+b.vkey+" from 8\n", nil))

	// Under a policy, the key trusted at the pack's size must be one of its
	// logs (the old key's being one does not do).
	both := func(o *options) { oldOnly(o); withPolicy(t, fmt.Sprintf("log %s\nquorum none\n", b.vkey))(o) }
	lines := strings.SplitN(ok, "\n", 2)
	checkPack(t, "a policy naming the new key", pack, lines[0]+"\nwitnessed: quorum none met; no cosignature\n"+lines[1],
		both)
	checkPack(t, "a policy naming the old key", pack, fmt.Sprintf(
		"FAIL: checkpoint: the ledger's key %s is not a log of the policy", keyName(b)), oldOnly,
		withPolicy(t, fmt.Sprintf("log %s\nquorum none\n", a.vkey)))

	// The history refused, or trusting no key at the pack's size.
	// (printed by usageError, exit 2: a history the keys do not follow is
	// the arguments' fault)
	checkPack(t, "the old key compromised as of size 6", pack, fmt.Sprintf(
		"--key-history: key history: the rotation at seq 7: its old key is not trusted at size 7: old_key is %s, no "+
			"key is trusted there", keyName(a)), withKeySet(t, a.vkey+" until 6\n", history))
	checkPack(t, "the old key compromised as of size 8", pack,
		"--key-history: key history: checkpoint: no key is trusted at size 9", withKeySet(t, a.vkey+" until 8\n", history))
	checkPack(t, "no key at the pack's size", pack, "FAIL: checkpoint: no key is trusted at size 9, the pack's tree size",
		withKeySet(t, a.vkey+" until 8\n", nil))
}

// keysRunPack is the pack of the run ledger/ledger.keys of l (rotatedLog)
// at size 9, its notes signed by the new key, keys[1]: a pack that holds
// the rotation entry; and its OK line.
func keysRunPack(t *testing.T, l *testLog, keys []keyPair) (*builtPack, string) {
	t.Helper()
	b := runPack(t, l, 9, "ledger", "ledger.keys", t0+3_000_000, 500, nil)
	b.files["checkpoint"] = resigned(t, b.files["checkpoint"], keys[1])
	b.files["checkpoint-time"] = resigned(t, b.files["checkpoint-time"], keys[1])
	b.files["ledger.vkey"] = []byte(keys[1].vkey + "\n")
	b.signer = keys[1].s
	return b, strings.Replace(runOK(t, l, 9, 1), "run t/r", "run ledger/ledger.keys", 1)
}

func TestKeyRotationEntriesInAPack(t *testing.T) {
	byNew := func(keys []keyPair) func(*options) { return func(o *options) { o.vkey = keys[1].vkey } }
	l, keys := rotatedLog(t)
	pack, ok := keysRunPack(t, l, keys)
	checkPack(t, "the genuine rotation", pack, ok+fmt.Sprintf("\nkey rotation at seq 7: the log's key moved from %s "+
		"to %s (a statement both keys signed).", keys[0].vkey, keys[1].vkey), byNew(keys))
	a, b := keyName(keys[0]), keyName(keys[1])
	for _, c := range []struct {
		name, emitter string
		note          func(text string, keys []keyPair) string
		want          string
	}{
		{"the statement signed by the old key alone", "ledger", func(text string, k []keyPair) string {
			return signWith(t, text, k[0])
		}, "note: want exactly two signature lines (the old key's, then the new key's), found 1"},
		{"the statement signed by the new key, then the old", "ledger", func(text string, k []keyPair) string {
			return signWith(t, text, k[1], k[0])
		}, "note: signature line 1: by " + b + ", want the old key's, " + a},
		{"the statement of seq 6", "ledger", func(text string, k []keyPair) string {
			return signWith(t, strings.Replace(text, "\nseq 7\n", "\nseq 6\n", 1), k[0], k[1])
		}, `note: text: line 3: want "seq 7", found "seq 6"`},
		{"the statement of another log", "ledger", func(text string, k []keyPair) string {
			return signWith(t, strings.Replace(text, "\n"+testOrigin+"\n", "\nexample.com/other\n", 1), k[0], k[1])
		}, `note: text: line 2: want "` + testOrigin + `", found "example.com/other"`},
		{"an emitter's key_rotation", "uri:spiffe://test/gw", func(text string, k []keyPair) string {
			return signWith(t, text, k[0], k[1])
		}, "emitter 'uri:spiffe://test/gw': the ledger's only"},
	} {
		l, keys := rotatedLogWith(t, c.emitter, c.note)
		pack, _ := keysRunPack(t, l, keys)
		checkPack(t, c.name, pack, "FAIL: entries.jsonl seq 7: key_rotation: "+c.want, byNew(keys))
	}
}

func TestAPackOfALogThatNeverRotated(t *testing.T) {
	b, ok := genuine(t)
	s, _, vkey := testKey(t, testOrigin)
	l := stepLog(t)
	cp := signWith(t, fmt.Sprintf("%s\n7\n%s\n", testOrigin, b64(l.root(t, 7))), keyPair{s, vkey})
	empty := []byte(historyJSON(t, cp))
	checkPack(t, "--vkey", b, ok)
	checkPack(t, "--key-set of the one key", b, ok, withKeySet(t, vkey+"\n", nil))
	checkPack(t, "--key-set and a history of no rotation", b, ok, withKeySet(t, vkey+"\n", empty))
	set := mustKeySet(t, vkey+"\n")
	checkPack(t, "--vkey and a history of no rotation", b, ok, func(o *options) { o.keys, o.history = set, empty })
	// The same refusals as with --vkey, but the key's: a note of another key.
	other := keyOf(t, bytes.Repeat([]byte{9}, 32), testOrigin)
	b.files["checkpoint"] = resigned(t, b.files["checkpoint"], other)
	checkPack(t, "--vkey, the checkpoint of another key", b,
		"FAIL: checkpoint: signature: note has no verifiable signatures")
	checkPack(t, "--key-set, the checkpoint of another key", b, fmt.Sprintf(
		"FAIL: checkpoint: no valid signature by %s, the key trusted at size 7", keyName(keyPair{s, vkey})),
		withKeySet(t, vkey+"\n", nil))
}

// TestMain runs main itself when LEDGER_VERIFY_GO_ARGS is set (its
// arguments, separated by newlines), for the tests of the command line.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("LEDGER_VERIFY_GO_ARGS"); ok {
		os.Args = append([]string{"ledger-verify-go"}, strings.Split(args, "\n")...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// command runs ledger-verify-go's main with args and returns its stdout,
// stderr and exit code.
func command(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := osexec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LEDGER_VERIFY_GO_ARGS="+strings.Join(args, "\n"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if e, ok := err.(*osexec.ExitError); ok {
		code = e.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

func TestKeySetAndKeyHistoryFlags(t *testing.T) {
	l, keys := rotatedLog(t)
	a, b := keys[0], keys[1]
	pack, old, ok := rotatedPack(t, l, keys)
	path := pack.write(t)
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	aSet := file("a.keys", []byte("# the ledger's first key\n"+a.vkey+"\n"))
	aKey := file("a.vkey", []byte(a.vkey+"\n"))
	history := file("history.json", rotatedHistory(t, l, keys))
	overlap := file("overlap.keys", []byte(a.vkey+" until 8\n"+b.vkey+" from 8\n"))
	olderA := file("older-a", old)
	olderB := file("older-b", resigned(t, old, b))
	badHistory := file("bad.json", []byte(strings.Replace(string(rotatedHistory(t, l, keys)), `"seq":7}`, `"seq":6}`, 1)))
	usage := "\nusage: ledger-verify-go (--vkey FILE | --key-set FILE | --trust-pack-key) PACK.tar.gz [--key-history FILE]"
	for _, c := range []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"--key-set", aSet, "--key-history", history, path}, ok + "\n", "", 0},
		{[]string{"--vkey", aKey, "--key-history=" + history, path}, ok + "\n", "", 0},
		{[]string{path, "--key-set=" + aSet, "--key-history", history, "--not-older-than", olderA}, ok + "\n", "", 0},
		{[]string{"--key-set", aSet, path}, fmt.Sprintf("FAIL: manifest.sig: signed by %s, not by %s (the key trusted at "+
			"size 9)\n", keyName(b), keyName(a)), "", 1},
		{[]string{"--key-set", aSet, "--key-history", badHistory, path}, "", "ledger-verify-go: --key-history: key " +
			"history: the rotation at seq 6: leaf: seq 7, the history gives 6" + usage, 2},
		{[]string{"--key-set", aSet, "--key-history", history, "--not-older-than", olderB, path}, "",
			"ledger-verify-go: --not-older-than: no valid signature by " + keyName(a) + ", the key trusted at size 7" + usage, 2},
		{[]string{"--key-set", overlap, path}, "", "ledger-verify-go: --key-set " + overlap + ": key set: the ranges of two " +
			"keys overlap at size 8 (lines 1 and 2)" + usage, 2},
		{[]string{"--key-history", history, path}, "", "ledger-verify-go: --key-history needs the keys it starts from: " +
			"--vkey FILE or --key-set FILE" + usage, 2},
		{[]string{"--key-set", aSet, "--vkey", aKey, path}, "", "ledger-verify-go: --key-set and --vkey exclude each other", 2},
		{[]string{"--key-set", aSet, "--trust-pack-key", path}, "",
			"ledger-verify-go: --key-set and --trust-pack-key exclude each other", 2},
		{[]string{"--key-set", filepath.Join(dir, "none"), path}, "", "ledger-verify-go: --key-set: open ", 2},
		{[]string{"--key-set", aSet, "--key-history", filepath.Join(dir, "none"), path}, "",
			"ledger-verify-go: --key-history: open ", 2},
	} {
		stdout, stderr, code := command(t, c.args...)
		if stdout != c.stdout || !strings.HasPrefix(stderr, c.stderr) || code != c.code {
			t.Errorf("%s:\n got %q %q exit %d\nwant %q %q... exit %d", strings.Join(c.args, " "), stdout, stderr, code,
				c.stdout, c.stderr, c.code)
		}
	}
}
