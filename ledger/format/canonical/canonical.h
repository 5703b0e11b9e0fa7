// Canonical JSON text (CONTRACT §2, RFC 8785 restricted to what leaves use):
//
//   string  = '"' *char '"'   ; UTF-8; escaped: \" \\ \b \f \n \r \t, other
//                              ; bytes below 0x20 as \u00xx (lowercase hex);
//                              ; nothing else escaped (not '/', not DEL,
//                              ; not U+2028)
//   integer = ["-"] digits     ; in [-(2^53-1), 2^53-1], no leading zeros
//   object  = "{" members "}"  ; keys sorted by byte order, no white space
//
// These are the primitives; ledger/format/receipt composes leaves from them, and
// Parse reads back exactly this grammar (and nothing looser), so a reader
// never needs a general JSON parser for leaves.
// Thread-safe: pure functions.
#ifndef LEDGER_FORMAT_CANONICAL_CANONICAL_H_
#define LEDGER_FORMAT_CANONICAL_CANONICAL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ledger::canonical {

inline constexpr int64_t kMaxSafeInteger = (int64_t{1} << 53) - 1;

// Well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool IsUtf8(std::string_view s);

// Appends `s` as a JSON string. `s` MUST be valid UTF-8.
void AppendString(std::string_view s, std::string* out);

// Appends `v` in decimal. `v` MUST be within +-kMaxSafeInteger.
void AppendInt(int64_t v, std::string* out);

struct Member;

// A parsed value of the grammar above: a string (decoded), an integer or an
// object (members in text order, which is ascending key order).
struct Value {
  enum class Type { kString, kInt, kObject };
  Type type = Type::kInt;
  std::string str;
  int64_t num = 0;
  std::vector<Member> members;

  // The member named `key`, or nullptr.
  const Value* Find(std::string_view key) const;
};

struct Member {
  std::string key;
  Value value;
};

// The string and integer rules above for decoders that expect a known shape
// and read the text in place, with no tree (leaves): each reads the token
// at *p (a string from its opening quote) and on success moves *p past it;
// ReadString appends the decoded string to `out`. False on anything else,
// with *p and `out` unspecified: Parse names the rule broken.
bool ReadString(const char** p, const char* end, std::string* out);
bool ReadInt(const char** p, const char* end, int64_t* out);

// Parses `text`, which MUST be one value in the grammar above and nothing
// else: no white space, no escape the encoder would not write, keys strictly
// ascending, integers in range, strings valid UTF-8, objects nested at most
// 8 deep. Anything else is INVALID_ARGUMENT naming the byte offset and rule.
absl::StatusOr<Value> Parse(std::string_view text);

}  // namespace ledger::canonical

#endif  // LEDGER_FORMAT_CANONICAL_CANONICAL_H_
