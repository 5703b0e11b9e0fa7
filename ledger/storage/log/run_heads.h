// The run-head map of a log (runmap.h, CONTRACT section 6a) from what the
// store holds: the heads kept in the `runs` rows, or a replay of the
// entries themselves. The first is what the ledger signs; the second is
// what an auditor recomputes to check it.
//
// Thread-safe: free functions; the store may serve meanwhile.
#ifndef LEDGER_STORAGE_LOG_RUN_HEADS_H_
#define LEDGER_STORAGE_LOG_RUN_HEADS_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "ledger/format/runmap/runmap.h"
#include "ledger/storage/store/types.h"

namespace ledger::log {

// Rewrites the `runs` rows of format 1 (the last seq alone, store.h) into
// format 2 (count, last seq, leaf hash) by replaying entries [0, size) of
// the log, in atomic batches. Returns how many rows it rewrote (0, and
// reads nothing but the rows, when none is of format 1). DATA_LOSS when a
// row disagrees with the entries. Nothing may append meanwhile.
absl::StatusOr<uint64_t> MigrateRunHeads(store::Store& store);

// Rewrites every `runs` row from a replay of the whole log (whatever the
// rows held: for a rebuild after damage), so that the map the ledger loads
// at Open is the log's. Returns the rows written. Nothing may append
// meanwhile; a row of a run the log does not have is left for audit to
// report.
absl::StatusOr<uint64_t> RebuildRunHeads(store::Store& store);

// Fills the `teams` rows (store.h) from a replay of the log when there are
// none and the log is not empty: a store of a version that did not keep
// them. One atomic batch, so a crash leaves none or all. Returns the rows
// written (0 when there were rows already).
absl::StatusOr<uint64_t> FillTeamHeads(store::Store& store);

// Rewrites every `teams` row from a replay of the whole log (a rebuild),
// in one atomic batch. Returns the rows written.
absl::StatusOr<uint64_t> RebuildTeamHeads(store::Store& store);

// The team-head map of a replay of entries [0, size).
absl::StatusOr<runmap::RunMap> ReplayTeamMap(const store::Store& store, uint64_t size);

// Brings the run-head and team-head maps kept in the store
// (ledger/storage/storedmap) to the log's `size`, whose heads the `runs` and `teams`
// rows hold: from the rows of the runs and teams that the entries since a
// map's size touched, or, for a map never written (a store of an earlier
// version, or after a rebuild of the rows), from every row. Nothing may
// append meanwhile.
absl::Status CatchUpStoredMaps(store::Store& store, uint64_t size);

// The map of entries [0, size) under run keys `keys`, computed from the
// entries alone (the leaf hash of each, its team and run_id). `progress`, if
// set, is called with the entries replayed so far.
absl::StatusOr<runmap::RunMap> ReplayRunMap(const store::Store& store, uint64_t size, runmap::KeyVersion keys,
                                            const std::function<void(uint64_t done)>& progress = nullptr);

}  // namespace ledger::log

#endif  // LEDGER_STORAGE_LOG_RUN_HEADS_H_
