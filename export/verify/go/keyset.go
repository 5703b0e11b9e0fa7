package main

// Key rotation and key sets (CONTRACT section 5d), written from the
// contract's text: the key set file (--key-set), each key trusted for a
// range of tree sizes; the key history (--key-history) whose key_rotation
// entries move the trust from a key to the next; and the key a note about a
// tree size is opened with.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// ledgerKey is a log's verifier key (section 5), read strictly: its one
// form `name+<8 lower-case hex>+<canonical base64 of 0x01 || key>`.
type ledgerKey struct {
	policyKey
	vkey string
	v    note.Verifier
}

func (k *ledgerKey) String() string { return k.nameID() }

// parseLedgerKey reads a verifier key and refuses any other spelling of
// it (an upper-case key ID, base64 with stray bits).
func parseLedgerKey(text string) (*ledgerKey, error) {
	pk, err := parseVKey(text, typeEd25519)
	if err != nil {
		return nil, err
	}
	form := fmt.Sprintf("%s+%08x+%s", pk.name, pk.hash,
		base64.StdEncoding.EncodeToString(append([]byte{typeEd25519}, pk.public...)))
	if form != text {
		return nil, fmt.Errorf("not in its one form %s", form)
	}
	v, err := note.NewVerifier(text)
	if err != nil {
		return nil, err
	}
	return &ledgerKey{policyKey: pk, vkey: text, v: v}, nil
}

// keyRange is a key trusted for the tree sizes from..until (until unbounded
// when !bounded). line is the key set's line, 0 for --vkey or a rotation.
type keyRange struct {
	key     *ledgerKey
	from    int64
	until   int64
	bounded bool
	line    int
}

func (r keyRange) holds(size int64) bool {
	return size >= r.from && (!r.bounded || size <= r.until)
}

// keySet is the keys a verifier trusts, each for its range of sizes: the
// ranges ascend and never overlap; every key has the log's origin, name,
// as its name.
type keySet struct {
	name   string
	ranges []keyRange
}

// oneKey is --vkey K: K trusted for every size.
func oneKey(k *ledgerKey) *keySet {
	return &keySet{name: k.name, ranges: []keyRange{{key: k}}}
}

// at returns the index of the range trusted at size, or -1.
func (s *keySet) at(size int64) int {
	for i, r := range s.ranges {
		if r.holds(size) {
			return i
		}
	}
	return -1
}

// keyAt returns the key trusted at size, or nil.
func (s *keySet) keyAt(size int64) *ledgerKey {
	if i := s.at(size); i >= 0 {
		return s.ranges[i].key
	}
	return nil
}

// keySetSyntax is the grammar of a key set's line.
const keySetSyntax = "'<verifier key>[ from <size>][ until <size>]'"

// parseKeySet reads a key set file (section 5d, "Key sets"): one key a
// line, `<verifier key>[ from <size>][ until <size>]` and a newline, `#`
// starting a comment line, empty lines ignored. It refuses a malformed
// line, from above until, keys of different names, a key listed twice, two
// keys of one key ID and ranges that overlap, each naming the line(s).
func parseKeySet(data []byte) (*keySet, error) {
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return nil, fmt.Errorf("key set: no newline at the end of the last line (line %d)", bytes.Count(data, []byte("\n"))+1)
	}
	s := &keySet{}
	first := 0 // the line of the first key
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		n := i + 1
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := keySetLine(line, n)
		if err != nil {
			return nil, err
		}
		if first == 0 {
			s.name, first = r.key.name, n
		} else if r.key.name != s.name {
			return nil, fmt.Errorf("key set: the keys have different names, %s (line %d) and %s (line %d): every key of "+
				"a log has its origin as its name", s.name, first, r.key.name, n)
		}
		for _, o := range s.ranges {
			switch {
			case o.key.same(r.key.policyKey):
				return nil, fmt.Errorf("key set: a key is listed twice, %s (lines %d and %d)", r.key, o.line, n)
			case o.key.hash == r.key.hash:
				return nil, fmt.Errorf("key set: two keys have the key ID %s (lines %d and %d)", r.key, o.line, n)
			}
		}
		s.ranges = append(s.ranges, r)
	}
	if len(s.ranges) == 0 {
		return nil, fmt.Errorf("key set: no key")
	}
	sort.SliceStable(s.ranges, func(i, j int) bool { return s.ranges[i].from < s.ranges[j].from })
	for i := 1; i < len(s.ranges); i++ {
		a, b := s.ranges[i-1], s.ranges[i]
		if !a.bounded || a.until >= b.from {
			lo, hi := a.line, b.line
			if lo > hi {
				lo, hi = hi, lo
			}
			return nil, fmt.Errorf("key set: the ranges of two keys overlap at size %d (lines %d and %d)", b.from, lo, hi)
		}
	}
	return s, nil
}

// keySetLine reads line n of a key set.
func keySetLine(line string, n int) (keyRange, error) {
	words := strings.Split(line, " ")
	k, err := parseLedgerKey(words[0])
	if err != nil {
		return keyRange{}, fmt.Errorf("key set: not a verifier key (name+id+base64): %v (line %d)", err, n)
	}
	r := keyRange{key: k, line: n}
	rest := words[1:]
	malformed := fmt.Errorf("key set: want %s, found \"%s\" (line %d)", keySetSyntax, line, n)
	for _, word := range []string{"from", "until"} {
		if len(rest) == 0 || rest[0] != word {
			continue
		}
		if len(rest) < 2 {
			return keyRange{}, malformed
		}
		size, ok := treeSize(rest[1])
		if !ok {
			return keyRange{}, fmt.Errorf("key set: %s: want a tree size (decimal digits, no leading zero, below 2^63), "+
				"found \"%s\" (line %d)", word, rest[1], n)
		}
		if word == "from" {
			r.from = size
		} else {
			r.until, r.bounded = size, true
		}
		rest = rest[2:]
	}
	if len(rest) != 0 {
		return keyRange{}, malformed
	}
	if r.bounded && r.from > r.until {
		return keyRange{}, fmt.Errorf("key set: from %d is above until %d (line %d)", r.from, r.until, n)
	}
	return r, nil
}

// treeSize reads a decimal size: digits only, no leading zero, below 2^63.
func treeSize(s string) (int64, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// rotate is the set after a rotation at seq from the key of range i to k:
// the old key's range ends at seq (never extended), and k is trusted from
// seq + 1 up to the old range's end, when that leaves any size.
func (s *keySet) rotate(i int, seq int64, k *ledgerKey) *keySet {
	old := s.ranges[i]
	out := &keySet{name: s.name, ranges: append([]keyRange{}, s.ranges[:i]...)}
	out.ranges = append(out.ranges, keyRange{key: old.key, from: old.from, until: seq, bounded: true, line: old.line})
	if !old.bounded || old.until > seq {
		out.ranges = append(out.ranges, keyRange{key: k, from: seq + 1, until: old.until, bounded: old.bounded})
	}
	out.ranges = append(out.ranges, s.ranges[i+1:]...)
	return out
}

// rotationStatement is the text both keys sign (section 5d, "The rotation
// statement").
func rotationStatement(origin string, seq int64, old, new string) string {
	return fmt.Sprintf("evidence-ledger/key-rotation/v1\n%s\nseq %d\nold %s\nnew %s\n", origin, seq, old, new)
}

// followHistory walks the rotations of a key history (section 5d,
// "Following rotations") from the keys of set and returns the keys then
// trusted. The whole history is refused when any part of it fails.
//
//	{"checkpoint":"<signed checkpoint>","rotations":[{"inclusion":["<hex>",...],"leaf":"<leaf bytes>","seq":<s>},...]}
//
// Any spacing and key order; no other key, none missing.
func followHistory(set *keySet, data []byte) (*keySet, error) {
	v, err := parseJSON(data)
	if err != nil {
		return nil, fmt.Errorf("key history: %v", err)
	}
	if v.kind != kObject {
		return nil, fmt.Errorf("key history: want a JSON object {\"checkpoint\":NOTE,\"rotations\":[...]}")
	}
	if err := onlyFields(v, "checkpoint", "rotations"); err != nil {
		return nil, fmt.Errorf("key history: %v", err)
	}
	cpText, ok := str(v.get("checkpoint"))
	if !ok {
		return nil, fmt.Errorf("key history: checkpoint: want a string (a signed checkpoint)")
	}
	// The checkpoint's size and root, read before its signature: the key
	// that must have signed it is known once the rotations are followed.
	cp, err := peekCheckpoint("key history: checkpoint", []byte(cpText))
	if err != nil {
		return nil, err
	}
	list := v.get("rotations")
	if list.kind != kArray {
		return nil, fmt.Errorf("key history: rotations: want an array")
	}
	trust := set
	last := int64(-1)
	for i, el := range list.array {
		r, err := readRotation(el, i+1)
		if err != nil {
			return nil, err
		}
		if r.seq <= last {
			return nil, fmt.Errorf("key history: rotation %d: seq %d is not above %d, the seq of the rotation before: "+
				"rotations are listed by ascending seq", i+1, r.seq, last)
		}
		last = r.seq
		if trust, err = followRotation(trust, r, i+1, cp); err != nil {
			return nil, fmt.Errorf("key history: the rotation at seq %d: %v", r.seq, err)
		}
	}
	k := trust.keyAt(cp.size)
	if k == nil {
		return nil, fmt.Errorf("key history: checkpoint: no key is trusted at size %d", cp.size)
	}
	if _, err := openCheckpoint("key history: checkpoint", []byte(cpText), keyAt{k, cp.size}, trust.name); err != nil {
		return nil, err
	}
	return trust, nil
}

// onlyFields requires an object to hold exactly the keys given.
func onlyFields(v *value, keys ...string) error {
	for _, f := range v.object {
		known := false
		for _, k := range keys {
			known = known || f.key == k
		}
		if !known {
			return fmt.Errorf("%s: not a field", f.key)
		}
	}
	for _, k := range keys {
		if v.get(k) == nil {
			return fmt.Errorf("%s: missing", k)
		}
	}
	return nil
}

// rotation is one element of a key history's rotations.
type rotation struct {
	seq       int64
	leaf      []byte
	inclusion []tlog.Hash
}

func readRotation(v *value, n int) (rotation, error) {
	var r rotation
	if v.kind != kObject {
		return r, fmt.Errorf("key history: rotation %d: want an object {\"inclusion\":[...],\"leaf\":LEAF,\"seq\":S}", n)
	}
	if err := onlyFields(v, "inclusion", "leaf", "seq"); err != nil {
		return r, fmt.Errorf("key history: rotation %d: %v", n, err)
	}
	var ok bool
	if r.seq, ok = v.get("seq").integer(); !ok || r.seq < 0 {
		return r, fmt.Errorf("key history: rotation %d: seq: want an integer >= 0", n)
	}
	leaf, ok := str(v.get("leaf"))
	if !ok {
		return r, fmt.Errorf("key history: rotation %d: leaf: want a string (the leaf's bytes)", n)
	}
	r.leaf = []byte(leaf)
	var err error
	if r.inclusion, err = hashList(v.get("inclusion")); err != nil {
		return r, fmt.Errorf("key history: rotation %d: inclusion: %v", n, err)
	}
	return r, nil
}

// rotationFields are the fields of a key_rotation receipt: the common
// fields the entry has (section 5d fixes them) and its own.
var rotationFields = []string{"receipt_id", "kind", "team", "run_id", "attempt", "occurred_at_us", "old_key", "new_key",
	"note"}

// followRotation checks the n-th rotation of a history (section 5d,
// "Following rotations") against the keys trusted so far and cp, the
// history's checkpoint (its signature checked after), and returns the
// keys trusted after it. Errors name the rule; the caller names the seq.
func followRotation(trust *keySet, r rotation, n int, cp checkpoint) (*keySet, error) {
	s := r.seq
	if s >= cp.size {
		return nil, fmt.Errorf("the history's checkpoint is of size %d: its size must be above every rotation's seq", cp.size)
	}
	e, err := readEntry(r.leaf)
	if err != nil {
		return nil, fmt.Errorf("leaf: %v", err)
	}
	v, _ := canonical(r.leaf)
	receipt := v.get("receipt")
	attempt, hasAttempt := receipt.get("attempt").integer()
	_, hasTime := receipt.get("occurred_at_us").integer()
	id := fmt.Sprintf("ledger.key.%d", n)
	switch {
	case e.seq != s:
		return nil, fmt.Errorf("leaf: seq %d, the history gives %d", e.seq, s)
	case e.kind != "key_rotation":
		return nil, fmt.Errorf("leaf: kind: want key_rotation, found %s", quoted(receipt.get("kind")))
	case e.emitter != "ledger":
		return nil, fmt.Errorf("leaf: emitter: want ledger (the ledger alone writes key_rotation entries), found \"%s\"",
			e.emitter)
	case receipt.onlyKeys(rotationFields...) != nil:
		return nil, fmt.Errorf("leaf: receipt: %v: a key_rotation receipt holds %s only", receipt.onlyKeys(rotationFields...),
			strings.Join(rotationFields, ", "))
	case e.receiptID != id:
		return nil, fmt.Errorf("leaf: receipt_id: want %s (rotation %d of the log), found %s", id, n,
			quoted(receipt.get("receipt_id")))
	case e.team != "ledger":
		return nil, fmt.Errorf("leaf: team: want ledger, found \"%s\"", e.team)
	case e.runID != "ledger.keys":
		return nil, fmt.Errorf("leaf: run_id: want ledger.keys, found %s", quoted(receipt.get("run_id")))
	case !hasAttempt || attempt != 1:
		return nil, fmt.Errorf("leaf: attempt: want 1, found %s", show(receipt.get("attempt")))
	case !hasTime:
		return nil, fmt.Errorf("leaf: occurred_at_us: want an integer (the ledger's clock), found %s",
			show(receipt.get("occurred_at_us")))
	}
	texts := map[string]string{}
	for _, k := range []string{"old_key", "new_key"} {
		var ok bool
		if texts[k], ok = str(receipt.get(k)); !ok {
			return nil, fmt.Errorf("leaf: %s: want a verifier key, a string", k)
		}
	}
	old, new, err := rotationKeys(trust.name, texts["old_key"], texts["new_key"])
	if err != nil {
		return nil, fmt.Errorf("leaf: %v", err)
	}
	i := trust.at(s)
	if i < 0 || !trust.ranges[i].key.same(old.policyKey) {
		there := "no key is trusted there"
		if i >= 0 {
			there = "the key trusted there is " + trust.ranges[i].key.String()
		}
		return nil, fmt.Errorf("its old key is not trusted at size %d: old_key is %s, %s", s, old, there)
	}
	noteText, ok := str(receipt.get("note"))
	if !ok {
		return nil, fmt.Errorf("leaf: note: want the signed rotation statement, a string")
	}
	if err := checkRotation(trust.name, s, old, new, noteText); err != nil {
		return nil, err
	}
	if err := tlog.CheckRecord(tlog.RecordProof(r.inclusion), cp.size, cp.root, s, e.hash); err != nil {
		return nil, fmt.Errorf("inclusion: the proof does not lead to the root of the history's checkpoint (%s): %v", cp, err)
	}
	return trust.rotate(i, s, new), nil
}

// rotationKeys reads a rotation's old_key and new_key: verifier keys
// named origin. Errors name the field.
func rotationKeys(origin, oldText, newText string) (old, new *ledgerKey, err error) {
	keys := [2]*ledgerKey{}
	for i, k := range []string{"old_key", "new_key"} {
		if keys[i], err = parseLedgerKey([]string{oldText, newText}[i]); err != nil {
			return nil, nil, fmt.Errorf("%s: not a verifier key (name+id+base64): %v", k, err)
		}
		if keys[i].name != origin {
			return nil, nil, fmt.Errorf("%s: named \"%s\", the log's keys are named \"%s\" (its origin)", k,
				keys[i].name, origin)
		}
	}
	return keys[0], keys[1], nil
}

// checkRotation checks the statement of a rotation at seq from old to new
// of the log origin (section 5d): new another key than old, and note, the
// signed statement, valid by rules 1 and 2 (checkStatement). Errors name
// the field.
func checkRotation(origin string, seq int64, old, new *ledgerKey, note string) error {
	if new.hash == old.hash || bytes.Equal(new.public, old.public) {
		return fmt.Errorf("new_key: %s, the same key ID or public key as old_key %s: a rotation moves to another key",
			new, old)
	}
	if err := checkStatement(note, rotationStatement(origin, seq, old.vkey, new.vkey), old, new); err != nil {
		return fmt.Errorf("note: %v", err)
	}
	return nil
}

// keyRotations checks the pack's key_rotation entries (section 5d, "What
// a pack's entries say of a rotation"): each the ledger's, its statement
// that of the log origin at the entry's seq (checkRotation, as a key
// history's). It returns one line for each.
func keyRotations(entries []entry, origin string) ([]string, error) {
	var out []string
	for i := range entries {
		e := &entries[i]
		if e.kind != "key_rotation" {
			continue
		}
		if e.emitter != "ledger" {
			return nil, fmt.Errorf("entries.jsonl seq %d: key_rotation: emitter '%s': the ledger's only", e.seq, e.emitter)
		}
		old, new, err := rotationKeys(origin, e.oldKey, e.newKey)
		if err == nil {
			err = checkRotation(origin, e.seq, old, new, e.rotationNote)
		}
		if err != nil {
			return nil, fmt.Errorf("entries.jsonl seq %d: key_rotation: %v", e.seq, err)
		}
		out = append(out, fmt.Sprintf("key rotation at seq %d: the log's key moved from %s to %s (a statement both keys "+
			"signed).", e.seq, e.oldKey, e.newKey))
	}
	return out, nil
}

// checkStatement checks a rotation's note: its text exactly want, then
// exactly two signature lines, the first by old and the second by new,
// both verifying (section 5d, rules 1 and 2).
func checkStatement(msg, want string, old, new *ledgerKey) error {
	split := strings.Index(msg, "\n\n")
	if split < 0 {
		return fmt.Errorf("not a signed note (no empty line before signature lines)")
	}
	text, sigs := msg[:split+1], msg[split+2:]
	if text != want {
		got, exp := strings.Split(text, "\n"), strings.Split(want, "\n")
		for i := 0; ; i++ {
			switch {
			case i >= len(got)-1:
				return fmt.Errorf("text: line %d: want \"%s\", found none: the statement is %d lines", i+1, exp[i], len(exp)-1)
			case i >= len(exp)-1:
				return fmt.Errorf("text: line %d: want none, found \"%s\": the statement is %d lines", i+1, got[i], len(exp)-1)
			case got[i] != exp[i]:
				return fmt.Errorf("text: line %d: want \"%s\", found \"%s\"", i+1, exp[i], got[i])
			}
		}
	}
	if !strings.HasSuffix(sigs, "\n") {
		return fmt.Errorf("signature lines: the last one has no newline")
	}
	lines := strings.Split(strings.TrimSuffix(sigs, "\n"), "\n")
	if len(lines) != 2 {
		return fmt.Errorf("want exactly two signature lines (the old key's, then the new key's), found %d", len(lines))
	}
	for i, k := range []*ledgerKey{old, new} {
		which := []string{"the old key's", "the new key's"}[i]
		name, hash, ok := signatureLine([]byte(lines[i]))
		if !ok {
			return fmt.Errorf("signature line %d: malformed", i+1)
		}
		if name != k.name || hash != k.hash {
			return fmt.Errorf("signature line %d: by %s+%08x, want %s, %s", i+1, name, hash, which, k)
		}
		raw, _ := base64.StdEncoding.DecodeString(lines[i][strings.LastIndexByte(lines[i], ' ')+1:])
		if !k.v.Verify([]byte(text), raw[4:]) {
			return fmt.Errorf("signature line %d: %s signature (%s) does not verify", i+1, which, k)
		}
	}
	return nil
}

// peekCheckpoint reads a checkpoint's text (origin, size, root) before its
// signature is checked: which key must have signed it depends on its size.
// openCheckpoint reads the same text again once the signature holds.
func peekCheckpoint(what string, msg []byte) (checkpoint, error) {
	split := bytes.LastIndex(msg, []byte("\n\n"))
	if split < 0 {
		return checkpoint{}, fmt.Errorf("%s: signature: malformed note", what)
	}
	return checkpointText(what, string(msg[:split+1]))
}

// keyAt is the one key a note about a tree size is opened with under a key
// set (note.Verifiers): a note with no valid signature by it is refused
// naming the size and the key (openNote), whatever other lines it holds.
type keyAt struct {
	key  *ledgerKey
	size int64
}

func (k keyAt) Verifier(name string, hash uint32) (note.Verifier, error) {
	if name == k.key.name && hash == k.key.hash {
		return k.key.v, nil
	}
	return nil, &note.UnknownVerifierError{Name: name, KeyHash: hash}
}

// notSigned is the refusal of a note that holds no valid signature by the
// key trusted at its size.
func (k keyAt) notSigned(what string) error {
	return fmt.Errorf("%s: no valid signature by %s, the key trusted at size %d", what, k.key, k.size)
}

// signatureRefused reports whether note.Open failed on the signatures (none
// by a known key, or one that does not verify), not on the note's form.
func signatureRefused(err error) bool {
	var unverified *note.UnverifiedNoteError
	var invalid *note.InvalidSignatureError
	return errors.As(err, &unverified) || errors.As(err, &invalid)
}

// noteKeys gives the keys a note about a tree size is opened with: without
// a key set, the one key given (or the pack's own) for every size; with
// one, the key it trusts at that size.
type noteKeys struct {
	fixed note.Verifiers
	set   *keySet
}

func (k noteKeys) at(what string, size int64) (note.Verifiers, error) {
	if k.set == nil {
		return k.fixed, nil
	}
	key := k.set.keyAt(size)
	if key == nil {
		return nil, fmt.Errorf("%s: no key is trusted at size %d", what, size)
	}
	return keyAt{key, size}, nil
}

// forCheckpoint gives the keys of the checkpoint msg, at the size its text
// names.
func (k noteKeys) forCheckpoint(what string, msg []byte) (note.Verifiers, error) {
	if k.set == nil {
		return k.fixed, nil
	}
	cp, err := peekCheckpoint(what, msg)
	if err != nil {
		return nil, err
	}
	return k.at(what, cp.size)
}

// quoted shows a JSON value of a leaf in a refusal: a string quoted, none
// when it is absent.
func quoted(v *value) string {
	if v == nil {
		return "none"
	}
	if s, ok := str(v); ok {
		return "\"" + s + "\""
	}
	return "a value other than a string"
}

// trustedKeys returns, under a key set (o.keys), the keys trusted once the
// key history is followed, and opens a --not-older-than checkpoint at its
// size; nil without a key set.
func trustedKeys(o *options) (*keySet, error) {
	if o.keys == nil {
		return nil, nil
	}
	trust := o.keys
	if o.history != nil {
		var err error
		// A history the keys given do not follow is refused as the
		// arguments' fault, exit 2, as the other verifiers refuse it.
		if trust, err = followHistory(o.keys, o.history); err != nil {
			return nil, &usageErr{"--key-history: " + err.Error()}
		}
	}
	if o.notOlderFile != nil {
		n, err := openNotOlder(o.notOlderArg, o.notOlderFile, noteKeys{set: trust}, trust.name)
		if err != nil {
			return nil, &usageErr{err.Error()}
		}
		o.notOlder = n
	}
	return trust, nil
}

// packKey is, under a key set, the key trusted at the pack's tree size: the
// size its checkpoint names, read before any signature is checked.
func packKey(p *pack, trust *keySet) (keyAt, error) {
	cp, err := peekCheckpoint("checkpoint", p.files["checkpoint"])
	if err != nil {
		return keyAt{}, err
	}
	k := trust.keyAt(cp.size)
	if k == nil {
		return keyAt{}, fmt.Errorf("checkpoint: no key is trusted at size %d, the pack's tree size", cp.size)
	}
	return keyAt{k, cp.size}, nil
}
