package main

// What this verifier prints of a pack (CONTRACT section 7, and the rule all
// verifiers share): every value an emitter or the ledger wrote is escaped
// before it reaches a terminal, so that no id can move the cursor, erase a
// line or reorder text.

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// esc writes each character in U+0000-U+001F, U+007F and U+0080-U+009F as
// \xHH (the code point, two lower-case hex digits), each bidi control
// (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) as \u{hhhh}, and
// each byte that is not valid UTF-8 as \xHH of the byte. Nothing else
// changes: a backslash stays a backslash.
func esc(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case isBidiControl(r):
			fmt.Fprintf(&b, `\u{%04x}`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func isBidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}
