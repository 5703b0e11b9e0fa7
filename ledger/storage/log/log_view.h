// A reader's view of the log at one signed checkpoint: the leaves and tree
// nodes of the tree of that size, the projections, and the store's health.
// Everything above the storage room reads the log through a LogView, never
// through the store (docs/rooms.json, `private`), in the manner of
// Tessera's LogReader.
//
// A view is taken from the log (Log::View, Log::ViewAt) and is a small
// value: copy it freely. Its leaf and node reads are bounded by its size, so
// a view taken at an older checkpoint reads that tree alone however far the
// log has grown since: whatever it returns is what a verifier of that
// checkpoint may be given. Projections are not bounded: see GetProjection.
//
// Thread-safe: every method is const and may be called concurrently from any
// thread. A view MUST NOT outlive the Log it was taken from.
#ifndef LEDGER_STORAGE_LOG_LOG_VIEW_H_
#define LEDGER_STORAGE_LOG_LOG_VIEW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/projection/projection.h"
#include "ledger/storage/log/retention_pass.h"
#include "ledger/storage/store/types.h"
#include "util/stats/stats.h"

namespace ledger::log {

struct SignedCheckpoint {
  uint64_t size = 0;
  hash::Hash root{};
  std::string note;
  // The checkpoint-time note signed with it (note::CheckpointTime), and the
  // time it states; empty and 0 for a checkpoint signed before the ledger
  // signed times that is no longer the latest.
  std::string time_note;
  int64_t signed_at_us = 0;
  // The run-head map root its time note signs (format 2), if it does, and
  // the team-head map root (format 3).
  std::optional<hash::Hash> run_map_root;
  std::optional<hash::Hash> team_map_root;
  // The time note's version (note::CheckpointTime::version), 0 without one:
  // 4 when run_map_root is under run keys v2 (runmap::KeysOfNote).
  int time_version = 0;
};

class LogView {
 public:
  // The view of `store` at `checkpoint` (its size bounds the reads). Log::View
  // and Log::ViewAt make views; code of the storage room and tests of readers
  // (ledger/storage/store/testing.h) may make one over a store directly.
  // `store` MUST outlive the view.
  LogView(const store::Store& store, SignedCheckpoint checkpoint)
      : store_(&store), checkpoint_(std::move(checkpoint)) {}

  // The tree size the view is taken at: its leaves are the seqs below it.
  uint64_t size() const { return checkpoint_.size; }
  // The signed checkpoint of that size, with its time note. From Log::View
  // before any checkpoint is signed: an empty one (size 0, no note).
  const SignedCheckpoint& checkpoint() const { return checkpoint_; }

  // The leaf bytes of entry `seq`. OUT_OF_RANGE when seq >= size();
  // NOT_FOUND when the store lacks it (a damaged store); DATA_LOSS when its
  // record is malformed.
  absl::StatusOr<std::string> GetLeaf(uint64_t seq) const;

  // Calls fn(seq, leaf) for from <= seq < to in order; stops at and returns
  // fn's first error. OUT_OF_RANGE when to > size(); DATA_LOSS when a seq in
  // the range is missing.
  absl::Status ScanLeaves(uint64_t from, uint64_t to,
                          absl::FunctionRef<absl::Status(uint64_t seq, std::string_view leaf)> fn) const;

  // Calls fn(seq) for the run's entries below size() that the store's run
  // index holds, ascending; stops at and returns fn's first error. A store
  // written before the index was kept holds none of the entries appended
  // before it was opened by a version that keeps it: a run's older entries
  // are found by walking back from its first indexed one (WalkLeavesBack).
  // The index is derived from the log: a reader checks what it reads
  // against the run's chain.
  absl::Status ScanRunSeqs(std::string_view team, std::string_view run_id,
                           absl::FunctionRef<absl::Status(uint64_t seq)> fn) const;

  // Retention (CONTRACT section 9): the latest retention pass (pass 0 when
  // none), whatever the view's size: a pruned entry's body is gone from
  // every view. A pruned entry reads as its pruned line
  // (ledger/format/retention/pruned.h) in GetLeaf, ScanLeaves and
  // WalkLeavesBack.
  absl::StatusOr<RetentionPass> Retention() const;
  // The bytes of the policy a pass applied, by its entries' policy_sha256
  // (hex); NOT_FOUND when they were not kept (a pass made before the
  // ledger kept them).
  absl::StatusOr<std::string> RetentionPolicy(std::string_view sha256_hex) const;
  // The first entry at or above `from` whose body is kept (no pruned
  // line), below the view's size; nullopt when there is none.
  absl::StatusOr<std::optional<std::pair<uint64_t, std::string>>> NextKeptLeaf(uint64_t from) const;

  // Walks back from `from`, as a run's or a team's chain is walked:
  // next(seq, leaf) returns the seq to visit next (MUST be below seq, or the
  // process aborts), nullopt to stop, or an error, which is returned.
  // OUT_OF_RANGE when from >= size(); DATA_LOSS when a seq to visit is
  // missing. Cheap for mostly adjacent seqs (one iterator for the walk).
  absl::Status WalkLeavesBack(
      uint64_t from,
      absl::FunctionRef<absl::StatusOr<std::optional<uint64_t>>(uint64_t seq, std::string_view leaf)> next) const;

  // Tree nodes come sixteen to a group, one read each.
  static constexpr uint64_t kNodesPerGroup = 16;
  // The nodes (level, group * kNodesPerGroup + i), i = 0, 1, ..., of the
  // tree of size(): the group's nodes below size() >> level, as many as the
  // store holds. OUT_OF_RANGE when that tree holds none of the group;
  // NOT_FOUND when the store holds no record of it (a damaged store).
  absl::StatusOr<std::vector<hash::Hash>> GetNodeGroup(int level, uint64_t group) const;

  // A projection record (query/projector), nullopt when absent or when the
  // log keeps no projections. Projections are of the latest state the log
  // applied, NOT of size(): a record may count entries after the view's
  // checkpoint.
  absl::StatusOr<std::optional<std::string>> GetProjection(projection::Table t, std::string_view key) const;
  // Calls fn(key, value) for the records of `t` with from <= key < to (an
  // empty `to`: no upper bound), ascending, or descending with `reverse`,
  // until fn returns false; of the latest applied state, as GetProjection.
  absl::Status ScanProjection(projection::Table t, std::string_view from, std::string_view to, bool reverse,
                              absl::FunctionRef<bool(std::string_view key, std::string_view value)> fn) const;

  // The store's health, now (not as of size()): OK, or why the store cannot
  // write again in this process (a write failed and RocksDB cannot resume;
  // a restart recovers everything acknowledged).
  absl::Status failure() const;
  // Where the store's memory goes (its budget, cache, memtables, table
  // readers), in bytes.
  store::Memory MemoryUse() const;
  // The duration of each file sync the store made, in microseconds.
  const stats::Histogram& sync_us() const;

 private:
  const store::Store* store_;
  SignedCheckpoint checkpoint_;
};

}  // namespace ledger::log

#endif  // LEDGER_STORAGE_LOG_LOG_VIEW_H_
