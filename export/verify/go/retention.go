package main

// A run pack across the retention line (CONTRACT section 9, "A run pack
// across the line (format 9)"): a run scope from a seq F; retention.jsonl,
// the ledger's retention entry of the pass and rule that pruned the run's
// entries below F; retention-policy.txt, the bytes of the policy that pass
// applied. checkRetention makes checks 1 to 5 of the section, after the
// redactions; the entries are checked from F as they stream (check 6,
// entries.go), the head's count against them with the run-head proof
// (check 7, completeness.go), and pruned gives the line printed after the
// OK line.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// retained is what a format 9 pack states of its run's pruned entries,
// once checked: the scope's from_seq, the retention entry's seq and leaf
// hash, and its fields.
type retained struct {
	from  int64
	seq   int64
	hash  tlog.Hash
	entry retentionEntry
}

// checkFromSeqScope requires a run scope with from_seq (F at least 1) in a
// pack of format 9, and refuses it in any other (section 7, the manifest's
// scope).
func checkFromSeqScope(s *value, format int64) error {
	kind, _ := str(s.get("kind"))
	from := s.get("from_seq")
	switch {
	case format == 9 && (kind != "run" || from == nil):
		return fmt.Errorf("manifest.json: scope: a pack of format 9 is a run pack from a seq (from_seq)")
	case format != 9 && kind == "run" && from != nil:
		return fmt.Errorf("manifest.json: scope.from_seq: only a run pack of format 9 starts at a seq")
	case format != 9:
		return nil
	}
	if n, ok := from.integer(); !ok || n < 1 {
		return fmt.Errorf("manifest.json: scope.from_seq: want an integer of at least 1, found %s", show(from))
	}
	team, ok1 := str(s.get("team"))
	run, ok2 := str(s.get("run_id"))
	if !ok1 || !ok2 || run == "" || team == "" {
		return fmt.Errorf("manifest.json: scope: a run scope names team and run_id")
	}
	return nil
}

// checkRetention makes checks 1 to 5 of section 9 in their order: the
// files in a pack of format 9 and only one, the retention entry, the
// policy, the rule covering the scope's team and the scope's from_seq. It
// returns nil for a pack of another format.
func checkRetention(p *pack, m *manifest, cp checkpoint) (*retained, error) {
	leaf, hasEntry := p.files["retention.jsonl"]
	policy, hasPolicy := p.files["retention-policy.txt"]
	switch {
	case m.format != 9 && hasEntry:
		return nil, fmt.Errorf("retention.jsonl: only a pack of format 9 carries a retention entry")
	case m.format != 9 && hasPolicy:
		return nil, fmt.Errorf("retention-policy.txt: only a pack of format 9 carries a retention policy")
	case m.format != 9:
		return nil, nil
	case !hasEntry:
		return nil, fmt.Errorf("retention.jsonl: missing: a format 9 pack carries the retention entry that pruned its run's first entries")
	case !hasPolicy:
		return nil, fmt.Errorf("retention-policy.txt: missing: a format 9 pack carries the policy its retention entry applied")
	}
	e, r, err := readRetentionLine(leaf)
	if err != nil {
		return nil, err
	}
	if e.seq >= cp.size {
		return nil, fmt.Errorf("retention.jsonl: seq %d is not in the checkpoint's tree of size %d", e.seq, cp.size)
	}
	if e.seq < r.belowSeq {
		return nil, fmt.Errorf("retention.jsonl: seq %d is below its below_seq %d: a pass's entry is appended after its line",
			e.seq, r.belowSeq)
	}
	sum := sha256.Sum256(policy)
	if got := hex.EncodeToString(sum[:]); got != r.policySHA256 {
		return nil, fmt.Errorf("retention-policy.txt: SHA-256 %s, the retention entry's policy_sha256 is %s", got, r.policySHA256)
	}
	rules, err := readRetentionPolicy(policy)
	if err != nil {
		return nil, fmt.Errorf("retention-policy.txt: %v", err)
	}
	team, _ := str(m.scope.get("team"))
	if err := checkRule(r, coveringRule(rules, team), team); err != nil {
		return nil, err
	}
	from, _ := m.scope.get("from_seq").integer()
	if from != r.belowSeq {
		return nil, fmt.Errorf("manifest.json: scope.from_seq %d, the retention entry's below_seq is %d", from, r.belowSeq)
	}
	return &retained{from: from, seq: e.seq, hash: e.hash, entry: r}, nil
}

// checkRule requires rule, the policy's rule covering team, to exist and
// not be forever, and the entry to be that rule's: its rule_team and
// keep_s (check 4).
func checkRule(r retentionEntry, rule *retentionRule, team string) error {
	switch {
	case rule == nil:
		return fmt.Errorf("retention-policy.txt: no rule covers team %s: its entries are kept for good", team)
	case rule.keepS == 0:
		return fmt.Errorf("retention-policy.txt: line %d: team %s's entries are kept forever", rule.line, team)
	case r.ruleTeam != rule.team || r.keepS != rule.keepS:
		keep := "none"
		if r.keepS != 0 {
			keep = fmt.Sprint(r.keepS)
		}
		return fmt.Errorf("retention.jsonl: the entry states rule %s (keep_s %s), the policy's rule for team %s is %s (line %d, keep_s %d)",
			r.rule(), keep, team, rule.name(), rule.line, rule.keepS)
	}
	return nil
}

// walked is the retention entry as the multiproof walks it, in seq order
// among the redactions (each seq once: a redaction of that seq is another
// leaf, and refused).
func (r *retained) walked(redactions []extraLine) ([]extraLine, error) {
	if r == nil {
		return redactions, nil
	}
	line := extraLine{file: "retention.jsonl", number: 1, seq: r.seq, hash: r.hash}
	at := len(redactions)
	for i, x := range redactions {
		if x.seq == r.seq {
			return nil, fmt.Errorf("retention.jsonl: line 1: seq %d: not the leaf of redactions.jsonl line %d, which holds that seq",
				r.seq, x.number)
		}
		if x.seq > r.seq && at == len(redactions) {
			at = i
		}
	}
	out := append(append(append([]extraLine{}, redactions[:at]...), line), redactions[at:]...)
	return out, nil
}

// checkStreamed makes check 6 on e, line number of entries.jsonl, as the
// entries stream, before the multiproof is walked past it: its seq at or
// above from_seq, the first with a run_prev below it (the run's entry
// before it was pruned), each later one linked to the one before.
func (r *retained) checkStreamed(e entry, number int, before []entry) error {
	if e.seq < r.from {
		return fmt.Errorf("entries.jsonl: line %d: seq %d is below the scope's from_seq %d", number, e.seq, r.from)
	}
	if len(before) == 0 {
		if !e.hasPrev || e.runPrev >= r.from {
			return fmt.Errorf("entries.jsonl: line 1: run_prev expected below %d (the run's entries before the scope's "+
				"from_seq were pruned), found %s", r.from, runPrevText(e))
		}
		return nil
	}
	if prev := before[len(before)-1]; !e.hasPrev || e.runPrev != prev.seq {
		return fmt.Errorf("entries.jsonl seq %d: run_prev: expected %d (the run's previous entry in the pack), found %s",
			e.seq, prev.seq, runPrevText(e))
	}
	return nil
}

// checkCount makes check 7's count: the run's head counts more entries
// than the pack holds from from_seq (count, its entries pruned included).
func (r *retained) checkCount(count, held int64, cp checkpoint) error {
	if count <= held {
		return runHeadError("the run has %d entries up to tree size %d, the pack holds %d from seq %d: a run pack from a seq "+
			"holds fewer entries than its run", count, cp.size, held, r.from)
	}
	return nil
}

// pruned is the line after the OK line: the run from from_seq is complete,
// and the entries before it were pruned as the retention entry states.
func (r *retained) pruned(count, held int64, cp checkpoint) string {
	return fmt.Sprintf("complete from seq %d: every entry of the run from seq %d up to seq %d (run-head proof, %d of its %d "+
		"entries); the %d before seq %d were pruned under the retention policy (pass %d, rule %s, cutoff %s), as entry %d states",
		r.from, r.from, cp.size-1, held, count, count-held, r.from, r.entry.pass, r.entry.rule(), signedTime(r.entry.cutoffUs), r.seq)
}
