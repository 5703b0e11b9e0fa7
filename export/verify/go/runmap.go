package main

// The run-head map of CONTRACT section 6a, written from its text: the run
// keys of versions 1 and 2, the value, leaf, node and empty hashes, and the
// root an inclusion or absence proof leads to. Pure functions, no I/O.
//
//	run key v1  SHA-256("evidence-ledger/run-key/v1" || 0x00 || u8 len(team) || team || run_id)
//	run key v2  team key(team)[0:8] || SHA-256("evidence-ledger/run-key/v2" || 0x00 || u8 len(team) || team || run_id)[0:24]
//	head bytes  u64be count || u64be last_seq || last_leaf_hash
//	value hash  SHA-256(0x02 || T || head bytes)
//	leaf hash   SHA-256(0x03 || T || key || value hash)
//	node hash   SHA-256(0x04 || T || u8 depth || left || right)
//	empty       SHA-256(0x05 || T)
//
// T is "evidence-ledger/run-map/v1". Bit i of a key is bit 7-(i mod 8) of
// byte i/8; 0 is the left side. Siblings are given bottom-up.

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

type mapHash = [32]byte

const mapTag = "evidence-ledger/run-map/v1"

const maxSafe = 1<<53 - 1

var emptyMap = sha256.Sum256(append([]byte{0x05}, mapTag...))

// runHead is a run's head: its number of entries, and the seq and leaf hash
// of its last one.
type runHead struct {
	count, lastSeq int64
	lastLeafHash   mapHash
}

// runKey returns the map key of (team, run_id) of version 1 or 2 (section
// 6a, "Which run key": a note of version 2 or 3 signs the map under v1 keys,
// one of version 4 the map under v2 keys); team must be 1-63 bytes of
// [a-z0-9-] and run_id 1-128 bytes. Every v2 key of a team starts with the
// first 8 bytes of its team key, so a proof's path along a key of a team
// that has runs ends among that team's runs.
func runKey(team, runID string, version int) (mapHash, error) {
	if err := checkTeamName(team); err != nil {
		return mapHash{}, err
	}
	if len(runID) < 1 || len(runID) > 128 {
		return mapHash{}, fmt.Errorf("run_id: must be 1-128 bytes")
	}
	b := append([]byte(fmt.Sprintf("evidence-ledger/run-key/v%d\x00", version)), byte(len(team)))
	sum := sha256.Sum256(append(append(b, team...), runID...))
	if version == 1 {
		return sum, nil
	}
	var key mapHash
	tk, _ := teamKey(team)
	copy(key[:8], tk[:8])
	copy(key[8:], sum[:24])
	return key, nil
}

// checkTeamName requires team to be 1-63 bytes of [a-z0-9-] (section 3).
func checkTeamName(team string) error {
	if len(team) < 1 || len(team) > 63 {
		return fmt.Errorf("team: must be 1-63 bytes of [a-z0-9-]")
	}
	for i := 0; i < len(team); i++ {
		if c := team[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("team: must be 1-63 bytes of [a-z0-9-]")
		}
	}
	return nil
}

func valueHash(h runHead) (mapHash, error) {
	if h.count < 1 || h.count > h.lastSeq+1 || h.lastSeq+1 > maxSafe {
		return mapHash{}, fmt.Errorf("head: want 1 <= count <= last_seq + 1 <= 2^53 - 1, found count %d, last_seq %d",
			h.count, h.lastSeq)
	}
	b := append([]byte{0x02}, mapTag...)
	b = binary.BigEndian.AppendUint64(b, uint64(h.count))
	b = binary.BigEndian.AppendUint64(b, uint64(h.lastSeq))
	return sha256.Sum256(append(b, h.lastLeafHash[:]...)), nil
}

func mapLeafHash(key, value mapHash) mapHash {
	b := append(append([]byte{0x03}, mapTag...), key[:]...)
	return sha256.Sum256(append(b, value[:]...))
}

func mapNodeHash(depth int, left, right mapHash) mapHash {
	b := append(append([]byte{0x04}, mapTag...), byte(depth))
	return sha256.Sum256(append(append(b, left[:]...), right[:]...))
}

func keyBit(key mapHash, i int) byte {
	return key[i/8] >> (7 - i%8) & 1
}

// foldPath hashes h, the subtree at depth len(siblings) on key's path, up to
// the root (verification step 3).
func foldPath(key, h mapHash, siblings []mapHash) mapHash {
	d := len(siblings)
	for i := d - 1; i >= 0; i-- {
		s := siblings[d-1-i]
		if keyBit(key, i) == 0 {
			h = mapNodeHash(i, h, s)
		} else {
			h = mapNodeHash(i, s, h)
		}
	}
	return h
}

// inclusionRoot returns the root an inclusion proof of (key, head) leads to.
func inclusionRoot(key mapHash, head runHead, siblings []mapHash) (mapHash, error) {
	if len(siblings) > 256 {
		return mapHash{}, fmt.Errorf("proof: more than 256 siblings")
	}
	v, err := valueHash(head)
	if err != nil {
		return mapHash{}, err
	}
	return foldPath(key, mapLeafHash(key, v), siblings), nil
}

// mapLeaf is the run an absence proof shows in the key's place.
type mapLeaf struct {
	key, valueHash mapHash
}

// absenceRoot returns the root an absence proof of key leads to; leaf is
// nil when the subtree in the key's place is empty.
func absenceRoot(key mapHash, siblings []mapHash, leaf *mapLeaf) (mapHash, error) {
	d := len(siblings)
	if d > 256 {
		return mapHash{}, fmt.Errorf("proof: more than 256 siblings")
	}
	h := emptyMap
	if leaf != nil {
		if leaf.key == key {
			return mapHash{}, fmt.Errorf("leaf.key: is the key whose absence is claimed")
		}
		for i := 0; i < d; i++ {
			if keyBit(leaf.key, i) != keyBit(key, i) {
				return mapHash{}, fmt.Errorf("leaf.key: must share the first %d bits of the key (the leaf's depth)", d)
			}
		}
		h = mapLeafHash(leaf.key, leaf.valueHash)
	}
	return foldPath(key, h, siblings), nil
}
