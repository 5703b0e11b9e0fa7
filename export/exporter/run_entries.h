// A run's entries at a view, in seq order, for a run's pack (exporter.cc):
// those the store's run index holds (LogView::ScanRunSeqs) and, before
// them, the older ones of a store that kept no index when they were
// appended, found by walking the chain back from the first indexed
// entry's run_prev (from the head when none is indexed). The index is
// derived from the log, so what is read is held to the chain: each
// entry's run_prev is the entry read before it, and the last is the head,
// with the head's count; a difference is DATA_LOSS naming the entry.
// A run pack across the retention line (CONTRACT section 9, format 9)
// reads the run's entries from a seq up: the first of them links below
// it, and the head counts more than are read.
//
// Thread-compatible: reads the log through a view only.
#ifndef EXPORT_EXPORTER_RUN_ENTRIES_H_
#define EXPORT_EXPORTER_RUN_ENTRIES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "ledger/format/runmap/runmap.h"
#include "ledger/storage/log/log_view.h"

namespace ledger::exporter {

using EntryFn = absl::FunctionRef<absl::Status(uint64_t seq, std::string_view leaf)>;

// Calls fn(seq, leaf) for each entry of the run `head` heads in `view`,
// ascending; stops at and returns fn's first error. A walk back spools
// its seqs to `spool_path` (memory does not grow with the run), calling
// `spooled` after each block written (the staging quota). With `from_seq`
// above 0, only the entries at or above it, the first of which MUST have a
// run_prev below it.
absl::Status ReadRunEntries(const log::LogView& view, std::string_view team, std::string_view run_id,
                            const runmap::Head& head, uint64_t from_seq, const std::string& spool_path,
                            std::function<absl::Status()> spooled, EntryFn fn);

}  // namespace ledger::exporter

#endif  // EXPORT_EXPORTER_RUN_ENTRIES_H_
