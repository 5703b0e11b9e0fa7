// Test hooks of the store: tests set them, the store's file system
// (rocksdb_plugins.cc) reads them; nothing else includes this header.
//
// Thread-safe: the flags are atomics, flipped by a test while the store runs.
#ifndef LEDGER_STORAGE_STORE_TESTING_H_
#define LEDGER_STORAGE_STORE_TESTING_H_

#include <atomic>

namespace ledger::store {

// Storage faults, for Store::Open: while a flag is set, writes (or syncs) of
// the store's files fail with an I/O error, as a full or failing disk would.
struct Faults {
  std::atomic<bool> fail_writes{false};
  std::atomic<bool> fail_syncs{false};
  // Marked retryable (RocksDB then recovers by itself once they stop, as it
  // does for a full disk), or not (as for EIO: only a restart recovers).
  std::atomic<bool> retryable{false};
};

}  // namespace ledger::store

#endif  // LEDGER_STORAGE_STORE_TESTING_H_
