// Text that came from an emitter, a pack or the ledger, printed to a
// terminal by a verifier or ledgerctl: the characters a
// terminal acts on instead of showing (C0 and C1 controls, DEL) and the
// bidi controls that reorder what is shown are written as escapes, so that
// a value can neither move the cursor, erase a line nor disguise itself.
//
//   escaped   = *( kept / control / bidi / badbyte )
//   control   = "\x" 2HEX   ; U+0000-U+001F, U+007F, U+0080-U+009F
//   bidi      = "\u{" 4HEX "}" ; U+061C, U+200E, U+200F, U+202A-U+202E,
//                              ; U+2066-U+2069
//   badbyte   = "\x" 2HEX   ; a byte that is not part of valid UTF-8
//   HEX       = lower-case hexadecimal digit
//
// Every other character is kept as it is, the backslash included: the
// escaping is for people reading a terminal, not a reversible encoding.
//
// Thread-safe: pure functions.
#ifndef UTIL_TEXT_TERMINAL_H_
#define UTIL_TEXT_TERMINAL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ledger::text {

// `value` with each control character, bidi control and invalid UTF-8 byte
// escaped as the grammar above says.
std::string TerminalEscape(std::string_view value);

// The first character of a value that TerminalEscape would escape.
struct UnsafeCharacter {
  // Its code point; for a byte that is not valid UTF-8, the byte.
  uint32_t code_point = 0;
  // The offset of its first byte in the value.
  size_t byte_offset = 0;
  // True when it is not a character but a byte of invalid UTF-8.
  bool invalid_utf8 = false;
};

// The first control character, bidi control or invalid UTF-8 byte in
// `value`, or nullopt when there is none (the value prints as it is). The
// ledger refuses an id for which this returns a value.
std::optional<UnsafeCharacter> FindUnsafeCharacter(std::string_view value);

// The refusal's wording after the field's name:
// "control or bidi character U+001B at byte 4", or for a byte of invalid
// UTF-8 "invalid UTF-8 byte 0xff at byte 4".
std::string DescribeUnsafe(const UnsafeCharacter& c);

}  // namespace ledger::text

#endif  // UTIL_TEXT_TERMINAL_H_
