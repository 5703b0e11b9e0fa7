package main

// The checks of an evidence pack, each from the section of CONTRACT.md that
// fixes it. Every failure names the file, the seq where there is one, what
// was expected and what was found.

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type options struct {
	pack         string
	vkey         string // the verifier key line, obtained apart from the pack
	trustPackKey bool
	// vkeyFromPolicy: vkey is the policy's log named as the pack's origin.
	vkeyFromPolicy bool
	policy         *policy // the auditor's tlog-policy, or nil
	since          []byte  // the auditor's earlier signed checkpoint, or nil
	sinceTime      []byte  // the time note kept with it, or nil
	// --expect-scope, --not-older-than (asked.go) and --expect-grace-ms.
	expectScope   *askedScope
	notOlder      *olderThan
	expectGraceMs *uint64
	// The line on a terminal while the entries are checked, or nil.
	progress *progress
	// --key-set, or --vkey with --key-history: the keys the auditor
	// trusts, each for its range of tree sizes (keyset.go); nil without
	// those flags, when the one key is trusted for every size. history is
	// the --key-history file, followed from keys before the pack is read.
	keys    *keySet
	history []byte
	// --not-older-than CHECKPOINT_FILE under a key set: opened at its size
	// once the history is followed.
	notOlderArg  string
	notOlderFile []byte
	// keyed is, under a key set, the key trusted at the pack's tree size.
	keyed *keyAt
	// --tsa-root: the TSA roots the checkpoint-time note's time-stamp must
	// chain to (section 5e), nil without it; --tsa-max-delay.
	tsaRoots    *x509.CertPool
	tsaMaxDelay int64
}

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

func (c checkpoint) String() string {
	return fmt.Sprintf("size %d root %s", c.size, hex.EncodeToString(c.root[:]))
}

// verify checks the pack and returns the lines it prints when the pack
// holds (the OK line first), not yet escaped: run escapes them.
func verify(o options) ([]string, error) {
	trust, err := trustedKeys(&o)
	if err != nil {
		return nil, err
	}
	p, err := readPack(o.pack)
	if err != nil {
		return nil, err
	}
	if _, err := packKeyLine(p); err != nil {
		return nil, err
	}
	if o.policy != nil && o.vkey == "" && !o.trustPackKey && trust == nil {
		if o.vkey, err = policyVKey(o.policy, p); err != nil {
			return nil, err
		}
		o.vkeyFromPolicy = true
	}
	// The key of the pack's notes: the one given (or the pack's own), or
	// the key the key set trusts at the pack's tree size; keys gives that
	// of a note about another size (consistency.json, --since).
	var v note.Verifier
	var vs note.Verifiers
	keys := noteKeys{set: trust}
	if trust != nil {
		k, err := packKey(p, trust)
		if err != nil {
			return nil, err
		}
		v, vs, o.vkey, o.keyed = k.key.v, k, k.key.vkey, &k
	} else {
		if v, err = packVerifier(p, o); err != nil {
			return nil, err
		}
		vs = note.VerifierList(v)
		keys.fixed = vs
	}
	if err := otherSigner(p.files["manifest.sig"], v, o); err != nil {
		return nil, err
	}
	m, err := readManifest(p, vs)
	if err != nil {
		return nil, err
	}
	if err := checkPackKey(p, o); err != nil {
		return nil, err
	}
	cp, err := openCheckpoint("checkpoint", p.files["checkpoint"], vs, v.Name())
	if err != nil {
		return nil, err
	}
	var cosigned []cosignature
	if o.policy != nil {
		if cosigned, err = checkPolicy(o, p, v); err != nil {
			return nil, err
		}
	}
	if m.origin != cp.origin || m.treeSize != cp.size || m.root != hex.EncodeToString(cp.root[:]) {
		return nil, fmt.Errorf("manifest.json: origin, tree_size, root: expected the checkpoint's %s %d %s, found %s %d %s",
			cp.origin, cp.size, hex.EncodeToString(cp.root[:]), m.origin, m.treeSize, m.root)
	}
	if err := checkAsked(o, m, cp); err != nil {
		return nil, err
	}
	erasures, redactions, err := checkRedactions(p, m.format)
	if err != nil {
		return nil, err
	}
	pruned, err := checkRetention(p, m, cp)
	if err != nil {
		return nil, err
	}
	extras, err := pruned.walked(redactions)
	if err != nil {
		return nil, err
	}
	entries, err := checkEntries(p, cp, m.format, m.entries, o.progress, extras, pruned)
	if err != nil {
		return nil, err
	}
	if int64(len(entries)) != m.entries {
		return nil, fmt.Errorf("manifest.json: counts.entries: expected %d (entries.jsonl), found %d", len(entries), m.entries)
	}
	scope, err := checkScope(m.scope, entries, cp, m.format >= 3)
	if err != nil {
		return nil, err
	}
	consistent, err := checkConsistency(p, keys, cp, o.since)
	if err != nil {
		return nil, err
	}
	t, err := checkSignedTime(p, vs, keys, m, cp, o)
	if err != nil {
		return nil, err
	}
	stamped, err := checkStamp(p, t, o)
	if err != nil {
		return nil, err
	}
	var monitored []mapCosignature
	if o.policy != nil && len(o.policy.monitorOrder) > 0 {
		if monitored, err = checkMonitored(o.policy, p.files["checkpoint-time"], t); err != nil {
			return nil, err
		}
	}
	complete, after, unsettled, err := checkCompleteness(p, m, entries, cp, t, pruned)
	if err != nil {
		return nil, err
	}
	if err := checkLeafVersions(t, entries); err != nil {
		return nil, err
	}
	if err := checkTimeBounds(t, entries, cosigned); err != nil {
		return nil, err
	}
	if _, err := parseJSON(p.files["outcomes.json"]); err != nil {
		return nil, fmt.Errorf("outcomes.json: %v", err)
	}
	if err := checkDeadlines(m, t, entries); err != nil {
		return nil, err
	}
	epochs, err := leaderEpochs(entries)
	if err != nil {
		return nil, err
	}
	rotations, err := keyRotations(entries, cp.origin)
	if err != nil {
		return nil, err
	}
	line := fmt.Sprintf("OK %s: %d entries, tree size %d, root %s%s%s; outcomes.json not recomputed",
		scope, len(entries), cp.size, hex.EncodeToString(cp.root[:]), consistent, complete)
	if o.trustPackKey {
		line += "; the key was the pack's own (--trust-pack-key): this proves nothing about the ledger's identity"
	}
	out := []string{line}
	if after != "" {
		out = append(out, after)
	}
	if o.policy != nil {
		out = append(out, witnessedLine(o.policy, cosigned))
		if len(o.policy.monitorOrder) > 0 {
			out = append(out, monitoredLine(o.policy, monitored))
		}
	}
	out = append(append(append(out, unsettled...), epochs...), rotations...)
	if stamped != "" {
		out = append(out, stamped)
	}
	return append(out, erasures...), nil
}

// checkStamp checks the time-stamp line of the pack's checkpoint-time note
// with --tsa-root (section 5e), and returns the line printed of it: what
// stamped it, that it is present and not checked, or "" for none.
func checkStamp(p *pack, t *timeNote, o options) (string, error) {
	n := p.files["checkpoint-time"]
	if o.tsaRoots == nil {
		if t != nil && len(stampTokens(n)) > 0 {
			return "time stamp: present, not checked (no --tsa-root).", nil
		}
		return "", nil
	}
	if t == nil {
		return "", errors.New("checkpoint-time: time stamp: missing: --tsa-root requires the checkpoint-time note to " +
			"carry a time-stamp token")
	}
	s, err := checkStampLine(n, t.timeUs, o.tsaRoots, o.tsaMaxDelay)
	if err != nil {
		return "", fmt.Errorf("checkpoint-time: %v", err)
	}
	return fmt.Sprintf("time stamp: stamped by TSA %s at %s.", s.tsa, s.genTime), nil
}

// checkSignedTime reads the checkpoint's time note (signed by vs, the key
// of the pack's tree size) and checks it against the times the auditor kept
// (--since, --not-older-than; keys opens them). It returns the note, nil in
// a format 1 pack.
func checkSignedTime(p *pack, vs note.Verifiers, keys noteKeys, m *manifest, cp checkpoint, o options) (*timeNote, error) {
	t, err := checkTimeNote(p, vs, cp, m.format)
	if err != nil {
		return nil, err
	}
	kept, err := keptNotes(keys, o)
	if err != nil {
		return nil, err
	}
	if err := checkKeptTimes(t, cp, kept); err != nil {
		return nil, err
	}
	return t, nil
}

// checkPolicy makes the checks of "Witnessed packs" (CONTRACT.md section 7)
// after the checkpoint's own signature: the ledger's key is a log of the
// policy, and the cosignatures meet its quorum.
func checkPolicy(o options, p *pack, v note.Verifier) ([]cosignature, error) {
	vkey := o.vkey
	if o.trustPackKey {
		vkey = strings.TrimSuffix(string(p.files["ledger.vkey"]), "\n")
	}
	key, err := parseVKey(vkey, typeEd25519)
	if err != nil || !o.policy.isLog(key) {
		return nil, fmt.Errorf("checkpoint: the ledger's key %s+%08x is not a log of the policy", v.Name(), v.KeyHash())
	}
	return checkWitnessed(o.policy, p.files["checkpoint"], v)
}

// packVerifier returns the key every signature must verify with: the one
// given, or with --trust-pack-key the pack's own.
func packVerifier(p *pack, o options) (note.Verifier, error) {
	inPack, _ := packKeyLine(p)
	if o.trustPackKey {
		v, err := note.NewVerifier(inPack)
		if err != nil {
			return nil, fmt.Errorf("ledger.vkey: not a verifier key: %v", err)
		}
		return v, nil
	}
	v, err := note.NewVerifier(o.vkey)
	if err != nil {
		return nil, fmt.Errorf("--vkey: not a verifier key: %v", err)
	}
	return v, nil
}

// checkPackKey requires the pack's ledger.vkey to be the key given (the
// manifest that lists its digest is signed with that key, so a pack that
// names another key is one the ledger should not have signed).
func checkPackKey(p *pack, o options) error {
	inPack, _ := packKeyLine(p)
	if o.keyed != nil && inPack != o.vkey {
		return fmt.Errorf("ledger.vkey: expected the key trusted at size %d, \"%s\", found \"%s\"", o.keyed.size, o.vkey, inPack)
	}
	if !o.trustPackKey && inPack != o.vkey {
		return fmt.Errorf("ledger.vkey: expected the key given with --vkey \"%s\", found \"%s\"", o.vkey, inPack)
	}
	return nil
}

// packKeyLine returns the key line of ledger.vkey, which holds exactly one
// line ending in a newline (no carriage return, no second line).
func packKeyLine(p *pack) (string, error) {
	data := p.files["ledger.vkey"]
	if len(data) == 0 || data[len(data)-1] != '\n' || bytes.Count(data, []byte("\n")) != 1 || bytes.IndexByte(data, '\r') >= 0 {
		return "", fmt.Errorf("ledger.vkey: want one line ending in a newline")
	}
	return string(data[:len(data)-1]), nil
}

// openNote opens a signed note of the pack (what names it), or one the
// auditor kept, after the checks note.Open leaves out: every signature
// line is "— NAME BASE64\n" with NAME non-empty and holding no '+' and no
// space, BASE64 canonical standard base64 (padded, no stray bits) of at
// least 5 bytes (the 4-byte key hash and a signature); and the key of vs
// signed it once.
func openNote(what string, msg []byte, vs note.Verifiers) (*note.Note, error) {
	if i := bytes.LastIndex(msg, []byte("\n\n")); i >= 0 {
		seen := map[string]bool{}
		sigs := msg[i+2:]
		for n := 1; len(sigs) > 0; n++ {
			line := sigs
			if end := bytes.IndexByte(sigs, '\n'); end >= 0 {
				line, sigs = sigs[:end], sigs[end+1:]
			} else {
				return nil, fmt.Errorf("%s: signature line %d: malformed", what, n)
			}
			name, hash, ok := signatureLine(line)
			if !ok {
				return nil, fmt.Errorf("%s: signature line %d: malformed", what, n)
			}
			if _, err := vs.Verifier(name, hash); err == nil {
				id := fmt.Sprintf("%s+%08x", name, hash)
				if seen[id] {
					return nil, fmt.Errorf("%s: signed twice by the ledger's key", what)
				}
				seen[id] = true
			}
		}
	}
	n, err := note.Open(msg, vs)
	if k, ok := vs.(keyAt); ok && signatureRefused(err) {
		return nil, k.notSigned(what)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: signature: %v", what, err)
	}
	return n, nil
}

// signatureLine reads "— NAME BASE64" (c2sp.org/signed-note) strictly.
func signatureLine(line []byte) (string, uint32, bool) {
	prefix := []byte("\u2014 ")
	if !bytes.HasPrefix(line, prefix) {
		return "", 0, false
	}
	name, b64, ok := strings.Cut(string(line[len(prefix):]), " ")
	if !ok || name == "" || !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsSpace) >= 0 ||
		strings.Contains(name, "+") {
		return "", 0, false
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil || len(raw) < 5 || base64.StdEncoding.EncodeToString(raw) != b64 {
		return "", 0, false
	}
	return name, binary.BigEndian.Uint32(raw[:4]), true
}

// otherSigner fails naming both keys when no well-formed signature line of
// manifest.sig (a note) is by v, the key the pack is verified with: "signed
// by NAME+ID, not by NAME+ID (the key given)".
func otherSigner(manifestSig []byte, v note.Verifier, o options) error {
	var signers []string
	want := fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash())
	if i := bytes.LastIndex(manifestSig, []byte("\n\n")); i >= 0 {
		for _, line := range strings.Split(strings.TrimSuffix(string(manifestSig[i+2:]), "\n"), "\n") {
			if name, hash, ok := signatureLine([]byte(line)); ok {
				signers = append(signers, fmt.Sprintf("%s+%08x", name, hash))
			}
		}
	}
	for _, s := range signers {
		if s == want {
			return nil
		}
	}
	which := "the key given"
	if o.keyed != nil {
		which = fmt.Sprintf("the key trusted at size %d", o.keyed.size)
	} else if o.trustPackKey {
		which = "the pack's own key, ledger.vkey"
	} else if o.vkeyFromPolicy {
		which = "the policy's log"
	}
	by := strings.Join(signers, ", ")
	if by == "" {
		by = "no key"
	}
	return fmt.Errorf("manifest.sig: signed by %s, not by %s (%s)", by, want, which)
}

// openCheckpoint opens a signed checkpoint (CONTRACT section 5): a note
// signed by the key, three lines (origin, decimal size, base64 root), and
// the origin is the key's name.
func openCheckpoint(what string, msg []byte, vs note.Verifiers, keyName string) (checkpoint, error) {
	n, err := openNote(what, msg, vs)
	if err != nil {
		return checkpoint{}, err
	}
	c, err := checkpointText(what, n.Text)
	if err != nil {
		return checkpoint{}, err
	}
	if c.origin != keyName {
		return checkpoint{}, fmt.Errorf("%s: origin: expected the key name \"%s\", found \"%s\"", what, keyName, c.origin)
	}
	return c, nil
}

// checkpointText reads a checkpoint's text: three lines (origin, decimal
// size, base64 root).
func checkpointText(what, text string) (checkpoint, error) {
	lines := strings.Split(text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return checkpoint{}, fmt.Errorf("%s: expected three lines (origin, size, root), found \"%s\"", what, text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return checkpoint{}, fmt.Errorf("%s: tree size: expected a decimal integer, found \"%s\"", what, lines[1])
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize || base64.StdEncoding.EncodeToString(raw) != lines[2] {
		return checkpoint{}, fmt.Errorf("%s: root: expected standard base64 of 32 bytes, found \"%s\"", what, lines[2])
	}
	c := checkpoint{origin: lines[0], size: size}
	copy(c.root[:], raw)
	return c, nil
}

type manifest struct {
	format   int64
	origin   string
	treeSize int64
	root     string
	entries  int64
	scope    *value
	graceMs  int64 // unknown_grace_ms, formats 2 to 6; -1 in format 1
}

// readManifest checks manifest.sig (a note whose text is manifest.json's hex
// SHA-256 and a newline), the manifest's fields, and that it lists exactly
// the pack's other files with their SHA-256.
func readManifest(p *pack, vs note.Verifiers) (*manifest, error) {
	n, err := openNote("manifest.sig", p.files["manifest.sig"], vs)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(p.files["manifest.json"])
	if want := hex.EncodeToString(sum[:]) + "\n"; n.Text != want {
		return nil, fmt.Errorf("manifest.sig: expected the text \"%s\" (manifest.json's SHA-256), found \"%s\"", want, n.Text)
	}
	v, err := parseJSON(p.files["manifest.json"])
	if err != nil {
		return nil, fmt.Errorf("manifest.json: %v", err)
	}
	if v.kind != kObject {
		return nil, fmt.Errorf("manifest.json: expected an object")
	}
	format, ok := v.get("format").integer()
	if !ok || format < 1 || format > 9 {
		return nil, fmt.Errorf("manifest.json: format: want 1, 2, 3, 4, 5, 6, 7, 8 or 9, found %s", show(v.get("format")))
	}
	keys := []string{"format", "origin", "scope", "tree_size", "root", "counts", "files"}
	grace := int64(-1)
	if format >= 2 {
		keys = append(keys, "unknown_grace_ms")
		if grace, ok = v.get("unknown_grace_ms").integer(); !ok || grace < 0 {
			return nil, fmt.Errorf("manifest.json: unknown_grace_ms: expected an integer >= 0")
		}
	}
	if err := v.onlyKeys(keys...); err != nil {
		return nil, fmt.Errorf("manifest.json: %v", err)
	}
	_, hasTime := p.files["checkpoint-time"]
	if hasTime != (format >= 2) {
		return nil, fmt.Errorf("checkpoint-time: a pack of format 2 to 6, and only one, carries it")
	}
	if err := checkProofFiles(p, format); err != nil {
		return nil, err
	}
	m := &manifest{format: format, scope: v.get("scope"), graceMs: grace}
	if m.origin, ok = str(v.get("origin")); !ok || m.origin == "" {
		return nil, fmt.Errorf("manifest.json: origin: expected a non-empty string")
	}
	if m.treeSize, ok = v.get("tree_size").integer(); !ok || m.treeSize < 0 {
		return nil, fmt.Errorf("manifest.json: tree_size: expected an integer >= 0")
	}
	if m.root, ok = str(v.get("root")); !ok || !isHash(m.root) {
		return nil, fmt.Errorf("manifest.json: root: expected 64 lowercase hex digits")
	}
	counts := v.get("counts")
	if counts == nil || counts.kind != kObject || counts.onlyKeys("entries") != nil {
		return nil, fmt.Errorf("manifest.json: counts: expected {\"entries\":N}")
	}
	if m.entries, ok = counts.get("entries").integer(); !ok || m.entries < 0 {
		return nil, fmt.Errorf("manifest.json: counts.entries: expected an integer >= 0")
	}
	if m.scope == nil || m.scope.kind != kObject {
		return nil, fmt.Errorf("manifest.json: scope: expected an object")
	}
	if err := checkFromSeqScope(m.scope, format); err != nil {
		return nil, err
	}
	if err := checkDigests(p, v.get("files")); err != nil {
		return nil, err
	}
	// The one form the exporter writes: keys sorted, each once, no spaces,
	// one newline at the end (section 7, "The manifest").
	var enc bytes.Buffer
	encodeCanonical(&enc, v)
	enc.WriteByte('\n')
	if !bytes.Equal(enc.Bytes(), p.files["manifest.json"]) {
		return nil, fmt.Errorf("manifest.json: not in the one form the exporter writes (keys sorted, each once, no spaces, " +
			"one newline at the end)")
	}
	return m, nil
}

// checkProofFiles requires the file that proves the entries' inclusion
// in a pack of the format, and refuses the other: multiproof.txt in formats
// 6 and 7, proofs.jsonl in formats 1 to 5 (section 7, "Reading a pack strictly").
func checkProofFiles(p *pack, format int64) error {
	_, proofs := p.files["proofs.jsonl"]
	_, multi := p.files[multiproofName]
	switch {
	case format >= 6 && proofs:
		return fmt.Errorf("proofs.jsonl: a pack of format 6 proves inclusion with multiproof.txt")
	case format >= 6 && !multi:
		return fmt.Errorf("multiproof.txt: missing: a pack of format 6 proves its entries' inclusion with a multiproof")
	case format < 6 && multi:
		return fmt.Errorf("multiproof.txt: only a pack of format 6 carries a multiproof")
	case format < 6 && !proofs:
		return fmt.Errorf("proofs.jsonl: missing: a pack of format %d proves each entry's inclusion with a line of it", format)
	}
	return nil
}

func checkDigests(p *pack, files *value) error {
	if files == nil || files.kind != kObject {
		return fmt.Errorf("manifest.json: files: expected an object")
	}
	for _, f := range files.object {
		data, ok := p.files[f.key]
		if !ok || f.key == "manifest.json" || f.key == "manifest.sig" {
			return fmt.Errorf("manifest.json: files: \"%s\" is listed but not in the pack", f.key)
		}
		sum := sha256.Sum256(data)
		if want, ok := str(f.val); !ok || want != hex.EncodeToString(sum[:]) {
			return fmt.Errorf("%s: SHA-256: expected %s (manifest.json), found %s", f.key, want, hex.EncodeToString(sum[:]))
		}
	}
	for name := range p.files {
		if name != "manifest.json" && name != "manifest.sig" && files.get(name) == nil {
			return fmt.Errorf("%s: in the pack but not listed in manifest.json", name)
		}
	}
	return nil
}

func str(v *value) (string, bool) {
	if v == nil || v.kind != kString {
		return "", false
	}
	return v.str, true
}

func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

func parseHash(s string) (tlog.Hash, bool) {
	var h tlog.Hash
	if !isHash(s) {
		return h, false
	}
	hex.Decode(h[:], []byte(s))
	return h, true
}

// lines splits a JSON-lines file whose every line ends in a newline.
func lines(name string, data []byte) ([][]byte, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if data[len(data)-1] != '\n' {
		return nil, fmt.Errorf("%s line %d: no newline at its end", name, bytes.Count(data, []byte("\n"))+1)
	}
	return bytes.Split(data[:len(data)-1], []byte("\n")), nil
}

// checkConsistency checks consistency.json when the pack has one and
// requires it when the auditor gave an earlier checkpoint (--since): the old
// checkpoint in it must be signed by the key (of its size, under a key set)
// and have the given checkpoint's origin, size and root, and the proof must
// take it to cp (RFC 9162 2.1.4).
func checkConsistency(p *pack, keys noteKeys, cp checkpoint, since []byte) (string, error) {
	var given *checkpoint
	if since != nil {
		vs, err := keys.forCheckpoint("--since", since)
		if err != nil {
			return "", err
		}
		c, err := openCheckpoint("--since", since, vs, cp.origin)
		if err != nil {
			return "", err
		}
		given = &c
	}
	data, ok := p.files["consistency.json"]
	if !ok {
		if given != nil {
			return "", fmt.Errorf("consistency.json: missing, and --since asks for a proof from %s", given)
		}
		return "", nil
	}
	v, err := parseJSON(data)
	if err != nil {
		return "", fmt.Errorf("consistency.json: %v", err)
	}
	if v.kind != kObject {
		return "", fmt.Errorf("consistency.json: want a JSON object {\"old_checkpoint\":NOTE,\"proof\":[HEX,...]}")
	}
	for _, f := range v.object {
		if f.key != "old_checkpoint" && f.key != "proof" {
			return "", fmt.Errorf("consistency.json: %s: not a field", f.key)
		}
	}
	for _, k := range []string{"old_checkpoint", "proof"} {
		if v.get(k) == nil {
			return "", fmt.Errorf("consistency.json: %s: missing", k)
		}
	}
	oldText, ok := str(v.get("old_checkpoint"))
	if !ok {
		return "", fmt.Errorf("consistency.json: old_checkpoint: expected a string")
	}
	vs, err := keys.forCheckpoint("consistency.json: old_checkpoint", []byte(oldText))
	if err != nil {
		return "", err
	}
	old, err := openCheckpoint("consistency.json: old_checkpoint", []byte(oldText), vs, cp.origin)
	if err != nil {
		return "", err
	}
	if given != nil && (old.size != given.size || old.root != given.root) {
		return "", fmt.Errorf("consistency.json: old_checkpoint: expected the --since checkpoint %s, found %s", given, old)
	}
	proof, err := hashList(v.get("proof"))
	if err != nil {
		return "", fmt.Errorf("consistency.json: proof: %v", err)
	}
	switch {
	case old.size > cp.size:
		return "", fmt.Errorf("consistency.json: old_checkpoint %s is larger than the checkpoint's %d", old, cp.size)
	case old.size == 0 || old.size == cp.size:
		if len(proof) != 0 || (old.size == cp.size && old.root != cp.root) {
			return "", fmt.Errorf("consistency.json: from %s to %s: expected an empty proof and, at one size, one root", old, cp)
		}
	default:
		if err := tlog.CheckTree(tlog.TreeProof(proof), cp.size, cp.root, old.size, old.root); err != nil {
			return "", fmt.Errorf("consistency.json: proof from %s to %s: %v", old, cp, err)
		}
	}
	if given == nil {
		return fmt.Sprintf(", consistent with the pack's earlier checkpoint %s (no --since given)", old), nil
	}
	return fmt.Sprintf(", consistent with the --since checkpoint %s", old), nil
}

func hashList(v *value) ([]tlog.Hash, error) {
	if v == nil || v.kind != kArray {
		return nil, fmt.Errorf("expected an array of hex hashes")
	}
	out := make([]tlog.Hash, len(v.array))
	for i, el := range v.array {
		s, _ := str(el)
		h, ok := parseHash(s)
		if !ok {
			return nil, fmt.Errorf("hash %d: expected 64 lowercase hex digits", i)
		}
		out[i] = h
	}
	return out, nil
}
