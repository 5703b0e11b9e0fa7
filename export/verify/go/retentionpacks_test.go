package main

// Packs of a real ledgerd after a retention pass (testdata/retention):
// run9, a run pack of format 9 of acme/run-2 from seq 1875, whose entries
// below it pass 1 pruned under the rule "team acme 15d"; run7, a format 7
// pack of a run the pass pruned nothing of. Genuine, and run9 broken one
// way each and re-signed with that ledger's key
// (testdata/retention/signing.key, a key made for these packs alone).

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

const run9Root = "1db164ca2e6b05cb5f90c28c6e00df36721f1629d60988b761b1120387b60b8e"

func verifyRetentionPack(t *testing.T, path string) (string, int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "retention", "vkey"))
	if err != nil {
		t.Fatal(err)
	}
	return run(options{pack: path, vkey: strings.TrimSpace(string(b))})
}

func TestPacksAcrossTheRetentionLineVerify(t *testing.T) {
	for name, want := range map[string]string{
		"run9": "OK run acme/run-2 from seq 1875: 189 entries, tree size 3003, root " + run9Root + "; outcomes.json not " +
			"recomputed\ncomplete from seq 1875: every entry of the run from seq 1875 up to seq 3002 (run-head proof, 189 " +
			"of its 378 entries); the 189 before seq 1875 were pruned under the retention policy (pass 1, rule team acme, " +
			"cutoff 2026-01-26T00:00:00.000000Z (1769385600000000 us)), as entry 3001 states",
		"run7": "OK run globex/run-3: 252 entries, tree size 3003, root " + run9Root + "; complete: every entry of the run " +
			"up to seq 3002 (run-head proof, 252 entries); outcomes.json not recomputed",
	} {
		if got, code := verifyRetentionPack(t, filepath.Join("testdata", "retention", name+".tar.gz")); code != 0 || got != want {
			t.Errorf("%s: exit %d:\n got: %s\nwant: %s", name, code, got, want)
		}
	}
}

// run9Lines are the lines of a file of run9, each with its newline.
func run9Lines(b *builtPack, name string) []string {
	lines := strings.SplitAfter(string(b.files[name]), "\n")
	return lines[:len(lines)-1]
}

// setEntryLines writes entries.jsonl of lines, counts.entries, and the
// multiproof of them and the retention entry, as the operator holding the
// pack can: from the pack's multiproof and leaves (reprove).
func setEntryLines(t *testing.T, b *builtPack, lines []string) {
	t.Helper()
	old := leafHashes(t, b, run9Lines(b, "entries.jsonl"))
	keep := leafHashes(t, b, lines)
	var size int64
	fmt.Sscan(string(b.manifest["tree_size"].(json.Number)), &size)
	proof, err := reprove(old, keep, b.files[multiproofName], size)
	if err != nil {
		t.Fatal(err)
	}
	b.files["entries.jsonl"] = []byte(strings.Join(lines, ""))
	b.files[multiproofName] = multiproofText(proof)
	b.manifest["counts"] = map[string]int{"entries": len(lines)}
}

// leafHashes are the leaf hashes by seq of lines of entries.jsonl and of
// the pack's retention entry.
func leafHashes(t *testing.T, b *builtPack, lines []string) map[int64]tlog.Hash {
	t.Helper()
	out := map[int64]tlog.Hash{}
	for _, l := range append(append([]string{}, lines...), string(b.files["retention.jsonl"])) {
		e, err := readEntry([]byte(strings.TrimSuffix(l, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		out[e.seq] = e.hash
	}
	return out
}

// reprove is the multiproof of the leaves keep, a subset of old, from the
// multiproof of old (section 6): every subtree hash the walk of old meets,
// then the walk of keep, in the same order, naming the hash of each
// subtree that holds none of keep.
func reprove(old, keep map[int64]tlog.Hash, file []byte, size int64) ([]tlog.Hash, error) {
	nodes := map[[2]int64]tlog.Hash{}
	f := &multiproofFile{rest: file}
	holds := func(set map[int64]tlog.Hash, lo, hi int64) bool {
		for s := range set {
			if lo <= s && s < hi {
				return true
			}
		}
		return false
	}
	var walk func(lo, hi int64) (tlog.Hash, error)
	walk = func(lo, hi int64) (tlog.Hash, error) {
		var h tlog.Hash
		var err error
		switch {
		case !holds(old, lo, hi):
			h, _, err = f.next()
		case hi-lo == 1:
			h = old[lo]
		default:
			k := split(hi - lo)
			l, err1 := walk(lo, lo+k)
			r, err2 := walk(lo+k, hi)
			if err1 != nil || err2 != nil {
				return h, fmt.Errorf("%v %v", err1, err2)
			}
			h = tlog.NodeHash(l, r)
		}
		nodes[[2]int64{lo, hi}] = h
		return h, err
	}
	if _, err := walk(0, size); err != nil {
		return nil, err
	}
	var out []tlog.Hash
	var emit func(lo, hi int64)
	emit = func(lo, hi int64) {
		switch {
		case !holds(keep, lo, hi):
			out = append(out, nodes[[2]int64{lo, hi}])
		case hi-lo > 1:
			k := split(hi - lo)
			emit(lo, lo+k)
			emit(lo+k, hi)
		}
	}
	emit(0, size)
	return out, nil
}

func TestBrokenPacksAcrossTheRetentionLineAreRefused(t *testing.T) {
	sha := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	genuine := ledgerPack(t, "retention", "run9")
	policy := string(genuine.files["retention-policy.txt"])
	if policy != "default 20d\nteam acme 15d\nteam audit forever\n" {
		t.Fatalf("run9's policy: %q", policy)
	}
	entries := run9Lines(genuine, "entries.jsonl")
	seqOf := func(i int) int64 {
		e, err := readEntry([]byte(strings.TrimSuffix(entries[i], "\n")))
		if err != nil {
			t.Fatal(err)
		}
		return e.seq
	}
	hashOf := func(i int) string {
		return hexHash(tlog.RecordHash([]byte(strings.TrimSuffix(entries[i], "\n"))))
	}
	last := len(entries) - 1
	same := ledgerPack(t, "retention", "run9")
	setEntryLines(t, same, entries)
	if !bytes.Equal(same.files[multiproofName], genuine.files[multiproofName]) {
		t.Fatal("the multiproof reproved of all the entries is not the pack's")
	}
	// withPolicy carries another policy, and the retention entry states its
	// SHA-256 (a leaf the log does not hold, refused by the checks before
	// the multiproof).
	withPolicy := func(p string) func(b *builtPack) {
		return func(b *builtPack) {
			b.files["retention-policy.txt"] = []byte(p)
			b.files["retention.jsonl"] = bytes.Replace(b.files["retention.jsonl"], []byte(sha(policy)), []byte(sha(p)), 1)
		}
	}
	replace := func(file, old, new string) func(b *builtPack) {
		return func(b *builtPack) { b.files[file] = bytes.Replace(b.files[file], []byte(old), []byte(new), 1) }
	}
	scope := func(b *builtPack) map[string]interface{} { return b.manifest["scope"].(map[string]interface{}) }
	cases := []struct {
		name, want string
		edit       func(b *builtPack)
	}{
		{"the pack called format 8", "manifest.json: scope.from_seq: only a run pack of format 9 starts at a seq",
			func(b *builtPack) { b.manifest["format"] = 8 }},
		{"a format 8 run pack with the retention files",
			"retention.jsonl: only a pack of format 9 carries a retention entry",
			func(b *builtPack) { b.manifest["format"] = 8; delete(scope(b), "from_seq") }},
		{"a format 8 run pack with the policy", "retention-policy.txt: only a pack of format 9 carries a retention policy",
			func(b *builtPack) {
				b.manifest["format"] = 8
				delete(scope(b), "from_seq")
				delete(b.files, "retention.jsonl")
			}},
		{"from_seq removed", "manifest.json: scope: a pack of format 9 is a run pack from a seq (from_seq)",
			func(b *builtPack) { delete(scope(b), "from_seq") }},
		{"retention.jsonl removed",
			"retention.jsonl: missing: a format 9 pack carries the retention entry that pruned its run's first entries",
			func(b *builtPack) { delete(b.files, "retention.jsonl") }},
		{"retention-policy.txt removed",
			"retention-policy.txt: missing: a format 9 pack carries the policy its retention entry applied",
			func(b *builtPack) { delete(b.files, "retention-policy.txt") }},
		{"the retention entry twice", "retention.jsonl: want one line ending in a newline",
			func(b *builtPack) { b.files["retention.jsonl"] = bytes.Repeat(b.files["retention.jsonl"], 2) }},
		{"an entry of the run as the retention entry", "retention.jsonl: line 1: kind tool_call, want retention",
			func(b *builtPack) { b.files["retention.jsonl"] = []byte(entries[0]) }},
		{"the retention entry's cutoff moved", "retention.jsonl: line 1: cutoff_us: want occurred_at_us - keep_s * " +
			"1000000, 1769385600000000, found 1769385600000001",
			replace("retention.jsonl", `"cutoff_us":1769385600000000`, `"cutoff_us":1769385600000001`)},
		{"the retention entry beyond the tree", "retention.jsonl: seq 3003 is not in the checkpoint's tree of size 3003",
			replace("retention.jsonl", `"seq":3001`, `"seq":3003`)},
		{"the retention entry below its line", "retention.jsonl: seq 3001 is below its below_seq 3002: a pass's entry " +
			"is appended after its line", replace("retention.jsonl", `"below_seq":1875`, `"below_seq":3002`)},
		{"the policy altered", "retention-policy.txt: SHA-256 " + sha("default 20d\nteam acme 16d\nteam audit forever\n") +
			", the retention entry's policy_sha256 is " + sha(policy),
			replace("retention-policy.txt", "team acme 15d", "team acme 16d")},
		{"a policy refused", "retention-policy.txt: retention policy line 4: team 'acme': a second rule for the team " +
			"(the first is on line 2)", withPolicy(policy + "team acme forever\n")},
		{"a policy keeping acme's entries forever", "retention-policy.txt: line 2: team acme's entries are kept forever",
			withPolicy("default 20d\nteam acme forever\n")},
		{"a policy of no rule for acme", "retention-policy.txt: no rule covers team acme: its entries are kept for good",
			withPolicy("team audit forever\n")},
		{"a policy with acme under the default rule", "retention.jsonl: the entry states rule team acme (keep_s 1296000), " +
			"the policy's rule for team acme is default (line 1, keep_s 1728000)", withPolicy("default 20d\nteam audit forever\n")},
		{"from_seq lowered", "manifest.json: scope.from_seq 1874, the retention entry's below_seq is 1875",
			func(b *builtPack) { scope(b)["from_seq"] = 1874 }},
		{"the first entry kept dropped", "entries.jsonl: line 1: run_prev expected below 1875 (the run's entries before " +
			"the scope's from_seq were pruned), found 1875", func(b *builtPack) { setEntryLines(t, b, entries[1:]) }},
		{"an entry in the middle dropped", fmt.Sprintf("entries.jsonl seq %d: run_prev: expected %d (the run's previous "+
			"entry in the pack), found %d", seqOf(11), seqOf(9), seqOf(10)),
			func(b *builtPack) { setEntryLines(t, b, append(append([]string{}, entries[:10]...), entries[11:]...)) }},
		{"every entry dropped", "entries.jsonl: a pack of format 9 holds at least one entry of its run",
			func(b *builtPack) { setEntryLines(t, b, nil) }},
		{"the last entry dropped", fmt.Sprintf("run-head.json: the run's last entry up to tree size 3003 is seq %d with "+
			"leaf hash %s, the pack's last is seq %d with leaf hash %s", seqOf(last), hashOf(last), seqOf(last-1), hashOf(last-1)),
			func(b *builtPack) { setEntryLines(t, b, entries[:last]) }},
		{"the retention entry's time altered", "multiproof.txt: the entries and the multiproof lead to root ",
			replace("retention.jsonl", `"logged_at_us":1770681600000000`, `"logged_at_us":1770681600000001`)},
	}
	for _, c := range cases {
		b := ledgerPack(t, "retention", "run9")
		c.edit(b)
		got, code := verifyRetentionPack(t, b.write(t))
		want := "FAIL: " + c.want
		if code != 1 || !strings.HasPrefix(got, want) || !strings.HasSuffix(c.want, " ") && got != want {
			t.Errorf("%s: exit %d:\n got: %s\nwant: %s", c.name, code, got, want)
		}
	}
}
