package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// Packs of format 5 (CONTRACT section 7): a version 4 checkpoint-time note,
// whose runs root is the run-head map under run keys of version 2 (section
// 6a, "Which run key"), and run-head.json keyed by them. Built from the
// contract's text (builder_test.go); forged packs are re-signed with the
// ledger's key, as its operator could.

func TestRunKeysOfVersionTwoStartWithTheTeamKey(t *testing.T) {
	tk, _ := teamKey("t")
	a, err := runKey("t", "r", 2)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := runKey("t", "another run", 2)
	v1, _ := runKey("t", "r", 1)
	if !strings.HasPrefix(hex.EncodeToString(a[:]), hex.EncodeToString(tk[:8])) ||
		!strings.HasPrefix(hex.EncodeToString(b[:]), hex.EncodeToString(tk[:8])) || a == v1 {
		t.Errorf("v2 keys %x, %x of team key %x (v1 key %x)", a, b, tk, v1)
	}
	if _, err := runKey("T", "r", 2); err == nil || err.Error() != "team: must be 1-63 bytes of [a-z0-9-]" {
		t.Errorf("a team not of [a-z0-9-]: %v", err)
	}
}

func TestAFormat5RunPackProvesItsRunUnderRunKeysV2(t *testing.T) {
	l := stepLog(t)
	checkPack(t, "a format 5 run pack", runPackOf(t, l, 7, "t", "r", t0+3_000_000, 500, nil, 5), runOK(t, l, 7, 4, "s1"))

	absent := runPackOf(t, l, 7, "t", "r0", t0+3_000_000, 500, nil, 5)
	root := l.root(t, 7)
	checkPack(t, "a format 5 pack of a run with no entry", absent, fmt.Sprintf("OK run t/r0: 0 entries, tree size 7, "+
		"root %s; complete: the run has no entry up to seq 6 (absence proof); outcomes.json not recomputed",
		hex.EncodeToString(root[:])))
	// What a proof reveals: the run in t/r0's place is one of team t's.
	var p struct {
		Leaf struct {
			Key string `json:"key"`
		} `json:"leaf"`
	}
	json.Unmarshal(absent.files["run-head.json"], &p)
	if r, _ := runKey("t", "r", 2); p.Leaf.Key != hex.EncodeToString(r[:]) {
		t.Errorf("the absence proof of t/r0 shows %q, not t/r", p.Leaf.Key)
	}
}

func TestAVersion4NoteWithARunKeyOfVersion1IsRefused(t *testing.T) {
	l := stepLog(t)
	v1, _ := runKey("t", "r", 1)
	v2, _ := runKey("t", "r", 2)
	want := fmt.Sprintf("FAIL: run-head.json: key %x is not the run key of t/r (%x)", v1, v2)
	b := runPackOf(t, l, 7, "t", "r", t0+3_000_000, 500, nil, 5)
	b.files["run-head.json"] = runPack(t, l, 7, "t", "r", t0+3_000_000, 500, nil).files["run-head.json"]
	checkPack(t, "the v1-keyed proof under the v2-keyed root", b, want)
	// The operator signs the v1-keyed root in a version 4 note: the key
	// the verifier computes is still the v2 key.
	root := l.root(t, 7)
	b.resignNote(t, "checkpoint-time", timeNoteText(4, 7, root, mapRoot(l.runMap(t, 7, nil)), mapRoot(l.teamMap(t, 7)),
		t0+3_000_000))
	checkPack(t, "the v1-keyed proof and root in a version 4 note", b, want)
}

func TestFormat5AndNoteVersion4GoTogether(t *testing.T) {
	l := stepLog(t)
	root := l.root(t, 7)
	b := runPackOf(t, l, 7, "t", "r", t0+3_000_000, 500, nil, 5)
	b.manifest["format"] = 4
	checkPack(t, "a format 4 pack with a version 4 note", b,
		"FAIL: checkpoint-time: format 4 pack with a version 4 note: a format 4 pack carries a version 3 note")
	b.manifest["format"] = 3
	checkPack(t, "a format 3 pack with a version 4 note", b,
		"FAIL: checkpoint-time: format 3 pack with a version 4 note: a format 3 pack carries a version 2 note")
	b.manifest["format"] = 10
	checkPack(t, "format 10", b, "FAIL: manifest.json: format: want 1, 2, 3, 4, 5, 6, 7, 8 or 9, found 10")

	lower := "FAIL: checkpoint-time: a format 5 pack carries a version 4 note (with run keys of version 2)"
	b = runPack(t, l, 7, "t", "r", t0+3_000_000, 500, nil)
	b.manifest["format"] = 5
	checkPack(t, "a format 5 pack with a version 3 note (and its v1-keyed proof)", b, lower)
	b.resignNote(t, "checkpoint-time", timeNoteText(2, 7, root, mapRoot(l.runMap(t, 7, nil)), mapHash{}, t0+3_000_000))
	checkPack(t, "a format 5 pack with a version 2 note", b, lower)
}

// A kept note of version 4 (--since, --not-older-than) asks for one of
// version 4; at the pack's tree size its runs root is compared with the
// pack's only when both notes key runs alike, its teams root always.
func TestKeptVersion4NoteRequiresVersion4(t *testing.T) {
	l := stepLog(t)
	runsV1, runsV2 := mapRoot(l.runMap(t, 7, nil)), mapRoot(l.runMapKeyed(t, 7, nil, 2))
	teams := mapRoot(l.teamMap(t, 7))
	older := func(path string) func(*options) {
		return func(o *options) {
			if err := notOlderThan(o, path); err != nil {
				t.Fatal(err)
			}
		}
	}
	downgraded := runPack(t, l, 7, "t", "r", t0+3_000_000, 500, nil)
	kept4 := keptFile(t, 4, runsV2, teams, t0+2_000_000)
	checkPack(t, "a version 3 note, --not-older-than a version 4 note", downgraded, "FAIL: checkpoint-time: a version 3 "+
		"note, but the checkpoint given with --not-older-than has a version 4 note: a ledger that keys runs by team "+
		"does so with every later checkpoint", older(kept4))
	data, _ := os.ReadFile(kept4)
	keptCp, keptTime := splitKept(data)
	downgraded.files["consistency.json"], _ = json.Marshal(map[string]interface{}{"old_checkpoint": string(keptCp),
		"proof": []string{}})
	checkPack(t, "a version 3 note, --since a version 4 note", downgraded, "FAIL: checkpoint-time: a version 3 "+
		"note, but the checkpoint given with --since has a version 4 note: a ledger that keys runs by team does so "+
		"with every later checkpoint", func(o *options) { o.since, o.sinceTime = keptCp, keptTime })

	b := runPackOf(t, l, 7, "t", "r", t0+3_000_000, 500, nil, 5)
	ok := runOK(t, l, 7, 4, "s1")
	checkPack(t, "--not-older-than its own checkpoint and version 4 note", b, ok, older(kept4))
	other := emptyMap // the root of another map
	checkPack(t, "--not-older-than a version 4 note of the same size with another runs root", b, fmt.Sprintf(
		"FAIL: checkpoint-time: runs root %x at tree size 7, the note kept with the checkpoint given with "+
			"--not-older-than signs %x at that size", runsV2, other), older(keptFile(t, 4, other, teams, t0+2_000_000)))
	// The ledger that starts keying runs by team signs its latest
	// checkpoint again: the version 3 note of that size signs the v1-keyed
	// root, the version 4 note the v2-keyed one, and both the same teams.
	checkPack(t, "--not-older-than the version 3 note of the same size", b, ok,
		older(keptFile(t, 3, runsV1, teams, t0+2_000_000)))
	checkPack(t, "--not-older-than the version 2 note of the same size", b, ok,
		older(keptFile(t, 2, runsV1, teams, t0+2_000_000)))
	checkPack(t, "--not-older-than a version 3 note of the same size with another teams root", b, fmt.Sprintf(
		"FAIL: checkpoint-time: teams root %x at tree size 7, the note kept with the checkpoint given with "+
			"--not-older-than signs %x at that size", teams, other), older(keptFile(t, 3, runsV1, other, t0+2_000_000)))
}

func TestAFormat5TeamWindow(t *testing.T) {
	l := teamLog(t)
	w := honestWindow(t, l, 20, "t", 300, 700)
	w.format, w.noteVersion = 5, 4
	checkLine(t, "a team window of format 5", w,
		okLine(t, w, "complete: every entry of team t logged in [300, 700) up to seq 19 (team chain, 4 entries)"))
	w.window = nil
	checkLine(t, "a format 5 window whose team-window.json was removed", w,
		"FAIL: team-window.json: missing: a team window whose checkpoint-time note signs a team-head map root carries its team chain proof")
	w = honestWindow(t, l, 20, "t", 300, 700)
	w.format = 5
	checkLine(t, "a format 5 window with a version 3 note", w,
		"FAIL: checkpoint-time: a format 5 pack carries a version 4 note (with run keys of version 2)")
}

func TestTimeNoteOfVersionFour(t *testing.T) {
	s, v, _ := testKey(t, testOrigin)
	l := stepLog(t)
	root, runs, teams := l.root(t, 7), mapRoot(l.runMapKeyed(t, 7, nil, 2)), mapRoot(l.teamMap(t, 7))
	text := timeNoteText(4, 7, root, runs, teams, 12)
	got, err := openTimeNote(sign(t, s, text), note.VerifierList(v))
	if err != nil || got.version != 4 || got.runKeys() != 2 || *got.runs != runs || *got.teams != teams || got.timeUs != 12 {
		t.Fatalf("%+v, %v", got, err)
	}
	short := strings.Replace(text, "teams "+b64(teams)+"\n", "", 1)
	if _, err := openTimeNote(sign(t, s, short), note.VerifierList(v)); err == nil ||
		err.Error() != fmt.Sprintf("checkpoint-time: expected the lines of a version 1, 2, 3 or 4 note, found \"%s\"", short) {
		t.Errorf("a version 4 note without teams: %v", err)
	}
	for version, keys := range map[int]int{2: 1, 3: 1, 4: 2} {
		if n := (&timeNote{version: version}); n.runKeys() != keys {
			t.Errorf("a version %d note: run keys of version %d, want %d", version, n.runKeys(), keys)
		}
	}
}
