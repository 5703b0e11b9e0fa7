// Canonical JSON text (CONTRACT §2, RFC 8785 restricted to what leaves use):
//
//   string  = '"' *char '"'   ; UTF-8; escaped: \" \\ \b \f \n \r \t, other
//                              ; bytes below 0x20 as \u00xx (lowercase hex);
//                              ; nothing else escaped (not '/', not DEL,
//                              ; not U+2028)
//   integer = ["-"] digits     ; in [-(2^53-1), 2^53-1], no leading zeros
//   object  = "{" members "}"  ; keys sorted by byte order, no white space
//
// These are the primitives; ledger/receipt composes leaves from them.
// Thread-safe: pure functions.
#ifndef LEDGER_CANONICAL_CANONICAL_H_
#define LEDGER_CANONICAL_CANONICAL_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace ledger::canonical {

inline constexpr int64_t kMaxSafeInteger = (int64_t{1} << 53) - 1;

// Well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool IsUtf8(std::string_view s);

// Appends `s` as a JSON string. `s` MUST be valid UTF-8.
void AppendString(std::string_view s, std::string* out);

// Appends `v` in decimal. `v` MUST be within +-kMaxSafeInteger.
void AppendInt(int64_t v, std::string* out);

}  // namespace ledger::canonical

#endif  // LEDGER_CANONICAL_CANONICAL_H_
