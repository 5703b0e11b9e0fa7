package main

// Monitors and map cosignatures (CONTRACT.md section 5c) and the checks of
// a monitored pack (section 7, "Monitored packs"), written from the
// contract's text: a monitor key is an Ed25519 key of the signature type
// 0xff followed by evidence-ledger/map-cosignature/v1; its line on a
// checkpoint-time note of version 4 is base64(key ID || u64 big-endian
// time || Ed25519 signature) over
//
//	evidence-ledger/map-cosignature/v1\n
//	time <seconds>\n
//	<the note's text, final newline included>

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
)

const mapCosignatureID = "evidence-ledger/map-cosignature/v1"

// mapCosignatureType is the monitor key's 35 type bytes.
var mapCosignatureType = append([]byte{0xff}, mapCosignatureID...)

// parseMonitorKey reads a monitor's verifier key; a witness key or a log
// key, even of the same Ed25519 key, is refused by name.
func parseMonitorKey(text string) (policyKey, error) {
	k, err := parseTypedVKey(text, mapCosignatureType, "0xff "+mapCosignatureID)
	if err == nil {
		return k, nil
	}
	for typ, what := range map[byte]string{typeCosignature: "a witness key (type 0x04)", typeEd25519: "a log key (type 0x01)"} {
		if _, e := parseVKey(text, typ); e == nil {
			return policyKey{}, fmt.Errorf("%s is not a monitor key (type 0xff %s)", what, mapCosignatureID)
		}
	}
	return policyKey{}, err
}

// noteSigLine is one signature line of a note: its key name and ID and
// the bytes its base64 holds after the key ID.
type noteSigLine struct {
	name string
	hash uint32
	sig  []byte
}

// splitNote returns a note's text (final newline included) and its
// signature lines; openNote has read them strictly. Lines of one text are
// all kept, identical ones too (sumdb/note's Open drops repeated unknown
// lines; "Reading one" counts them).
func splitNote(msg []byte) ([]byte, []noteSigLine) {
	i := bytes.LastIndex(msg, []byte("\n\n"))
	if i < 0 {
		return msg, nil
	}
	var sigs []noteSigLine
	for _, line := range strings.Split(strings.TrimSuffix(string(msg[i+2:]), "\n"), "\n") {
		name, hash, ok := signatureLine([]byte(line))
		if !ok {
			continue
		}
		raw, _ := base64.StdEncoding.DecodeString(line[strings.LastIndexByte(line, ' ')+1:])
		sigs = append(sigs, noteSigLine{name, hash, raw[4:]})
	}
	return msg[:i+1], sigs
}

// readMapCosignature reads the map cosignature of monitor key k on a
// checkpoint-time note t whose text is text and signature lines sigs, under
// the rules of section 5c's "Reading one", in the order section 7 names
// them: one line at most, a note of version 4, 76 bytes, 1 <= time <=
// 2^63-1 and not before the note's own second, the signature. It returns
// the time, and found = false when no line bears the monitor's key name
// and key ID.
func readMapCosignature(k policyKey, t *timeNote, text []byte, sigs []noteSigLine) (uint64, bool, error) {
	var mine []noteSigLine
	for _, s := range sigs {
		if s.name == k.name && s.hash == k.hash {
			mine = append(mine, s)
		}
	}
	if len(mine) == 0 {
		return 0, false, nil
	}
	if len(mine) > 1 {
		return 0, true, fmt.Errorf("map cosignature: two lines by %s", k.nameID())
	}
	if t.version != 4 {
		return 0, true, fmt.Errorf("map cosignature: only a checkpoint-time note of version 4 is cosigned by monitors")
	}
	sig := mine[0].sig
	if len(sig) != 8+ed25519.SignatureSize {
		return 0, true, fmt.Errorf("map cosignature: length: want 76 bytes (key ID, time, signature), found %d",
			4+len(sig))
	}
	when := binary.BigEndian.Uint64(sig[:8])
	if when < 1 || when > 1<<63-1 {
		return 0, true, fmt.Errorf("map cosignature: time %d: want 1 <= time <= 2^63-1", when)
	}
	if noteSecs := uint64(t.timeUs / 1_000_000); when < noteSecs {
		return 0, true, fmt.Errorf("map cosignature: time %d is before the note's time %d (seconds): a monitor cannot "+
			"have cosigned a note before the ledger signed it", when, noteSecs)
	}
	msg := append([]byte(fmt.Sprintf("%s\ntime %d\n", mapCosignatureID, when)), text...)
	if !ed25519.Verify(k.public, msg, sig[8:]) {
		return 0, true, fmt.Errorf("map cosignature: signature by %s does not verify", k.nameID())
	}
	return when, true, nil
}

// mapCosignature is a policy monitor's valid line on the time note.
type mapCosignature struct {
	monitor string
	time    uint64
}

// checkMonitored makes steps 1 to 3 of "Monitored packs" (section 7) under
// a policy naming monitors: the pack carries its checkpoint-time note (t,
// opened from msg with the ledger's key), every line of a policy monitor
// obeys "Reading one", and the monitors with a valid line meet the
// monitor-quorum. It returns them in policy order.
func checkMonitored(p *policy, msg []byte, t *timeNote) ([]mapCosignature, error) {
	if t == nil {
		return nil, fmt.Errorf("checkpoint-time: missing: the policy's monitors cosign the checkpoint-time note")
	}
	text, sigs := splitNote(msg)
	var cosigned []mapCosignature
	var missing, names []string
	for _, name := range p.monitorOrder {
		when, found, err := readMapCosignature(p.monitors[name], t, text, sigs)
		if err != nil {
			return nil, fmt.Errorf("checkpoint-time: monitor %s: %v", name, err)
		}
		if found {
			cosigned = append(cosigned, mapCosignature{name, when})
			names = append(names, name)
		} else {
			missing = append(missing, name)
		}
	}
	if len(cosigned) >= p.monitorsNeeded() {
		return cosigned, nil
	}
	e := fmt.Sprintf("checkpoint-time: the policy's monitor-quorum %d of %d is not met: no map cosignature from %s",
		p.monitorsNeeded(), len(p.monitorOrder), strings.Join(missing, ", "))
	if len(names) > 0 {
		e += "; cosigned by " + strings.Join(names, ", ")
	}
	return nil, fmt.Errorf("%s", e)
}

// monitoredLine is the line after the OK line and the witnessed: line.
func monitoredLine(p *policy, cosigned []mapCosignature) string {
	var parts []string
	for _, c := range cosigned {
		parts = append(parts, fmt.Sprintf("%s at %s (%d)", c.monitor, utcSeconds(c.time), c.time))
	}
	return fmt.Sprintf("monitored: monitor-quorum %d of %d met; map cosigned by %s", p.monitorsNeeded(),
		len(p.monitorOrder), strings.Join(parts, ", "))
}
