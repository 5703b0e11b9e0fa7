package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

type mapCosignatureVectors struct {
	Key struct {
		Name        string `json:"name"`
		Seed        string `json:"seed_hex"`
		Type        string `json:"type_hex"`
		PublicKey   string `json:"public_key_hex"`
		KeyID       string `json:"key_id_hex"`
		VKey        string `json:"vkey"`
		KeyFile     string `json:"key_file"`
		WitnessVKey string `json:"witness_vkey_of_the_same_seed"`
	} `json:"key"`
	LogVKey      string `json:"log_vkey"`
	Note         string `json:"note"`
	NoteTime     uint64 `json:"note_time"`
	Cosignatures []struct {
		Time         uint64 `json:"time"`
		Signed       string `json:"signed_message"`
		Line         string `json:"line"`
		CosignedNote string `json:"cosigned_note"`
	} `json:"cosignatures"`
	Refused []struct {
		What    string `json:"what"`
		Line    string `json:"line"`
		Refusal string `json:"refusal"`
	} `json:"refused"`
	TwoLines refusedNote `json:"two_lines_by_the_monitor"`
	Version3 refusedNote `json:"note_of_version_3"`
	Policies []struct {
		Text        string     `json:"text"`
		Meets       [][]string `json:"meets"`
		DoesNotMeet [][]string `json:"does_not_meet"`
	} `json:"policies"`
	PolicyLines     map[string]string `json:"policy_lines"`
	InvalidPolicies []struct {
		What string `json:"what"`
		Text string `json:"text"`
	} `json:"invalid_policies"`
}

type refusedNote struct {
	Note    string `json:"cosigned_note"`
	Refusal string `json:"refusal"`
}

func readMapCosignatureVectors(t *testing.T) mapCosignatureVectors {
	t.Helper()
	raw, err := os.ReadFile(vectors + "map_cosignature.json")
	if err != nil {
		t.Fatal(err)
	}
	var v mapCosignatureVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// vectorNote opens a time note of the vectors with their log key.
func vectorNote(t *testing.T, v mapCosignatureVectors, msg string) *timeNote {
	t.Helper()
	log, err := note.NewVerifier(v.LogVKey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := openTimeNote([]byte(msg), note.VerifierList(log))
	if err != nil {
		t.Fatal(err)
	}
	return &n
}

// vectorMonitor reads the monitor of the vectors' lines on a note: its
// time, whether a line is there, or the refusal.
func vectorMonitor(t *testing.T, v mapCosignatureVectors, msg string) (uint64, bool, error) {
	t.Helper()
	k, err := parseMonitorKey(v.Key.VKey)
	if err != nil {
		t.Fatal(err)
	}
	text, sigs := splitNote([]byte(msg))
	return readMapCosignature(k, vectorNote(t, v, msg), text, sigs)
}

func TestMapCosignatureVectorsKey(t *testing.T) {
	v := readMapCosignatureVectors(t)
	if hex.EncodeToString(mapCosignatureType) != v.Key.Type || len(mapCosignatureType) != 35 {
		t.Fatalf("type bytes %x, the vectors' %s", mapCosignatureType, v.Key.Type)
	}
	seed, _ := hex.DecodeString(v.Key.Seed)
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	if hex.EncodeToString(pub) != v.Key.PublicKey {
		t.Fatalf("public key of the seed %x, the vectors' %s", pub, v.Key.PublicKey)
	}
	h := sha256.Sum256(append(append([]byte(v.Key.Name+"\n"), mapCosignatureType...), pub...))
	if hex.EncodeToString(h[:4]) != v.Key.KeyID {
		t.Fatalf("key ID %x, the vectors' %s", h[:4], v.Key.KeyID)
	}
	k, err := parseMonitorKey(v.Key.VKey)
	if err != nil || k.name != v.Key.Name || k.nameID() != v.Key.Name+"+"+v.Key.KeyID || !bytes.Equal(k.public, pub) {
		t.Fatalf("monitor vkey %q: %+v %v", v.Key.VKey, k, err)
	}
	vkey := fmt.Sprintf("%s+%s+%s", v.Key.Name, v.Key.KeyID,
		base64.StdEncoding.EncodeToString(append(append([]byte{}, mapCosignatureType...), pub...)))
	if vkey != v.Key.VKey {
		t.Errorf("vkey %s, the vectors' %s", vkey, v.Key.VKey)
	}
	keyFile := fmt.Sprintf("PRIVATE+KEY+%s+%s+%s", v.Key.Name, v.Key.KeyID,
		base64.StdEncoding.EncodeToString(append(append([]byte{}, mapCosignatureType...), seed...)))
	if keyFile != v.Key.KeyFile {
		t.Errorf("key file %s, the vectors' %s", keyFile, v.Key.KeyFile)
	}
	// The witness key of the same seed: another key ID, refused as a
	// monitor key by name.
	w, err := parseVKey(v.Key.WitnessVKey, typeCosignature)
	if err != nil || w.hash == k.hash || !bytes.Equal(w.public, pub) {
		t.Fatalf("witness vkey %q: %+v %v", v.Key.WitnessVKey, w, err)
	}
	if _, err := parseMonitorKey(v.Key.WitnessVKey); err == nil ||
		err.Error() != "a witness key (type 0x04) is not a monitor key (type 0xff evidence-ledger/map-cosignature/v1)" {
		t.Errorf("the witness key as a monitor key: %v", err)
	}
	if _, err := parseMonitorKey(v.LogVKey); err == nil ||
		err.Error() != "a log key (type 0x01) is not a monitor key (type 0xff evidence-ledger/map-cosignature/v1)" {
		t.Errorf("the log key as a monitor key: %v", err)
	}
}

func TestMapCosignatureVectorsCosignatures(t *testing.T) {
	v := readMapCosignatureVectors(t)
	n := vectorNote(t, v, v.Note)
	if n.version != 4 || uint64(n.timeUs/1_000_000) != v.NoteTime {
		t.Fatalf("the vectors' note: version %d time %d us", n.version, n.timeUs)
	}
	text, _ := splitNote([]byte(v.Note))
	for _, c := range v.Cosignatures {
		if want := fmt.Sprintf("%s\ntime %d\n%s", mapCosignatureID, c.Time, text); c.Signed != want {
			t.Errorf("time %d: the signed message is not the contract's:\n%q\n%q", c.Time, c.Signed, want)
		}
		if c.CosignedNote != v.Note+c.Line {
			t.Errorf("time %d: the cosigned note is not the note and the line", c.Time)
		}
		got, found, err := vectorMonitor(t, v, c.CosignedNote)
		if err != nil || !found || got != c.Time {
			t.Errorf("time %d: got %d %v %v", c.Time, got, found, err)
		}
		k, _ := parseMonitorKey(v.Key.VKey)
		_, sigs := splitNote([]byte(c.CosignedNote))
		if last := sigs[len(sigs)-1]; !ed25519.Verify(k.public, []byte(c.Signed), last.sig[8:]) {
			t.Errorf("time %d: the signature is not over the vectors' signed message", c.Time)
		}
	}
	// The note without a line of the monitor: not cosigned, nothing refused.
	if _, found, err := vectorMonitor(t, v, v.Note); found || err != nil {
		t.Errorf("the bare note: %v %v", found, err)
	}
}

func TestMapCosignatureVectorsRefusedLines(t *testing.T) {
	v := readMapCosignatureVectors(t)
	for _, r := range v.Refused {
		_, found, err := vectorMonitor(t, v, v.Note+r.Line)
		if r.Refusal == "ignored" {
			if found || err != nil {
				t.Errorf("%s: want the line ignored, got %v %v", r.What, found, err)
			}
			continue
		}
		if !found || err == nil || !strings.HasPrefix(err.Error(), r.Refusal) {
			t.Errorf("%s: got %v %v, want %q...", r.What, found, err, r.Refusal)
		}
	}
	for what, r := range map[string]refusedNote{"two lines": v.TwoLines, "version 3": v.Version3} {
		_, _, err := vectorMonitor(t, v, r.Note)
		if err == nil || !strings.HasPrefix(err.Error(), r.Refusal) {
			t.Errorf("%s: got %v, want %q...", what, err, r.Refusal)
		}
	}
	// The exact words of each refusal.
	k, _ := parseMonitorKey(v.Key.VKey)
	id := k.nameID()
	for i, want := range []string{
		"",
		"map cosignature: signature by " + id + " does not verify",
		"map cosignature: signature by " + id + " does not verify",
		fmt.Sprintf("map cosignature: time %d is before the note's time %d (seconds): a monitor cannot have cosigned a "+
			"note before the ledger signed it", v.NoteTime-1, v.NoteTime),
		"map cosignature: time 0: want 1 <= time <= 2^63-1",
		"map cosignature: length: want 76 bytes (key ID, time, signature), found 75",
		"map cosignature: signature by " + id + " does not verify",
		"",
	} {
		if _, _, err := vectorMonitor(t, v, v.Note+v.Refused[i].Line); fmt.Sprint(err) != want && want != "" {
			t.Errorf("%s: got %v, want %q", v.Refused[i].What, err, want)
		}
	}
	if _, _, err := vectorMonitor(t, v, v.TwoLines.Note); fmt.Sprint(err) != "map cosignature: two lines by "+id {
		t.Errorf("two lines: %v", err)
	}
	if _, _, err := vectorMonitor(t, v, v.Version3.Note); fmt.Sprint(err) !=
		"map cosignature: only a checkpoint-time note of version 4 is cosigned by monitors" {
		t.Errorf("version 3: %v", err)
	}
	// Two identical lines are two lines too (sumdb/note's Open keeps one).
	line := v.Cosignatures[0].Line
	if _, _, err := vectorMonitor(t, v, v.Note+line+line); fmt.Sprint(err) != "map cosignature: two lines by "+id {
		t.Errorf("one line twice: %v", err)
	}
}

func TestMapCosignatureVectorsPolicies(t *testing.T) {
	v := readMapCosignatureVectors(t)
	n := vectorNote(t, v, v.Note)
	for i, pv := range v.Policies {
		p, err := parsePolicy([]byte(pv.Text))
		if err != nil {
			t.Fatalf("policy %d: %v", i, err)
		}
		if p.quorum != "none" || len(p.monitorOrder) < 2 {
			t.Fatalf("policy %d: quorum %q, monitors %v", i, p.quorum, p.monitorOrder)
		}
		needed := []int{2, 2, 1}[i]
		if p.monitorsNeeded() != needed {
			t.Errorf("policy %d: needs %d monitors, want %d", i, p.monitorsNeeded(), needed)
		}
		cosignedBy := func(set []string) []byte {
			msg := v.Note
			for _, m := range set {
				msg += v.PolicyLines[m]
			}
			return []byte(msg)
		}
		for _, set := range pv.Meets {
			got, err := checkMonitored(p, cosignedBy(set), n)
			var names []string
			for _, c := range got {
				names = append(names, c.monitor)
				if c.time != lineTime(t, v.PolicyLines[c.monitor]) {
					t.Errorf("policy %d, %v: %s at %d", i, set, c.monitor, c.time)
				}
			}
			if err != nil || !reflect.DeepEqual(names, set) {
				t.Errorf("policy %d, cosigned by %v: got %v %v", i, set, names, err)
			}
			parts := []string{}
			for _, m := range set {
				when := lineTime(t, v.PolicyLines[m])
				parts = append(parts, fmt.Sprintf("%s at %s (%d)", m, utcSeconds(when), when))
			}
			if line, want := monitoredLine(p, got), fmt.Sprintf("monitored: monitor-quorum %d of %d met; map cosigned by %s",
				needed, len(p.monitorOrder), strings.Join(parts, ", ")); line != want {
				t.Errorf("policy %d: %s, want %s", i, line, want)
			}
		}
		for _, set := range pv.DoesNotMeet {
			_, err := checkMonitored(p, cosignedBy(set), n)
			var missing []string
			for _, m := range p.monitorOrder {
				if !contains(set, m) {
					missing = append(missing, m)
				}
			}
			want := fmt.Sprintf("checkpoint-time: the policy's monitor-quorum %d of %d is not met: no map cosignature from %s",
				needed, len(p.monitorOrder), strings.Join(missing, ", "))
			if len(set) > 0 {
				want += "; cosigned by " + strings.Join(set, ", ")
			}
			if fmt.Sprint(err) != want {
				t.Errorf("policy %d, cosigned by %v: got %v, want %q", i, set, err, want)
			}
		}
	}
}

// lineTime is the time a map cosignature line states.
func lineTime(t *testing.T, line string) uint64 {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(line[strings.LastIndexByte(line, ' ')+1:], "\n"))
	if err != nil || len(raw) != 76 {
		t.Fatalf("line %q", line)
	}
	return binary.BigEndian.Uint64(raw[4:12])
}

func contains(set []string, s string) bool {
	for _, x := range set {
		if x == s {
			return true
		}
	}
	return false
}

func TestMapCosignatureVectorsInvalidPolicies(t *testing.T) {
	v := readMapCosignatureVectors(t)
	// What each refusal says, in the order of the vectors.
	words := map[string]string{
		"a witness key as a monitor": "line 2: monitor verifier key: a witness key (type 0x04) is not a monitor key " +
			"(type 0xff evidence-ledger/map-cosignature/v1)",
		"a monitor named in a group":                  "line 4: member 'm1' is a monitor: monitors are not witnesses",
		"the quorum naming a monitor":                 "line 3: quorum 'm1' is a monitor: monitors are not witnesses",
		"monitor-quorum above the number of monitors": "line 3: monitor-quorum must be all, any or a decimal k with 1 <= k <= 1",
		"monitor-quorum 0":                            "line 3: monitor-quorum must be all, any or a decimal k with 1 <= k <= 1",
		"monitor-quorum before a monitor line":        "line 4: a monitor line after the monitor-quorum line (line 3), which follows every monitor line",
		"two monitor-quorum lines":                    "line 4: a second monitor-quorum line",
		"two monitors with one public key":            "line 3: this monitor's key is listed twice",
		"a monitor and a witness of one name":         "line 3: 'm1' is already defined on line 2",
		"monitor-quorum without monitors":             "line 2: monitor-quorum without a monitor line before it",
	}
	if len(v.InvalidPolicies) != len(words) {
		t.Errorf("%d invalid policies, %d worded here", len(v.InvalidPolicies), len(words))
	}
	for _, b := range v.InvalidPolicies {
		_, err := parsePolicy([]byte(b.Text))
		if _, ok := err.(*policyError); !ok {
			t.Errorf("%s: got %v, want a policy error", b.What, err)
			continue
		}
		if want, ok := words[b.What]; !ok || err.Error() != want {
			t.Errorf("%s: got %q, want %q", b.What, err, want)
		}
	}
}

func TestMonitorPolicySyntaxRules(t *testing.T) {
	v := readMapCosignatureVectors(t)
	m := "monitor M " + v.Key.VKey
	for _, c := range []struct{ text, err string }{
		{m + " https://m.example\nquorum none\n", ""},
		{m + "\nmonitor-quorum all\nquorum none\n", ""},
		{m + "\nmonitor-quorum any\nquorum none\n", ""},
		{m + "\nmonitor-quorum 1\nquorum none\n", ""},
		{"monitor none " + v.Key.VKey + "\nquorum none\n", "line 1: 'none' is reserved and cannot name a monitor"},
		{"monitor M\nquorum none\n", "line 1: want 'monitor NAME VKEY [URL]'"},
		{m + " https://m.example extra\nquorum none\n", "line 1: want 'monitor NAME VKEY [URL]'"},
		{m + "\nmonitor-quorum\nquorum none\n", "line 2: want 'monitor-quorum all|any|K'"},
		{m + "\nmonitor-quorum 01x\nquorum none\n", "line 2: monitor-quorum must be all, any or a decimal k with 1 <= k <= 1"},
		{"monitor M " + v.LogVKey + "\nquorum none\n", "line 1: monitor verifier key: a log key (type 0x01) is not a " +
			"monitor key (type 0xff evidence-ledger/map-cosignature/v1)"},
		{"monitor M " + v.Key.VKey + "x\nquorum none\n", "line 1: monitor verifier key: key data must be base64 of 0xff " +
			"evidence-ledger/map-cosignature/v1 and 32 bytes"},
		{"monitor M " + strings.Replace(v.Key.VKey, "+8ceb3d9b+", "+8ceb3d9c+", 1) + "\nquorum none\n",
			"line 1: monitor verifier key: key id 8ceb3d9c does not match the key"},
		// A witness is not a monitor either: its key is refused.
		{"witness W " + v.Key.VKey + "\nquorum W\n", "line 1: witness verifier key: key data must be base64 of 0x04 " +
			"(cosignature/v1) and 32 bytes"},
		{m + "\nquorum none\nmonitors M\n", "line 3: unknown keyword 'monitors' (want log, witness, group, quorum, " +
			"monitor or monitor-quorum)"},
	} {
		_, err := parsePolicy([]byte(c.text))
		if (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%q: got %v, want %q", c.text, err, c.err)
		}
	}
	p, _ := parsePolicy([]byte(m + "\nquorum none\n"))
	if p.monitorsNeeded() != 1 || p.monitorOrder[0] != "M" {
		t.Errorf("no monitor-quorum: needs %d", p.monitorsNeeded())
	}
}

// monitor is a map cosignature key (CONTRACT section 5c) of the pack tests.
type monitor struct {
	name string
	priv ed25519.PrivateKey
	id   [4]byte
	vkey string
}

func newMonitor(name string, seed byte) monitor {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
	pub := priv.Public().(ed25519.PublicKey)
	typed := append(append([]byte{}, mapCosignatureType...), pub...)
	h := sha256.Sum256(append([]byte(name+"\n"), typed...))
	m := monitor{name: name, priv: priv}
	copy(m.id[:], h[:4])
	m.vkey = fmt.Sprintf("%s+%s+%s", name, hex.EncodeToString(m.id[:]), base64.StdEncoding.EncodeToString(typed))
	return m
}

// line cosigns the time note's text at time when.
func (m monitor) line(text []byte, when uint64) string {
	sig := ed25519.Sign(m.priv, append([]byte(fmt.Sprintf("%s\ntime %d\n", mapCosignatureID, when)), text...))
	blob := append(append(m.id[:], make([]byte, 8)...), sig...)
	binary.BigEndian.PutUint64(blob[4:12], when)
	return "\u2014 " + m.name + " " + base64.StdEncoding.EncodeToString(blob)
}

func TestMonitoredPacks(t *testing.T) {
	b, _, ok := multiproofPack(t)
	_, _, vkey := testKey(t, testOrigin)
	m1, m2, other := newMonitor("monitor-1.example", 11), newMonitor("monitor-2.example", 12), newMonitor("monitor-2.example", 13)
	tn := b.files["checkpoint-time"]
	text := tn[:bytes.LastIndex(tn, []byte("\n\n"))+1]
	ledgerLine := sigLines(tn)[0]
	signed := uint64((t0 + 3_000_000) / 1_000_000)
	both := withPolicy(t, fmt.Sprintf("log %s\nmonitor M1 %s\nmonitor M2 %s https://m2.example\nquorum none\n", vkey, m1.vkey, m2.vkey))
	lines := strings.SplitN(ok, "\n", 2)
	withLines := func(after ...string) string {
		return strings.Join(append(append([]string{lines[0]}, after...), lines[1]), "\n")
	}
	noWitness := "witnessed: quorum none met; no cosignature"

	b.files["checkpoint-time"] = noteWithLines(tn, ledgerLine, m1.line(text, signed+1), m2.line(text, signed))
	checkPack(t, "both monitors' lines, a policy requiring both", b, withLines(noWitness, fmt.Sprintf("monitored: monitor-quorum "+
		"2 of 2 met; map cosigned by M1 at %s (%d), M2 at %s (%d)", utcSeconds(signed+1), signed+1, utcSeconds(signed), signed)), both)
	checkPack(t, "both monitors' lines, no policy", b, ok)
	checkPack(t, "both monitors' lines, a policy without monitors", b, withLines(noWitness),
		withPolicy(t, fmt.Sprintf("log %s\nquorum none\n", vkey)))
	checkPack(t, "both monitors' lines, monitor-quorum any", b, withLines(noWitness, fmt.Sprintf("monitored: monitor-quorum "+
		"1 of 2 met; map cosigned by M1 at %s (%d), M2 at %s (%d)", utcSeconds(signed+1), signed+1, utcSeconds(signed), signed)),
		withPolicy(t, fmt.Sprintf("log %s\nmonitor M1 %s\nmonitor M2 %s\nmonitor-quorum any\nquorum none\n", vkey, m1.vkey, m2.vkey)))

	// M2's line missing.
	b.files["checkpoint-time"] = noteWithLines(tn, ledgerLine, m1.line(text, signed+1))
	checkPack(t, "M2's line missing", b, "FAIL: checkpoint-time: the policy's monitor-quorum 2 of 2 is not met: no map "+
		"cosignature from M2; cosigned by M1", both)
	checkPack(t, "M2's line missing, monitor-quorum 1", b, withLines(noWitness, fmt.Sprintf("monitored: monitor-quorum "+
		"1 of 2 met; map cosigned by M1 at %s (%d)", utcSeconds(signed+1), signed+1)),
		withPolicy(t, fmt.Sprintf("log %s\nmonitor M1 %s\nmonitor M2 %s\nmonitor-quorum 1\nquorum none\n", vkey, m1.vkey, m2.vkey)))
	checkPack(t, "M2's line missing, no policy", b, ok)
	b.files["checkpoint-time"] = tn
	checkPack(t, "no line", b, "FAIL: checkpoint-time: the policy's monitor-quorum 2 of 2 is not met: no map "+
		"cosignature from M1, M2", both)

	// M2's line forged: made by another key of the same name and key ID.
	forged := other.line(text, signed)
	forged = "\u2014 " + m2.name + " " + base64.StdEncoding.EncodeToString(append(m2.id[:], func() []byte {
		raw, _ := base64.StdEncoding.DecodeString(forged[strings.LastIndexByte(forged, ' ')+1:])
		return raw[4:]
	}()...))
	b.files["checkpoint-time"] = noteWithLines(tn, ledgerLine, m1.line(text, signed+1), forged)
	checkPack(t, "M2's line forged", b, fmt.Sprintf("FAIL: checkpoint-time: monitor M2: map cosignature: signature by "+
		"%s+%s does not verify", m2.name, hex.EncodeToString(m2.id[:])), both)
	checkPack(t, "M2's line forged, no policy", b, ok)
	// Over another note: the time note's time changed, the ledger's
	// signature made again, the monitors' lines kept.
	moved := strings.Replace(string(text), fmt.Sprintf("time %d\n", t0+3_000_000), fmt.Sprintf("time %d\n", t0+3_000_001), 1)
	b.resignNote(t, "checkpoint-time", moved)
	b.files["checkpoint-time"] = noteWithLines(b.files["checkpoint-time"], sigLines(b.files["checkpoint-time"])[0],
		m1.line(text, signed+1), m2.line(text, signed))
	checkPack(t, "the lines of another note", b, fmt.Sprintf("FAIL: checkpoint-time: monitor M1: map cosignature: "+
		"signature by %s+%s does not verify", m1.name, hex.EncodeToString(m1.id[:])), both)

	// Before the note's second; two lines of one monitor.
	b.files["checkpoint-time"] = noteWithLines(tn, ledgerLine, m1.line(text, signed-1), m2.line(text, signed))
	checkPack(t, "M1 before the note's time", b, fmt.Sprintf("FAIL: checkpoint-time: monitor M1: map cosignature: time %d "+
		"is before the note's time %d (seconds): a monitor cannot have cosigned a note before the ledger signed it",
		signed-1, signed), both)
	b.files["checkpoint-time"] = noteWithLines(tn, ledgerLine, m1.line(text, signed), m2.line(text, signed), m1.line(text, signed+5))
	checkPack(t, "two lines of M1", b, fmt.Sprintf("FAIL: checkpoint-time: monitor M1: map cosignature: two lines by %s+%s",
		m1.name, hex.EncodeToString(m1.id[:])), both)

	// A monitor's line on the checkpoint counts for nothing.
	b.files["checkpoint-time"] = tn
	cp := b.files["checkpoint"]
	cpText := cp[:bytes.LastIndex(cp, []byte("\n\n"))+1]
	b.files["checkpoint"] = noteWithLines(cp, sigLines(cp)[0], m1.line(cpText, signed), m2.line(cpText, signed))
	checkPack(t, "the monitors' lines on the checkpoint", b, "FAIL: checkpoint-time: the policy's monitor-quorum 2 of 2 "+
		"is not met: no map cosignature from M1, M2", both)
}

// A time note of version 3 (a format 4 pack) is never cosigned by monitors;
// a format 1 pack has no time note to cosign.
func TestMonitoredPacksOfOtherVersions(t *testing.T) {
	b, ok := genuine(t)
	_, _, vkey := testKey(t, testOrigin)
	m1 := newMonitor("monitor-1.example", 11)
	policy := withPolicy(t, fmt.Sprintf("log %s\nmonitor M1 %s\nquorum none\n", vkey, m1.vkey))
	tn := b.files["checkpoint-time"]
	text := tn[:bytes.LastIndex(tn, []byte("\n\n"))+1]
	checkPack(t, "a version 3 note without lines", b, "FAIL: checkpoint-time: the policy's monitor-quorum 1 of 1 is not "+
		"met: no map cosignature from M1", policy)
	b.files["checkpoint-time"] = noteWithLines(tn, sigLines(tn)[0], m1.line(text, uint64((t0+3_000_000)/1_000_000)))
	checkPack(t, "a version 3 note with M1's line", b, "FAIL: checkpoint-time: monitor M1: map cosignature: only a "+
		"checkpoint-time note of version 4 is cosigned by monitors", policy)
	checkPack(t, "a version 3 note with M1's line, no policy", b, ok)
	p, _ := parsePolicy([]byte(fmt.Sprintf("log %s\nmonitor M1 %s\nquorum none\n", vkey, m1.vkey)))
	if _, err := checkMonitored(p, nil, nil); fmt.Sprint(err) !=
		"checkpoint-time: missing: the policy's monitors cosign the checkpoint-time note" {
		t.Errorf("no time note: %v", err)
	}
}
