package main

import (
	"encoding/hex"
	"fmt"
	"testing"
)

// Deadlines in a run pack (CONTRACT section 7, "Last, in a run pack ..."),
// through run() on packs built from the contract's text: the operator who
// drops the ledger's step_unknown from a run and signs the run-head map
// without it is caught by the signed time.

const t0 = int64(1_800_000_000_000_000)

func start(id, step string, timeoutMs int64) map[string]interface{} {
	return map[string]interface{}{"kind": "agent_start", "receipt_id": id, "team": "t", "run_id": "r", "step_id": step,
		"attempt": 1, "decision": "allow", "timeout_ms": timeoutMs, "occurred_at_us": 1}
}

func exec(id, step, startID string) map[string]interface{} {
	return map[string]interface{}{"kind": "agent_exec", "receipt_id": id, "team": "t", "run_id": "r", "step_id": step,
		"attempt": 1, "start_receipt_id": startID, "status": "succeeded", "occurred_at_us": 1}
}

func other(id string) map[string]interface{} {
	return map[string]interface{}{"kind": "tool_call", "receipt_id": id, "team": "u", "run_id": "x", "tool": "git",
		"decision": "allow", "occurred_at_us": 1}
}

// stepLog: run t/r starts s1 (timeout 1 s) at t0+10 and s2, which it
// completes; the ledger declares s1 unknown at seq 5, past its deadline
// (t0+10 + 1 s + a grace of 500 ms); team u's entries around them.
func stepLog(t *testing.T) *testLog {
	l := &testLog{}
	l.addReceipt(t, other("o-0"), t0)
	l.addReceipt(t, start("a-1", "s1", 1000), t0+10)
	l.addReceipt(t, start("a-2", "s2", 1000), t0+20)
	l.addReceipt(t, exec("e-2", "s2", "a-2"), t0+30)
	l.addReceipt(t, other("o-4"), t0+40)
	l.addReceipt(t, map[string]interface{}{"kind": "step_unknown", "receipt_id": "ledger.unknown.1", "team": "t",
		"run_id": "r", "step_id": "s1", "attempt": 1, "start_seq": 1, "start_receipt_id": "a-1",
		"deadline_us": t0 + 1_500_010, "occurred_at_us": 1}, t0+1_500_020)
	l.addReceipt(t, other("o-6"), t0+2_000_000)
	return l
}

func runOK(t *testing.T, l *testLog, n int64, count int, steps ...string) string {
	root := l.root(t, n)
	out := fmt.Sprintf("OK run t/r: %d entries, tree size %d, root %s; complete: every entry of the run up to seq %d "+
		"(run-head proof, %d entries); outcomes.json not recomputed", count, n, hex.EncodeToString(root[:]), n-1, count)
	for _, s := range steps {
		out += fmt.Sprintf("\nstep t/r/%s attempt 1: no completion in the log up to seq %d (proven)", s, n-1)
	}
	return out
}

func overdue(step string, deadline, signed int64) string {
	return fmt.Sprintf("FAIL: outcomes.json: step t/r/%s attempt 1 is pending, but its deadline (start + timeout + the "+
		"manifest's unknown_grace_ms 500) %s is before the checkpoint's signed time %s: an honest ledger declares it "+
		"unknown before signing", step, signedTime(deadline), signedTime(signed))
}

func TestARunWhoseStepUnknownWasDroppedFailsOnItsDeadline(t *testing.T) {
	l := stepLog(t)
	signed := t0 + 3_000_000
	checkPack(t, "the genuine run: s1 declared unknown", runPack(t, l, 7, "t", "r", signed, 500, nil),
		runOK(t, l, 7, 4, "s1"))
	// The operator's forgery: step_unknown dropped, the run-head map signed
	// without it (the pack's head is seq 3).
	checkPack(t, "step_unknown dropped, the run head forged and re-signed",
		runPack(t, l, 7, "t", "r", signed, 500, map[int64]bool{5: true}), overdue("s1", t0+1_500_010, signed))
	// The grace stated smaller than the ledger's: the deadline moves earlier.
	b := runPack(t, l, 5, "t", "r", t0+1_400_000, 500, nil)
	b.manifest["unknown_grace_ms"] = 300
	checkPack(t, "the grace rewritten smaller", b, fmt.Sprintf("FAIL: outcomes.json: step t/r/s1 attempt 1 is pending, "+
		"but its deadline (start + timeout + the manifest's unknown_grace_ms 300) %s is before the checkpoint's signed "+
		"time %s: an honest ledger declares it unknown before signing", signedTime(t0+1_300_010), signedTime(t0+1_400_000)))
}

func TestAStepPendingWithinItsDeadlineIsNoFinding(t *testing.T) {
	l := stepLog(t)
	// At tree size 5 (before the declaration) signed exactly at s1's
	// deadline: still pending, no finding; a microsecond later, a finding.
	checkPack(t, "signed at the deadline", runPack(t, l, 5, "t", "r", t0+1_500_010, 500, nil), runOK(t, l, 5, 3, "s1"))
	checkPack(t, "signed just past the deadline", runPack(t, l, 5, "t", "r", t0+1_500_011, 500, nil),
		overdue("s1", t0+1_500_010, t0+1_500_011))
	// A seq range holds part of the log: the rule does not apply.
	b := runPack(t, l, 5, "t", "r", t0+3_000_000, 500, nil)
	b.setEntries(t, l, 5, []int64{1, 2, 3})
	delete(b.files, "run-head.json")
	b.manifest["scope"] = map[string]interface{}{"kind": "seq", "from_seq": 1, "to_seq": 4}
	root := l.root(t, 5)
	checkPack(t, "a seq range with a step past its deadline", b, fmt.Sprintf(
		"OK seq 1:4: 3 entries, tree size 5, root %s; outcomes.json not recomputed", hex.EncodeToString(root[:])))
}

func TestWhichStepsAreSettled(t *testing.T) {
	l := &testLog{}
	l.addReceipt(t, start("a-0", "s10", 1000), t0)
	l.addReceipt(t, start("a-1", "s9", 1000), t0+1)
	l.addReceipt(t, exec("e-2", "s8", "a-1"), t0+2) // names s9's start for another step
	l.addReceipt(t, map[string]interface{}{"kind": "agent_start", "receipt_id": "a-3", "team": "t", "run_id": "r",
		"step_id": "s7", "decision": "deny", "reason": "no", "occurred_at_us": 1}, t0+3) // denied
	l.addReceipt(t, exec("e-4", "s6", "gone"), t0+4) // an orphan completion, before its start
	l.addReceipt(t, start("a-5", "s6", 1000), t0+5)
	signed := t0 + 10_000_000
	// s10 and s9 are pending past their deadlines: s9 comes first in
	// outcomes.json's order (a shorter step_id first).
	checkPack(t, "two steps overdue", runPack(t, l, 6, "t", "r", signed, 500, nil),
		overdue("s9", t0+1+1_500_000, signed))
	// A step_unknown naming another start does not settle s9.
	l.addReceipt(t, map[string]interface{}{"kind": "step_unknown", "receipt_id": "ledger.unknown.0", "team": "t",
		"run_id": "r", "step_id": "s9", "attempt": 1, "start_seq": 0, "start_receipt_id": "a-0", "deadline_us": 1,
		"occurred_at_us": 1}, t0+1_600_000)
	checkPack(t, "a step_unknown of another start", runPack(t, l, 7, "t", "r", signed, 500, nil),
		overdue("s9", t0+1+1_500_000, signed))
	l.addReceipt(t, exec("e-7", "s9", "a-1"), t0+1_700_000) // s9's own, late
	checkPack(t, "s9 completed", runPack(t, l, 8, "t", "r", signed, 500, nil), overdue("s10", t0+1_500_000, signed))
}

// What the verifier prints of a step whose step_id holds a terminal
// control sequence and a bidi override is escaped.
func TestStepIdsArePrintedEscaped(t *testing.T) {
	l := &testLog{}
	id := "s1\r\x1b[2KOK: verified\u202e\\"
	l.addReceipt(t, start("a-0", id, 1000), t0)
	got, code := printed(t, runPack(t, l, 1, "t", "r", t0+10, 500, nil).write(t))
	root := l.root(t, 1)
	want := fmt.Sprintf("OK run t/r: 1 entries, tree size 1, root %s; complete: every entry of the run up to seq 0 "+
		"(run-head proof, 1 entries); outcomes.json not recomputed\n"+
		`step t/r/s1\x0d\x1b[2KOK: verified\u{202e}\ attempt 1: no completion in the log up to seq 0 (proven)`,
		hex.EncodeToString(root[:]))
	if got != want || code != 0 {
		t.Errorf("got %d:\n%s\nwant:\n%s", code, got, want)
	}
	// And in a failure: the scope's run_id.
	b := runPack(t, l, 1, "t", "r", t0+10, 500, nil)
	b.manifest["scope"] = map[string]interface{}{"kind": "run", "team": "t", "run_id": "r\x1b]0;x\x07\u2066"}
	checkPack(t, "a run_id with controls", b, `FAIL: entries.jsonl seq 0: expected run t/r\x1b]0;x\x07\u{2066}, found t/r`)
}

func TestEscape(t *testing.T) {
	cases := map[string]string{
		"plain é 日本 \\ \"q\"":                        "plain é 日本 \\ \"q\"",
		"\x00\x1f\x7f":                               `\x00\x1f\x7f`,
		"\u0080\u0085\u009f":                         `\x80\x85\x9f`,
		"\u061c\u200e\u200f\u202a\u202e\u2066\u2069": `\u{061c}\u{200e}\u{200f}\u{202a}\u{202e}\u{2066}\u{2069}`,
		"\u202f\u2065\u00a0":                         "\u202f\u2065\u00a0",
		"a\xffb\xc3":                                 `a\xffb\xc3`,
		"\ufffd":                                     "\ufffd",
	}
	for in, want := range cases {
		if got := esc(in); got != want {
			t.Errorf("esc(%q) = %q, want %q", in, got, want)
		}
	}
}
