// Exports at the retention line (CONTRACT section 9, "Exports at the
// line"): a scope that reaches a pruned entry is refused, FAILED_PRECONDITION,
// saying which pass and rule pruned it and what can still be exported.
//
// Thread-safe: reads only.
#ifndef EXPORT_EXPORTER_PRUNED_H_
#define EXPORT_EXPORTER_PRUNED_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "ledger/storage/log/log_view.h"

namespace ledger::exporter {

// A run pack across the line (CONTRACT section 9, format 9): the line F
// below which the run's team was pruned, and what the pack carries to say
// so.
struct RunFrom {
  uint64_t from_seq = 0;       // F, the rule's below_seq
  uint64_t retention_seq = 0;  // the rule's retention entry
  uint64_t pruned_seq = 0;     // the run's entry just below F (pruned)
  std::string retention_leaf;  // its leaf bytes
  std::string policy_text;     // the bytes of the policy its pass applied
};

// The run's line, when a format 9 pack can hold it: the latest pass in
// the view's tree has a rule covering `team` with a line F, the run's
// first indexed entry at or above F links below F, and the pass's policy
// bytes are kept. nullopt otherwise: the run's pack is of an earlier
// format, and meets a pruned entry only when no format 9 pack can say so
// (RunPruned).
absl::StatusOr<std::optional<RunFrom>> RunAcrossLine(const log::LogView& view, std::string_view team,
                                                     std::string_view run_id);

// A run pack's: the run's entry `seq` was pruned. `ask_for_9`: the run
// crosses its line, and the export asked for a format before 9.
absl::Status RunPruned(const log::LogView& view, std::string_view team, std::string_view run_id, uint64_t seq,
                       bool ask_for_9 = false);
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
