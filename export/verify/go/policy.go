package main

// Transparency-log policies (c2sp.org/tlog-policy) and Ed25519 cosignatures
// (c2sp.org/tlog-cosignature, cosignature/v1), written from the C2SP texts
// and CONTRACT.md sections 5b, 5c (monitor and monitor-quorum lines) and 7
// ("Witnessed packs"). sumdb/note knows only log keys (type 0x01);
// cosignatureVerifier is the note.Verifier of a witness key (type 0x04);
// mapcosign.go reads the map cosignatures of monitor keys (type 0xff
// evidence-ledger/map-cosignature/v1).

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

const (
	typeEd25519     = 0x01
	typeCosignature = 0x04
)

// policyKey is a verifier key (c2sp.org/signed-note): name, key ID, type and
// Ed25519 public key.
type policyKey struct {
	name   string
	hash   uint32
	typ    byte
	public ed25519.PublicKey
}

func (k policyKey) nameID() string { return fmt.Sprintf("%s+%08x", k.name, k.hash) }

func (k policyKey) same(o policyKey) bool {
	return k.name == o.name && k.hash == o.hash && bytes.Equal(k.public, o.public)
}

// parseVKey reads `name+hex ID+base64(type || 32-byte key)` of the type asked
// for; the error says which rule it breaks.
func parseVKey(text string, typ byte) (policyKey, error) {
	what := map[byte]string{typeEd25519: "0x01 (Ed25519)", typeCosignature: "0x04 (cosignature/v1)"}[typ]
	return parseTypedVKey(text, []byte{typ}, what)
}

// parseTypedVKey reads `name+hex ID+base64(type bytes || 32-byte key)`, the
// type bytes those given (one byte, or 0xff and an identifier), the key ID
// SHA-256(name || 0x0A || type bytes || key)'s first 4 bytes.
func parseTypedVKey(text string, typ []byte, what string) (policyKey, error) {
	name, rest, ok1 := strings.Cut(text, "+")
	id, data, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 || name == "" {
		return policyKey{}, fmt.Errorf("want NAME+ID+KEY")
	}
	if _, err := hex.DecodeString(id); err != nil || len(id) != 8 {
		return policyKey{}, fmt.Errorf("the key id must be 8 hex digits")
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(data)
	if err != nil || len(raw) != len(typ)+ed25519.PublicKeySize || !bytes.HasPrefix(raw, typ) {
		return policyKey{}, fmt.Errorf("key data must be base64 of %s and 32 bytes", what)
	}
	h := sha256.Sum256(append([]byte(name+"\n"), raw...))
	want := binary.BigEndian.Uint32(h[:4])
	if got, _ := strconv.ParseUint(id, 16, 32); uint32(got) != want {
		return policyKey{}, fmt.Errorf("key id %s does not match the key", id)
	}
	return policyKey{name: name, hash: want, typ: typ[0], public: ed25519.PublicKey(raw[len(typ):])}, nil
}

// policyError is a policy that breaks a rule of tlog-policy; line is 1-based,
// 0 for the whole file.
type policyError struct {
	line int
	msg  string
}

func (e *policyError) Error() string {
	if e.line == 0 {
		return e.msg
	}
	return fmt.Sprintf("line %d: %s", e.line, e.msg)
}

type group struct {
	k       int
	members []string
}

// policy is a parsed tlog-policy. Names are opaque byte strings.
type policy struct {
	logs      []policyKey
	order     []string // the witnesses, in the order of their lines
	witnesses map[string]policyKey
	groups    map[string]group
	quorum    string // a witness or group name, or "none"
	// The monitors of section 5c, in the order of their lines, and the
	// line of the monitor-quorum (0 when there is none: all of them).
	monitorOrder  []string
	monitors      map[string]policyKey
	monitorK      int
	monitorQuorum int
}

// monitorsNeeded is how many monitors must cosign a time note: the
// monitor-quorum's k, or all of them when the policy has no such line.
func (p *policy) monitorsNeeded() int {
	if p.monitorQuorum == 0 {
		return len(p.monitorOrder)
	}
	return p.monitorK
}

// parsePolicy reads a tlog-policy file; a *policyError names the line and
// the rule it breaks. URLs are read and ignored.
func parsePolicy(data []byte) (*policy, error) {
	p := &policy{witnesses: map[string]policyKey{}, groups: map[string]group{}, monitors: map[string]policyKey{}}
	defined := names{}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		for _, c := range raw {
			if c != '\t' && (c < 0x20 || c == 0x7f) {
				return nil, &policyError{i + 1, fmt.Sprintf("byte 0x%02x: only tab, newline, printable ASCII and "+
					"bytes above 0x7f are allowed", c)}
			}
		}
		line := strings.Trim(string(raw), " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
		if msg := p.addLine(defined, i+1, fields); msg != "" {
			return nil, &policyError{i + 1, msg}
		}
	}
	if p.quorum == "" {
		return nil, &policyError{0, "no quorum line (use 'quorum none' for none)"}
	}
	return p, nil
}

// names is the one namespace of witnesses, groups and monitors: each name,
// the line that defines it.
type names map[string]int

// define adds a witness's, group's or monitor's name; it returns the broken
// rule, or "".
func (d names) define(name, what string, line int) string {
	if name == "none" {
		return fmt.Sprintf("'none' is reserved and cannot name a %s", what)
	}
	if at, ok := d[name]; ok {
		return fmt.Sprintf("'%s' is already defined on line %d", name, at)
	}
	d[name] = line
	return ""
}

// addLine adds one line's definition; it returns the broken rule, or "".
func (p *policy) addLine(defined names, number int, fields []string) string {
	switch fields[0] {
	case "log":
		return p.addLog(fields)
	case "witness":
		return p.addWitness(defined, number, fields)
	case "group":
		return p.addGroup(defined, number, fields)
	case "quorum":
		if len(fields) != 2 {
			return "want 'quorum NAME' or 'quorum none'"
		}
		if p.quorum != "" {
			return "a second quorum line"
		}
		if _, ok := defined[fields[1]]; !ok && fields[1] != "none" {
			return fmt.Sprintf("quorum '%s' is not defined on an earlier line", fields[1])
		}
		if _, ok := p.monitors[fields[1]]; ok {
			return fmt.Sprintf("quorum '%s' is a monitor: monitors are not witnesses", fields[1])
		}
		p.quorum = fields[1]
		return ""
	case "monitor":
		return p.addMonitor(defined, number, fields)
	case "monitor-quorum":
		return p.addMonitorQuorum(number, fields)
	}
	return fmt.Sprintf("unknown keyword '%s' (want log, witness, group, quorum, monitor or monitor-quorum)", fields[0])
}

func (p *policy) addLog(fields []string) string {
	if len(fields) != 2 && len(fields) != 3 {
		return "want 'log VKEY [URL]'"
	}
	k, err := parseVKey(fields[1], typeEd25519)
	if err != nil {
		return "log verifier key: " + err.Error()
	}
	for _, o := range p.logs {
		if bytes.Equal(o.public, k.public) {
			return "this log's key is listed twice"
		}
	}
	p.logs = append(p.logs, k)
	return ""
}

func (p *policy) addWitness(defined names, number int, fields []string) string {
	if len(fields) != 3 && len(fields) != 4 {
		return "want 'witness NAME VKEY [URL]'"
	}
	k, err := parseVKey(fields[2], typeCosignature)
	if err != nil {
		return "witness verifier key: " + err.Error()
	}
	for _, o := range p.witnesses {
		if bytes.Equal(o.public, k.public) {
			return "this witness's key is listed twice"
		}
	}
	if msg := defined.define(fields[1], "witness", number); msg != "" {
		return msg
	}
	p.witnesses[fields[1]] = k
	p.order = append(p.order, fields[1])
	return ""
}

func (p *policy) addGroup(defined names, number int, fields []string) string {
	if len(fields) < 4 {
		return "want 'group NAME all|any|K MEMBER...' with at least one member"
	}
	name, members := fields[1], fields[3:]
	if msg := defined.define(name, "group", number); msg != "" {
		return msg
	}
	for _, m := range members {
		if m == "none" {
			return "'none' cannot be a group member"
		}
		if at, ok := defined[m]; !ok || at == number {
			return fmt.Sprintf("member '%s' is not defined on an earlier line", m)
		}
		if _, ok := p.monitors[m]; ok {
			return fmt.Sprintf("member '%s' is a monitor: monitors are not witnesses", m)
		}
	}
	seen := map[string]bool{}
	for _, m := range members {
		if seen[m] {
			return fmt.Sprintf("member '%s' is listed twice", m)
		}
		seen[m] = true
	}
	n := len(members)
	k := threshold(fields[2], n)
	if k == 0 {
		return fmt.Sprintf("threshold must be all, any or a decimal k with 1 <= k <= %d", n)
	}
	p.groups[name] = group{k, members}
	return ""
}

// threshold reads all, any or a decimal k of n: k, or 0 when the text is
// none of them or k is not 1 <= k <= n.
func threshold(text string, n int) int {
	k := 0
	switch text {
	case "all":
		k = n
	case "any":
		k = 1
	default:
		if len(text) <= 20 && strings.Trim(text, "0123456789") == "" {
			if v, err := strconv.ParseUint(text, 10, 64); err == nil && v <= uint64(n) {
				k = int(v)
			}
		}
	}
	if k < 1 || k > n {
		return 0
	}
	return k
}

// addMonitor reads `monitor NAME VKEY [URL]` (section 5c): a name of the
// one namespace, a monitor key no other monitor has, before the
// monitor-quorum line.
func (p *policy) addMonitor(defined names, number int, fields []string) string {
	if len(fields) != 3 && len(fields) != 4 {
		return "want 'monitor NAME VKEY [URL]'"
	}
	if p.monitorQuorum != 0 {
		return fmt.Sprintf("a monitor line after the monitor-quorum line (line %d), which follows every monitor line",
			p.monitorQuorum)
	}
	k, err := parseMonitorKey(fields[2])
	if err != nil {
		return "monitor verifier key: " + err.Error()
	}
	for _, o := range p.monitors {
		if bytes.Equal(o.public, k.public) {
			return "this monitor's key is listed twice"
		}
	}
	if msg := defined.define(fields[1], "monitor", number); msg != "" {
		return msg
	}
	p.monitors[fields[1]] = k
	p.monitorOrder = append(p.monitorOrder, fields[1])
	return ""
}

// addMonitorQuorum reads `monitor-quorum K|all|any`, once, after every
// monitor line: 1 <= k <= the number of monitors.
func (p *policy) addMonitorQuorum(number int, fields []string) string {
	if len(fields) != 2 {
		return "want 'monitor-quorum all|any|K'"
	}
	if p.monitorQuorum != 0 {
		return "a second monitor-quorum line"
	}
	n := len(p.monitorOrder)
	if n == 0 {
		return "monitor-quorum without a monitor line before it"
	}
	k := threshold(fields[1], n)
	if k == 0 {
		return fmt.Sprintf("monitor-quorum must be all, any or a decimal k with 1 <= k <= %d", n)
	}
	p.monitorK, p.monitorQuorum = k, number
	return ""
}

// isLog reports whether key is one of the policy's logs.
func (p *policy) isLog(key policyKey) bool {
	for _, k := range p.logs {
		if k.same(key) {
			return true
		}
	}
	return false
}

// met reports whether name (a witness or a group) witnessed: a witness by a
// valid line, a group by k of its members.
func (p *policy) met(name string, cosigned map[string]uint64) bool {
	if _, ok := p.witnesses[name]; ok {
		_, ok := cosigned[name]
		return ok
	}
	g, count := p.groups[name], 0
	for _, m := range g.members {
		if p.met(m, cosigned) {
			count++
		}
	}
	return count >= g.k
}

// reaches reports whether the quorum's groups name the witness w.
func (p *policy) reaches(name, w string) bool {
	if name == w {
		return true
	}
	for _, m := range p.groups[name].members {
		if p.reaches(m, w) {
			return true
		}
	}
	return false
}

// cosignatureVerifier is the note.Verifier of a cosignature/v1 witness key:
// the signature after the key ID is u64 big-endian time || 64-byte Ed25519
// signature over "cosignature/v1\ntime <time>\n" and the checkpoint text.
type cosignatureVerifier struct{ key policyKey }

func (v cosignatureVerifier) Name() string    { return v.key.name }
func (v cosignatureVerifier) KeyHash() uint32 { return v.key.hash }
func (v cosignatureVerifier) Verify(msg, sig []byte) bool {
	_, ok := cosignatureTime(v.key, msg, sig)
	return ok
}

// cosignatureTime returns the time a cosignature states when it verifies
// and 1 <= time <= 2^63-1.
func cosignatureTime(key policyKey, text, sig []byte) (uint64, bool) {
	if len(sig) != 8+ed25519.SignatureSize {
		return 0, false
	}
	t := binary.BigEndian.Uint64(sig[:8])
	if t < 1 || t > 1<<63-1 {
		return 0, false
	}
	msg := append([]byte(fmt.Sprintf("cosignature/v1\ntime %d\n", t)), text...)
	return t, ed25519.Verify(key.public, msg, sig[8:])
}

type cosignature struct {
	witness  string
	time     uint64 // of the witness's first valid line
	earliest uint64 // the earliest of its valid lines
}

// checkWitnessed makes steps 3 and 4 of "Witnessed packs" on a checkpoint
// note whose text the ledger's key opens: every line bearing a policy
// witness's key name and ID verifies, and the witnesses with a valid line
// meet the quorum. It returns them in policy order.
func checkWitnessed(p *policy, msg []byte, ledger note.Verifier) ([]cosignature, error) {
	n, err := note.Open(msg, note.VerifierList(ledger))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: signature: %v", err)
	}
	times, earliest := map[string]uint64{}, map[string]uint64{}
	for _, s := range n.UnverifiedSigs {
		for _, name := range p.order {
			k := p.witnesses[name]
			if k.name != s.Name || k.hash != s.Hash {
				continue
			}
			raw, _ := base64.StdEncoding.DecodeString(s.Base64)
			t, ok := cosignatureTime(k, []byte(n.Text), raw[4:])
			if !ok {
				return nil, fmt.Errorf("checkpoint: the cosignature of witness %s does not verify", name)
			}
			if _, seen := times[name]; !seen {
				times[name], earliest[name] = t, t
			}
			if t < earliest[name] {
				earliest[name] = t
			}
		}
	}
	var cosigned []cosignature
	var names []string
	for _, name := range p.order {
		if t, ok := times[name]; ok {
			cosigned = append(cosigned, cosignature{name, t, earliest[name]})
			names = append(names, name)
		}
	}
	if p.quorum == "none" || p.met(p.quorum, times) {
		return cosigned, nil
	}
	var missing []string
	for _, name := range p.order {
		if _, ok := times[name]; !ok && p.reaches(p.quorum, name) {
			missing = append(missing, name)
		}
	}
	e := fmt.Sprintf("checkpoint: the policy's quorum %s is not met: no cosignature from %s", p.quorum,
		strings.Join(missing, ", "))
	if len(names) > 0 {
		e += "; cosigned by " + strings.Join(names, ", ")
	}
	return nil, fmt.Errorf("%s", e)
}

// witnessedLine is the line after the OK line.
func witnessedLine(p *policy, cosigned []cosignature) string {
	if len(cosigned) == 0 {
		return fmt.Sprintf("witnessed: quorum %s met; no cosignature", p.quorum)
	}
	var parts []string
	for _, c := range cosigned {
		parts = append(parts, fmt.Sprintf("%s at %s (%d)", c.witness, utcSeconds(c.time), c.time))
	}
	return fmt.Sprintf("witnessed: quorum %s met; cosigned by %s", p.quorum, strings.Join(parts, ", "))
}

// utcSeconds writes POSIX seconds as UTC ISO 8601 (YYYY-MM-DDTHH:MM:SSZ) for
// every time a cosignature can state, up to 2^63-1 (years past 9999 written
// out), computing the civil date itself (Howard Hinnant's days-to-civil)
// where time.Unix would overflow.
func utcSeconds(t uint64) string {
	days, rest := int64(t/86400), int64(t%86400)
	z := days + 719468
	era, doe := z/146097, z%146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day, month := doy-(153*mp+2)/5+1, mp+3
	if mp >= 10 {
		month = mp - 9
	}
	year := yoe + era*400
	if month <= 2 {
		year++
	}
	return fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02dZ", year, month, day, rest/3600, rest/60%60, rest%60)
}

// usageErr is an error of the command line's (exit 2), found only once the
// pack is read.
type usageErr struct{ msg string }

func (e *usageErr) Error() string { return e.msg }

// policyVKey is the key line of the policy's log named as the manifest's
// origin (the one the pack's ledger.vkey names when several are).
func policyVKey(p *policy, pk *pack) (string, error) {
	v, err := parseJSON(pk.files["manifest.json"])
	if err != nil || v.kind != kObject {
		return "", fmt.Errorf("manifest.json: expected an object")
	}
	origin, ok := str(v.get("origin"))
	if !ok {
		return "", fmt.Errorf("manifest.json: origin: expected a string")
	}
	inPack := strings.TrimSuffix(string(pk.files["ledger.vkey"]), "\n")
	var lines []string
	for _, k := range p.logs {
		if k.name == origin {
			line := fmt.Sprintf("%s+%08x+%s", k.name, k.hash,
				base64.StdEncoding.EncodeToString(append([]byte{typeEd25519}, k.public...)))
			if line == inPack {
				return line, nil
			}
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return "", &usageErr{fmt.Sprintf("--policy: no log of the policy is named %s", origin)}
	}
	return lines[0], nil
}
