// The pruned line (CONTRACT section 9, "The pruned line"): what entry
// bundles and GetEntries give for an entry whose body a retention pass
// removed. Canonical JSON, exactly
//
//   {"pruned":{"leaf_hash":"<64 lower-case hex>","seq":S}}
//
// S decimal without leading zeros. It is never stored: readers make it from
// the entry's level-0 hash. A leaf begins '{"emitter":' and a redacted line
// '{"redacted":', so the three never collide.
//
// Thread-safe: pure functions.
#ifndef LEDGER_FORMAT_RETENTION_PRUNED_H_
#define LEDGER_FORMAT_RETENTION_PRUNED_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"

namespace ledger::retention {

// The pruned line of the entry `seq` whose leaf hash is `leaf_hash`.
std::string PrunedLine(uint64_t seq, const hash::Hash& leaf_hash);
// Whether `line` starts like a pruned line (and so is no leaf).
bool LooksPruned(std::string_view line);

struct Pruned {
  uint64_t seq = 0;
  hash::Hash leaf_hash{};
};
// INVALID_ARGUMENT unless `line` is exactly a pruned line.
absl::StatusOr<Pruned> ParsePruned(std::string_view line);

}  // namespace ledger::retention

#endif  // LEDGER_FORMAT_RETENTION_PRUNED_H_
