// The checks receipt.cc and redaction.cc share: how a refusal names the
// field and the rule, and the rules of ids, hex, lengths and printable
// text (CONTRACT section 3). Internal to format_receipt.
//
// Thread-safe: pure functions.
#ifndef LEDGER_FORMAT_RECEIPT_INTERNAL_RULES_H_
#define LEDGER_FORMAT_RECEIPT_INTERNAL_RULES_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "ledger/format/receipt/receipt.h"

namespace ledger::receipt::rules {

// INVALID_ARGUMENT "<field>: <rule>".
absl::Status Invalid(std::string_view field, std::string_view rule);
// A value quoted in a refusal: escaped for terminals (util/text), its
// first 64 bytes when it is longer.
std::string Quoted(std::string_view v);
// The refusal of a string field that breaks `rule`: "required, <rule>" when
// it is absent (empty), "'<value>' is not <rule>" when it is there, so
// that a value given is never called missing.
absl::Status Broken(std::string_view field, std::string_view value, std::string_view rule);

inline constexpr std::string_view kReceiptIdRule = "1-128 bytes of [A-Za-z0-9._:-]";
bool IsIdChar(char c);
bool IsReceiptId(std::string_view s);
bool IsLowerHex(std::string_view s, size_t n);
absl::Status CheckLength(std::string_view field, const std::string& v, size_t max);
// An id people read in listings, pages and terminals: no control or bidi
// character, which could move a terminal's cursor, erase a line or reorder
// what is shown (CONTRACT section 3).
absl::Status CheckPrintable(std::string_view field, std::string_view v);

// The fields of a `redaction` (CONTRACT section 8; redaction.cc), for
// receipt.cc's checks of a receipt's kind.
absl::Status CheckRedaction(const Receipt& r);
// The fields of a `retention` (CONTRACT section 9; retention.cc).
absl::Status CheckRetention(const Receipt& r);

}  // namespace ledger::receipt::rules

#endif  // LEDGER_FORMAT_RECEIPT_INTERNAL_RULES_H_
