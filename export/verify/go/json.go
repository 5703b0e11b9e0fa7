package main

// A small JSON reader (RFC 8259) that keeps what encoding/json forgets:
// member order, duplicate keys (always refused) and the exact text of
// numbers. canonical checks a leaf against CONTRACT section 2 by re-encoding
// what was read and comparing bytes.

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

type kind int

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

type member struct {
	key string
	val *value
}

type value struct {
	kind    kind
	boolean bool
	number  string // the number's text as written
	str     string
	array   []*value
	object  []member
}

// get returns the member named key, or nil.
func (v *value) get(key string) *value {
	for _, m := range v.object {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// onlyKeys refuses an object holding a key outside allowed.
func (v *value) onlyKeys(allowed ...string) error {
	for _, m := range v.object {
		ok := false
		for _, a := range allowed {
			ok = ok || m.key == a
		}
		if !ok {
			return fmt.Errorf("unknown key \"%s\"", m.key)
		}
	}
	return nil
}

type parser struct {
	s   []byte
	pos int
}

// parseJSON reads one JSON value filling all of s (surrounding whitespace
// allowed). Invalid UTF-8 is refused, and so is a key twice in an object
// ("key K twice").
func parseJSON(s []byte) (*value, error) {
	p := &parser{s: s}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(s) {
		return nil, p.errorf("data after the JSON value")
	}
	return v, nil
}

func (p *parser) errorf(format string, args ...interface{}) error {
	return fmt.Errorf("JSON at byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) space() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (*value, error) {
	if depth > 64 {
		return nil, p.errorf("nested deeper than 64")
	}
	if p.pos >= len(p.s) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.s[p.pos]; {
	case c == '{':
		return p.objectValue(depth)
	case c == '[':
		return p.arrayValue(depth)
	case c == '"':
		s, err := p.stringValue()
		return &value{kind: kString, str: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.numberValue()
	case bytes.HasPrefix(p.s[p.pos:], []byte("true")):
		p.pos += 4
		return &value{kind: kBool, boolean: true}, nil
	case bytes.HasPrefix(p.s[p.pos:], []byte("false")):
		p.pos += 5
		return &value{kind: kBool}, nil
	case bytes.HasPrefix(p.s[p.pos:], []byte("null")):
		p.pos += 4
		return &value{kind: kNull}, nil
	}
	return nil, p.errorf("unexpected byte 0x%02x", p.s[p.pos])
}

func (p *parser) objectValue(depth int) (*value, error) {
	v := &value{kind: kObject}
	seen := map[string]bool{}
	p.pos++
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	for {
		p.space()
		if p.pos >= len(p.s) || p.s[p.pos] != '"' {
			return nil, p.errorf("expected a key")
		}
		key, err := p.stringValue()
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, fmt.Errorf("key %s twice", key)
		}
		seen[key] = true
		p.space()
		if p.pos >= len(p.s) || p.s[p.pos] != ':' {
			return nil, p.errorf("expected ':'")
		}
		p.pos++
		p.space()
		val, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v.object = append(v.object, member{key, val})
		p.space()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.s) && p.s[p.pos] == '}' {
			p.pos++
			return v, nil
		}
		return nil, p.errorf("expected ',' or '}'")
	}
}

func (p *parser) arrayValue(depth int) (*value, error) {
	v := &value{kind: kArray}
	p.pos++
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.space()
		el, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v.array = append(v.array, el)
		p.space()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.s) && p.s[p.pos] == ']' {
			p.pos++
			return v, nil
		}
		return nil, p.errorf("expected ',' or ']'")
	}
}

func (p *parser) numberValue() (*value, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.s[p.pos] == '-' {
		p.pos++
	}
	intStart := p.pos
	if n := digits(); n == 0 || (n > 1 && p.s[intStart] == '0') {
		return nil, p.errorf("malformed number")
	}
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.errorf("malformed number")
		}
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf("malformed number")
		}
	}
	return &value{kind: kNumber, number: string(p.s[start:p.pos])}, nil
}

func (p *parser) hex4() (rune, error) {
	if p.pos+4 > len(p.s) {
		return 0, p.errorf("short \\u escape")
	}
	n, err := strconv.ParseUint(string(p.s[p.pos:p.pos+4]), 16, 16)
	if err != nil {
		return 0, p.errorf("malformed \\u escape")
	}
	p.pos += 4
	return rune(n), nil
}

func (p *parser) stringValue() (string, error) {
	p.pos++ // the opening quote
	var out []byte
	for {
		if p.pos >= len(p.s) {
			return "", p.errorf("unterminated string")
		}
		c := p.s[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(out), nil
		case c < 0x20:
			return "", p.errorf("raw control character in a string")
		case c == '\\':
			p.pos++
			if p.pos >= len(p.s) {
				return "", p.errorf("unterminated string")
			}
			e := p.s[p.pos]
			p.pos++
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(r) {
					if r >= 0xdc00 || !bytes.HasPrefix(p.s[p.pos:], []byte(`\u`)) {
						return "", p.errorf("unpaired surrogate escape")
					}
					p.pos += 2
					r2, err := p.hex4()
					if err != nil {
						return "", err
					}
					if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
						return "", p.errorf("unpaired surrogate escape")
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", p.errorf("unknown escape \\%c", e)
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			p.pos++
		default:
			r, n := utf8.DecodeRune(p.s[p.pos:])
			if r == utf8.RuneError && n <= 1 {
				return "", p.errorf("invalid UTF-8")
			}
			out = append(out, p.s[p.pos:p.pos+n]...)
			p.pos += n
		}
	}
}

const maxSafeInt = 1<<53 - 1

// integer returns v as an int64 if it is a JSON integer (no fraction, no
// exponent) that fits.
func (v *value) integer() (int64, bool) {
	if v == nil || v.kind != kNumber {
		return 0, false
	}
	n, err := strconv.ParseInt(v.number, 10, 64)
	return n, err == nil
}

// canonicalRules refuses what CONTRACT section 2 forbids in a leaf, naming
// the path and the rule: null, non-integers, integers out of range, and the
// values that must be omitted instead ("", {}, false). Keys must be ASCII
// [a-z0-9_.-] (section 2 says [a-z0-9_]; receipt attribute keys, section 3,
// also allow '.' and '-').
func canonicalRules(v *value, path string) error {
	switch v.kind {
	case kNull:
		return fmt.Errorf("%s: null is not allowed", path)
	case kNumber:
		n, ok := v.integer()
		if !ok || n > maxSafeInt || n < -maxSafeInt {
			return fmt.Errorf("%s: %s is not an integer in [-(2^53-1), 2^53-1]", path, v.number)
		}
	case kBool:
		if !v.boolean {
			return fmt.Errorf("%s: false must be omitted", path)
		}
	case kString:
		if v.str == "" {
			return fmt.Errorf("%s: an empty string must be omitted", path)
		}
	case kArray:
		for i, el := range v.array {
			if err := canonicalRules(el, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case kObject:
		if len(v.object) == 0 {
			return fmt.Errorf("%s: an empty object must be omitted", path)
		}
		for _, m := range v.object {
			if !validKey(m.key) {
				return fmt.Errorf("%s: key \"%s\" is not ASCII [a-z0-9_.-]", path, m.key)
			}
			if err := canonicalRules(m.val, path+"."+m.key); err != nil {
				return err
			}
		}
	}
	return nil
}

func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// encodeCanonical writes v in the canonical form of CONTRACT section 2:
// keys in byte order, no whitespace, only the seven short escapes and
// \u00xx (lowercase) for other control characters, integers in decimal.
func encodeCanonical(out *bytes.Buffer, v *value) {
	switch v.kind {
	case kNull:
		out.WriteString("null")
	case kBool:
		out.WriteString(strconv.FormatBool(v.boolean))
	case kNumber:
		n, _ := v.integer()
		out.WriteString(strconv.FormatInt(n, 10))
	case kString:
		encodeString(out, v.str)
	case kArray:
		out.WriteByte('[')
		for i, el := range v.array {
			if i > 0 {
				out.WriteByte(',')
			}
			encodeCanonical(out, el)
		}
		out.WriteByte(']')
	case kObject:
		members := append([]member(nil), v.object...)
		sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
		out.WriteByte('{')
		for i, m := range members {
			if i > 0 {
				out.WriteByte(',')
			}
			encodeString(out, m.key)
			out.WriteByte(':')
			encodeCanonical(out, m.val)
		}
		out.WriteByte('}')
	}
}

func encodeString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\b':
			out.WriteString(`\b`)
		case '\f':
			out.WriteString(`\f`)
		case '\n':
			out.WriteString(`\n`)
		case '\r':
			out.WriteString(`\r`)
		case '\t':
			out.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(out, `\u%04x`, c)
			} else {
				out.WriteByte(c)
			}
		}
	}
	out.WriteByte('"')
}

// canonical reads a leaf and refuses it unless its bytes are exactly the
// canonical encoding of what they hold.
func canonical(leaf []byte) (*value, error) {
	v, err := parseJSON(leaf)
	if err != nil {
		return nil, err
	}
	if v.kind != kObject {
		return nil, fmt.Errorf("a leaf is a JSON object")
	}
	if err := canonicalRules(v, "leaf"); err != nil {
		return nil, err
	}
	var enc bytes.Buffer
	encodeCanonical(&enc, v)
	if !bytes.Equal(enc.Bytes(), leaf) {
		i := 0
		for i < len(leaf) && i < enc.Len() && leaf[i] == enc.Bytes()[i] {
			i++
		}
		return nil, fmt.Errorf("not canonical JSON (key order, spacing, escaping or number form) from byte %d", i)
	}
	return v, nil
}
