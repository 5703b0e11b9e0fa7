#include "ledger/format/receipt/internal/rules.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "util/text/terminal.h"

namespace ledger::receipt::rules {

absl::Status Invalid(std::string_view field, std::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(field), ": ", std::string(rule)));
}

std::string Quoted(std::string_view v) {
  if (v.size() <= 64) return absl::StrCat("'", text::TerminalEscape(v), "'");
  return absl::StrCat("'", text::TerminalEscape(v.substr(0, 64)), "...' (", v.size(), " bytes)");
}

absl::Status Broken(std::string_view field, std::string_view value, std::string_view rule) {
  if (value.empty()) return Invalid(field, absl::StrCat("required, ", std::string(rule)));
  return Invalid(field, absl::StrCat(Quoted(value), " is not ", std::string(rule)));
}

bool IsIdChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == ':' || c == '-';
}

bool IsReceiptId(std::string_view s) {
  return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), IsIdChar);
}

bool IsLowerHex(std::string_view s, size_t n) {
  return s.size() == n &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

absl::Status CheckLength(std::string_view field, const std::string& v, size_t max) {
  if (v.size() > max) return Invalid(field, absl::StrCat("at most ", max, " bytes"));
  return absl::OkStatus();
}

absl::Status CheckPrintable(std::string_view field, std::string_view v) {
  std::optional<text::UnsafeCharacter> bad = text::FindUnsafeCharacter(v);
  if (!bad.has_value()) return absl::OkStatus();
  if (bad->invalid_utf8) return Invalid(field, "must be valid UTF-8");
  return Invalid(field, text::DescribeUnsafe(*bad));
}

}  // namespace ledger::receipt::rules
