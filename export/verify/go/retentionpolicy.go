package main

// The retention policy and the ledger's retention entry (CONTRACT section
// 9, "The policy" and "The `retention` entry"), read as a format 9 pack
// carries them: retention-policy.txt, the policy's bytes, and the one leaf
// of retention.jsonl.
//
// A policy, one rule a line (lines end at LF, a CR is part of its line;
// empty lines and lines starting with '#' skipped; words separated by
// single spaces, none at either end):
//
//	default KEEP
//	team T KEEP
//	KEEP = "forever" / count ("d" / "h")   (1h to 36500d, no leading zero)

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// retentionRule is a rule of a policy: its line (from 1), its team ("" for
// the default rule), its KEEP as written and in seconds (0 for forever).
type retentionRule struct {
	line  int
	team  string
	keep  string
	keepS int64
}

// name is the rule as a retention entry's statement names it: "default" or
// "team T".
func (r *retentionRule) name() string {
	if r.team == "" {
		return "default"
	}
	return "team " + r.team
}

const (
	minKeepS = 3_600         // 1h
	maxKeepS = 3_153_600_000 // 36500d
)

// readRetentionPolicy reads a policy as ledgerd does, refusing the first
// line that breaks a rule with "retention policy line N: " and the rule.
func readRetentionPolicy(data []byte) ([]retentionRule, error) {
	if len(data) == 0 {
		return nil, nil
	}
	text := strings.TrimSuffix(string(data), "\n")
	var rules []retentionRule
	defaultLine := 0
	teamLines := map[string]int{}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		if line == "" || line[0] == '#' {
			continue
		}
		fail := func(format string, args ...interface{}) error {
			return fmt.Errorf("retention policy line %d: %s", n, fmt.Sprintf(format, args...))
		}
		words := strings.Split(line, " ")
		for _, w := range words {
			if w == "" {
				words = nil
			}
		}
		var r retentionRule
		switch {
		case len(words) == 2 && words[0] == "default":
			if defaultLine != 0 {
				return nil, fail("a second default rule (the first is on line %d)", defaultLine)
			}
			defaultLine = n
			r = retentionRule{line: n, keep: words[1]}
		case len(words) == 3 && words[0] == "team":
			team := words[1]
			if first := teamLines[team]; first != 0 {
				return nil, fail("team '%s': a second rule for the team (the first is on line %d)", team, first)
			}
			if team == "ledger" {
				return nil, fail("team 'ledger': the ledger's own entries are never pruned")
			}
			if checkTeamName(team) != nil {
				return nil, fail("team '%s': want 1-63 bytes of [a-z0-9-]", team)
			}
			teamLines[team] = n
			r = retentionRule{line: n, team: team, keep: words[2]}
		default:
			return nil, fail("want 'default KEEP' or 'team T KEEP'")
		}
		var ok bool
		if r.keepS, ok = keepSeconds(r.keep); !ok {
			return nil, fail("keep '%s': want forever, or 1h to 36500d as a decimal count and d or h", r.keep)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// keepSeconds reads a KEEP: forever (0), or a decimal count without a
// leading zero and its unit, d (86,400 s) or h (3,600 s), from 1h to 36500d.
func keepSeconds(keep string) (int64, bool) {
	if keep == "forever" {
		return 0, true
	}
	if len(keep) < 2 || len(keep) > 10 || keep[0] == '0' {
		return 0, false
	}
	count, unit := keep[:len(keep)-1], keep[len(keep)-1]
	for i := 0; i < len(count); i++ {
		if count[i] < '0' || count[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(count, 10, 64)
	switch {
	case err != nil:
		return 0, false
	case unit == 'd':
		n *= 86_400
	case unit == 'h':
		n *= 3_600
	default:
		return 0, false
	}
	return n, n >= minKeepS && n <= maxKeepS
}

// coveringRule returns the rule that covers team's entries: its own, else
// the default, else none (nil); the team ledger is covered by none.
func coveringRule(rules []retentionRule, team string) *retentionRule {
	if team == "ledger" {
		return nil
	}
	var def *retentionRule
	for i := range rules {
		switch rules[i].team {
		case team:
			return &rules[i]
		case "":
			def = &rules[i]
		}
	}
	return def
}

// retentionEntry is the receipt of a retention entry: keepS and cutoffUs
// are 0 when absent (a forever rule's entry), ruleTeam "" for the default
// rule's.
type retentionEntry struct {
	pass, keepS, cutoffUs, belowSeq int64
	ruleTeam, policySHA256          string
}

// rule names the rule the entry states: "default" or "team T".
func (r *retentionEntry) rule() string {
	if r.ruleTeam == "" {
		return "default"
	}
	return "team " + r.ruleTeam
}

// readRetentionLine reads retention.jsonl: one line and its LF, the leaf of
// a valid receipt of kind retention with emitter ledger.
func readRetentionLine(data []byte) (entry, retentionEntry, error) {
	if len(data) == 0 || data[len(data)-1] != '\n' || bytes.Count(data, []byte("\n")) != 1 {
		return entry{}, retentionEntry{}, fmt.Errorf("retention.jsonl: want one line ending in a newline")
	}
	line := data[:len(data)-1]
	e, err := readEntry(line)
	if err == nil && e.erased {
		err = fmt.Errorf("not a leaf")
	}
	if err != nil {
		return e, retentionEntry{}, fmt.Errorf("retention.jsonl: line 1: %v", err)
	}
	if e.kind != "retention" {
		kind := e.kind
		if kind == "" {
			kind = "none"
		}
		return e, retentionEntry{}, fmt.Errorf("retention.jsonl: line 1: kind %s, want retention", kind)
	}
	v, _ := canonical(line)
	r, err := readRetentionReceipt(e, v.get("receipt"))
	if err != nil {
		return e, r, fmt.Errorf("retention.jsonl: line 1: %v", err)
	}
	return e, r, nil
}

// retentionFields are the fields a retention receipt may hold.
var retentionFields = []string{"receipt_id", "kind", "team", "run_id", "step_id", "attempt", "occurred_at_us", "pass",
	"rule_team", "keep_s", "cutoff_us", "below_seq", "policy_sha256"}

// readRetentionReceipt checks the receipt of a leaf of kind retention (e,
// its emitter and common fields read) as section 9 says, in the order of
// its refusals, each naming the field: an emitter's is refused by the
// namespace rule first (an id starting with "ledger."), else as written by
// the ledger only.
func readRetentionReceipt(e entry, receipt *value) (retentionEntry, error) {
	var r retentionEntry
	if e.emitter != "ledger" {
		if strings.HasPrefix(e.receiptID, "ledger.") {
			return r, fmt.Errorf("receipt_id: '%s' is in the ledger's namespace: ids starting with 'ledger.' are written "+
				"by the ledger only", e.receiptID)
		}
		return r, fmt.Errorf("kind: retention is written by the ledger only")
	}
	if err := receipt.onlyKeys(retentionFields...); err != nil {
		return r, fmt.Errorf("receipt: %v: not a field of a retention receipt", err)
	}
	var ok bool
	if r.pass, ok = receipt.get("pass").integer(); !ok {
		return r, fmt.Errorf("pass: want an integer of at least 1, found %s", show(receipt.get("pass")))
	}
	id := "ledger.retention." + strconv.FormatInt(r.pass, 10) + ".default"
	if rt := receipt.get("rule_team"); rt != nil {
		if r.ruleTeam, ok = str(rt); !ok || r.ruleTeam == "" {
			return r, fmt.Errorf("rule_team: want a team (1-63 bytes of [a-z0-9-]) other than ledger, found %s", quoted(rt))
		}
		id = "ledger.retention." + strconv.FormatInt(r.pass, 10) + ".team." + r.ruleTeam
	}
	attempt, hasAttempt := receipt.get("attempt").integer()
	_, hasTime := receipt.get("occurred_at_us").integer()
	switch {
	case e.receiptID != id:
		return r, fmt.Errorf("receipt_id: want %s (its pass and rule_team), found %s", id, quoted(receipt.get("receipt_id")))
	case e.team != "ledger":
		return r, fmt.Errorf("team: want ledger, found \"%s\"", e.team)
	case e.runID != "ledger.retention":
		return r, fmt.Errorf("run_id: want ledger.retention, found %s", quoted(receipt.get("run_id")))
	case receipt.get("step_id") != nil:
		return r, fmt.Errorf("step_id: want none, found %s", quoted(receipt.get("step_id")))
	case !hasAttempt || attempt != 1:
		return r, fmt.Errorf("attempt: want 1, found %s", show(receipt.get("attempt")))
	case !hasTime:
		return r, fmt.Errorf("occurred_at_us: want an integer (the pass's now), found %s", show(receipt.get("occurred_at_us")))
	case r.pass < 1:
		return r, fmt.Errorf("pass: want an integer of at least 1, found %d", r.pass)
	case r.ruleTeam == "ledger" || r.ruleTeam != "" && checkTeamName(r.ruleTeam) != nil:
		return r, fmt.Errorf("rule_team: want a team (1-63 bytes of [a-z0-9-]) other than ledger, found \"%s\"", r.ruleTeam)
	}
	return r, r.readLine(receipt)
}

// readLine reads the fields of the rule's line: keep_s, cutoff_us,
// below_seq and policy_sha256.
func (r *retentionEntry) readLine(receipt *value) error {
	occurred, _ := receipt.get("occurred_at_us").integer()
	keep, cutoff, below := receipt.get("keep_s"), receipt.get("cutoff_us"), receipt.get("below_seq")
	var ok bool
	if keep != nil {
		if r.keepS, ok = keep.integer(); !ok || r.keepS < minKeepS || r.keepS > maxKeepS {
			return fmt.Errorf("keep_s: want %d to %d (1h to 36500d), found %s", minKeepS, maxKeepS, show(keep))
		}
		want := occurred - r.keepS*1_000_000
		if r.cutoffUs, ok = cutoff.integer(); !ok || r.cutoffUs != want {
			return fmt.Errorf("cutoff_us: want occurred_at_us - keep_s * 1000000, %d, found %s", want, show(cutoff))
		}
	} else if cutoff != nil {
		return fmt.Errorf("cutoff_us: want none without keep_s (a forever rule), found %s", show(cutoff))
	}
	if r.belowSeq, ok = below.integer(); !ok || r.belowSeq < 0 {
		return fmt.Errorf("below_seq: want a seq, an integer of at least 0, found %s", show(below))
	}
	if keep == nil && r.belowSeq != 0 {
		return fmt.Errorf("below_seq: want 0 without keep_s (a forever rule), found %d", r.belowSeq)
	}
	if r.policySHA256, ok = str(receipt.get("policy_sha256")); !ok || !isHash(r.policySHA256) {
		return fmt.Errorf("policy_sha256: want 64 lower-case hex digits, found %s", quoted(receipt.get("policy_sha256")))
	}
	return nil
}
