// The store's value types, which the storage room's headers share without
// the Store itself: the decoded forms of its records (their byte layouts are
// store.h's), what its memory holds, and the declarations of Store, Batch
// and Faults, so that a header that only names them need not include
// store.h.
//
// Thread-safe: plain values.
#ifndef LEDGER_STORAGE_STORE_TYPES_H_
#define LEDGER_STORAGE_STORE_TYPES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "ledger/format/hash/hash.h"

namespace ledger::store {

class Store;    // store.h
class Batch;    // store.h
struct Faults;  // a test hook: ledger/storage/store/testing.h

struct State {
  uint64_t size = 0;              // entries in the log
  hash::Hash head{};              // leaf hash of entry size-1 (zeros if empty)
  int64_t last_logged_at_us = 0;  // logged_at_us of entry size-1
};

// Whose receipt ids a key is unique among (DO NOT CHANGE the values: they
// are stored).
enum class IdSpace : uint8_t {
  kLegacy = 0x00,   // a row of format 1: keyed by the bare receipt_id, team unknown
  kEmitter = 0x01,  // receipts appended by emitters, unique per team
  kLedger = 0x02,   // entries the ledger writes itself (step_unknown)
};

// The idempotency key of a receipt: (space, team, receipt_id).
struct ReceiptKey {
  IdSpace space = IdSpace::kEmitter;
  std::string_view team;
  std::string_view receipt_id;
};
// The stored key of `key` (format 2, store.h; the bare receipt_id for
// kLegacy), for maps keyed like the index.
std::string EncodeReceiptKey(const ReceiptKey& key);

// The head of a run: its number of entries and its last entry. A row of
// format 1 has only last_seq: count is 0 and last_leaf_hash zeros.
struct RunHead {
  uint64_t count = 0;
  uint64_t last_seq = 0;
  hash::Hash last_leaf_hash{};
  bool operator==(const RunHead&) const = default;
};

// Retention (CONTRACT section 9; store.h's "retention" row): entries
// below `below` without a row were pruned, and read as their pruned line;
// `finished_pass` is the last retention pass whose deletions finished.
struct Pruning {
  uint64_t below = 0;
  uint64_t finished_pass = 0;
  bool operator==(const Pruning&) const = default;
};

struct ReceiptRef {
  uint64_t seq = 0;
  hash::Hash leaf_hash{};
  hash::Hash digest{};  // SHA-256 of the canonical receipt
};

// Where RocksDB's memory goes, in bytes (Store::MemoryUse).
struct Memory {
  uint64_t budget = 0;         // memory_bytes of Store::Open
  uint64_t cache = 0;          // what the cache holds, memtables' charge included
  uint64_t cache_pinned = 0;   // of which pinned (level 0 indexes and filters, blocks being read)
  uint64_t memtables = 0;      // the memtables (charged to the cache)
  uint64_t table_readers = 0;  // the table readers outside the cache (the top level of partitioned
                               // indexes and filters)
};

// What RocksDB may hold in memory unless told (Store::Open), and what a
// store needs at least to work at all.
inline constexpr uint64_t kDefaultMemoryBytes = uint64_t{256} << 20;
inline constexpr uint64_t kMinMemoryBytes = uint64_t{16} << 20;

// The number of hashes in one node record (store.h's `nodes`).
inline constexpr uint64_t kNodesPerGroup = 16;

}  // namespace ledger::store

#endif  // LEDGER_STORAGE_STORE_TYPES_H_
