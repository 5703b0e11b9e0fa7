// Retention (CONTRACT section 9): the ledger's `retention` entry, one for
// each rule of a pass (the pruned line is ledger/format/retention/pruned.h).
//
// Thread-safe: pure functions.
#ifndef LEDGER_FORMAT_RECEIPT_RETENTION_H_
#define LEDGER_FORMAT_RECEIPT_RETENTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/receipt.h"

namespace ledger::receipt {

// The run of the ledger's retention entries, in the team kLedgerTeam.
inline constexpr std::string_view kRetentionRun = "ledger.retention";
inline constexpr std::string_view kRetentionIdPrefix = "ledger.retention.";

// One rule as a pass states it: `team` empty for the default rule;
// keep_s 0 for a rule that keeps its entries for good (no cutoff, line 0).
struct RetentionRule {
  std::string team;
  int64_t keep_s = 0;
  int64_t cutoff_us = 0;
  uint64_t below_seq = 0;
};

// The receipt id of pass `pass`'s entry for the rule of `team` ("" the
// default rule): ledger.retention.<pass>.default or .team.<team>.
std::string RetentionId(uint64_t pass, std::string_view team);

// The retention entry of `rule` in pass `pass` at the ledger's clock
// `now_us` (rule.cutoff_us MUST be now_us - keep_s * 1e6), under the policy
// whose bytes hash to `policy_sha256`. Validation is Canonicalize's.
Receipt Retention(uint64_t pass, const RetentionRule& rule, const hash::Hash& policy_sha256, int64_t now_us);

// The rule a valid retention receipt states.
RetentionRule RuleOf(const Receipt& r);

}  // namespace ledger::receipt

#endif  // LEDGER_FORMAT_RECEIPT_RETENTION_H_
