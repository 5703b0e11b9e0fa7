// The log's entries replayed in order, as an auditor recomputes them: each
// leaf an entry in canonical form carrying its own seq; the hash chain (each
// `prev` the leaf hash of the entry before); each run's and each team's
// chain (`run_prev`, `team_prev`); the RFC 9162 tree of the leaf hashes;
// and the run-head map (run keys v2) and team-head map of CONTRACT section
// 6a. A checkpoint-time note's roots are then checked against the replay
// at its size.
//
// `ledgerctl audit` replays a stopped store with it; `ledger-monitor`
// replays a running log's entry bundles with it and cosigns only the notes
// whose roots it recomputed. One code, so the two agree.
//
// The replay's state is written to a file by Encode (the monitor's, so a
// restart resumes where it stopped). Format, version 1 (all integers
// unsigned big-endian):
//
//   "evidence-ledger/replay-state/v1\n"            32 bytes
//   u64 size | u64 frontier nodes F | F x 32 bytes  the tree's right edge,
//                                                   largest subtree first
//   32 bytes prev                                   the last leaf hash
//   u64 runs R  | R x (32-byte key | 48-byte head)  in key order
//   u64 teams T | T x (32-byte key | 48-byte head)  in key order
//   32 bytes SHA-256 of everything before it
//
// A head is runmap::HeadBytes (count | last seq | last leaf hash).
//
// Not thread-safe.
#ifndef LEDGER_FORMAT_REPLAY_REPLAY_H_
#define LEDGER_FORMAT_REPLAY_REPLAY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/runmap/runmap.h"

namespace ledger::replay {

// An inconsistency: which check (entry, chain, run_chain, team_chain,
// run_map, team_map, root), at which seq, what was compared, the value the
// replay computed and the value found.
struct Finding {
  std::string check;
  int64_t seq = -1;  // -1: not at one entry
  std::string what, expected, found;

  std::string Text() const;  // "run_map at seq 7: ...: expected X, found Y"
};

class Replay {
 public:
  // Replays the leaf of seq size(). Returns a finding (and leaves the
  // replay as it was) when the leaf is not an entry of that seq in
  // canonical form or breaks a chain; otherwise fills *entry, if set, and
  // calls `node`, if set, with each tree node the leaf completes (level,
  // index, hash: merkle::Frontier::Append).
  std::optional<Finding> Append(
      std::string_view leaf, receipt::Entry* entry = nullptr,
      std::optional<absl::FunctionRef<void(int level, uint64_t index, const hash::Hash&)>> node = std::nullopt);

  // Retention (CONTRACT section 9): below the size at which a pruned
  // store kept its replay state, where the pruned entries' runs and teams
  // are gone. A pruned line gives its leaf hash to the tree and the hash
  // chain; a leaf or a redacted line is checked as Append checks it, but
  // its run and team chains are not, and neither map changes.
  std::optional<Finding> AppendBelowPruning(
      std::string_view leaf, receipt::Entry* entry = nullptr,
      std::optional<absl::FunctionRef<void(int level, uint64_t index, const hash::Hash&)>> node = std::nullopt);

  // A finding unless `note`'s tree is the replay's (size() entries, their
  // RFC 9162 root) and every map root it signs is the replay's: the team
  // map's (versions 3 and 4) and the run map's under run keys v2 (version
  // 4). A root under run keys v1 (versions 2 and 3) is the caller's to
  // check; see runs_v1 below.
  std::optional<Finding> Check(const note::CheckpointTime& note);

  uint64_t size() const { return frontier_.size(); }
  hash::Hash root() const;  // of the empty tree when size() is 0
  const hash::Hash& prev() const { return prev_; }
  hash::Hash runs_root() { return runs_.Root(); }
  hash::Hash teams_root() { return teams_.Root(); }
  // The maps themselves (a monitor's search for the key a note misstates).
  runmap::RunMap& run_map() { return runs_; }
  runmap::RunMap& team_map() { return teams_; }
  size_t runs() const { return runs_.size(); }
  size_t teams() const { return teams_.size(); }
  std::optional<runmap::Head> RunHead(std::string_view team, std::string_view run_id) const;
  std::optional<runmap::Head> TeamHead(std::string_view team) const;
  // The head the last Append gave its entry's run.
  const runmap::Head& last_run_head() const { return last_run_head_; }

  std::string Encode() const;
  // DATA_LOSS naming the part that is wrong (header, length, checksum, a
  // head, keys out of order).
  static absl::StatusOr<Replay> Decode(std::string_view bytes);

 private:
  std::optional<Finding> Take(std::string_view leaf, receipt::Entry* entry,
                              std::optional<absl::FunctionRef<void(int level, uint64_t index, const hash::Hash&)>> node,
                              bool maps);
  // The tree and the hash chain take `leaf_hash`.
  void Grow(const hash::Hash& leaf_hash,
            std::optional<absl::FunctionRef<void(int level, uint64_t index, const hash::Hash&)>> node);
  merkle::Frontier frontier_;
  hash::Hash prev_{};
  runmap::RunMap runs_;   // under run keys v2
  runmap::RunMap teams_;  // by team key
  runmap::Head last_run_head_;
};

}  // namespace ledger::replay

#endif  // LEDGER_FORMAT_REPLAY_REPLAY_H_
