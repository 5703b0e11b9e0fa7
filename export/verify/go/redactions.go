package main

// Erased entries (CONTRACT section 8): an erased entry's redacted line in
// entries.jsonl, read as the entry it states, and the ledger's redaction
// entries in redactions.jsonl (format 8), each line checked against them.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"golang.org/x/mod/sumdb/tlog"
)

const redactedPrefix = `{"redacted":`

// readRedacted reads a redacted line: canonical JSON of one key,
// "redacted", whose object states the erased leaf (section 8, "The
// redacted line").
func readRedacted(line []byte) (entry, error) {
	v, err := canonical(line)
	if err != nil {
		return entry{}, err
	}
	if err := v.onlyKeys("redacted"); err != nil {
		return entry{}, err
	}
	d := v.get("redacted")
	if d == nil || d.kind != kObject {
		return entry{}, fmt.Errorf("redacted: expected an object")
	}
	if err := d.onlyKeys("by", "leaf_hash", "logged_at_us", "prev", "receipt", "run_prev", "seq", "team_prev", "v"); err != nil {
		return entry{}, err
	}
	e := entry{erased: true, line: line}
	var ok bool
	if e.seq, ok = d.get("seq").integer(); !ok || e.seq < 0 {
		return e, fmt.Errorf("redacted.seq: expected an integer >= 0")
	}
	if e.by, ok = d.get("by").integer(); !ok || e.by <= e.seq {
		return e, fmt.Errorf("seq %d: redacted.by: expected the seq of a later entry", e.seq)
	}
	if e.version, ok = d.get("v").integer(); !ok || (e.version != 1 && e.version != 2) {
		return e, fmt.Errorf("seq %d: redacted.v: expected 1 or 2", e.seq)
	}
	h, _ := str(d.get("leaf_hash"))
	b, err := hex.DecodeString(h)
	if !isHash(h) || err != nil {
		return e, fmt.Errorf("seq %d: redacted.leaf_hash: expected 64 lowercase hex digits", e.seq)
	}
	copy(e.hash[:], b)
	if e.prev, ok = str(d.get("prev")); !ok || !isHash(e.prev) {
		return e, fmt.Errorf("seq %d: redacted.prev: expected 64 lowercase hex digits", e.seq)
	}
	if e.loggedAt, ok = d.get("logged_at_us").integer(); !ok {
		return e, fmt.Errorf("seq %d: redacted.logged_at_us: expected an integer", e.seq)
	}
	if rp := d.get("run_prev"); rp != nil {
		if e.runPrev, ok = rp.integer(); !ok || e.runPrev < 0 || e.runPrev >= e.seq {
			return e, fmt.Errorf("seq %d: redacted.run_prev: expected a seq below %d", e.seq, e.seq)
		}
		e.hasPrev = true
	}
	if tp := d.get("team_prev"); tp != nil {
		if e.teamPrev, ok = tp.integer(); !ok || e.version != 2 || e.teamPrev < 0 || e.teamPrev >= e.seq {
			return e, fmt.Errorf("seq %d: redacted.team_prev: expected a seq below %d", e.seq, e.seq)
		}
		e.hasTeamPrev = true
	}
	r := d.get("receipt")
	if r == nil || r.kind != kObject {
		return e, fmt.Errorf("seq %d: redacted.receipt: expected an object", e.seq)
	}
	if err := r.onlyKeys("attempt", "kind", "receipt_id", "run_id", "start_receipt_id", "step_id", "team"); err != nil {
		return e, err
	}
	e.kind, _ = str(r.get("kind"))
	switch e.kind {
	case "agent_start", "agent_exec", "model_call", "tool_call":
	default:
		return e, fmt.Errorf("seq %d: redacted.receipt.kind: expected agent_start, agent_exec, model_call or tool_call", e.seq)
	}
	e.team, _ = str(r.get("team"))
	e.runID, _ = str(r.get("run_id"))
	e.receiptID, _ = str(r.get("receipt_id"))
	e.stepID, _ = str(r.get("step_id"))
	e.startReceiptID, _ = str(r.get("start_receipt_id"))
	if e.attempt, ok = r.get("attempt").integer(); !ok {
		e.attempt = 1
	}
	return e, nil
}

// extraLine is a leaf a pack carries besides its entries, walked with them
// by the multiproof: a line of redactions.jsonl (or of retention.jsonl,
// retention.go), its file, number (from 1), seq and leaf hash.
type extraLine struct {
	file        string
	number, seq int64
	hash        tlog.Hash
}

// checkRedactions checks redactions.jsonl against the redacted lines of
// entries.jsonl, in the order of section 8's list of refusals, and returns
// the line printed per erased entry and the redactions for the multiproof.
func checkRedactions(p *pack, format int64) ([]string, []extraLine, error) {
	file, has := p.files["redactions.jsonl"]
	var erased []entry
	var numbers []int
	if leaves, err := lines("entries.jsonl", p.files["entries.jsonl"]); err == nil {
		for i, l := range leaves {
			if !bytes.HasPrefix(l, []byte(redactedPrefix)) {
				continue
			}
			e, err := readRedacted(l)
			if err != nil {
				return nil, nil, fmt.Errorf("entries.jsonl line %d: %v", i+1, err)
			}
			erased, numbers = append(erased, e), append(numbers, i+1)
		}
	}
	if format < 8 {
		if has {
			return nil, nil, fmt.Errorf("redactions.jsonl: only a pack of format 8 carries redactions")
		}
		if len(erased) > 0 {
			return nil, nil, fmt.Errorf("entries.jsonl: line %d: a redacted line, in a pack of format %d (only a pack of format 8 holds erased entries)", numbers[0], format)
		}
		return nil, nil, nil
	}
	type redaction struct {
		number int
		fields *value
		named  bool
	}
	bySeq := map[int64]*redaction{}
	var walked []extraLine
	if has {
		ls, err := lines("redactions.jsonl", file)
		if err != nil {
			return nil, nil, err
		}
		last := int64(-1)
		for i, l := range ls {
			e, err := readEntry(l)
			if err != nil || e.erased {
				if err == nil {
					err = fmt.Errorf("not a leaf")
				}
				return nil, nil, fmt.Errorf("redactions.jsonl: line %d: %v", i+1, err)
			}
			if e.emitter != "ledger" || e.kind != "redaction" {
				return nil, nil, fmt.Errorf("redactions.jsonl: line %d: not a redaction entry of the ledger's", i+1)
			}
			v, _ := canonical(l)
			r := v.get("receipt")
			entrySeq, ok := r.get("entry_seq").integer()
			if !ok || e.receiptID != "ledger.redaction."+strconv.FormatInt(entrySeq, 10) || e.team != "ledger" ||
				e.runID != "ledger.redactions" || entrySeq >= e.seq {
				return nil, nil, fmt.Errorf("redactions.jsonl: line %d: receipt_id, team, run_id: expected ledger.redaction.<entry_seq> of team ledger, run ledger.redactions, entry_seq below its seq", i+1)
			}
			if e.seq <= last {
				return nil, nil, fmt.Errorf("redactions.jsonl: line %d: seq %d is not above the line before it (%d)", i+1, e.seq, last)
			}
			last = e.seq
			bySeq[e.seq] = &redaction{number: i + 1, fields: r}
			walked = append(walked, extraLine{"redactions.jsonl", int64(i + 1), e.seq, e.hash})
		}
	}
	if len(erased) == 0 {
		if has {
			return nil, nil, fmt.Errorf("redactions.jsonl: a pack with no redacted entry carries no redactions")
		}
		return nil, nil, nil
	}
	var out []string
	for i, e := range erased {
		if !has {
			return nil, nil, fmt.Errorf("redactions.jsonl: missing: entries.jsonl line %d is redacted by seq %d", numbers[i], e.by)
		}
		r := bySeq[e.by]
		if r == nil {
			return nil, nil, fmt.Errorf("entries.jsonl: line %d: seq %d: redacted by %d, which redactions.jsonl does not hold", numbers[i], e.seq, e.by)
		}
		if want, err := redactedLine(e.by, r.fields); err != nil || !bytes.Equal(want, e.line) {
			return nil, nil, fmt.Errorf("entries.jsonl: line %d: seq %d: not the redacted line of redaction %d", numbers[i], e.seq, e.by)
		}
		r.named = true
		reason, _ := str(r.fields.get("reason"))
		asked, _ := str(r.fields.get("requested_by"))
		approved, _ := str(r.fields.get("approved_by"))
		out = append(out, fmt.Sprintf("entry %d: erased by redaction %d (%s of team %s, run %s): %s; requested by %s, approved by %s.",
			e.seq, e.by, e.kind, esc(e.team), esc(e.runID), esc(reason), esc(asked), esc(approved)))
	}
	var unnamed []int64
	for seq, r := range bySeq {
		if !r.named {
			unnamed = append(unnamed, seq)
		}
	}
	if len(unnamed) > 0 {
		sort.Slice(unnamed, func(a, b int) bool { return unnamed[a] < unnamed[b] })
		return nil, nil, fmt.Errorf("redactions.jsonl: line %d: seq %d redacts no entry of the pack", bySeq[unnamed[0]].number, unnamed[0])
	}
	return out, walked, nil
}

// redactedLine is the redacted line a redaction's fields give (section 8).
func redactedLine(by int64, r *value) ([]byte, error) {
	text := func(k string) string { s, _ := str(r.get(k)); return s }
	num := func(k string) (int64, bool) { return r.get(k).integer() }
	receipt := map[string]interface{}{"kind": text("entry_kind"), "receipt_id": text("entry_receipt_id"),
		"run_id": text("entry_run_id"), "team": text("entry_team")}
	if n, ok := num("entry_attempt"); ok {
		receipt["attempt"] = n
	}
	if s := text("entry_start_receipt_id"); s != "" {
		receipt["start_receipt_id"] = s
	}
	if s := text("entry_step_id"); s != "" {
		receipt["step_id"] = s
	}
	d := map[string]interface{}{"by": by, "leaf_hash": text("entry_leaf_hash"), "prev": text("entry_prev"),
		"receipt": receipt}
	for key, field := range map[string]string{"logged_at_us": "entry_logged_at_us", "run_prev": "entry_run_prev",
		"seq": "entry_seq", "team_prev": "entry_team_prev", "v": "entry_v"} {
		if n, ok := num(field); ok {
			d[key] = n
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]interface{}{"redacted": d}); err != nil {
		return nil, err
	}
	v, err := parseJSON(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	encodeCanonical(&out, v)
	return out.Bytes(), nil
}

// withExtras gives the multiproof's walk the entries and, in seq order
// among them, the leaves carried besides them (sections 8 and 9): each seq
// once, a redaction in the pack's scope walked as its entry, which must be
// the same leaf.
type withExtras struct {
	entries *entryReader
	extras  []extraLine
	size    int64
	next    int
	extra   bool // peek named the next extra leaf
}

func (w *withExtras) peek() (int64, bool, error) {
	seq, ok, err := w.entries.peek()
	if err != nil {
		return 0, false, err
	}
	if w.next < len(w.extras) {
		r := w.extras[w.next]
		if r.seq >= w.size {
			return 0, false, fmt.Errorf("%s: line %d: seq %d is not in the checkpoint's tree of size %d", r.file, r.number, r.seq, w.size)
		}
		if !ok || r.seq < seq {
			w.extra = true
			return r.seq, true, nil
		}
		if r.seq == seq {
			e := w.entries.out[w.entries.taken]
			if e.hash != r.hash {
				return 0, false, fmt.Errorf("%s: line %d: seq %d: not the leaf of entries.jsonl line %d, which holds that seq", r.file, r.number, r.seq, w.entries.taken+1)
			}
			w.next++
		}
	}
	w.extra = false
	return seq, ok, nil
}

func (w *withExtras) take() tlog.Hash {
	if w.extra {
		w.extra = false
		w.next++
		return w.extras[w.next-1].hash
	}
	return w.entries.take()
}
