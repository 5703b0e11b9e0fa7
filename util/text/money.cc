#include "util/text/money.h"

#include "absl/strings/str_cat.h"

namespace ledger::text {

std::string Dollars(int64_t micros) {
  // In unsigned arithmetic: the most negative micros has no positive twin.
  const bool negative = micros < 0;
  const uint64_t magnitude = negative ? uint64_t{0} - static_cast<uint64_t>(micros) : static_cast<uint64_t>(micros);
  std::string fraction = absl::StrCat(magnitude % 1000000);
  return absl::StrCat(negative ? "-$" : "$", magnitude / 1000000, ".", std::string(6 - fraction.size(), '0'), fraction);
}

}  // namespace ledger::text
