// What a Store and a Batch hold, inside the library: RocksDB's handles,
// the cache, the open node groups, and the state of a failed commit.
#ifndef LEDGER_STORAGE_STORE_INTERNAL_STORE_REP_H_
#define LEDGER_STORAGE_STORE_INTERNAL_STORE_REP_H_

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ledger/storage/store/internal/rows.h"
#include "ledger/storage/store/store.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/write_batch.h"
#include "util/stats/stats.h"
#include "util/sync/mutex.h"

namespace ledger::store {

struct Batch::Rep {
  rocksdb::WriteBatch wb;   // the log's records: written with the WAL, synced
  rocksdb::WriteBatch pwb;  // projection records: written without the WAL
  const Store* store = nullptr;
  const std::vector<rocksdb::ColumnFamilyHandle*>* cfs = nullptr;
  // Node records this batch rewrites, by (level, group): their whole value.
  std::map<std::pair<int, uint64_t>, std::string> groups;
  const Rep* base = nullptr;             // the uncommitted batch this one follows
  absl::Status error;                    // a node record that could not be read
  std::optional<uint64_t> pruned_below;  // PutPruning's, applied on commit
  void Put(int cf, std::string_view key, std::string_view value) {
    // WriteBatch::Put only fails when the batch exceeds its size limit,
    // which is unlimited here.
    if (!wb.Put((*cfs)[cf], AsSlice(key), AsSlice(value)).ok()) std::abort();
  }
};

struct Store::Rep {
  stats::Histogram sync_us{stats::Histogram::Decades(1e7)};  // before env, which reports to it
  std::unique_ptr<rocksdb::Env> env;                         // timing syncs, with injected faults, if any; outlives db
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  rocksdb::ColumnFamilyOptions projection_options;
  uint64_t memory_bytes = 0;
  const Faults* faults = nullptr;  // the test's, if any (testing.h)
  // Pruning::below of the committed retention row (reads make pruned lines
  // below it).
  std::atomic<uint64_t> pruned_below{0};
  std::shared_ptr<rocksdb::Cache> cache;  // blocks, indexes, filters, and the memtables' charge
  // The last committed record of the rightmost group of each level, so that
  // appending a node does not read it back from RocksDB.
  sync::Mutex open_mu;
  std::map<int, std::pair<uint64_t, std::string>> open_groups ABSL_GUARDED_BY(open_mu);
  // A commit failed: RocksDB stopped writes until it resumes. Only Commit
  // (one committer) touches it.
  bool resume_needed = false;
  std::chrono::steady_clock::time_point failed_at;
  std::chrono::milliseconds resume_window{10'000};
  mutable sync::Mutex failure_mu;
  absl::Status failure ABSL_GUARDED_BY(failure_mu);  // set once RocksDB cannot resume
  ~Rep() {
    for (auto* h : cfs) {
      if (h != nullptr) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    }
    if (db) db->Close().PermitUncheckedError();
  }
  absl::StatusOr<std::string> Get(int cf, std::string_view key, std::string_view what) const {
    std::string value;
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), cfs[cf], AsSlice(key), &value);
    if (!s.ok()) return FromRocks(s, what);
    return value;
  }
};

}  // namespace ledger::store

#endif  // LEDGER_STORAGE_STORE_INTERNAL_STORE_REP_H_
