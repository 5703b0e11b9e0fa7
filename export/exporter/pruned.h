// Exports at the retention line (CONTRACT section 9, "Exports at the
// line"): a scope that reaches a pruned entry is refused, FAILED_PRECONDITION,
// saying which pass and rule pruned it and what can still be exported.
//
// Thread-safe: reads only.
#ifndef EXPORT_EXPORTER_PRUNED_H_
#define EXPORT_EXPORTER_PRUNED_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "ledger/storage/log/log_view.h"

namespace ledger::exporter {

// A run pack's: the run's entry `seq` was pruned.
absl::Status RunPruned(const log::LogView& view, std::string_view team, std::string_view run_id, uint64_t seq);
// A seq range's: its entry `seq` was pruned.
absl::Status SeqPruned(const log::LogView& view, uint64_t seq);
// A team window's: OK when `from_us` is after the cutoff of the team's
// rule (every entry below the line was logged at or before it), or the
// team has no rule that prunes; WindowBoundPruned: the window's bound
// before it was pruned.
absl::Status CheckWindowStart(const log::LogView& view, std::string_view team, int64_t from_us);
absl::Status WindowBoundPruned(const log::LogView& view, std::string_view team, uint64_t bound);

}  // namespace ledger::exporter

#endif  // EXPORT_EXPORTER_PRUNED_H_
