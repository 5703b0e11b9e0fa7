package main

// The scope a pack claims (manifest.json "scope", CONTRACT section 7), and
// the checks that its entries are that scope:
//
//	{"kind":"run","team":T,"run_id":R}
//	    every entry is of the run; the run chain (run_prev) is gap-free
//	    from the run's first entry, which has no run_prev.
//	{"from_seq":F,"kind":"run","team":T,"run_id":R}   (format 9)
//	    every entry is of the run, from F; the chain is gap-free from the
//	    first, whose run_prev is below F (retention.go).
//	{"kind":"seq","from_seq":A,"to_seq":B}
//	    exactly the seqs A <= seq < B, B at most the tree size.
//	{"kind":"team","team":T,"from_us":A,"to_us":B,"from_seq":F,"to_seq":E}
//	    entries of team T only, F <= seq < E, A <= logged_at_us < B.
//
// Within a seq range or team window each run's chain is checked from F (A
// for a seq range): an entry whose run_prev is at or after F links to the
// previous entry of its run in the pack; a run's first entry in the pack has
// no run_prev or one below F.

import (
	"fmt"
)

// A run pack of format 3 may hold no entry (its absence proof says the run
// has none); before, it holds at least the run's first.
func checkScope(s *value, entries []entry, cp checkpoint, mayBeEmpty bool) (string, error) {
	kind, _ := str(s.get("kind"))
	ints := func(keys ...string) ([]int64, error) {
		out := make([]int64, len(keys))
		for i, k := range keys {
			n, ok := s.get(k).integer()
			if !ok || n < 0 {
				return nil, fmt.Errorf("manifest.json: scope.%s: expected an integer >= 0 in a %s scope", k, kind)
			}
			out[i] = n
		}
		return out, nil
	}
	switch kind {
	case "run":
		if err := s.onlyKeys("from_seq", "kind", "team", "run_id"); err != nil {
			return "", fmt.Errorf("manifest.json: scope: %v", err)
		}
		team, ok1 := str(s.get("team"))
		run, ok2 := str(s.get("run_id"))
		if !ok1 || !ok2 || run == "" || team == "" {
			return "", fmt.Errorf("manifest.json: scope: a run scope names team and run_id")
		}
		// from_seq: a format 9 pack's (checkFromSeqScope), its entries from
		// it checked as they were read (retention.go).
		if from, ok := s.get("from_seq").integer(); ok {
			return fmt.Sprintf("run %s/%s from seq %d", team, run, from), checkRunFrom(team, run, entries)
		}
		return fmt.Sprintf("run %s/%s", team, run), checkRun(team, run, entries, mayBeEmpty)
	case "seq":
		if err := s.onlyKeys("kind", "from_seq", "to_seq"); err != nil {
			return "", fmt.Errorf("manifest.json: scope: %v", err)
		}
		r, err := ints("from_seq", "to_seq")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("seq %d:%d", r[0], r[1]), checkSeqRange(r[0], r[1], entries, cp)
	case "team":
		if err := s.onlyKeys("kind", "team", "from_us", "to_us", "from_seq", "to_seq"); err != nil {
			return "", fmt.Errorf("manifest.json: scope: %v", err)
		}
		team, ok := str(s.get("team"))
		if !ok || team == "" {
			return "", fmt.Errorf("manifest.json: scope.team: want a non-empty string")
		}
		r, err := ints("from_us", "to_us", "from_seq", "to_seq")
		if err != nil {
			return "", err
		}
		name := fmt.Sprintf("team %s from_us %d to_us %d (seqs %d:%d)", team, r[0], r[1], r[2], r[3])
		return name, checkTeamWindow(team, r[0], r[1], r[2], r[3], entries, cp)
	}
	return "", fmt.Errorf("manifest.json: scope.kind: expected run, seq or team, found \"%s\"", kind)
}

func checkRun(team, run string, entries []entry, mayBeEmpty bool) error {
	if len(entries) == 0 && !mayBeEmpty {
		return fmt.Errorf("entries.jsonl: a run pack holds at least the run's first entry, found none")
	}
	for i, e := range entries {
		if e.team != team || e.runID != run {
			return fmt.Errorf("entries.jsonl seq %d: expected run %s/%s, found %s/%s", e.seq, team, run, e.team, e.runID)
		}
		switch {
		case i == 0 && e.hasPrev:
			return fmt.Errorf("entries.jsonl seq %d: run_prev: expected none (the run's first entry), found %d: the pack does not start at the run's first entry", e.seq, e.runPrev)
		case i > 0 && (!e.hasPrev || e.runPrev != entries[i-1].seq):
			return fmt.Errorf("entries.jsonl seq %d: run_prev: expected %d (the run's previous entry in the pack), found %s", e.seq, entries[i-1].seq, runPrevText(e))
		}
	}
	return nil
}

func checkSeqRange(from, to int64, entries []entry, cp checkpoint) error {
	if from >= to {
		return fmt.Errorf("manifest.json: scope.from_seq: want less than to_seq")
	}
	if to > cp.size {
		return fmt.Errorf("manifest.json: scope: expected from_seq <= to_seq <= tree size %d, found %d:%d", cp.size, from, to)
	}
	for i, e := range entries {
		if e.seq != from+int64(i) {
			return fmt.Errorf("entries.jsonl line %d: expected seq %d, found seq %d", i+1, from+int64(i), e.seq)
		}
	}
	if int64(len(entries)) != to-from {
		return fmt.Errorf("entries.jsonl: expected seqs %d to %d, found %d entries", from, to-1, len(entries))
	}
	return checkRunsFrom(from, entries)
}

func checkTeamWindow(team string, fromUs, toUs, from, to int64, entries []entry, cp checkpoint) error {
	if fromUs >= toUs {
		return fmt.Errorf("manifest.json: scope.from_us: want less than to_us")
	}
	if from > to || to > cp.size {
		return fmt.Errorf("manifest.json: scope: expected from_seq <= to_seq <= tree size %d and from_us <= to_us, found seqs %d:%d, times %d:%d",
			cp.size, from, to, fromUs, toUs)
	}
	for _, e := range entries {
		if e.team != team {
			return fmt.Errorf("entries.jsonl seq %d: expected team %s, found %s", e.seq, team, e.team)
		}
		if e.seq < from || e.seq >= to {
			return fmt.Errorf("entries.jsonl seq %d: expected a seq in [%d, %d)", e.seq, from, to)
		}
		if e.loggedAt < fromUs || e.loggedAt >= toUs {
			return fmt.Errorf("entries.jsonl seq %d: logged_at_us: expected in [%d, %d), found %d", e.seq, fromUs, toUs, e.loggedAt)
		}
	}
	return checkRunsFrom(from, entries)
}

// checkRunFrom checks that every entry of a run pack from a seq is of the
// run; their chain was checked as they were read (retained.checkStreamed).
func checkRunFrom(team, run string, entries []entry) error {
	for _, e := range entries {
		if e.team != team || e.runID != run {
			return fmt.Errorf("entries.jsonl seq %d: expected run %s/%s, found %s/%s", e.seq, team, run, e.team, e.runID)
		}
	}
	return nil
}

// checkRunsFrom checks each run's chain within a window that starts at seq
// from.
func checkRunsFrom(from int64, entries []entry) error {
	type run struct{ team, id string }
	last := map[run]int64{}
	for _, e := range entries {
		if e.runID == "" {
			continue
		}
		r := run{e.team, e.runID}
		prev, seen := last[r]
		switch {
		case e.hasPrev && e.runPrev >= from && (!seen || e.runPrev != prev):
			want := "an entry of the run in the pack"
			if seen {
				want = fmt.Sprintf("%d (the run's previous entry in the pack)", prev)
			}
			return fmt.Errorf("entries.jsonl seq %d: run_prev: expected %s, found %d", e.seq, want, e.runPrev)
		case (!e.hasPrev || e.runPrev < from) && seen:
			return fmt.Errorf("entries.jsonl seq %d: run_prev: expected %d (the run's previous entry in the pack), found %s", e.seq, prev, runPrevText(e))
		}
		last[r] = e.seq
	}
	return nil
}

func runPrevText(e entry) string {
	if !e.hasPrev {
		return "none"
	}
	return fmt.Sprint(e.runPrev)
}
