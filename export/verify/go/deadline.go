package main

// Deadlines in a run pack (CONTRACT section 7, "Last, in a run pack ..."):
// a step still pending although its deadline, the start's logged_at_us +
// timeout_ms x 1000 + unknown_grace_ms x 1000, is before the signed time is
// a finding: an honest ledger declares such a step unknown (a step_unknown
// entry) before it signs that time. The steps' states are derived from the
// pack's entries as section 4 says (outcomes.json is not read): a run pack
// holds every entry of its run up to the checkpoint.

import (
	"fmt"
	"sort"
)

// stepKey is a step of the run: step_id and attempt (1 when the receipt
// gives none).
type stepKey struct {
	id      string
	attempt int64
}

// stepState is what the entries say of a step.
type stepState struct {
	started, denied, completed, unknown bool
	startSeq                            int64
	timeoutAtUs                         int64 // the start's logged_at_us + timeout_ms x 1000
}

// pendingSteps derives each step's state from a run's entries, in seq
// order, as section 4 does: the first agent_start of a step starts it (a
// deny settles it); an agent_exec settles the step it names by
// start_receipt_id when that start is of its own step, or its own step
// when it names no start of the run and the step has not started; a
// step_unknown settles a pending step whose start is its start_seq.
func pendingSteps(entries []entry) map[stepKey]*stepState {
	steps := map[stepKey]*stepState{}
	starts := map[string]stepKey{} // a start's receipt_id, its step
	get := func(k stepKey) *stepState {
		if steps[k] == nil {
			steps[k] = &stepState{}
		}
		return steps[k]
	}
	for _, e := range entries {
		k := stepKey{e.stepID, e.attempt}
		if k.attempt < 1 {
			k.attempt = 1
		}
		switch e.kind {
		case "agent_start":
			s := get(k)
			starts[e.receiptID] = k
			if e.erased {
				// Section 8: its deadline is not known; the step is unknown.
				s.started, s.unknown = true, true
				continue
			}
			if s.started {
				continue
			}
			s.started, s.startSeq = true, e.seq
			if e.decision == "deny" {
				s.denied = true
			} else {
				s.timeoutAtUs = e.loggedAt + min64(e.timeoutMs, 1<<42)*1000
			}
		case "agent_exec":
			named, found := starts[e.startReceiptID]
			switch {
			case !found:
				if s := get(k); !s.started {
					s.completed = true
				}
			case named == k && !steps[k].denied:
				steps[k].completed = true
			}
		case "step_unknown":
			if s := steps[k]; s != nil && s.started && !s.denied && !s.completed && !s.unknown && s.startSeq == e.unknownStartSeq {
				s.unknown = true
			}
		}
	}
	return steps
}

// checkDeadlines makes the check in a run pack with a signed time, naming
// the first overdue step in outcomes.json's order (the steps sorted by
// step_id's length and bytes, then attempt).
func checkDeadlines(m *manifest, t *timeNote, entries []entry) error {
	if kind, _ := str(m.scope.get("kind")); kind != "run" || t == nil || m.graceMs < 0 {
		return nil
	}
	team, _ := str(m.scope.get("team"))
	run, _ := str(m.scope.get("run_id"))
	grace := m.graceMs
	if grace > 1<<42 { // past a century the grace makes nothing overdue; sums stay in range
		grace = 1 << 42
	}
	steps := pendingSteps(entries)
	var keys []stepKey
	for k, s := range steps {
		if s.started && !s.denied && !s.completed && !s.unknown && s.timeoutAtUs+grace*1000 < t.timeUs {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if len(a.id) != len(b.id) {
			return len(a.id) < len(b.id)
		}
		if a.id != b.id {
			return a.id < b.id
		}
		return a.attempt < b.attempt
	})
	k := keys[0]
	deadline := steps[k].timeoutAtUs + grace*1000
	return fmt.Errorf("outcomes.json: step %s/%s/%s attempt %d is pending, but its deadline (start + timeout + the manifest's "+
		"unknown_grace_ms %d) %s is before the checkpoint's signed time %s: an honest ledger declares it unknown before signing",
		team, run, k.id, k.attempt, m.graceMs, signedTime(deadline), signedTime(t.timeUs))
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}
