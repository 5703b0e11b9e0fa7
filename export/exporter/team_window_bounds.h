// What a team window of format 4 carries besides its entries: the team's
// entries on both sides of the window and the team's head proof
// (team-window.json, export/pack/team_window.h; CONTRACT section 7, "Closed
// team windows").
//
// Thread-safe: reads the log through a view only.
#ifndef EXPORT_EXPORTER_TEAM_WINDOW_BOUNDS_H_
#define EXPORT_EXPORTER_TEAM_WINDOW_BOUNDS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "export/pack/team_window.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/runmap/proof_json.h"
#include "ledger/storage/log/log_view.h"

namespace ledger::exporter {

// The team's entries the window holds: how many, and the first's seq and
// link.
struct WindowEntries {
  uint64_t count = 0;
  uint64_t first_seq = 0;
  receipt::TeamLink first_link;
};

using ProveFn = absl::FunctionRef<absl::StatusOr<std::vector<hash::Hash>>(uint64_t seq)>;

// `team_head` is `team_name`'s head proof at the pack's tree size; the
// window covers seqs [lo, hi) (the entries logged in its times). `after` is
// the team's first entry at or after `hi`, found by reading forwards from
// `hi` (at most `look_ahead` entries), else by walking the team chain down from the head (where
// the walk meets a version 1 leaf, it stops there); `before` is the entry the window's first entry (or, with none, the
// walk) reaches below `lo`. `prove(seq)` is the inclusion proof of seq.
absl::StatusOr<pack::TeamWindow> TeamWindowBounds(const log::LogView& view, std::string_view team_name,
                                                  const runmap::KeyedPath& team_head, uint64_t hi,
                                                  const WindowEntries& held, ProveFn prove,
                                                  uint64_t look_ahead = 65'536);

}  // namespace ledger::exporter

#endif  // EXPORT_EXPORTER_TEAM_WINDOW_BOUNDS_H_
