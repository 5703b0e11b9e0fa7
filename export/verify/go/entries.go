package main

// Entries, their proofs and chains (CONTRACT sections 1, 2, 6) and the
// pack's scope (section 7).

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

type entry struct {
	seq         int64
	prev        string
	runPrev     int64
	hasPrev     bool // run_prev present
	version     int64
	teamPrev    int64
	hasTeamPrev bool // team_prev present (version 2 only)
	loggedAt    int64
	team        string
	runID       string // "" when the receipt has none
	hash        tlog.Hash
	// What names a step (section 3), read for the steps a complete run
	// pack proves have no completion.
	kind, receiptID, stepID, decision, startReceiptID string
	attempt                                           int64
	// An agent_start's timeout_ms and a step_unknown's start_seq (0 when
	// absent), for the deadlines of a run pack (deadline.go).
	timeoutMs, unknownStartSeq int64
	// The entry's emitter, and a leader_epoch's fields (section 3, "Leader
	// epochs"; epoch 0 when it is none).
	emitter                      string
	epoch, previousSize          int64
	epochNode, epochPreviousRoot string
	// A key_rotation's fields (section 5d; "" when it is none).
	oldKey, newKey, rotationNote string
	// An erased entry (section 8): its line is the redacted line, by is its
	// redaction's seq, hash the leaf hash the line states.
	erased bool
	by     int64
	line   []byte
}

var genesisPrev = hex.EncodeToString(make([]byte, 32))

// checkEntries checks every line of entries.jsonl: canonical JSON, its
// fields, ascending seqs below the tree size, prev between consecutive
// seqs, and logging times that never decrease; and the entries' inclusion
// in cp's tree: in a pack of format 6 with multiproof.txt, read with the
// entries in one pass (section 7, "Shared inclusion proofs"), else each
// entry's leaf hash and inclusion proof on its line of proofs.jsonl. pr
// (nil: none) counts the entries checked against total, the manifest's
// counts.entries; its line is erased before checkEntries returns. extras
// are the leaves the multiproof walks with the entries (redactions.jsonl's,
// retention.jsonl's); from (nil: none) is a format 9 pack's statement,
// against which each entry is checked as it is read.
func checkEntries(p *pack, cp checkpoint, format, total int64, pr *progress, extras []extraLine, from *retained) ([]entry, error) {
	pr.begin(total)
	defer pr.end()
	leaves, err := lines("entries.jsonl", p.files["entries.jsonl"])
	if err != nil {
		return nil, err
	}
	r := &entryReader{leaves: leaves, cp: cp, pr: pr, out: make([]entry, 0, len(leaves)), from: from}
	if format >= 6 {
		var leaves multiproofLeaves = r
		if len(extras) > 0 {
			leaves = &withExtras{entries: r, extras: extras, size: cp.size}
		}
		return r.out, checkMultiproof(leaves, &multiproofFile{rest: p.files[multiproofName]}, cp.size, cp.root)
	}
	proofs, err := lines("proofs.jsonl", p.files["proofs.jsonl"])
	if err != nil {
		return nil, err
	}
	if len(proofs) != len(leaves) {
		return nil, fmt.Errorf("proofs.jsonl: expected %d lines (one per entry), found %d", len(leaves), len(proofs))
	}
	for i := range leaves {
		if _, _, err := r.peek(); err != nil {
			return nil, err
		}
		if err := checkProof(r.out[i], i+1, proofs[i], cp); err != nil {
			return nil, err
		}
		r.take()
	}
	return r.out, nil
}

// entryReader checks the lines of entries.jsonl in order, each when it is
// first peeked; out holds the entries checked.
type entryReader struct {
	leaves [][]byte
	cp     checkpoint
	pr     *progress
	out    []entry
	taken  int       // the entries of out consumed
	from   *retained // a format 9 pack's, or nil
}

func (r *entryReader) peek() (int64, bool, error) {
	if r.taken < len(r.out) {
		return r.out[r.taken].seq, true, nil
	}
	i := len(r.out)
	if i == len(r.leaves) {
		if r.from != nil && i == 0 {
			return 0, false, fmt.Errorf("entries.jsonl: a pack of format 9 holds at least one entry of its run")
		}
		return 0, false, nil
	}
	e, err := readEntry(r.leaves[i])
	if err != nil {
		return 0, false, fmt.Errorf("entries.jsonl line %d: %v", i+1, err)
	}
	if err := checkOrder(e, i+1, r.out, r.cp); err != nil {
		return 0, false, err
	}
	if r.from != nil {
		if err := r.from.checkStreamed(e, i+1, r.out); err != nil {
			return 0, false, err
		}
	}
	r.out = append(r.out, e)
	r.pr.tick(int64(len(r.out)))
	return e.seq, true, nil
}

func (r *entryReader) take() tlog.Hash {
	r.taken++
	return r.out[r.taken-1].hash
}

// readEntry reads the fields of format versions 1 and 2 (CONTRACT section
// 2): version 2 is version 1 with team_prev, the seq of the team's previous
// entry (absent for the team's first).
func readEntry(leaf []byte) (entry, error) {
	if bytes.HasPrefix(leaf, []byte(redactedPrefix)) {
		return readRedacted(leaf)
	}
	v, err := canonical(leaf)
	if err != nil {
		return entry{}, err
	}
	e := entry{hash: tlog.RecordHash(leaf)}
	var ok bool
	if e.version, _ = v.get("v").integer(); e.version != 1 && e.version != 2 {
		return e, fmt.Errorf("v: expected 1 or 2")
	}
	keys := []string{"v", "seq", "prev", "run_prev", "logged_at_us", "emitter", "receipt"}
	if e.version == 2 {
		keys = append(keys, "team_prev")
	}
	if err := v.onlyKeys(keys...); err != nil {
		return e, err
	}
	if e.seq, ok = v.get("seq").integer(); !ok || e.seq < 0 {
		return e, fmt.Errorf("seq: expected an integer >= 0")
	}
	if tp := v.get("team_prev"); tp != nil {
		if e.teamPrev, ok = tp.integer(); !ok || e.teamPrev < 0 || e.teamPrev >= e.seq {
			return e, fmt.Errorf("seq %d: team_prev: expected a seq below %d", e.seq, e.seq)
		}
		e.hasTeamPrev = true
	}
	if e.prev, ok = str(v.get("prev")); !ok || !isHash(e.prev) {
		return e, fmt.Errorf("seq %d: prev: expected 64 lowercase hex digits", e.seq)
	}
	if rp := v.get("run_prev"); rp != nil {
		if e.runPrev, ok = rp.integer(); !ok || e.runPrev < 0 || e.runPrev >= e.seq {
			return e, fmt.Errorf("seq %d: run_prev: expected a seq below %d", e.seq, e.seq)
		}
		e.hasPrev = true
	}
	if e.loggedAt, ok = v.get("logged_at_us").integer(); !ok {
		return e, fmt.Errorf("seq %d: logged_at_us: expected an integer", e.seq)
	}
	if e.emitter, ok = str(v.get("emitter")); !ok {
		return e, fmt.Errorf("seq %d: emitter: expected a string", e.seq)
	}
	r := v.get("receipt")
	if r == nil || r.kind != kObject {
		return e, fmt.Errorf("seq %d: receipt: expected an object", e.seq)
	}
	if e.team, ok = str(r.get("team")); !ok {
		return e, fmt.Errorf("seq %d: receipt.team: expected a string", e.seq)
	}
	if id := r.get("run_id"); id != nil {
		if e.runID, ok = str(id); !ok {
			return e, fmt.Errorf("seq %d: receipt.run_id: expected a string", e.seq)
		}
	}
	e.kind, _ = str(r.get("kind"))
	e.receiptID, _ = str(r.get("receipt_id"))
	e.stepID, _ = str(r.get("step_id"))
	e.decision, _ = str(r.get("decision"))
	e.startReceiptID, _ = str(r.get("start_receipt_id"))
	if e.attempt, ok = r.get("attempt").integer(); !ok {
		e.attempt = 1
	}
	e.timeoutMs, _ = r.get("timeout_ms").integer()
	e.unknownStartSeq, _ = r.get("start_seq").integer()
	if e.kind == "leader_epoch" {
		e.epoch, _ = r.get("epoch").integer()
		e.previousSize, _ = r.get("previous_size").integer()
		e.epochNode, _ = str(r.get("node"))
		e.epochPreviousRoot, _ = str(r.get("previous_root"))
	}
	if e.kind == "key_rotation" {
		e.oldKey, _ = str(r.get("old_key"))
		e.newKey, _ = str(r.get("new_key"))
		e.rotationNote, _ = str(r.get("note"))
	}
	if e.runID == "" && e.hasPrev {
		return e, fmt.Errorf("seq %d: run_prev: expected none, the receipt has no run_id", e.seq)
	}
	return e, nil
}

// checkOrder checks e, on line number of entries.jsonl, against the
// entries before it in the pack.
func checkOrder(e entry, number int, before []entry, cp checkpoint) error {
	if e.seq >= cp.size {
		return fmt.Errorf("entries.jsonl: line %d: seq %d is not in the checkpoint's tree of size %d", number, e.seq, cp.size)
	}
	if e.seq == 0 && e.prev != genesisPrev {
		return fmt.Errorf("entries.jsonl seq 0: prev: expected %s, found %s", genesisPrev, e.prev)
	}
	if len(before) == 0 {
		return nil
	}
	last := before[len(before)-1]
	if e.seq <= last.seq {
		return fmt.Errorf("entries.jsonl seq %d: expected a seq above %d (ascending)", e.seq, last.seq)
	}
	if e.seq == last.seq+1 && e.prev != hex.EncodeToString(last.hash[:]) {
		return fmt.Errorf("entries.jsonl seq %d: prev: expected %s (the leaf hash of seq %d), found %s",
			e.seq, hex.EncodeToString(last.hash[:]), last.seq, e.prev)
	}
	if e.loggedAt < last.loggedAt {
		return fmt.Errorf("entries.jsonl seq %d: logged_at_us: expected at least %d (seq %d), found %d",
			e.seq, last.loggedAt, last.seq, e.loggedAt)
	}
	return nil
}

// checkProof checks one line of proofs.jsonl:
// {"seq":N,"leaf_hash":HEX,"inclusion":[HEX,...]} in any spacing and key
// order, no other key, for e, and its RFC 9162 inclusion proof.
func checkProof(e entry, number int, line []byte, cp checkpoint) error {
	v, err := parseJSON(line)
	if err == nil && v.kind != kObject {
		err = fmt.Errorf("expected an object")
	}
	if err == nil {
		err = v.onlyKeys("seq", "leaf_hash", "inclusion")
	}
	if err != nil {
		return fmt.Errorf("proofs.jsonl line %d: %v", number, err)
	}
	if seq, ok := v.get("seq").integer(); !ok || seq != e.seq {
		return fmt.Errorf("proofs.jsonl seq %d: seq: expected %d, found %s", e.seq, e.seq, show(v.get("seq")))
	}
	want := hex.EncodeToString(e.hash[:])
	if got, _ := str(v.get("leaf_hash")); got != want {
		return fmt.Errorf("entries.jsonl seq %d: leaf hash: expected %s (proofs.jsonl), found %s", e.seq, got, want)
	}
	path, err := hashList(v.get("inclusion"))
	if err != nil {
		return fmt.Errorf("proofs.jsonl seq %d: inclusion: %v", e.seq, err)
	}
	if err := tlog.CheckRecord(tlog.RecordProof(path), cp.size, cp.root, e.seq, e.hash); err != nil {
		return fmt.Errorf("proofs.jsonl seq %d: inclusion proof against tree size %d root %s: %v",
			e.seq, cp.size, hex.EncodeToString(cp.root[:]), err)
	}
	return nil
}

func show(v *value) string {
	if v == nil {
		return "nothing"
	}
	if v.kind == kNumber {
		return v.number
	}
	return "a non-integer"
}

// leaderEpochs checks the pack's leader_epoch entries (section 3, "Leader
// epochs"): each the ledger's, the first of its epoch (its seq is its
// previous_size), epochs rising. It returns one line for each.
func leaderEpochs(entries []entry) ([]string, error) {
	var out []string
	var last *entry
	for i := range entries {
		e := &entries[i]
		if e.kind != "leader_epoch" {
			continue
		}
		if e.emitter != "ledger" {
			return nil, fmt.Errorf("entries.jsonl seq %d: leader_epoch: emitter '%s': the ledger's only", e.seq, e.emitter)
		}
		if e.previousSize != e.seq {
			return nil, fmt.Errorf("entries.jsonl seq %d: leader_epoch: previous_size %d is not its seq: an epoch begins "+
				"with its leader_epoch entry", e.seq, e.previousSize)
		}
		if last != nil && e.epoch <= last.epoch {
			return nil, fmt.Errorf("entries.jsonl seq %d: leader_epoch: epoch %d after epoch %d at seq %d: epochs only rise",
				e.seq, e.epoch, last.epoch, last.seq)
		}
		last = e
		out = append(out, fmt.Sprintf("leader epoch %d: node %s leads from seq %d, over the tree of size %d with root %s.",
			e.epoch, e.epochNode, e.seq, e.seq, e.epochPreviousRoot))
	}
	return out, nil
}
