package main

import (
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Reading a pack strictly (CONTRACT section 7): each rule broken in a pack
// otherwise genuine and re-signed with the ledger's key, refused with the
// message that names the file and the rule; and what the rules allow,
// accepted.

// genuine is the run pack of stepLog at tree size 7, and its OK lines.
func genuine(t *testing.T) (*builtPack, string) {
	l := stepLog(t)
	return runPack(t, l, 7, "t", "r", t0+3_000_000, 500, nil), runOK(t, l, 7, 4, "s1")
}

// twice writes key k of a compact JSON object a second time, first.
func twice(t *testing.T, data []byte, k string) []byte {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return append([]byte(fmt.Sprintf(`{"%s":%s,`, k, obj[k])), bytes.TrimSpace(data)[1:]...)
}

func TestAKeyTwiceInAnyJSONFileIsRefused(t *testing.T) {
	b, _ := genuine(t)
	proofs := bytes.Split(b.files["proofs.jsonl"], []byte("\n"))
	proofs[1] = twice(t, proofs[1], "inclusion")
	b.files["proofs.jsonl"] = bytes.Join(proofs, []byte("\n"))
	checkPack(t, "a proofs line with inclusion twice", b, "FAIL: proofs.jsonl line 2: key inclusion twice")

	b, _ = genuine(t)
	b.files["run-head.json"] = twice(t, b.files["run-head.json"], "head")
	checkPack(t, "run-head.json with head twice", b, "FAIL: run-head.json: key head twice")

	b, _ = genuine(t)
	b.files["outcomes.json"] = twice(t, b.files["outcomes.json"], "steps")
	checkPack(t, "outcomes.json with steps twice", b, "FAIL: outcomes.json: key steps twice")

	l := teamLog(t)
	w := honestWindow(t, l, 20, "t", 300, 5000)
	raw, _ := json.Marshal(w.window)
	w.window, w.extra = nil, map[string][]byte{"team-window.json": twice(t, raw, "head")}
	checkLine(t, "team-window.json with head twice", w, "FAIL: team-window.json: key head twice")
}

// sincePack is the pack of stepLog at size 7 with consistency.json from
// size 5, and the option giving that checkpoint with --since.
func sincePack(t *testing.T) (*builtPack, func(*options), string) {
	l := stepLog(t)
	b := runPack(t, l, 7, "t", "r", t0+3_000_000, 500, nil)
	s, _, _ := testKey(t, testOrigin)
	oldRoot := l.root(t, 5)
	old := sign(t, s, fmt.Sprintf("%s\n5\n%s\n", testOrigin, b64(oldRoot)))
	proof, err := tlog.ProveTree(7, 5, l.hashes())
	if err != nil {
		t.Fatal(err)
	}
	b.files["consistency.json"], _ = json.Marshal(map[string]interface{}{"old_checkpoint": string(old),
		"proof": hexList(proof)})
	ok := strings.Replace(runOK(t, l, 7, 4, "s1"), "; complete", fmt.Sprintf(
		", consistent with the --since checkpoint size 5 root %s; complete", hex.EncodeToString(oldRoot[:])), 1)
	return b, func(o *options) { o.since = old }, ok
}

func TestConsistencyJSONHoldsItsTwoFieldsOnce(t *testing.T) {
	b, since, ok := sincePack(t)
	checkPack(t, "a genuine pack --since", b, ok, since)
	c := b.files["consistency.json"]
	b.files["consistency.json"] = twice(t, c, "proof")
	checkPack(t, "proof twice", b, "FAIL: consistency.json: key proof twice", since)
	b.files["consistency.json"] = append([]byte(`{"note":"x",`), c[1:]...)
	checkPack(t, "another key", b, "FAIL: consistency.json: note: not a field", since)
	b.files["consistency.json"] = []byte(`{"proof":[]}`)
	checkPack(t, "old_checkpoint missing", b, "FAIL: consistency.json: old_checkpoint: missing", since)
	// --since the pack's own size, with no consistency.json: required.
	b, _ = genuine(t)
	cp := b.files["checkpoint"]
	cpSize := func(o *options) { o.since = cp }
	root := stepLog(t).root(t, 7)
	checkPack(t, "--since the pack's size, no consistency.json", b, fmt.Sprintf(
		"FAIL: consistency.json: missing, and --since asks for a proof from size 7 root %s",
		hex.EncodeToString(root[:])), cpSize)
}

func TestNotesSignedTwiceOrWithAMalformedLineAreRefused(t *testing.T) {
	for _, name := range []string{"manifest.sig", "checkpoint", "checkpoint-time"} {
		b, _ := genuine(t)
		path := b.write(t)
		// The note as written, its ledger line twice.
		p, err := readPack(path)
		if err != nil {
			t.Fatal(err)
		}
		own := sigLines(p.files[name])[0]
		for n, data := range p.files {
			if n != "manifest.json" && n != "manifest.sig" {
				b.files[n] = data
			}
		}
		b.files[name] = noteWithLines(p.files[name], own, own)
		checkPack(t, name+" signed twice", b, "FAIL: "+name+": signed twice by the ledger's key")
	}
	b, _ := genuine(t)
	cp := b.files["checkpoint"]
	own := sigLines(cp)[0]
	blob := strings.SplitN(own, " ", 3)[2]
	bad := map[string]string{
		"a key name with '+'":      "\u2014 wit+ness " + blob,
		"an empty key name":        "\u2014  " + blob,
		"a key name with a space":  "\u2014 wit ness " + blob,
		"4 bytes":                  "\u2014 witness " + base64.StdEncoding.EncodeToString([]byte{1, 2, 3, 4}),
		"base64 with stray bits":   "\u2014 witness " + strayBits(t, blob),
		"base64 without padding":   "\u2014 witness " + strings.TrimRight(blob, "="),
		"no em dash":               "- witness " + blob,
		"no space before the data": "\u2014 witness",
	}
	for what, line := range bad {
		b.files["checkpoint"] = noteWithLines(cp, own, line)
		checkPack(t, what, b, "FAIL: checkpoint: signature line 2: malformed")
	}
	b.files["checkpoint"] = noteWithLines(cp, "\u2014 "+strings.SplitN(own, " ", 3)[1]+" "+strayBits(t, blob))
	checkPack(t, "the ledger's own line with stray bits", b, "FAIL: checkpoint: signature line 1: malformed")
}

// strayBits sets a bit of canonical base64 (ending in '=') that the
// padding says is not data: the same bytes, written another way.
func strayBits(t *testing.T, b64 string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	body := strings.TrimRight(b64, "=")
	at := len(body) - 1
	out := body[:at] + string(alphabet[strings.IndexByte(alphabet, body[at])|1]) + b64[len(body):]
	if out == b64 {
		t.Fatalf("no stray bit to set in %s", b64)
	}
	return out
}

// witness is a cosignature/v1 key (CONTRACT section 5b).
type witness struct {
	name string
	priv ed25519.PrivateKey
	id   [4]byte
	vkey string
}

func newWitness(name string, seed byte) witness {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
	pub := priv.Public().(ed25519.PublicKey)
	h := sha256.Sum256(append([]byte(name+"\n\x04"), pub...))
	w := witness{name: name, priv: priv}
	copy(w.id[:], h[:4])
	w.vkey = fmt.Sprintf("%s+%s+%s", name, hex.EncodeToString(w.id[:]), base64.StdEncoding.EncodeToString(append([]byte{4}, pub...)))
	return w
}

// line cosigns the checkpoint text at time when.
func (w witness) line(text []byte, when uint64) string {
	sig := ed25519.Sign(w.priv, append([]byte(fmt.Sprintf("cosignature/v1\ntime %d\n", when)), text...))
	blob := append(append(w.id[:], make([]byte, 8)...), sig...)
	binary.BigEndian.PutUint64(blob[4:12], when)
	return "\u2014 " + w.name + " " + base64.StdEncoding.EncodeToString(blob)
}

func withPolicy(t *testing.T, text string) func(*options) {
	p, err := parsePolicy([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return func(o *options) { o.policy = p }
}

func TestAWitnessCosigningTwiceCountsOnce(t *testing.T) {
	b, ok := genuine(t)
	_, _, vkey := testKey(t, testOrigin)
	a, other := newWitness("witness-a.example", 1), newWitness("witness-b.example", 2)
	cp := b.files["checkpoint"]
	text := cp[:bytes.LastIndex(cp, []byte("\n\n"))+1]
	when := uint64(t0/1_000_000 + 5)
	b.files["checkpoint"] = noteWithLines(cp, sigLines(cp)[0], a.line(text, when), a.line(text, when+1))
	witnessed := func(when uint64) string {
		lines := strings.SplitN(ok, "\n", 2)
		return lines[0] + fmt.Sprintf("\nwitnessed: quorum A met; cosigned by A at %s (%d)\n", utcSeconds(when), when) + lines[1]
	}
	checkPack(t, "two valid lines of A, quorum A", b, witnessed(when), withPolicy(t, fmt.Sprintf("log %s\nwitness A %s\nquorum A\n", vkey, a.vkey)))
	checkPack(t, "two valid lines of A, quorum 2 of A and B", b,
		"FAIL: checkpoint: the policy's quorum AB is not met: no cosignature from B; cosigned by A",
		withPolicy(t, fmt.Sprintf("log %s\nwitness A %s\nwitness B %s\ngroup AB 2 A B\nquorum AB\n", vkey, a.vkey, other.vkey)))
	// 15b: a witness cosigned the checkpoint a second before the ledger
	// says it signed it.
	early := uint64(t0/1_000_000 + 2)
	b.files["checkpoint"] = noteWithLines(cp, sigLines(cp)[0], a.line(text, early))
	checkPack(t, "a cosignature before the signed time", b, fmt.Sprintf("FAIL: checkpoint-time: time %s is after the "+
		"cosignature time %d of witness A: a witness cosigns a checkpoint after the ledger signed it",
		signedTime(t0+3_000_000), early), withPolicy(t, fmt.Sprintf("log %s\nwitness A %s\nquorum A\n", vkey, a.vkey)))
	// Its second line, of the earlier time, counts too.
	b.files["checkpoint"] = noteWithLines(cp, sigLines(cp)[0], a.line(text, when), a.line(text, early))
	checkPack(t, "a second cosignature of A before the signed time", b, fmt.Sprintf("FAIL: checkpoint-time: time %s is "+
		"after the cosignature time %d of witness A: a witness cosigns a checkpoint after the ledger signed it",
		signedTime(t0+3_000_000), early), withPolicy(t, fmt.Sprintf("log %s\nwitness A %s\nquorum A\n", vkey, a.vkey)))
	// In the same second: its time is whole seconds.
	b.files["checkpoint"] = noteWithLines(cp, sigLines(cp)[0], a.line(text, early+1))
	checkPack(t, "a cosignature in the signed time's second", b, witnessed(early+1),
		withPolicy(t, fmt.Sprintf("log %s\nwitness A %s\nquorum A\n", vkey, a.vkey)))
}

func TestLedgerVkeyIsOneLineEndingInANewline(t *testing.T) {
	for what, change := range map[string]func([]byte) []byte{
		"CRLF":             func(l []byte) []byte { return append(l, "\r\n"...) },
		"no newline":       func(l []byte) []byte { return l },
		"a second line":    func(l []byte) []byte { return append(append(l, '\n'), append(l, '\n')...) },
		"an empty line":    func(l []byte) []byte { return append(l, "\n\n"...) },
		"a space, then LF": func(l []byte) []byte { return append(l, " \n"...) },
	} {
		b, _ := genuine(t)
		b.files["ledger.vkey"] = change(bytes.TrimSuffix(b.files["ledger.vkey"], []byte("\n")))
		want := "FAIL: ledger.vkey: want one line ending in a newline"
		if what == "a space, then LF" {
			_, _, vkey := testKey(t, testOrigin)
			want = fmt.Sprintf(`FAIL: ledger.vkey: expected the key given with --vkey "%s", found "%s "`, vkey, vkey)
		}
		checkPack(t, what, b, want)
	}
}

func TestTheArchiveIsReadStrictly(t *testing.T) {
	b, ok := genuine(t)
	b.topDir = true
	checkPack(t, "the top folder's directory entry", b, ok)
	b, _ = genuine(t)
	b.mode = map[string]int64{"report.html": 0o600}
	checkPack(t, "mode 0600", b, `FAIL: pack: "evidence/report.html" has mode 600 and mtime 0, expected 644 and 0`)
	b, _ = genuine(t)
	b.mtime = map[string]int64{"report.html": 1767225600}
	checkPack(t, "mtime", b, `FAIL: pack: "evidence/report.html" has mode 644 and mtime 1767225600, expected 644 and 0`)
	b, _ = genuine(t)
	b.order = []string{"checkpoint-time", "checkpoint", "entries.jsonl", "ledger.vkey", "manifest.json", "manifest.sig",
		"outcomes.json", "proofs.jsonl", "report.html", "run-head.json"}
	checkPack(t, "unsorted", b, `FAIL: pack: "evidence/checkpoint" comes after "evidence/checkpoint-time": names are not sorted`)
	for what, tail := range map[string][]byte{"garbage": []byte("trailing bytes\n"), "zeros": make([]byte, 512),
		"a gzip header cut short": {0x1f, 0x8b, 8}} {
		b, _ = genuine(t)
		b.trailing = tail
		checkPack(t, what+" after the gzip stream", b, "FAIL: pack: bytes after the gzip stream")
	}
	// A second gzip member is part of the stream (the exporter writes
	// many): an empty one adds nothing.
	b, ok = genuine(t)
	var empty bytes.Buffer
	gzip.NewWriter(&empty).Close()
	b.trailing = empty.Bytes()
	checkPack(t, "an empty gzip member after the stream", b, ok)

	b, _ = genuine(t)
	b.files["run-head.json"] = append(b.files["run-head.json"], bytes.Repeat([]byte(" "), 1<<20)...)
	checkPack(t, "run-head.json padded past 1 MiB", b, fmt.Sprintf("FAIL: run-head.json: larger than 1 MiB (%d bytes)",
		len(b.files["run-head.json"])))
	b, ok = genuine(t)
	b.files["run-head.json"] = append(b.files["run-head.json"], bytes.Repeat([]byte(" "), 1<<20-len(b.files["run-head.json"]))...)
	checkPack(t, "run-head.json of exactly 1 MiB", b, ok)
}

func TestJSONLinesEndInANewline(t *testing.T) {
	b, _ := genuine(t)
	b.files["entries.jsonl"] = bytes.TrimSuffix(b.files["entries.jsonl"], []byte("\n"))
	checkPack(t, "entries.jsonl's last line without its newline", b, "FAIL: entries.jsonl line 4: no newline at its end")
	b, _ = genuine(t)
	lines := bytes.Split(b.files["entries.jsonl"], []byte("\n"))
	b.files["entries.jsonl"] = append(b.files["entries.jsonl"], lines[3]...)
	checkPack(t, "a fifth entry without its newline", b, "FAIL: entries.jsonl line 5: no newline at its end")
	b, _ = genuine(t)
	b.files["proofs.jsonl"] = bytes.TrimSuffix(b.files["proofs.jsonl"], []byte("\n"))
	checkPack(t, "proofs.jsonl's last line without its newline", b, "FAIL: proofs.jsonl line 4: no newline at its end")
}

func TestTheManifestIsInItsOneForm(t *testing.T) {
	b, _ := genuine(t)
	path := b.write(t)
	p, err := readPack(path)
	if err != nil {
		t.Fatal(err)
	}
	text := p.files["manifest.json"]
	want := "FAIL: manifest.json: not in the one form the exporter writes (keys sorted, each once, no spaces, one newline at the end)"
	for what, m := range map[string][]byte{
		"a space":            bytes.Replace(text, []byte(`,"format"`), []byte(`, "format"`), 1),
		"keys out of order":  append([]byte(`{"format":4,`), bytes.Replace(text[1:], []byte(`"format":4,`), nil, 1)...),
		"no final newline":   bytes.TrimSuffix(text, []byte("\n")),
		"two final newlines": append(append([]byte{}, text...), '\n'),
		"a key escaped":      bytes.Replace(text, []byte(`"origin"`), []byte(`"\u006frigin"`), 1),
	} {
		b.manifestText = m
		checkPack(t, what, b, want)
	}
	b.manifestText = bytes.Replace(text, []byte(`"format":4,`), []byte(`"format":4,"format":4,`), 1)
	checkPack(t, "a key twice", b, "FAIL: manifest.json: key format twice")
}

func TestAFormat2PackCarriesAVersion1Note(t *testing.T) {
	l := stepLog(t)
	root := l.root(t, 7)
	runs := mapRoot(l.runMap(t, 7, nil))
	b := runPack(t, l, 7, "t", "r", t0+3_000_000, 500, nil)
	b.resignNote(t, "checkpoint-time", timeNoteText(2, 7, root, runs, mapHash{}, t0+3_000_000))
	b.manifest["format"] = 2
	checkPack(t, "format 2, a version 2 note and a valid run-head.json", b,
		"FAIL: checkpoint-time: format 2 pack with a version 2 note: a format 2 pack carries a version 1 note")
	b.manifest["format"] = 3
	checkPack(t, "the same as format 3, version 2 leaves", b, "FAIL: checkpoint-time: a version 2 note, but "+
		"entries.jsonl holds a leaf of version 2 (seq 1): a ledger that writes version 2 leaves signs version 3 notes")
	b = runPack(t, l, 7, "t", "r", t0+3_000_000, 500, nil)
	b.manifest["format"] = 2
	checkPack(t, "format 2 with a version 3 note", b,
		"FAIL: checkpoint-time: format 2 pack with a version 3 note: a format 2 pack carries a version 1 note")
	// A seq range of version 2 leaves, format 1 (no note at all).
	b = runPack(t, l, 7, "t", "r", t0+3_000_000, 500, nil)
	delete(b.files, "run-head.json")
	delete(b.files, "checkpoint-time")
	delete(b.manifest, "unknown_grace_ms")
	b.setEntries(t, l, 7, []int64{1, 2})
	b.manifest["format"] = 1
	b.manifest["counts"] = map[string]int{"entries": 2}
	b.manifest["scope"] = map[string]interface{}{"kind": "seq", "from_seq": 1, "to_seq": 3}
	checkPack(t, "version 2 leaves in a format 1 pack", b, "FAIL: checkpoint-time: missing, but entries.jsonl holds a "+
		"leaf of version 2 (seq 1): a ledger that writes version 2 leaves signs version 3 notes")
}

func TestCheckpointAndTimeNoteFieldsAreWrittenOneWay(t *testing.T) {
	l := stepLog(t)
	root := l.root(t, 7)
	s, v, _ := testKey(t, testOrigin)
	vs := note.VerifierList(v)
	for _, size := range []string{"7_0", "+7", "07", "7 ", " 7", "\uff17"} {
		msg := sign(t, s, fmt.Sprintf("%s\n%s\n%s\n", testOrigin, size, b64(root)))
		if _, err := openCheckpoint("checkpoint", msg, vs, testOrigin); err == nil ||
			!strings.HasPrefix(err.Error(), "checkpoint: tree size: expected a decimal integer") {
			t.Errorf("size %q: %v", size, err)
		}
		tn := strings.Replace(timeNoteText(3, 7, root, root, root, 5), "\n7\n", "\n"+size+"\n", 1)
		if _, err := openTimeNote(sign(t, s, tn), vs); err == nil ||
			!strings.HasPrefix(err.Error(), "checkpoint-time: tree size: expected a decimal integer") {
			t.Errorf("time note size %q: %v", size, err)
		}
	}
	extra := sign(t, s, fmt.Sprintf("%s\n7\n%s\nextension\n", testOrigin, b64(root)))
	if _, err := openCheckpoint("checkpoint", extra, vs, testOrigin); err == nil ||
		!strings.HasPrefix(err.Error(), "checkpoint: expected three lines") {
		t.Errorf("an extra line: %v", err)
	}
	stray := sign(t, s, fmt.Sprintf("%s\n7\n%s\n", testOrigin, strayBits(t, b64(root))))
	if _, err := openCheckpoint("checkpoint", stray, vs, testOrigin); err == nil ||
		!strings.HasPrefix(err.Error(), "checkpoint: root: expected standard base64 of 32 bytes") {
		t.Errorf("a root with stray bits: %v", err)
	}
	longer := strings.Replace(timeNoteText(3, 7, root, root, root, 5), "time 5\n", "extra\ntime 5\n", 1)
	if _, err := openTimeNote(sign(t, s, longer), vs); err == nil ||
		!strings.HasPrefix(err.Error(), "checkpoint-time: expected the lines of a version 1, 2, 3 or 4 note") {
		t.Errorf("a time note with an extra line: %v", err)
	}
	strayRoot := strings.Replace(timeNoteText(3, 7, root, root, root, 5), "\n"+b64(root)+"\nruns", "\n"+strayBits(t, b64(root))+"\nruns", 1)
	if _, err := openTimeNote(sign(t, s, strayRoot), vs); err == nil ||
		!strings.HasPrefix(err.Error(), "checkpoint-time: root: expected standard base64 of 32 bytes") {
		t.Errorf("a time note root with stray bits: %v", err)
	}
}

func TestATeamWindowIsNotEmptyInTime(t *testing.T) {
	l := teamLog(t)
	w := honestWindow(t, l, 20, "t", 300, 300)
	checkLine(t, "from_us == to_us", w, "FAIL: manifest.json: scope.from_us: want less than to_us")
}

// The checkpoint at size 7 of stepLog and its time note, kept by an
// auditor in one file.
func keptFile(t *testing.T, version int, runs, teams mapHash, us int64) string {
	l := stepLog(t)
	s, _, _ := testKey(t, testOrigin)
	root := l.root(t, 7)
	data := append(sign(t, s, fmt.Sprintf("%s\n7\n%s\n", testOrigin, b64(root))),
		sign(t, s, timeNoteText(version, 7, root, runs, teams, us))...)
	path := filepath.Join(t.TempDir(), "kept")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExpectScopeNotOlderThanAndExpectGrace(t *testing.T) {
	b, ok := genuine(t)
	asked := func(text string) func(*options) {
		return func(o *options) {
			s, err := parseExpectedScope(text)
			if err != nil {
				t.Fatal(err)
			}
			o.expectScope = s
		}
	}
	checkPack(t, "--expect-scope the run", b, ok, asked("run:t/r"))
	checkPack(t, "--expect-scope another run", b, `FAIL: manifest.json: scope is {"kind":"run","run_id":"r","team":"t"}, `+
		`expected {"kind":"run","run_id":"r2","team":"t"} (--expect-scope)`, asked("run:t/r2"))
	checkPack(t, "--expect-scope a seq range", b, `FAIL: manifest.json: scope is {"kind":"run","run_id":"r","team":"t"}, `+
		`expected {"from_seq":1,"kind":"seq","to_seq":7} (--expect-scope)`, asked("seq:1:7"))
	checkPack(t, "--expect-scope a team window", b, `FAIL: manifest.json: scope is {"kind":"run","run_id":"r","team":"t"}, `+
		`expected {"from_us":1767225600000000,"kind":"team","team":"t","to_us":1767225601500000} (--expect-scope)`,
		asked("team:t,2026-01-01T00:00:00Z,2026-01-01T00:00:01.5Z"))
	for _, bad := range []string{"run:t", "run:/r", "run:t/", "seq:3:3", "seq:3", "seq:a:4", "team:t,2026-01-01T00:00:00Z",
		"team:t,2026-01-01T00:00:01Z,2026-01-01T00:00:00Z", "team:,2026-01-01T00:00:00Z,2026-01-01T00:00:01Z", "window:1"} {
		if _, err := parseExpectedScope(bad); err == nil || !strings.HasPrefix(err.Error(), "expected scope: want ") {
			t.Errorf("%s: %v", bad, err)
		}
	}

	older := func(arg string) func(*options) {
		return func(o *options) {
			if err := notOlderThan(o, arg); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkPack(t, "--not-older-than 7", b, ok, older("7"))
	checkPack(t, "--not-older-than 8", b, "FAIL: checkpoint: tree size 7 is older than the 8 asked for (--not-older-than)", older("8"))
	l := stepLog(t)
	runs, teams := mapRoot(l.runMap(t, 7, nil)), mapRoot(l.teamMap(t, 7))
	checkPack(t, "--not-older-than the same checkpoint and its note", b, ok, older(keptFile(t, 3, runs, teams, t0+3_000_000)))
	checkPack(t, "--not-older-than a note of a later time", b, fmt.Sprintf("FAIL: checkpoint-time: time %s is before %s, "+
		"the time of the checkpoint given with --not-older-than (times never go backwards)",
		signedTime(t0+3_000_000), signedTime(t0+3_000_001)), older(keptFile(t, 3, runs, teams, t0+3_000_001)))
	// 15a: a kept note of the same size signs other map roots: the pack's
	// run-head root was forged.
	other := sha256.Sum256([]byte("another map"))
	checkPack(t, "--not-older-than a note of the same size with another runs root", b, fmt.Sprintf(
		"FAIL: checkpoint-time: runs root %s at tree size 7, the note kept with the checkpoint given with "+
			"--not-older-than signs %s at that size", hex.EncodeToString(runs[:]), hex.EncodeToString(other[:])),
		older(keptFile(t, 3, other, teams, t0+2_000_000)))
	checkPack(t, "--not-older-than a note of the same size with another teams root", b, fmt.Sprintf(
		"FAIL: checkpoint-time: teams root %s at tree size 7, the note kept with the checkpoint given with "+
			"--not-older-than signs %s at that size", hex.EncodeToString(teams[:]), hex.EncodeToString(other[:])),
		older(keptFile(t, 3, runs, other, t0+2_000_000)))
	data, _ := os.ReadFile(keptFile(t, 3, other, teams, t0+2_000_000))
	keptCp, keptTime := splitKept(data)
	// The exporter's consistency.json at equal sizes: an empty proof.
	b.files["consistency.json"], _ = json.Marshal(map[string]interface{}{"old_checkpoint": string(keptCp),
		"proof": []string{}})
	checkPack(t, "--since a note of the same size with another runs root", b, fmt.Sprintf(
		"FAIL: checkpoint-time: runs root %s at tree size 7, the note kept with the checkpoint given with "+
			"--since signs %s at that size", hex.EncodeToString(runs[:]), hex.EncodeToString(other[:])),
		func(o *options) { o.since, o.sinceTime = keptCp, keptTime })
	delete(b.files, "consistency.json")
	// The root at the same size differs.
	s, _, _ := testKey(t, testOrigin)
	path := filepath.Join(t.TempDir(), "cp")
	os.WriteFile(path, sign(t, s, fmt.Sprintf("%s\n7\n%s\n", testOrigin, b64(other))), 0o644)
	root := l.root(t, 7)
	checkPack(t, "--not-older-than another checkpoint of the same size", b, fmt.Sprintf(
		"FAIL: checkpoint: root %s at tree size 7, the checkpoint given with --not-older-than has root %s",
		hex.EncodeToString(root[:]), hex.EncodeToString(other[:])), older(path))

	grace := func(n uint64) func(*options) { return func(o *options) { o.expectGraceMs = &n } }
	checkPack(t, "--expect-grace-ms 500", b, ok, grace(500))
	checkPack(t, "--expect-grace-ms 30000", b,
		"FAIL: manifest.json: unknown_grace_ms: 500, the auditor expects 30000 (--expect-grace-ms)", grace(30000))
}

func TestASignedTimeBeforeThePacksEntriesIsRefused(t *testing.T) {
	l := stepLog(t)
	checkPack(t, "signed before seq 5 was logged", runPack(t, l, 7, "t", "r", t0+1_500_019, 500, nil), fmt.Sprintf(
		"FAIL: checkpoint-time: time %s is before entry 5's logged_at_us %s: the ledger signs a checkpoint after it "+
			"logs its entries", signedTime(t0+1_500_019), signedTime(t0+1_500_020)))
	checkPack(t, "signed when seq 5 was logged", runPack(t, l, 7, "t", "r", t0+1_500_020, 500, nil),
		runOK(t, l, 7, 4, "s1"))
}

func TestNotOlderThanUsage(t *testing.T) {
	_, _, vkey := testKey(t, testOrigin)
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct{ vkey, arg, want string }{
		{"", "kept.note", "--not-older-than CHECKPOINT_FILE needs the ledger's key (--vkey)"},
		{vkey, empty, "--not-older-than: " + empty + " is empty"},
		{vkey, "99999999999999999999", "--not-older-than: 99999999999999999999 is not a tree size"},
	} {
		o := options{vkey: c.vkey}
		if err := notOlderThan(&o, c.arg); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %s", c.arg, err, c.want)
		}
	}
	o := options{}
	if err := notOlderThan(&o, "12"); err != nil || o.notOlder.size != 12 || o.notOlder.root != nil {
		t.Errorf("12: %v %+v", err, o.notOlder)
	}
}
