// The RocksDB plug-ins the store configures: its logger, the file system
// that times syncs and injects faults for tests, and memtable insert hints. Internal to
// ledger/storage/store; RocksDB types stay below store.h.
//
// Thread-safe: the objects hold no mutable state of their own (the fault
// switches are atomics).
#ifndef LEDGER_STORAGE_STORE_INTERNAL_ROCKSDB_PLUGINS_H_
#define LEDGER_STORAGE_STORE_INTERNAL_ROCKSDB_PLUGINS_H_

#include <memory>

#include "ledger/storage/store/store.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"
#include "rocksdb/slice_transform.h"

namespace ledger::store {

// RocksDB's own messages, warnings and worse only, to stderr as JSON lines
// (util/jsonlog, event "rocksdb"): not into a
// LOG file on the data disk, where a full disk would make the logger itself
// fail (Debian's RocksDB asserts when its LOG file cannot be written).
std::shared_ptr<rocksdb::Logger> NewStderrLogger();

// `target`, with each sync of a written file timed into `sync_us`
// (microseconds), and writes and syncs failing while `faults` says so.
// Either may be null; both MUST outlive the file system.
std::shared_ptr<rocksdb::FileSystem> NewStoreFileSystem(const std::shared_ptr<rocksdb::FileSystem>& target,
                                                        const Faults* faults, stats::Histogram* sync_us);

// Memtable insert hints (memtable_insert_with_hint_prefix_extractor): rows
// that share a prefix mostly arrive in key order, so an insert can start
// where the last one with its prefix ended instead of searching the whole
// skip list. The prefix is projection::KeyPrefixLength's
// (ledger/format/projection/keys.h): the first `parts` parts, after a family byte
// for index rows; deadline rows all share the prefix "D". `name` MUST be a
// string literal.
const rocksdb::SliceTransform* NewKeyPrefix(bool family_byte, int parts, const char* name);

}  // namespace ledger::store

#endif  // LEDGER_STORAGE_STORE_INTERNAL_ROCKSDB_PLUGINS_H_
