// The store's test door: the fault hooks tests set and the store's file
// system (rocksdb_plugins.cc) reads, and the writers only tests use (rows as
// earlier versions wrote them, the recovery window). A test anywhere that
// writes or reads a store directly includes this header, never store.h
// (docs/rooms.json, `private`); nothing but tests and the store itself
// includes it.
//
// Thread-safe: the flags are atomics, flipped by a test while the store runs;
// the writers are Batch's and Store's, with their rules.
#ifndef LEDGER_STORAGE_STORE_TESTING_H_
#define LEDGER_STORAGE_STORE_TESTING_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "ledger/storage/store/store.h"

namespace ledger::store {

// Storage faults, for Store::Open: while a flag is set, writes (or syncs) of
// the store's files fail with an I/O error, as a full or failing disk would.
struct Faults {
  std::atomic<bool> fail_writes{false};
  std::atomic<bool> fail_syncs{false};
  // Marked retryable (RocksDB then recovers by itself once they stop, as it
  // does for a full disk), or not (as for EIO: only a restart recovers).
  std::atomic<bool> retryable{false};
  // Store::Commit itself: the next this many commits fail (UNAVAILABLE,
  // nothing written, RocksDB untouched and healthy), then commits succeed
  // again: one commit's failure alone, the commits after it unharmed.
  mutable std::atomic<int> fail_next_commits{0};
  // From 0 up: this many more commits succeed, and every one after them
  // fails as fail_next_commits's do, until it is set back to -1.
  mutable std::atomic<int> commits_before_failing{-1};
  // While set, Store::Commit waits before it does anything: a commit held,
  // so that the batches after it are handed over meanwhile.
  std::atomic<bool> hold_commits{false};
};

// Writes no ledger makes any more, and knobs no ledger turns.
class Testing {
 public:
  // A `runs` row as format 1 wrote it (the last seq alone): for tests of
  // upgrades.
  static void PutRunHeadOfFormat1(Batch& batch, std::string_view team, std::string_view run_id, uint64_t last_seq);
  // Removes a team's row: for tests of stores written before team rows.
  static void DeleteTeamHead(Batch& batch, std::string_view team);
  // Removes a row of the run index: for tests of stores written before the
  // index, and of a damaged one.
  static void DeleteRunSeq(Batch& batch, std::string_view team, std::string_view run_id, uint64_t seq);
  // Removes the bytes of a retention policy: for tests of stores whose
  // passes were made before passes kept them.
  static void DeleteRetentionPolicy(Batch& batch, const hash::Hash& sha256);
  // How long commits may keep failing while RocksDB tries to resume before
  // failure() is set (10 s unless set). Call before the first commit.
  static void SetResumeWindow(Store& store, std::chrono::milliseconds window);
};

}  // namespace ledger::store

#endif  // LEDGER_STORAGE_STORE_TESTING_H_
