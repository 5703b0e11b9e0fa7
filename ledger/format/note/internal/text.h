// The pieces signed notes (note.cc) and key sets (key_set.cc) share: the
// signature line's prefix, lines and fields split apart, decimal sizes. The
// library's own.
#ifndef LEDGER_FORMAT_NOTE_INTERNAL_TEXT_H_
#define LEDGER_FORMAT_NOTE_INTERNAL_TEXT_H_

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ledger::note::internal {

// A note signature line starts with an em dash and a space.
inline constexpr std::string_view kSigPrefix = "\xe2\x80\x94 ";

// Splits at `sep` into at most `max_parts` parts (the last keeps the rest:
// base64 key data may itself contain '+').
inline std::vector<std::string_view> Split(std::string_view s, char sep, size_t max_parts = SIZE_MAX) {
  std::vector<std::string_view> out;
  while (true) {
    size_t at = out.size() + 1 == max_parts ? std::string_view::npos : s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

// absl::StrCat takes absl::string_view, which this Abseil build keeps apart
// from std::string_view.
inline std::string S(std::string_view v) { return std::string(v); }

// A decimal number without leading zeros (0 itself is "0").
inline bool ParseDecimal(std::string_view v, uint64_t* out) {
  if (v.empty() || (v.size() > 1 && v[0] == '0')) return false;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return ec == std::errc() && p == v.data() + v.size();
}

}  // namespace ledger::note::internal

#endif  // LEDGER_FORMAT_NOTE_INTERNAL_TEXT_H_
