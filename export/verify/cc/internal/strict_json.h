// JSON read strictly, as a pack's files are (CONTRACT.md section 7): a key
// that appears twice in one object is refused, whatever its value, where
// nlohmann::json's parser would keep the last and a reader in another
// language might keep the first.
//
// Thread-safe: pure functions.
#ifndef EXPORT_VERIFY_CC_INTERNAL_STRICT_JSON_H_
#define EXPORT_VERIFY_CC_INTERNAL_STRICT_JSON_H_

#include <istream>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace ledger::verify {

// The first key found twice in one object of `text`, in document order;
// nullopt when there is none, or when `text` is not JSON (the caller's
// parser then says why).
std::optional<std::string> DuplicateKey(std::string_view text);
// The same for a document read from `in` (one too large to hold).
std::optional<std::string> DuplicateKey(std::istream& in);

// `text` parsed; INVALID_ARGUMENT "key K twice" for a key twice in one
// object, "not JSON" when it does not parse.
absl::StatusOr<nlohmann::json> ParseStrictJson(std::string_view text);

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_INTERNAL_STRICT_JSON_H_
