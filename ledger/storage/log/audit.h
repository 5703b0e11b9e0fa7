// An offline audit of a stopped ledger's store: everything the log keeps is
// recomputed from the leaves and compared with what is stored.
//
//   entry          each leaf decodes (canonical form) and carries its own seq
//   chain          each prev is the leaf hash of the entry before it
//   run_chain      each run_prev is the run's previous entry
//   receipt_index  one row per entry: its seq, leaf hash and receipt digest
//   run_head       one row per run: the run's last entry, its count and
//                  leaf hash
//   run_index      each run's rows are the last entries of its chain, in
//                  order, up to its head (all of them, but for a store
//                  written before the index was kept)
//   run_map        every run-head map root a time note signs (format 2) is
//                  the root recomputed from the entries below its size
//   node           every stored Merkle node equals the one recomputed
//   checkpoint     every stored checkpoint verifies with the key, is of the
//                  origin, and its root is the recomputed root at its size
//   state          the tree size and chain head match the entries
//   retention      in a pruned store (CONTRACT section 9): below its floor
//                  a pruned entry is its leaf hash (the level-0 node), the
//                  chains and maps are taken up from the replay state kept
//                  at the floor (whose tree and chain head must be the
//                  replayed ones, and whose maps the floor's checkpoint
//                  checks), and no entry that the last finished pass
//                  pruned still has its body
//
// The first inconsistency found, in seq order, is reported with what was
// expected (recomputed) and what was found (stored).
//
// Thread-safe: reads only; the store MUST NOT be written meanwhile.
#ifndef LEDGER_STORAGE_LOG_AUDIT_H_
#define LEDGER_STORAGE_LOG_AUDIT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ledger/format/note/note.h"
#include "ledger/storage/store/types.h"
#include "nlohmann/json.hpp"

namespace ledger::text {
class ProgressMeter;  // util/text/progress.h
}  // namespace ledger::text

namespace ledger::log {

struct AuditReport {
  bool ok = true;
  uint64_t entries = 0;      // audited
  uint64_t pruned = 0;       // read as pruned lines (CONTRACT section 9): their leaf hashes only
  uint64_t nodes = 0;        // stored nodes compared
  uint64_t checkpoints = 0;  // verified
  uint64_t runs = 0;
  uint64_t map_roots = 0;  // signed run-head map roots recomputed
  // The first inconsistency (ok == false).
  std::string check;  // one of the names above
  int64_t seq = -1;   // the entry it was found at, -1 if none
  std::string what;   // what was compared, e.g. "node (level 2, index 5)"
  std::string expected, found;

  nlohmann::json Json() const;
  std::string Summary() const;
};

// Audits `store` against the key that signs its checkpoints, telling
// `progress` (if any) of each entry read, the tree size its total.
// Errors are for a store that cannot be read at all; everything else is a
// report.
// With `replay_state`, a consistent store's replay is written there at the
// end (replay::Replay::Encode): what a monitor that replayed the same
// entries keeps in its replay.state, byte for byte.
absl::StatusOr<AuditReport> Audit(const store::Store& store, const note::Verifier& key,
                                  text::ProgressMeter* progress = nullptr, std::string* replay_state = nullptr);

}  // namespace ledger::log

#endif  // LEDGER_STORAGE_LOG_AUDIT_H_
