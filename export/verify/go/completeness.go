package main

// The checkpoint's time note (CONTRACT section 5, versions 1 to 4) and the
// proof of a run pack of format 3 or later that it holds its whole run
// (section 7, "Proven completeness (format 3)"): run-head.json read in the
// JSON form of section 6a, its key the scope's run key (of the version the
// note's says, section 6a "Which run key"), its root the note's `runs`
// root, and the run's entries in the pack exactly the head.

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// timeNote is a checkpoint-time note; runs is nil in a version 1 note,
// teams nil in a version 1 or 2 note.
type timeNote struct {
	cp      checkpoint
	version int
	timeUs  int64
	runs    *mapHash
	teams   *mapHash
}

// runKeys is the version of the run keys of the map whose root the note
// signs in its runs line (section 6a, "Which run key"): 1 in a note of
// version 2 or 3, 2 in one of version 4.
func (t *timeNote) runKeys() int {
	if t.version >= 4 {
		return 2
	}
	return 1
}

var timeNoteVersions = map[string]int{
	"evidence-ledger/checkpoint-time/v1": 1,
	"evidence-ledger/checkpoint-time/v2": 2,
	"evidence-ledger/checkpoint-time/v3": 3,
	"evidence-ledger/checkpoint-time/v4": 4,
}

// timeNoteLines is the number of lines of a note of each version: version
// 4 has the lines of version 3 (its header says what keys its runs root).
var timeNoteLines = map[int]int{1: 5, 2: 6, 3: 7, 4: 7}

// openTimeNote opens a checkpoint-time note signed by the key:
//
//	evidence-ledger/checkpoint-time/v1 | v2 | v3 | v4
//	<origin>
//	<tree size>
//	<root, base64>
//	runs <run-head map root, base64>     (versions 2 to 4; run keys v2 in version 4)
//	teams <team-head map root, base64>   (versions 3 and 4)
//	time <microseconds>
func openTimeNote(msg []byte, vs note.Verifiers) (timeNote, error) {
	n, err := openNote("checkpoint-time", msg, vs)
	if err != nil {
		return timeNote{}, err
	}
	lines := strings.Split(n.Text, "\n")
	version := timeNoteVersions[lines[0]]
	if version == 0 || len(lines) != 1+timeNoteLines[version] || lines[len(lines)-1] != "" {
		return timeNote{}, fmt.Errorf("checkpoint-time: expected the lines of a version 1, 2, 3 or 4 note, found \"%s\"", n.Text)
	}
	t := timeNote{version: version}
	t.cp.origin = lines[1]
	size, err := strconv.ParseInt(lines[2], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[2] {
		return t, fmt.Errorf("checkpoint-time: tree size: expected a decimal integer, found \"%s\"", lines[2])
	}
	t.cp.size = size
	root, ok := base64Hash(lines[3])
	if !ok {
		return t, fmt.Errorf("checkpoint-time: root: expected standard base64 of 32 bytes, found \"%s\"", lines[3])
	}
	t.cp.root = root
	if version >= 2 {
		if t.runs, err = mapRootLine(lines[4], "runs", "run-head"); err != nil {
			return t, err
		}
	}
	if version >= 3 {
		if t.teams, err = mapRootLine(lines[5], "teams", "team-head"); err != nil {
			return t, err
		}
	}
	last := lines[len(lines)-2]
	us, err := strconv.ParseInt(strings.TrimPrefix(last, "time "), 10, 64)
	if err != nil || us < 0 || "time "+strconv.FormatInt(us, 10) != last {
		return t, fmt.Errorf("checkpoint-time: expected 'time ' and microseconds since the Unix epoch, found \"%s\"", last)
	}
	t.timeUs = us
	return t, nil
}

// mapRootLine reads the line "<word> <map root, standard base64>".
func mapRootLine(line, word, name string) (*mapHash, error) {
	h, ok := base64Hash(strings.TrimPrefix(line, word+" "))
	if !ok || !strings.HasPrefix(line, word+" ") {
		return nil, fmt.Errorf("checkpoint-time: expected '%s ' and the %s map root in base64, found \"%s\"", word, name, line)
	}
	return &h, nil
}

func base64Hash(s string) ([32]byte, bool) {
	var h [32]byte
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) != 32 || base64.StdEncoding.EncodeToString(raw) != s {
		return h, false
	}
	copy(h[:], raw)
	return h, true
}

// checkTimeNote reads the pack's checkpoint-time (packs of format 2 to 6
// carry one, readManifest checked) and requires it to name the pack's
// checkpoint and to be of the version the format says. It returns the
// note, nil in a format 1 pack.
func checkTimeNote(p *pack, vs note.Verifiers, cp checkpoint, format int64) (*timeNote, error) {
	data, ok := p.files["checkpoint-time"]
	if !ok {
		return nil, nil
	}
	t, err := openTimeNote(data, vs)
	if err != nil {
		return nil, err
	}
	if t.cp != cp {
		return nil, fmt.Errorf("checkpoint-time: names the checkpoint of %s at size %d root %s, the pack's is size %d root %s",
			t.cp.origin, t.cp.size, hex.EncodeToString(t.cp.root[:]), cp.size, hex.EncodeToString(cp.root[:]))
	}
	return &t, checkNoteVersion(format, t.version)
}

// splitKept splits a --since file into the checkpoint and the time note
// kept after it (nil when there is none): the note starts at the first line
// evidence-ledger/checkpoint-time/v1, v2, v3 or v4.
func splitKept(data []byte) ([]byte, []byte) {
	for i := 0; i < len(data); {
		end := bytes.IndexByte(data[i:], '\n')
		if end < 0 {
			break
		}
		if timeNoteVersions[string(data[i:i+end])] != 0 {
			if i == 0 {
				return nil, data
			}
			return data[:i], data[i:]
		}
		i += end + 1
	}
	return data, nil
}

// keptNote is a time note the auditor kept with an earlier checkpoint:
// flag names where it was given (--since, --not-older-than).
type keptNote struct {
	flag string
	note timeNote
}

// keptNotes opens the time notes kept with the --since and
// --not-older-than checkpoints, each signed by the key (under a key set,
// the key trusted at the size of the checkpoint before it) and naming
// exactly that checkpoint.
func keptNotes(keys noteKeys, o options) ([]keptNote, error) {
	var out []keptNote
	if o.sinceTime != nil {
		vs, err := keys.forCheckpoint("--since", o.since)
		if err != nil {
			return nil, err
		}
		kept, err := openTimeNote(o.sinceTime, vs)
		if err != nil {
			return nil, fmt.Errorf("--since: time note: %v", err)
		}
		given, err := openCheckpoint("--since", o.since, vs, kept.cp.origin)
		if err != nil {
			return nil, err
		}
		if kept.cp != given {
			return nil, fmt.Errorf("--since: time note: not the time note of the checkpoint before it")
		}
		out = append(out, keptNote{"--since", kept})
	}
	if o.notOlder != nil && o.notOlder.note != nil {
		out = append(out, keptNote{"--not-older-than", *o.notOlder.note})
	}
	return out, nil
}

// keptVersionRule is what a ledger that signed a note of each version signs
// with every later checkpoint (section 7, "The signed time").
var keptVersionRule = map[int]string{
	2: "a ledger that signs the run-head map root signs it with every later checkpoint",
	3: "a ledger that signs the team-head map root signs it with every later checkpoint",
	4: "a ledger that keys runs by team does so with every later checkpoint",
}

// checkKeptTimes applies the time notes kept with earlier checkpoints
// (section 7), each in turn: the pack then states a time, not an earlier
// one, and a note of at least the kept note's version (a ledger that signs
// the run-head map root, version 2, the team-head map root, version 3, or
// keys runs by team, version 4, does so with every later checkpoint: a pack
// rewritten with a note of an older version is refused); a kept note of the
// pack's tree size signs the same map roots as the pack's (one tree has one
// map root), the runs roots compared only when both notes key runs alike (a
// ledger that starts keying runs by team signs its latest checkpoint again
// with a version 4 note).
func checkKeptTimes(t *timeNote, cp checkpoint, kept []keptNote) error {
	for _, k := range kept {
		switch {
		case t == nil:
			return fmt.Errorf("checkpoint-time: missing: the checkpoint given with %s has a signed time, so every later checkpoint has one", k.flag)
		case t.timeUs < k.note.timeUs:
			return fmt.Errorf("checkpoint-time: time %s is before %s, the time of the checkpoint given with %s (times never go backwards)",
				signedTime(t.timeUs), signedTime(k.note.timeUs), k.flag)
		case t.version < k.note.version && k.note.version >= 2:
			return fmt.Errorf("checkpoint-time: a version %d note, but the checkpoint given with %s has a version %d note: %s",
				t.version, k.flag, k.note.version, keptVersionRule[k.note.version])
		case k.note.cp.size != cp.size:
			continue
		}
		runs := k.note.runs
		if t.runKeys() != k.note.runKeys() {
			runs = nil
		}
		for _, r := range []struct {
			name        string
			pack, given *mapHash
		}{{"runs", t.runs, runs}, {"teams", t.teams, k.note.teams}} {
			if r.given != nil && (r.pack == nil || *r.pack != *r.given) {
				return fmt.Errorf("checkpoint-time: %s root %s at tree size %d, the note kept with the checkpoint given with %s signs %s at that size",
					r.name, hexOrNone(r.pack), cp.size, k.flag, hex.EncodeToString(r.given[:]))
			}
		}
	}
	return nil
}

func hexOrNone(h *mapHash) string {
	if h == nil {
		return "none"
	}
	return hex.EncodeToString(h[:])
}

// checkTimeBounds refuses a signed time before the latest logged_at_us of
// the pack's entries (the ledger signs a checkpoint after logging what it
// holds), or after a policy witness's cosignature of the checkpoint (a
// witness cosigns a checkpoint the ledger signed before; its time is in
// whole seconds, so the signed time is compared in seconds).
func checkTimeBounds(t *timeNote, entries []entry, cosigned []cosignature) error {
	if t == nil {
		return nil
	}
	var latest *entry
	for i := range entries {
		if latest == nil || entries[i].loggedAt > latest.loggedAt {
			latest = &entries[i]
		}
	}
	if latest != nil && t.timeUs < latest.loggedAt {
		return fmt.Errorf("checkpoint-time: time %s is before entry %d's logged_at_us %s: the ledger signs a checkpoint after it logs its entries",
			signedTime(t.timeUs), latest.seq, signedTime(latest.loggedAt))
	}
	for _, c := range cosigned {
		if t.timeUs >= 0 && uint64(t.timeUs/1_000_000) > c.earliest {
			return fmt.Errorf("checkpoint-time: time %s is after the cosignature time %d of witness %s: a witness cosigns a checkpoint after the ledger signed it",
				signedTime(t.timeUs), c.earliest, c.witness)
		}
	}
	return nil
}

// checkLeafVersions requires a pack holding version 2 leaves (written by a
// ledger that keeps team chains, which signs notes of version 3 or later) to
// carry a note of version 3 or later.
func checkLeafVersions(t *timeNote, entries []entry) error {
	for _, e := range entries {
		if e.version != 2 || t != nil && t.version >= 3 {
			continue
		}
		stated := "missing"
		if t != nil {
			stated = fmt.Sprintf("a version %d note", t.version)
		}
		return fmt.Errorf("checkpoint-time: %s, but entries.jsonl holds a leaf of version 2 (seq %d): a ledger that writes version 2 leaves signs version 3 notes",
			stated, e.seq)
	}
	return nil
}

// lowerNote is what a note of a lower version than its pack's format lacks,
// by format (section 7, "Proven completeness", step 1).
var lowerNote = map[int64]string{
	3: "a format 3 pack carries a version 2 note (with the run-head map root)",
	4: "a format 4 pack carries a version 3 note (with the team-head map root)",
	5: "a format 5 pack carries a version 4 note (with run keys of version 2)",
	6: "a format 6 pack carries a version 4 note (with run keys of version 2)",
	7: "a format 7 pack carries a version 4 note (with run keys of version 2)",
}

// noteVersion is the version of the checkpoint-time note of a pack of
// format F >= 2: F - 1, and 4 in formats 6 and 7 (whose changes are
// multiproof.txt and report.html).
func noteVersion(format int64) int64 {
	if format >= 6 {
		return 4
	}
	return format - 1
}

// checkNoteVersion requires the note's version to be the one the
// manifest's format says (section 7, the manifest's `format`, noteVersion).
func checkNoteVersion(format int64, version int) error {
	want := noteVersion(format)
	switch {
	case int64(version) < want && lowerNote[format] != "":
		return fmt.Errorf("checkpoint-time: %s", lowerNote[format])
	case int64(version) != want:
		return fmt.Errorf("checkpoint-time: format %d pack with a version %d note: a format %d pack carries a version %d note",
			format, version, format, want)
	}
	return nil
}

// signedTime writes a signed time as the verifiers print it: UTC, ISO 8601
// with microseconds and 'Z', then the microseconds.
func signedTime(us int64) string {
	return fmt.Sprintf("%s (%d us)", time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z"), us)
}

// checkCompleteness checks, in a run pack, run-head.json (section 7,
// "Proven completeness"; in a format 9 pack, with pruned, section 9) and,
// in a team window, team-window.json ("Closed team windows"). It returns
// what the OK line adds, the line after it ("" for none) and the lines of
// the steps proven to have no completion.
func checkCompleteness(p *pack, m *manifest, entries []entry, cp checkpoint, t *timeNote, pruned *retained) (string, string, []string, error) {
	var teams *mapHash
	if t != nil {
		teams = t.teams
	}
	proof, err := checkRunHeadFile(p, m.scope, t)
	if err != nil {
		return "", "", nil, err
	}
	if proof == nil {
		window, err := checkClosedWindow(p, m.scope, entries, cp, teams)
		if err != nil || window == "" {
			return "", "", nil, err
		}
		return "; " + window, "", nil, nil
	}

	team, _ := str(m.scope.get("team"))
	run, _ := str(m.scope.get("run_id"))
	complete, err := checkRunHeadEntries(proof, team+"/"+run, entries, cp, pruned)
	if err != nil {
		return "", "", nil, err
	}
	if pruned != nil {
		return "", complete, unsettledSteps(team, run, entries, cp), nil
	}
	return "; " + complete, "", unsettledSteps(team, run, entries, cp), nil
}

// runHeadProof is run-head.json read: an inclusion proof has a head, an
// absence proof may have the leaf in the key's place.
type runHeadProof struct {
	key      mapHash
	head     *runHead
	leaf     *mapLeaf
	siblings []mapHash
}

// root returns the map root the proof leads to (section 6a, verification
// steps 1-3), for the proof's own key: callers compare that key first.
func (p *runHeadProof) root() (mapHash, error) {
	if p.head != nil {
		return inclusionRoot(p.key, *p.head, p.siblings)
	}
	return absenceRoot(p.key, p.siblings, p.leaf)
}

func runHeadError(format string, args ...interface{}) error {
	return fmt.Errorf("run-head.json: "+format, args...)
}

// checkRunHeadFile makes steps 1 and 2 of section 7, after the note's
// version was checked against the format (checkNoteVersion): run-head.json
// in a run pack whose note t signs a run-head map root (version 2, 3 or 4),
// whatever the manifest's format, and in no other pack; its key the scope's
// run key of the version the note says and its root the note's. It returns
// the proof of such a run pack, else nil.
func checkRunHeadFile(p *pack, scope *value, t *timeNote) (*runHeadProof, error) {
	data, has := p.files["run-head.json"]
	kind, _ := str(scope.get("kind"))
	var runs *mapHash
	if t != nil {
		runs = t.runs
	}
	switch {
	case (kind != "run" || runs == nil) && has:
		return nil, runHeadError("only a run pack carries a run-head proof")
	case kind != "run" || runs == nil:
		return nil, nil
	case !has:
		return nil, runHeadError("missing: a run pack whose checkpoint-time note signs a run-head map root carries its run's head proof")
	}
	proof, err := readRunHead(data)
	if err != nil {
		return nil, err
	}
	team, _ := str(scope.get("team"))
	run, _ := str(scope.get("run_id"))
	key, err := runKey(team, run, t.runKeys())
	if err != nil {
		return nil, runHeadError("the scope's run has no run key: %v", err)
	}
	if proof.key != key {
		return nil, runHeadError("key %s is not the run key of %s/%s (%s)", hex.EncodeToString(proof.key[:]), team, run, hex.EncodeToString(key[:]))
	}
	root, err := proof.root()
	if err != nil {
		return nil, runHeadError("%v", err)
	}
	if root != *runs {
		return nil, runHeadError("the proof leads to map root %s, the checkpoint-time note signs %s", hex.EncodeToString(root[:]), hex.EncodeToString(runs[:]))
	}
	return proof, nil
}

// readRunHead reads run-head.json, a proof in the JSON form of section 6a.
func readRunHead(data []byte) (*runHeadProof, error) {
	v, err := parseJSON(data)
	if err != nil {
		return nil, runHeadError("%v", err)
	}
	proof, err := readMapProof(v, "", "a run-head proof")
	if err != nil {
		return nil, runHeadError("%v", err)
	}
	return proof, nil
}

// readMapProof reads a map proof in the JSON form of section 6a: any
// spacing and key order, no other key, hashes in lowercase hex, count and
// last_seq JSON integers. Errors name the field, after prefix; what names
// the proof in the error for a key of no proof.
func readMapProof(v *value, prefix, what string) (*runHeadProof, error) {
	keys := []string{"key", "siblings"}
	if v.kind == kObject && v.get("head") != nil {
		keys = append(keys, "head")
	} else if v.kind == kObject && v.get("leaf") != nil {
		keys = append(keys, "leaf")
	}
	if err := exactKeys(v, prefix, what, keys...); err != nil {
		return nil, err
	}
	out := &runHeadProof{}
	var err error
	if out.key, err = proofHash(v.get("key"), prefix+"key"); err != nil {
		return nil, err
	}
	sib := v.get("siblings")
	if sib.kind != kArray {
		return nil, fmt.Errorf("%ssiblings: want a JSON array of hashes", prefix)
	}
	if len(sib.array) > 256 {
		return nil, fmt.Errorf("%ssiblings: %d hashes, a proof has at most 256", prefix, len(sib.array))
	}
	for i, s := range sib.array {
		h, err := proofHash(s, fmt.Sprintf("%ssiblings[%d]", prefix, i))
		if err != nil {
			return nil, err
		}
		out.siblings = append(out.siblings, h)
	}
	if h := v.get("head"); h != nil {
		if out.head, err = readMapHead(h, prefix+"head.", what); err != nil {
			return nil, err
		}
	}
	if l := v.get("leaf"); l != nil {
		if err := exactKeys(l, prefix+"leaf.", what, "key", "value_hash"); err != nil {
			return nil, err
		}
		out.leaf = &mapLeaf{}
		if out.leaf.key, err = proofHash(l.get("key"), prefix+"leaf.key"); err != nil {
			return nil, err
		}
		if out.leaf.valueHash, err = proofHash(l.get("value_hash"), prefix+"leaf.value_hash"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readMapHead(h *value, prefix, what string) (*runHead, error) {
	if err := exactKeys(h, prefix, what, "count", "last_seq", "last_leaf_hash"); err != nil {
		return nil, err
	}
	out := &runHead{}
	var ok bool
	var err error
	if out.count, ok = h.get("count").integer(); !ok {
		return nil, fmt.Errorf("%scount: want a JSON integer", prefix)
	}
	if out.lastSeq, ok = h.get("last_seq").integer(); !ok {
		return nil, fmt.Errorf("%slast_seq: want a JSON integer", prefix)
	}
	if out.lastLeafHash, err = proofHash(h.get("last_leaf_hash"), prefix+"last_leaf_hash"); err != nil {
		return nil, err
	}
	return out, nil
}

// exactKeys requires v to be an object of exactly keys, naming the first
// missing key, else the first other one (in byte order), which is not a
// field of what.
func exactKeys(v *value, prefix, what string, keys ...string) error {
	if v.kind != kObject {
		if prefix == "" {
			return fmt.Errorf("want a JSON object")
		}
		return fmt.Errorf("%s: want a JSON object", strings.TrimSuffix(prefix, "."))
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v.get(k) == nil {
			return fmt.Errorf("%s%s: missing", prefix, k)
		}
	}
	var others []string
	for _, m := range v.object {
		if i := sort.SearchStrings(keys, m.key); i == len(keys) || keys[i] != m.key {
			others = append(others, m.key)
		}
	}
	if len(others) > 0 {
		sort.Strings(others)
		return fmt.Errorf("%s%s: not a field of %s", prefix, others[0], what)
	}
	return nil
}

func proofHash(v *value, field string) (mapHash, error) {
	s, _ := str(v)
	h, ok := parseHash(s)
	if !ok {
		return mapHash{}, fmt.Errorf("%s: want 64 lower-case hex digits", field)
	}
	return h, nil
}

// checkRunHeadEntries makes step 3 of section 7: the run's entries in the
// pack (a run pack holds nothing else) are exactly the head, or none for an
// absence proof; in a pack from a seq (pruned, format 9) fewer than the
// head's count, and the last the head. It returns what the OK line says of
// the run, or in a format 9 pack the line after it.
func checkRunHeadEntries(proof *runHeadProof, scope string, entries []entry, cp checkpoint, pruned *retained) (string, error) {
	if proof.head == nil {
		if len(entries) != 0 {
			return "", runHeadError("the map shows no entry of %s up to tree size %d, the pack holds %d", scope, cp.size, len(entries))
		}
		return fmt.Sprintf("complete: the run has no entry up to seq %d (absence proof)", cp.size-1), nil
	}
	h := proof.head
	if pruned != nil {
		if err := pruned.checkCount(h.count, int64(len(entries)), cp); err != nil {
			return "", err
		}
	} else if int64(len(entries)) != h.count {
		return "", runHeadError("the run has %d entries up to tree size %d, the pack holds %d", h.count, cp.size, len(entries))
	}
	last := entries[len(entries)-1]
	if last.seq != h.lastSeq || last.hash != h.lastLeafHash {
		return "", runHeadError("the run's last entry up to tree size %d is seq %d with leaf hash %s, the pack's last is seq %d with leaf hash %s",
			cp.size, h.lastSeq, hex.EncodeToString(h.lastLeafHash[:]), last.seq, hex.EncodeToString(last.hash[:]))
	}
	if pruned != nil {
		return pruned.pruned(h.count, int64(len(entries)), cp), nil
	}
	return fmt.Sprintf("complete: every entry of the run up to seq %d (run-head proof, %d entries)", cp.size-1, h.count), nil
}

// unsettledSteps lists each step of a complete run that the pack's entries
// start (an agent_start allowed) and no agent_exec of the pack completes (an
// agent_exec of the same step and attempt naming the start, section 4; one
// of another step is a mismatched completion, not this step's): none was
// logged before the tree size. Read from the entries, not from
// outcomes.json, which this verifier does not recompute.
func unsettledSteps(team, run string, entries []entry, cp checkpoint) []string {
	type step struct {
		start, id string
		attempt   int64
	}
	completed := map[step]bool{}
	for _, e := range entries {
		if e.kind == "agent_exec" {
			completed[step{e.startReceiptID, e.stepID, e.attempt}] = true
		}
	}
	var out []string
	for _, e := range entries {
		if e.kind == "agent_start" && e.decision == "allow" && !completed[step{e.receiptID, e.stepID, e.attempt}] {
			out = append(out, fmt.Sprintf("step %s/%s/%s attempt %d: no completion in the log up to seq %d (proven)",
				team, run, e.stepID, e.attempt, cp.size-1))
		}
	}
	return out
}
