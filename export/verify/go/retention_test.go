package main

// Packs of format 9 (CONTRACT section 9, "A run pack across the line"),
// built here from the contract's text: run t/r, whose entries below seq 3
// a pass pruned under the rule "team t 1d" (its retention entry at seq 4),
// exported from seq 3; then broken one way each and re-signed, each refused
// with the check's message.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

const testPolicy = "# the test ledger's retention\nteam t 1d\ndefault 30d\n"

// retentionReceipt is the receipt of pass 1's entry for the rule team t
// (keep 1d, line 3) of policy, at now.
func retentionReceipt(policy string, now int64) map[string]interface{} {
	sum := sha256.Sum256([]byte(policy))
	return map[string]interface{}{"kind": "retention", "receipt_id": "ledger.retention.1.team.t", "team": "ledger",
		"run_id": "ledger.retention", "attempt": 1, "occurred_at_us": now, "pass": 1, "rule_team": "t", "keep_s": 86_400,
		"cutoff_us": now - 86_400_000_000, "below_seq": 3, "policy_sha256": hex.EncodeToString(sum[:])}
}

// prunedLog: run t/r starts and completes s1 (seqs 0, 1), team u logs seq
// 2, the run starts s2 (3); pass 1's entry for team t (4) prunes below 3;
// the run completes s2 (5) and starts s3 (6), left with no completion.
func prunedLog(t *testing.T) *testLog {
	l := &testLog{}
	l.addReceipt(t, start("a-1", "s1", 1000), t0)
	l.addReceipt(t, exec("e-1", "s1", "a-1"), t0+10)
	l.addReceipt(t, other("o-2"), t0+20)
	l.addReceipt(t, start("a-2", "s2", 1000), t0+30)
	l.addReceiptBy(t, "ledger", retentionReceipt(testPolicy, t0+40), t0+40)
	l.addReceipt(t, exec("e-2", "s2", "a-2"), t0+50)
	l.addReceipt(t, start("a-3", "s3", 3_600_000), t0+60)
	return l
}

// prunedPack is the format 9 pack of run t/r from seq 3 at tree size 7,
// the entries' and the retention entry's seqs in one multiproof; the
// run-head map is signed without the seqs in leftOut (none: the ledger's).
func prunedPack(t *testing.T, l *testLog, leftOut map[int64]bool) *builtPack {
	b := runPackOf(t, l, 7, "t", "r", t0+3_000_000, 500, leftOut, 6)
	b.setPruned(t, l, []int64{3, 5, 6}, 3)
	b.files["retention-policy.txt"] = []byte(testPolicy)
	return b
}

// setPruned gives a format 9 pack the entries seqs from from_seq, and the
// multiproof of them and of the retention entry at seq 4.
func (b *builtPack) setPruned(t *testing.T, l *testLog, seqs []int64, from int64) {
	b.setEntries(t, l, 7, seqs)
	walked := append([]int64{}, seqs...)
	if !contains64(seqs, 4) {
		walked = append(walked, 4)
	}
	sort.Slice(walked, func(i, j int) bool { return walked[i] < walked[j] })
	b.setMultiproof(t, l, 7, walked)
	b.files["retention.jsonl"] = append(append([]byte{}, l.leaves[4]...), '\n')
	b.manifest["format"] = 9
	b.manifest["counts"] = map[string]int{"entries": len(seqs)}
	b.manifest["scope"] = map[string]interface{}{"from_seq": from, "kind": "run", "team": "t", "run_id": "r"}
}

func contains64(s []int64, x int64) bool {
	for _, y := range s {
		if x == y {
			return true
		}
	}
	return false
}

// retentionLine rewrites the retention entry of seq 4 with its receipt
// edited: a leaf the log does not hold, caught by the checks before the
// multiproof.
func retentionLine(t *testing.T, l *testLog, edit func(r map[string]interface{})) []byte {
	var leaf map[string]interface{}
	dec := json.NewDecoder(bytes.NewReader(l.leaves[4]))
	dec.UseNumber()
	if err := dec.Decode(&leaf); err != nil {
		t.Fatal(err)
	}
	edit(leaf["receipt"].(map[string]interface{}))
	raw, err := json.Marshal(leaf)
	if err != nil {
		t.Fatal(err)
	}
	v, err := parseJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	encodeCanonical(&out, v)
	return append(out.Bytes(), '\n')
}

func TestAFormat9PackVerifiesAndSaysWhatWasPruned(t *testing.T) {
	l := prunedLog(t)
	root := l.root(t, 7)
	want := fmt.Sprintf("OK run t/r from seq 3: 3 entries, tree size 7, root %s; outcomes.json not recomputed\n"+
		"complete from seq 3: every entry of the run from seq 3 up to seq 6 (run-head proof, 3 of its 5 entries); the 2 "+
		"before seq 3 were pruned under the retention policy (pass 1, rule team t, cutoff %s), as entry 4 states\n"+
		"step t/r/s3 attempt 1: no completion in the log up to seq 6 (proven)",
		hex.EncodeToString(root[:]), signedTime(t0+40-86_400_000_000))
	checkPack(t, "genuine", prunedPack(t, l, nil), want)
}

func TestFormat9FilesAndScopeAreRefusedInAnyOtherFormat(t *testing.T) {
	l := prunedLog(t)
	b := prunedPack(t, l, nil)
	b.manifest["format"] = 8
	checkPack(t, "format 8 with from_seq", b, "FAIL: manifest.json: scope.from_seq: only a run pack of format 9 starts at a seq")
	b.manifest["scope"] = map[string]interface{}{"kind": "run", "team": "t", "run_id": "r"}
	checkPack(t, "format 8 with retention.jsonl", b, "FAIL: retention.jsonl: only a pack of format 9 carries a retention entry")
	delete(b.files, "retention.jsonl")
	checkPack(t, "format 8 with retention-policy.txt", b,
		"FAIL: retention-policy.txt: only a pack of format 9 carries a retention policy")

	b = prunedPack(t, l, nil)
	b.manifest["scope"] = map[string]interface{}{"kind": "run", "team": "t", "run_id": "r"}
	checkPack(t, "format 9 without from_seq", b, "FAIL: manifest.json: scope: a pack of format 9 is a run pack from a seq (from_seq)")
	b.manifest["scope"] = map[string]interface{}{"from_seq": 3, "kind": "seq", "to_seq": 7}
	checkPack(t, "format 9 of a seq range", b, "FAIL: manifest.json: scope: a pack of format 9 is a run pack from a seq (from_seq)")
	b.manifest["scope"] = map[string]interface{}{"from_seq": 0, "kind": "run", "team": "t", "run_id": "r"}
	checkPack(t, "from_seq 0", b, "FAIL: manifest.json: scope.from_seq: want an integer of at least 1, found 0")

	b = prunedPack(t, l, nil)
	delete(b.files, "retention.jsonl")
	checkPack(t, "no retention.jsonl", b,
		"FAIL: retention.jsonl: missing: a format 9 pack carries the retention entry that pruned its run's first entries")
	b = prunedPack(t, l, nil)
	delete(b.files, "retention-policy.txt")
	checkPack(t, "no retention-policy.txt", b,
		"FAIL: retention-policy.txt: missing: a format 9 pack carries the policy its retention entry applied")
}

func TestABrokenRetentionEntryOrPolicyIsRefused(t *testing.T) {
	l := prunedLog(t)
	sha := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	withPolicy := func(policy string) func(*builtPack) {
		return func(b *builtPack) {
			b.files["retention-policy.txt"] = []byte(policy)
			b.files["retention.jsonl"] = retentionLine(t, l, func(r map[string]interface{}) { r["policy_sha256"] = sha(policy) })
		}
	}
	cases := []struct {
		name, want string
		edit       func(b *builtPack)
	}{
		{"two lines", "FAIL: retention.jsonl: want one line ending in a newline",
			func(b *builtPack) { b.files["retention.jsonl"] = append(b.files["retention.jsonl"], '\n') }},
		{"another entry", "FAIL: retention.jsonl: line 1: kind agent_start, want retention",
			func(b *builtPack) { b.files["retention.jsonl"] = append(append([]byte{}, l.leaves[3]...), '\n') }},
		{"an emitter's", "FAIL: retention.jsonl: line 1: receipt_id: 'ledger.retention.1.team.t' is in the ledger's " +
			"namespace: ids starting with 'ledger.' are written by the ledger only",
			func(b *builtPack) {
				b.files["retention.jsonl"] = bytes.Replace(b.files["retention.jsonl"], []byte(`"emitter":"ledger"`),
					[]byte(`"emitter":"uri:spiffe://test/gw"`), 1)
			}},
		{"cutoff_us moved", "FAIL: retention.jsonl: line 1: cutoff_us: want occurred_at_us - keep_s * 1000000, " +
			fmt.Sprint(t0+40-86_400_000_000) + ", found " + fmt.Sprint(t0),
			func(b *builtPack) {
				b.files["retention.jsonl"] = retentionLine(t, l, func(r map[string]interface{}) { r["cutoff_us"] = t0 })
			}},
		{"beyond the tree", "FAIL: retention.jsonl: seq 9 is not in the checkpoint's tree of size 7",
			func(b *builtPack) {
				b.files["retention.jsonl"] = bytes.Replace(b.files["retention.jsonl"], []byte(`"seq":4`), []byte(`"seq":9`), 1)
			}},
		{"below its below_seq", "FAIL: retention.jsonl: seq 4 is below its below_seq 5: a pass's entry is appended after its line",
			func(b *builtPack) {
				b.files["retention.jsonl"] = retentionLine(t, l, func(r map[string]interface{}) { r["below_seq"] = 5 })
			}},
		{"another policy", "FAIL: retention-policy.txt: SHA-256 " + sha("team t 2d\n") + ", the retention entry's " +
			"policy_sha256 is " + sha(testPolicy),
			func(b *builtPack) { b.files["retention-policy.txt"] = []byte("team t 2d\n") }},
		{"a policy refused", "FAIL: retention-policy.txt: retention policy line 2: keep '1D': want forever, or 1h to " +
			"36500d as a decimal count and d or h",
			withPolicy("# x\nteam t 1D\n")},
		{"a policy refused by its spacing", "FAIL: retention-policy.txt: retention policy line 2: want 'default KEEP' or " +
			"'team T KEEP'", withPolicy("# x\nteam t  1d\n")},
		{"no rule covers t", "FAIL: retention-policy.txt: no rule covers team t: its entries are kept for good",
			withPolicy("team u 1d\n")},
		{"t kept forever", "FAIL: retention-policy.txt: line 2: team t's entries are kept forever",
			withPolicy("default 1d\nteam t forever\n")},
		{"the default rule's", "FAIL: retention.jsonl: the entry states rule team t (keep_s 86400), the policy's rule for " +
			"team t is default (line 1, keep_s 86400)", withPolicy("default 1d\nteam u 1d\n")},
		{"another keep", "FAIL: retention.jsonl: the entry states rule team t (keep_s 86400), the policy's rule for " +
			"team t is team t (line 2, keep_s 172800)", withPolicy("default 1d\nteam t 2d\n")},
		{"another from_seq", "FAIL: manifest.json: scope.from_seq 2, the retention entry's below_seq is 3",
			func(b *builtPack) {
				b.manifest["scope"] = map[string]interface{}{"from_seq": 2, "kind": "run", "team": "t", "run_id": "r"}
			}},
	}
	for _, c := range cases {
		b := prunedPack(t, l, nil)
		c.edit(b)
		checkPack(t, c.name, b, c.want)
	}
	// The entry of a forever rule states no keep_s.
	b := prunedPack(t, l, nil)
	withPolicy("team t 1d\n")(b)
	b.files["retention.jsonl"] = retentionLine(t, l, func(r map[string]interface{}) {
		delete(r, "keep_s")
		delete(r, "cutoff_us")
		r["below_seq"] = 0
		r["policy_sha256"] = sha("team t 1d\n")
	})
	checkPack(t, "a forever rule's entry", b, "FAIL: retention.jsonl: the entry states rule team t (keep_s none), the "+
		"policy's rule for team t is team t (line 1, keep_s 86400)")
}

func TestAFormat9PacksEntriesAreCheckedFromItsSeq(t *testing.T) {
	l := prunedLog(t)
	cases := []struct {
		name, want string
		seqs       []int64
	}{
		{"an entry below from_seq", "FAIL: entries.jsonl: line 1: seq 1 is below the scope's from_seq 3", []int64{1, 3, 5, 6}},
		{"the first entry left out", "FAIL: entries.jsonl: line 1: run_prev expected below 3 (the run's entries before " +
			"the scope's from_seq were pruned), found 3", []int64{5, 6}},
		{"an entry in the middle left out", "FAIL: entries.jsonl seq 6: run_prev: expected 3 (the run's previous entry " +
			"in the pack), found 5", []int64{3, 6}},
		{"no entry", "FAIL: entries.jsonl: a pack of format 9 holds at least one entry of its run", nil},
	}
	for _, c := range cases {
		b := prunedPack(t, l, nil)
		b.setPruned(t, l, c.seqs, 3)
		checkPack(t, c.name, b, c.want)
	}
	// The retention entry left out of the multiproof.
	b := prunedPack(t, l, nil)
	b.setMultiproof(t, l, 7, []int64{3, 5, 6})
	if got, _ := printed(t, b.write(t)); !strings.HasPrefix(got, "FAIL: multiproof.txt: ") {
		t.Errorf("the retention entry outside the multiproof: %s", got)
	}
}

func TestAFormat9PackWhoseHeadCountsNoPrunedEntryIsRefused(t *testing.T) {
	// The operator signs a run-head map without the pruned seqs 0 and 1:
	// the head counts the pack's 3 entries, as a whole run's pack.
	l := prunedLog(t)
	b := prunedPack(t, l, map[int64]bool{0: true, 1: true})
	checkPack(t, "count 3", b, "FAIL: run-head.json: the run has 3 entries up to tree size 7, the pack holds 3 from seq 3: "+
		"a run pack from a seq holds fewer entries than its run")
	// Its last entry left out: the head is seq 6, the pack's last seq 5.
	b = prunedPack(t, l, nil)
	b.setPruned(t, l, []int64{3, 5}, 3)
	checkPack(t, "the head left out", b, fmt.Sprintf("FAIL: run-head.json: the run's last entry up to tree size 7 is seq 6 "+
		"with leaf hash %s, the pack's last is seq 5 with leaf hash %s", hexHash(l.es[6].hash), hexHash(l.es[5].hash)))
}

func hexHash(h tlog.Hash) string {
	return hex.EncodeToString(h[:])
}

// TestAFormat9PackHoldsErasedEntriesAsFormat8Does: seq 5 of the run erased
// by the redaction at seq 7, after the retention entry: the multiproof
// walks the entries, the retention entry and the redaction in seq order.
func TestAFormat9PackHoldsErasedEntriesAsFormat8Does(t *testing.T) {
	l := prunedLog(t)
	e := l.es[5]
	fields := map[string]interface{}{"kind": "redaction", "receipt_id": "ledger.redaction.5", "team": "ledger",
		"run_id": "ledger.redactions", "attempt": 1, "occurred_at_us": t0 + 70, "entry_seq": 5,
		"entry_leaf_hash": hexHash(e.hash), "entry_v": 2, "entry_prev": e.prev, "entry_logged_at_us": e.loggedAt,
		"entry_run_prev": e.runPrev, "entry_team_prev": e.teamPrev, "entry_kind": e.kind, "entry_team": e.team,
		"entry_run_id": e.runID, "entry_receipt_id": e.receiptID, "entry_step_id": e.stepID, "entry_attempt": 1,
		"entry_start_receipt_id": e.startReceiptID, "reason": "court order 7", "requested_by": "cn:a", "approved_by": "cn:b"}
	l.addReceiptBy(t, "ledger", fields, t0+70)
	raw, _ := json.Marshal(fields)
	v, err := parseJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	redacted, err := redactedLine(7, v)
	if err != nil {
		t.Fatal(err)
	}
	b := runPackOf(t, l, 8, "t", "r", t0+3_000_000, 500, nil, 6)
	b.setEntries(t, l, 8, []int64{3, 5, 6})
	b.setMultiproof(t, l, 8, []int64{3, 4, 5, 6, 7})
	lines := bytes.SplitAfter(b.files["entries.jsonl"], []byte("\n"))
	lines[1] = append(redacted, '\n')
	b.files["entries.jsonl"] = bytes.Join(lines, nil)
	b.files["redactions.jsonl"] = append(append([]byte{}, l.leaves[7]...), '\n')
	b.files["retention.jsonl"] = append(append([]byte{}, l.leaves[4]...), '\n')
	b.files["retention-policy.txt"] = []byte(testPolicy)
	b.manifest["format"] = 9
	b.manifest["counts"] = map[string]int{"entries": 3}
	b.manifest["scope"] = map[string]interface{}{"from_seq": 3, "kind": "run", "team": "t", "run_id": "r"}
	root := l.root(t, 8)
	checkPack(t, "erased and pruned", b, fmt.Sprintf("OK run t/r from seq 3: 3 entries, tree size 8, root %s; "+
		"outcomes.json not recomputed\ncomplete from seq 3: every entry of the run from seq 3 up to seq 7 (run-head proof, "+
		"3 of its 5 entries); the 2 before seq 3 were pruned under the retention policy (pass 1, rule team t, cutoff %s), "+
		"as entry 4 states\nstep t/r/s3 attempt 1: no completion in the log up to seq 7 (proven)\n"+
		"entry 5: erased by redaction 7 (agent_exec of team t, run r): court order 7; requested by cn:a, approved by cn:b.",
		hexHash(root), signedTime(t0+40-86_400_000_000)))

	// The retention entry's seq taken by the redaction's leaf in
	// retention.jsonl's place: two leaves of one seq.
	b.files["retention.jsonl"] = bytes.Replace(b.files["retention.jsonl"], []byte(`"seq":4`), []byte(`"seq":7`), 1)
	checkPack(t, "the retention entry at the redaction's seq", b,
		"FAIL: retention.jsonl: line 1: seq 7: not the leaf of redactions.jsonl line 1, which holds that seq")
}
