// Builds evidence packs (export/pack/pack.h) from a running log: the
// entries of a scope up to the latest checkpoint, their inclusion proofs
// against it, the recomputed outcomes, the report, and the manifest signed
// with the ledger's key. Large files are staged on disk, so memory does not
// grow with the pack.
//
// Thread-safe: reads the log; each call uses its own temporary directory.
#ifndef EXPORT_EXPORTER_EXPORTER_H_
#define EXPORT_EXPORTER_EXPORTER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "export/exporter/staging.h"
#include "ledger/log/log.h"

namespace ledger::exporter {

struct Scope {
  // A run: every entry of (team, run_id) up to the checkpoint, the run
  // chain gap-free from its first entry.
  std::string team;
  std::string run_id;
  // A seq range [from_seq, to_seq), when team is empty.
  uint64_t from_seq = 0;
  uint64_t to_seq = 0;
  // A team's window, when run_id is empty and team is not: its entries with
  // from_us <= logged_at_us < to_us.
  int64_t from_us = 0;
  int64_t to_us = 0;
  bool is_run() const { return !run_id.empty(); }
  bool is_team_window() const { return run_id.empty() && !team.empty(); }
};

// Writes the pack of `scope` against the latest checkpoint to `out_path`;
// with `since` (an earlier signed checkpoint of this log), the pack carries
// a consistency proof from it. NOT_FOUND for an unknown run; OUT_OF_RANGE
// for seqs beyond the checkpoint; INVALID_ARGUMENT for a `since` that is not
// this log's. With a `lease`, the pack is staged in its directory and the
// bytes staged are reported to it as they grow (every 4,096 entries, and
// before the archive is written): RESOURCE_EXHAUSTED when the staging quota
// would be exceeded. Without one, it is staged in the system's temporary
// directory, unbounded. On any error nothing staged is left.
absl::Status ExportPack(const log::Log& log, const Scope& scope, const std::string& out_path,
                        const std::string& since = "", Staging::Lease* lease = nullptr);

}  // namespace ledger::exporter

#endif  // EXPORT_EXPORTER_EXPORTER_H_
