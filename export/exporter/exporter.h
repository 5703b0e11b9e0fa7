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
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "export/exporter/staging.h"
#include "export/manifest/manifest.h"
#include "ledger/storage/log/log.h"

namespace ledger::exporter {

// What to export (export/manifest): a run, every entry of (team, run_id)
// up to the checkpoint, the run chain gap-free from its first entry; a seq
// range [from_seq, to_seq); or a team's window, its entries with from_us <=
// logged_at_us < to_us (from_seq and to_seq are then found, not given).
using Scope = manifest::Scope;

// Writes the pack of `scope` against the latest checkpoint to `out_path`,
// of `pack_format` (below); with `since` (an earlier signed checkpoint of
// this log), the pack carries
// a consistency proof from it. NOT_FOUND for an unknown run; OUT_OF_RANGE
// for seqs beyond the checkpoint; INVALID_ARGUMENT for a `since` that is not
// this log's. With a `lease`, the pack is staged in its directory and the
// bytes staged are reported to it as they grow (every 4,096 entries, and
// before the archive is written): RESOURCE_EXHAUSTED when the staging quota
// would be exceeded. Without one, it is staged in the system's temporary
// directory, unbounded. On any error nothing staged is left.
//
// The pack carries the checkpoint's time note and states `unknown_grace_ms`,
// which MUST be the grace the ledger's sweeper uses (ledgerd
// --unknown-grace-ms): verifiers find with it the steps an honest ledger
// would have declared unknown before it signed that time.
// FAILED_PRECONDITION when the checkpoint has no time note (never the
// latest one, which gets one when the ledger starts).
//
// With `cosign`, the pack's `checkpoint` file is cosign(the signed
// checkpoint): the note with the witnesses' cosignature lines held for it
// (CONTRACT section 7, "Witnessed packs"); its error fails the export,
// nothing written. With `map_cosign`, the pack's `checkpoint-time` file is
// map_cosign(the signed time note): the note with the monitors' map
// cosignatures held for it (CONTRACT section 5c), likewise.
//
// A scope with no entry (a run no entry names, a window with none of the
// team's entries) is written as a pack of none, which proves it (an
// absence proof, the window's bounds), with EmptyScope::kWrite; with
// kRefuse it is NOT_FOUND ("run T/R has no entry up to tree size N", "team
// T has no entry logged in [FROM, TO) up to tree size N"), found before the
// archive is written, and nothing is. (A seq range is never empty: A < B
// <= the checkpoint's size.) NOT_FOUND means only that: no checkpoint
// signed yet is FAILED_PRECONDITION.
//
// With `progress`, it is told the entries staged so far, and how many the
// scope holds when that is known before they are read (a run's head counts
// them, a seq range is its length; a team window's is not): once before
// the first, every 4,096 and once after the last; from the calling thread.
inline constexpr uint64_t kDefaultUnknownGraceMs = 30000;
using CosignFn = std::function<absl::StatusOr<std::string>(const std::string& note)>;
using ProgressFn = std::function<void(uint64_t entries, std::optional<uint64_t> total)>;
enum class EmptyScope { kWrite, kRefuse };

// The pack format an exporter writes when the checkpoint's time note is
// version 4 (CONTRACT section 7): 6, whose multiproof.txt proves every
// entry's inclusion, or 5, a path per entry in proofs.jsonl, for verifiers
// that predate format 6. A note of an earlier version gives its own format
// (version + 1) whatever is asked.
// 8: format 7, or 8 when the pack holds an erased entry (CONTRACT section
// 8); asked for 7 or below, a pack that would hold an erased entry is
// FAILED_PRECONDITION. 9 (the default): as 8, and 9 for a run pack across
// the retention line (CONTRACT section 9); asked for 8 or below, such a
// run is refused as one whose pack would not hold the whole run.
inline constexpr int kLatestPackFormat = 9;

struct ExportOptions {
  std::string since = {};
  Staging::Lease* lease = nullptr;
  uint64_t unknown_grace_ms = kDefaultUnknownGraceMs;
  CosignFn cosign = nullptr;
  CosignFn map_cosign = nullptr;
  EmptyScope empty = EmptyScope::kWrite;
  ProgressFn progress = nullptr;
  int pack_format = kLatestPackFormat;  // 5 to 9; INVALID_ARGUMENT otherwise
};

absl::Status ExportPack(const log::Log& log, const Scope& scope, const std::string& out_path,
                        const ExportOptions& options = {});

}  // namespace ledger::exporter

#endif  // EXPORT_EXPORTER_EXPORTER_H_
