// A retention pass as the log records it (CONTRACT section 9): the
// `retention` entries of one pass, read back from the run (ledger,
// ledger.retention). For the log's passes (retention.cc) and the audit.
//
// Thread-safe: reads only.
#ifndef LEDGER_STORAGE_LOG_RETENTION_PASS_H_
#define LEDGER_STORAGE_LOG_RETENTION_PASS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger/format/receipt/retention.h"
#include "ledger/storage/store/types.h"

namespace ledger::log {

struct RetentionPass {
  uint64_t pass = 0;  // 0: no such pass
  int64_t now_us = 0;
  std::string policy_sha256;
  std::vector<receipt::RetentionRule> rules;  // in the policy's order
  std::vector<uint64_t> seqs;                 // of its entries
};

// The entries of pass `pass` (0: the latest). DATA_LOSS when an entry of
// the run is not a retention.
absl::StatusOr<RetentionPass> ReadRetentionPass(const store::Store& store, uint64_t pass);

// The rule of `rules` that covers `team`: its own, else the default;
// nullptr for the ledger's team and a team with neither.
const receipt::RetentionRule* CoveringRule(const std::vector<receipt::RetentionRule>& rules, std::string_view team);

}  // namespace ledger::log

#endif  // LEDGER_STORAGE_LOG_RETENTION_PASS_H_
