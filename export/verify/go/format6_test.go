package main

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// Packs of format 6 (CONTRACT section 7, "Shared inclusion proofs"), built
// here from the contract's text, genuine and tampered with, re-signed with
// the ledger's key as its operator could.

// multiproofPack is the format 6 run pack of stepLog at tree size 7 and
// its OK lines.
func multiproofPack(t *testing.T) (*builtPack, *testLog, string) {
	l := stepLog(t)
	return runPackOf(t, l, 7, "t", "r", t0+3_000_000, 500, nil, 6), l, runOK(t, l, 7, 4, "s1")
}

func TestPacksOfFormat6ProveTheirEntriesWithOneMultiproof(t *testing.T) {
	b, l, ok := multiproofPack(t)
	if got := string(b.files["multiproof.txt"]); got != string(multiproofText(l.multiproof(7, []int64{1, 2, 3, 5}))) ||
		strings.Count(got, "\n") != 3 {
		t.Fatalf("multiproof.txt: %q", got)
	}
	checkPack(t, "a format 6 run pack", b, ok)
	root := l.root(t, 7)
	absent := runPackOf(t, l, 7, "t", "r0", t0+3_000_000, 500, nil, 6)
	if string(absent.files["multiproof.txt"]) != hex.EncodeToString(root[:])+"\n" {
		t.Errorf("a pack with no entry: multiproof.txt %q, want the root", absent.files["multiproof.txt"])
	}
	checkPack(t, "a format 6 pack of a run with no entry", absent, fmt.Sprintf("OK run t/r0: 0 entries, tree size 7, "+
		"root %s; complete: the run has no entry up to seq 6 (absence proof); outcomes.json not recomputed",
		hex.EncodeToString(root[:])))

	tl := teamLog(t)
	w := honestWindow(t, tl, 20, "t", 300, 700)
	w.format, w.noteVersion = 6, 4
	checkLine(t, "a team window of format 6", w,
		okLine(t, w, "complete: every entry of team t logged in [300, 700) up to seq 19 (team chain, 4 entries)"))
	// Every entry of the tree: no hash at all.
	w = honestWindow(t, tl, 20, "t", 300, 700)
	w.format, w.noteVersion, w.seqScope, w.window = 6, 4, true, nil
	w.entries = nil
	for s := int64(0); s < 20; s++ {
		w.entries = append(w.entries, s)
	}
	root = tl.root(t, 20)
	checkLine(t, "a seq range of the whole tree", w, fmt.Sprintf("OK seq 0:20: 20 entries, tree size 20, root %s; "+
		"outcomes.json not recomputed", hex.EncodeToString(root[:])))
}

func TestFormat6CarriesMultiproofTxtAndNoOtherFormatDoes(t *testing.T) {
	b, l, _ := multiproofPack(t)
	b.setEntries(t, l, 7, []int64{1, 2, 3, 5})
	checkPack(t, "proofs.jsonl beside multiproof.txt", b,
		"FAIL: proofs.jsonl: a pack of format 6 proves inclusion with multiproof.txt")
	delete(b.files, "multiproof.txt")
	checkPack(t, "proofs.jsonl alone", b, "FAIL: proofs.jsonl: a pack of format 6 proves inclusion with multiproof.txt")
	delete(b.files, "proofs.jsonl")
	checkPack(t, "no proof", b,
		"FAIL: multiproof.txt: missing: a pack of format 6 proves its entries' inclusion with a multiproof")

	b = runPackOf(t, l, 7, "t", "r", t0+3_000_000, 500, nil, 5)
	b.files["multiproof.txt"] = multiproofText(l.multiproof(7, []int64{1, 2, 3, 5}))
	checkPack(t, "multiproof.txt in format 5", b, "FAIL: multiproof.txt: only a pack of format 6 carries a multiproof")
	delete(b.files, "proofs.jsonl")
	checkPack(t, "multiproof.txt for proofs.jsonl in format 5", b,
		"FAIL: multiproof.txt: only a pack of format 6 carries a multiproof")
	delete(b.files, "multiproof.txt")
	checkPack(t, "no proof in format 5", b,
		"FAIL: proofs.jsonl: missing: a pack of format 5 proves each entry's inclusion with a line of it")

	b, _, _ = multiproofPack(t)
	root := l.root(t, 7)
	b.resignNote(t, "checkpoint-time", timeNoteText(3, 7, root, mapRoot(l.runMapKeyed(t, 7, nil, 2)), mapRoot(l.teamMap(t, 7)),
		t0+3_000_000))
	checkPack(t, "a format 6 pack with a version 3 note", b,
		"FAIL: checkpoint-time: a format 6 pack carries a version 4 note (with run keys of version 2)")
	b.manifest["format"] = 10
	checkPack(t, "format 10", b, "FAIL: manifest.json: format: want 1, 2, 3, 4, 5, 6, 7, 8 or 9, found 10")
}

func TestMultiproofTxtLinesAreRead(t *testing.T) {
	b, _, _ := multiproofPack(t)
	text := b.files["multiproof.txt"]
	lines := strings.SplitAfter(string(text), "\n")[:3]
	for name, line2 := range map[string]string{
		"upper case":    strings.ToUpper(lines[1]),
		"a CR":          strings.TrimSuffix(lines[1], "\n") + "\r\n",
		"a space":       " " + lines[1],
		"an empty line": "\n",
		"63 digits":     lines[1][1:],
		"65 digits":     "0" + lines[1],
	} {
		b.files["multiproof.txt"] = []byte(lines[0] + line2 + lines[2])
		checkPack(t, name, b, "FAIL: multiproof.txt: line 2: want 64 lower-case hex digits")
	}
	b.files["multiproof.txt"] = []byte(lines[0] + lines[1] + lines[2] + "\n")
	checkPack(t, "an empty line at the end", b, "FAIL: multiproof.txt: line 4: want 64 lower-case hex digits")
	b.files["multiproof.txt"] = text[:len(text)-1]
	checkPack(t, "no newline at the end", b, "FAIL: multiproof.txt: line 3: no newline at its end")
}

func TestAMultiproofThatDoesNotFitTheEntriesIsRefused(t *testing.T) {
	b, l, _ := multiproofPack(t)
	text := b.files["multiproof.txt"]
	root := l.root(t, 7)
	b.files["multiproof.txt"] = text[:len(text)-65]
	checkPack(t, "the last hash removed", b,
		"FAIL: multiproof.txt: the multiproof ends after 2 hashes; the entries' inclusion needs more")
	b.files["multiproof.txt"] = append(append([]byte{}, text...), text[:65]...)
	checkPack(t, "a hash added at the end", b, "FAIL: multiproof.txt: the multiproof holds 4 hashes; the entries' "+
		"inclusion uses 3")

	rootHex := hex.EncodeToString(root[:])
	wrongRoot := regexp.MustCompile(`^FAIL: multiproof\.txt: the entries and the multiproof lead to root ` +
		`[0-9a-f]{64}, the checkpoint's is ` + rootHex + `$`)
	refused := func(name string, b *builtPack) {
		t.Helper()
		if got, _ := printed(t, b.write(t)); !wrongRoot.MatchString(got) || strings.Contains(got, "root "+rootHex+",") {
			t.Errorf("%s: %s", name, got)
		}
	}
	altered := append([]byte{}, text...)
	altered[0] ^= 1
	b.files["multiproof.txt"] = altered
	refused("a hash altered", b)
	b.files["multiproof.txt"] = append(append([]byte{}, text[65:130]...), append(text[:65:65], text[130:]...)...)
	refused("two hashes swapped", b)

	// An entry dropped and the multiproof left as it was.
	b, _, _ = multiproofPack(t)
	mp := b.files["multiproof.txt"]
	b.setEntries(t, l, 7, []int64{1, 2, 3})
	b.setMultiproof(t, l, 7, []int64{1, 2, 3})
	b.files["multiproof.txt"] = mp
	b.manifest["counts"] = map[string]int{"entries": 3}
	refused("an entry dropped", b)
	// An entry of the log at another seq in place of one of the pack's.
	b.setEntries(t, l, 7, []int64{1, 2, 4, 5})
	b.setMultiproof(t, l, 7, []int64{1, 2, 4, 5})
	b.files["multiproof.txt"] = mp
	b.manifest["counts"] = map[string]int{"entries": 4}
	refused("seq 4 in place of seq 3", b)
}

func TestEntriesAreCheckedBeforeTheMultiproofIsReadPastThem(t *testing.T) {
	// An entry beyond the tree, the multiproof that of the seqs below it.
	l := stepLog(t)
	l.addReceipt(t, other("o-7"), t0+2_000_010)
	b, _, _ := multiproofPack(t)
	b.files["entries.jsonl"] = append(b.files["entries.jsonl"], append(l.leaves[7], '\n')...)
	b.manifest["counts"] = map[string]int{"entries": 5}
	checkPack(t, "an entry beyond the tree", b, "FAIL: entries.jsonl: line 5: seq 7 is not in the checkpoint's tree of size 7")
	// Entries out of order: the second line is refused before any hash is
	// read past it.
	b, _, _ = multiproofPack(t)
	b.setEntries(t, l, 7, []int64{2, 1, 3, 5})
	b.setMultiproof(t, l, 7, []int64{1, 2, 3, 5})
	checkPack(t, "entries swapped", b, "FAIL: entries.jsonl seq 1: expected a seq above 2 (ascending)")
	// A line that is no entry, the multiproof used up before it.
	b, _, _ = multiproofPack(t)
	b.files["multiproof.txt"] = nil
	b.files["entries.jsonl"] = append(b.files["entries.jsonl"], "{}\n"...)
	checkPack(t, "an empty multiproof, a line that is no entry", b,
		"FAIL: multiproof.txt: the multiproof ends after 0 hashes; the entries' inclusion needs more")
}

// An operator holding the ledger's key and the pack can compute the
// multiproof of any subset of its entries (the hashes beside a dropped
// entry are in the pack): the multiproof holds, and what the entries prove
// of the run refuses the pack.
func TestAMultiproofRecomputedForFewerEntriesDoesNotHideThem(t *testing.T) {
	l := stepLog(t)
	signed := t0 + 3_000_000
	checkPack(t, "step_unknown dropped, the multiproof and the run head recomputed, re-signed",
		runPackOf(t, l, 7, "t", "r", signed, 500, map[int64]bool{5: true}, 6), overdue("s1", t0+1_500_010, signed))
	b := runPackOf(t, l, 7, "t", "r", signed, 500, nil, 6)
	b.setEntries(t, l, 7, []int64{1, 3, 5})
	b.setMultiproof(t, l, 7, []int64{1, 3, 5})
	b.manifest["counts"] = map[string]int{"entries": 3}
	checkPack(t, "a run's entry dropped, the multiproof recomputed, re-signed", b,
		"FAIL: entries.jsonl seq 3: run_prev: expected 1 (the run's previous entry in the pack), found 2")
}

// A tree of size 0 (a window exported before the ledger logged anything):
// its multiproof is empty, its root SHA-256 of nothing (section 6).
func TestAFormat6PackOfTheEmptyTreeCarriesItsRoot(t *testing.T) {
	l := teamLog(t)
	w := honestWindow(t, l, 0, "t", 300, 700)
	w.format, w.noteVersion = 6, 4
	root := l.root(t, 0)
	checkLine(t, "a window of the empty tree", w, fmt.Sprintf("OK team t from_us 300 to_us 700 (seqs 0:0): 0 entries, "+
		"tree size 0, root %s; complete: every entry of team t logged in [300, 700) up to seq -1 (team chain, 0 entries); "+
		"outcomes.json not recomputed", hex.EncodeToString(root[:])))
	w.extra = map[string][]byte{"multiproof.txt": multiproofText([]tlog.Hash{root})}
	checkLine(t, "a multiproof.txt of the root", w,
		"FAIL: multiproof.txt: the multiproof holds 1 hashes; the entries' inclusion uses 0")
}
