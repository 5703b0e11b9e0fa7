package main

// Closed team windows (CONTRACT section 7, "Closed team windows (format
// 4)", and formats 5 and 6 likewise): a team window whose checkpoint-time note
// signs a team-head map root (version 3 or 4) carries team-window.json,
//
//	{"before":BOUND,"after":BOUND,"head":PROOF}
//	BOUND = {"seq":S,"leaf":"<the entry's leaf bytes>","inclusion":["<hex>",...]}
//
// the team's entries on both sides of the window (before optional, exactly
// one of after and head) and, when there is no after, the team-head map
// proof (section 6a, "The team-head map") of the team. The team chain
// (team_prev, section 1) is walked down from the top through the pack's
// entries: every link must land on an entry the pack holds, so no entry of
// the team between the bounds was left out, as far back as the chain
// reaches (version 1 leaves carry no team_prev).

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// teamKey returns the team-head map key of team (section 6a):
// SHA-256("evidence-ledger/team-key/v1" || 0x00 || u8 len(team) || team).
func teamKey(team string) (mapHash, error) {
	if err := checkTeamName(team); err != nil {
		return mapHash{}, err
	}
	b := append([]byte("evidence-ledger/team-key/v1\x00"), byte(len(team)))
	return sha256.Sum256(append(b, team...)), nil
}

// teamBound is an entry of team-window.json: the leaf read, and the seq and
// inclusion proof given beside it.
type teamBound struct {
	seq       int64
	e         entry
	inclusion []tlog.Hash
}

type teamWindowProof struct {
	before, after *teamBound
	head          *runHeadProof
}

// window is a team scope: team T, logging times [fromUs, toUs).
type window struct {
	team         string
	fromUs, toUs int64
}

func teamWindowError(format string, args ...interface{}) error {
	return fmt.Errorf("team-window.json: "+format, args...)
}

// checkClosedWindow makes the checks of "Closed team windows", steps 1 to
// 4, in order, and returns what the OK line says of the window; "" when the
// pack is no team window whose note is version 3 or 4 (teams nil otherwise).
// entries are the pack's, already checked to be the scope's (scope.go).
func checkClosedWindow(p *pack, scope *value, entries []entry, cp checkpoint, teams *mapHash) (string, error) {
	data, has := p.files["team-window.json"]
	kind, _ := str(scope.get("kind"))
	switch {
	case (kind != "team" || teams == nil) && has:
		return "", teamWindowError("only a team window carries a team chain proof")
	case kind != "team" || teams == nil:
		return "", nil
	case !has:
		return "", teamWindowError("missing: a team window whose checkpoint-time note signs a team-head map root carries its team chain proof")
	}
	proof, err := readTeamWindow(data)
	if err != nil {
		return "", teamWindowError("%v", err)
	}
	var w window
	w.team, _ = str(scope.get("team"))
	w.fromUs, _ = scope.get("from_us").integer()
	w.toUs, _ = scope.get("to_us").integer()
	if err := checkBounds(proof, w, entries, cp); err != nil {
		return "", teamWindowError("%v", err)
	}
	if proof.head != nil {
		if err := checkTeamHead(proof, w.team, entries, cp, *teams); err != nil {
			return "", teamWindowError("%v", err)
		}
	}
	complete, err := walkTeamChain(proof, w, entries, cp)
	if err != nil {
		return "", teamWindowError("%v", err)
	}
	return complete, nil
}

// readTeamWindow reads team-window.json (step 1): any spacing and key
// order, no other key, exactly one of after and head. Errors name the
// field.
func readTeamWindow(data []byte) (*teamWindowProof, error) {
	v, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	var present []string
	if v.kind == kObject {
		for _, k := range []string{"before", "after", "head"} {
			if v.get(k) != nil {
				present = append(present, k)
			}
		}
	}
	if err := exactKeys(v, "", "team-window.json", present...); err != nil {
		return nil, err
	}
	if (v.get("after") == nil) == (v.get("head") == nil) {
		return nil, fmt.Errorf("want exactly one of after and head")
	}
	out := &teamWindowProof{}
	if b := v.get("before"); b != nil {
		if out.before, err = readBound(b, "before"); err != nil {
			return nil, err
		}
	}
	if a := v.get("after"); a != nil {
		if out.after, err = readBound(a, "after"); err != nil {
			return nil, err
		}
	}
	if h := v.get("head"); h != nil {
		if out.head, err = readMapProof(h, "head.", "a team-head proof"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readBound reads a BOUND: its seq, its leaf (a leaf of version 1 or 2 in
// canonical form, section 2) and its inclusion proof.
func readBound(v *value, name string) (*teamBound, error) {
	if err := exactKeys(v, name+".", "a team window bound", "seq", "leaf", "inclusion"); err != nil {
		return nil, err
	}
	b := &teamBound{}
	var ok bool
	if b.seq, ok = v.get("seq").integer(); !ok {
		return nil, fmt.Errorf("%s.seq: want a JSON integer", name)
	}
	leaf, ok := str(v.get("leaf"))
	if !ok {
		return nil, fmt.Errorf("%s.leaf: want a JSON string", name)
	}
	var err error
	if b.e, err = readEntry([]byte(leaf)); err != nil {
		return nil, fmt.Errorf("%s.leaf: %v", name, err)
	}
	if b.inclusion, err = hashList(v.get("inclusion")); err != nil {
		return nil, fmt.Errorf("%s.inclusion: %v", name, err)
	}
	return b, nil
}

// checkBounds makes step 2: each bound is an entry of the scope's team in
// the checkpoint's tree, before logged before the window and below the
// pack's entries, after logged at or after its end and above them.
func checkBounds(proof *teamWindowProof, w window, entries []entry, cp checkpoint) error {
	if b := proof.before; b != nil {
		if err := checkBound("before", b, w.team, cp); err != nil {
			return err
		}
		if b.e.loggedAt >= w.fromUs {
			return fmt.Errorf("before: entry %d was logged at %d, not before the window's from_us %d", b.seq, b.e.loggedAt, w.fromUs)
		}
		if len(entries) > 0 && b.seq >= entries[0].seq {
			return fmt.Errorf("before: entry %d is not below the pack's first entry, seq %d", b.seq, entries[0].seq)
		}
	}
	if a := proof.after; a != nil {
		if err := checkBound("after", a, w.team, cp); err != nil {
			return err
		}
		if a.e.loggedAt < w.toUs {
			return fmt.Errorf("after: entry %d was logged at %d, inside the window, which ends at %d", a.seq, a.e.loggedAt, w.toUs)
		}
		if len(entries) > 0 && a.seq <= entries[len(entries)-1].seq {
			return fmt.Errorf("after: entry %d is not above the pack's last entry, seq %d", a.seq, entries[len(entries)-1].seq)
		}
		if b := proof.before; b != nil && a.seq <= b.seq {
			return fmt.Errorf("after: entry %d is not above before's entry, seq %d", a.seq, b.seq)
		}
	}
	return nil
}

// checkBound checks what both bounds share: the leaf's seq is the bound's,
// below the tree size; its team is the scope's; its inclusion proof leads
// to the checkpoint's root.
func checkBound(name string, b *teamBound, team string, cp checkpoint) error {
	switch {
	case b.e.seq != b.seq:
		return fmt.Errorf("%s: the leaf is entry %d, the bound's seq %d", name, b.e.seq, b.seq)
	case b.seq >= cp.size:
		return fmt.Errorf("%s: entry %d: expected a seq below the checkpoint's tree size %d", name, b.seq, cp.size)
	case b.e.team != team:
		return fmt.Errorf("%s: entry %d is of team %s, not the scope's team %s", name, b.seq, b.e.team, team)
	}
	if err := tlog.CheckRecord(tlog.RecordProof(b.inclusion), cp.size, cp.root, b.seq, b.e.hash); err != nil {
		return fmt.Errorf("%s: inclusion proof of entry %d against tree size %d root %s: %v",
			name, b.seq, cp.size, hex.EncodeToString(cp.root[:]), err)
	}
	return nil
}

// checkTeamHead makes step 3: head is a proof for the scope's team key
// leading to the note's teams root; an inclusion proof's last entry is the
// pack's last (before's when the pack holds none); an absence proof comes
// with no entry and no before.
func checkTeamHead(proof *teamWindowProof, team string, entries []entry, cp checkpoint, teams mapHash) error {
	key, err := teamKey(team)
	if err != nil {
		return fmt.Errorf("head: the scope's team has no team key: %v", err)
	}
	h := proof.head
	if h.key != key {
		return fmt.Errorf("head: key %s is not the team key of %s (%s)", hex.EncodeToString(h.key[:]), team, hex.EncodeToString(key[:]))
	}
	root, err := h.root()
	if err != nil {
		return fmt.Errorf("head: %v", err)
	}
	if root != teams {
		return fmt.Errorf("head: the proof leads to map root %s, the checkpoint-time note signs %s", hex.EncodeToString(root[:]), hex.EncodeToString(teams[:]))
	}
	held := len(entries)
	if proof.before != nil {
		held++
	}
	if h.head == nil {
		if held != 0 {
			return fmt.Errorf("head: the map shows no entry of team %s up to tree size %d, the pack holds %d", team, cp.size, held)
		}
		return nil
	}
	var last *entry
	switch {
	case len(entries) > 0:
		last = &entries[len(entries)-1]
	case proof.before != nil:
		last = &proof.before.e
	}
	if last == nil {
		return fmt.Errorf("head: the team's last entry up to tree size %d is seq %d with leaf hash %s, the pack holds no entry of the team and no before",
			cp.size, h.head.lastSeq, hex.EncodeToString(h.head.lastLeafHash[:]))
	}
	if last.seq != h.head.lastSeq || last.hash != h.head.lastLeafHash {
		return fmt.Errorf("head: the team's last entry up to tree size %d is seq %d with leaf hash %s, the pack's last is seq %d with leaf hash %s",
			cp.size, h.head.lastSeq, hex.EncodeToString(h.head.lastLeafHash[:]), last.seq, hex.EncodeToString(last.hash[:]))
	}
	return nil
}

// walkTeamChain makes step 4: from the top of X (before, the pack's entries
// and after, in seq order) down the team chain, each team_prev must be the
// entry of X just below. It returns the OK line's text for where the walk
// ends.
func walkTeamChain(proof *teamWindowProof, w window, entries []entry, cp checkpoint) (string, error) {
	var x []entry
	if proof.before != nil {
		x = append(x, proof.before.e)
	}
	x = append(x, entries...)
	if proof.after != nil {
		x = append(x, proof.after.e)
	}
	proven := fmt.Sprintf("complete: every entry of team %s logged in [%d, %d) up to seq %d (team chain, %d entries)",
		w.team, w.fromUs, w.toUs, cp.size-1, len(entries))
	top := len(x) - 1
	for i := top; i >= 0; i-- {
		cur := x[i]
		switch {
		case i == 0 && proof.before != nil:
			return proven, nil
		case cur.version == 1 && i == top:
			return "not proven complete: the team's entries around the window are version 1 leaves, written before the ledger kept team chains", nil
		case cur.version == 1:
			return fmt.Sprintf("complete after seq %d: every entry of team %s logged in [%d, %d) after seq %d up to seq %d (team chain); "+
				"the window's entries up to seq %d are version 1 leaves, written before the ledger kept team chains: "+
				"that none of them was left out is not proven", cur.seq, w.team, w.fromUs, w.toUs, cur.seq, cp.size-1, cur.seq), nil
		case !cur.hasTeamPrev && i > 0:
			return "", fmt.Errorf("entry %d has no team_prev, so it is its team's first entry, but the pack holds the team's entry %d below it", cur.seq, x[i-1].seq)
		case !cur.hasTeamPrev:
			return proven, nil
		case i == 0 || x[i-1].seq != cur.teamPrev:
			return "", fmt.Errorf("entry %d follows the team's entry %d (team_prev), which the pack does not hold", cur.seq, cur.teamPrev)
		}
	}
	return proven, nil // X is empty: the head's absence proof shows the team has no entry
}
