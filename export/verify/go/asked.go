package main

// What the auditor asks of a pack besides its key, with the meaning and
// syntax `ledgerctl verify` gives them: --expect-scope (the scope asked
// for), --not-older-than (a tree size, or an earlier checkpoint kept with
// its time note) and --expect-grace-ms (the ledger's grace).

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// askedScope is a scope as written on the command line: run:TEAM/RUN,
// seq:A:B (A < B, B excluded), team:TEAM,FROM,TO (RFC 3339 times, FROM
// before TO, TO excluded).
type askedScope struct {
	kind           string
	team, runID    string
	fromSeq, toSeq int64
	fromUs, toUs   int64
}

func parseExpectedScope(text string) (*askedScope, error) {
	kind, rest, _ := strings.Cut(text, ":")
	s := &askedScope{kind: kind}
	switch kind {
	case "run":
		slash := strings.IndexByte(rest, '/')
		if slash <= 0 || slash+1 == len(rest) {
			return nil, fmt.Errorf("expected scope: want run:TEAM/RUN")
		}
		s.team, s.runID = rest[:slash], rest[slash+1:]
	case "seq":
		parts := strings.Split(rest, ":")
		var err1, err2 error
		if len(parts) == 2 {
			s.fromSeq, err1 = strconv.ParseInt(parts[0], 10, 64)
			s.toSeq, err2 = strconv.ParseInt(parts[1], 10, 64)
		}
		if len(parts) != 2 || err1 != nil || err2 != nil || s.fromSeq < 0 || s.fromSeq >= s.toSeq {
			return nil, fmt.Errorf("expected scope: want seq:A:B with A < B")
		}
	case "team":
		parts := strings.Split(rest, ",")
		var from, to time.Time
		var err1, err2 error
		if len(parts) == 3 {
			from, err1 = time.Parse(time.RFC3339Nano, parts[1])
			to, err2 = time.Parse(time.RFC3339Nano, parts[2])
		}
		if len(parts) != 3 || parts[0] == "" || err1 != nil || err2 != nil || !from.Before(to) {
			return nil, fmt.Errorf("expected scope: want team:TEAM,FROM,TO with RFC 3339 times, FROM before TO")
		}
		s.team, s.fromUs, s.toUs = parts[0], from.UnixMicro(), to.UnixMicro()
	default:
		return nil, fmt.Errorf("expected scope: want run:TEAM/RUN, seq:A:B or team:TEAM,FROM,TO")
	}
	return s, nil
}

// json writes the scope asked for as the manifest writes one (keys
// sorted); a team window's seqs are found by the exporter, not asked for.
func (s *askedScope) json() string {
	var b bytes.Buffer
	switch s.kind {
	case "run":
		b.WriteString(`{"kind":"run","run_id":`)
		encodeString(&b, s.runID)
		b.WriteString(`,"team":`)
		encodeString(&b, s.team)
		b.WriteString("}")
	case "seq":
		fmt.Fprintf(&b, `{"from_seq":%d,"kind":"seq","to_seq":%d}`, s.fromSeq, s.toSeq)
	default:
		fmt.Fprintf(&b, `{"from_us":%d,"kind":"team","team":`, s.fromUs)
		encodeString(&b, s.team)
		fmt.Fprintf(&b, `,"to_us":%d}`, s.toUs)
	}
	return b.String()
}

// matches reports whether the manifest's scope is the one asked for.
func (s *askedScope) matches(scope *value) bool {
	kind, _ := str(scope.get("kind"))
	team, _ := str(scope.get("team"))
	run, _ := str(scope.get("run_id"))
	n := func(k string) int64 {
		v, ok := scope.get(k).integer()
		if !ok {
			return -1
		}
		return v
	}
	switch {
	case kind != s.kind:
		return false
	case kind == "run":
		return team == s.team && run == s.runID && scope.get("run_id") != nil
	case kind == "team":
		return team == s.team && n("from_us") == s.fromUs && n("to_us") == s.toUs &&
			scope.get("from_us") != nil && scope.get("to_us") != nil
	}
	return n("from_seq") == s.fromSeq && n("to_seq") == s.toSeq
}

// olderThan is --not-older-than: the least tree size, and with a
// checkpoint the root it has at that size and the time note kept with it
// (nil when none was).
type olderThan struct {
	size int64
	root *tlog.Hash
	note *timeNote
}

// notOlderThan reads --not-older-than's value: a decimal tree size, or a
// file holding a checkpoint signed by the key given with --vkey (under a key
// set, the key trusted at its size: opened once the key history is
// followed, trustedKeys), followed by its time note (optional). Errors are
// usage errors.
func notOlderThan(o *options, arg string) error {
	if arg != "" && strings.Trim(arg, "0123456789") == "" {
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return fmt.Errorf("--not-older-than: %s is not a tree size", arg)
		}
		o.notOlder = &olderThan{size: n}
		return nil
	}
	if o.vkey == "" && o.keys == nil {
		return fmt.Errorf("--not-older-than CHECKPOINT_FILE needs the ledger's key (--vkey)")
	}
	data, err := os.ReadFile(arg)
	if err != nil {
		return fmt.Errorf("--not-older-than: cannot read %s", arg)
	}
	if len(data) == 0 {
		return fmt.Errorf("--not-older-than: %s is empty", arg)
	}
	if o.keys != nil {
		o.notOlderArg, o.notOlderFile = arg, data
		return nil
	}
	v, err := note.NewVerifier(o.vkey)
	if err != nil {
		return fmt.Errorf("--vkey: not a verifier key (name+id+base64): %v", err)
	}
	out, err := openNotOlder(arg, data, noteKeys{fixed: note.VerifierList(v)}, v.Name())
	if err != nil {
		return err
	}
	o.notOlder = out
	return nil
}

// openNotOlder opens the checkpoint of a --not-older-than file (named arg)
// and the time note after it, if any, with the key of its size; name is the
// key's name, the log's origin.
func openNotOlder(arg string, data []byte, keys noteKeys, name string) (*olderThan, error) {
	cpText, timeText := splitKept(data)
	if cpText == nil {
		return nil, fmt.Errorf("--not-older-than: %s holds a time note but no checkpoint before it", arg)
	}
	vs, err := keys.forCheckpoint("--not-older-than", cpText)
	if err != nil {
		return nil, err
	}
	cp, err := openCheckpoint("--not-older-than", cpText, vs, name)
	if err != nil {
		return nil, err
	}
	out := &olderThan{size: cp.size, root: &cp.root}
	if timeText != nil {
		t, err := openTimeNote(timeText, vs)
		if err != nil {
			return nil, fmt.Errorf("--not-older-than: time note: %v", err)
		}
		if t.cp != cp {
			return nil, fmt.Errorf("--not-older-than: time note: not the time note of the checkpoint before it")
		}
		out.note = &t
	}
	return out, nil
}

// checkAsked makes the checks of --expect-scope, --not-older-than and
// --expect-grace-ms, once the checkpoint is known to be the manifest's.
func checkAsked(o options, m *manifest, cp checkpoint) error {
	if s := o.expectScope; s != nil && !s.matches(m.scope) {
		var b bytes.Buffer
		encodeCanonical(&b, m.scope)
		return fmt.Errorf("manifest.json: scope is %s, expected %s (--expect-scope)", b.String(), s.json())
	}
	if g := o.expectGraceMs; g != nil && (m.graceMs < 0 || uint64(m.graceMs) != *g) {
		stated := strconv.FormatInt(m.graceMs, 10)
		if m.graceMs < 0 {
			stated = "none (a format 1 pack)"
		}
		return fmt.Errorf("manifest.json: unknown_grace_ms: %s, the auditor expects %d (--expect-grace-ms)", stated, *g)
	}
	if n := o.notOlder; n != nil {
		if cp.size < n.size {
			return fmt.Errorf("checkpoint: tree size %d is older than the %d asked for (--not-older-than)", cp.size, n.size)
		}
		if n.root != nil && cp.size == n.size && cp.root != *n.root {
			return fmt.Errorf("checkpoint: root %s at tree size %d, the checkpoint given with --not-older-than has root %s",
				hex.EncodeToString(cp.root[:]), cp.size, hex.EncodeToString(n.root[:]))
		}
	}
	return nil
}
