// A run-head or team-head map (ledger/format/runmap) kept in the store, so that
// what a ledger holds in memory does not grow with the number of runs: the
// leaves and the remembered interior node hashes are rows of the store's
// `maps` column family, read through RocksDB's bounded cache. The roots and
// proofs are runmap's, computed by its algorithms over these rows
// (runmap::Source), so they are the in-memory RunMap's bit for bit.
//
// Rows (format 1; DO NOT CHANGE the layouts, stored data depends on them):
//   id u8 | 0x00                     -> 0x01 | size u64: the number of log
//                                       entries whose heads the map holds
//   id u8 | 0x01 | key[32]           -> HeadBytes (runmap.h: count u64 |
//                                       last_seq u64 | last_leaf_hash[32])
//   id u8 | 0x02 | depth u8 | prefix[ceil(depth / 8)]
//                                    -> hash[32]: the hash of an interior
//                                       node with two or more leaves under it
//                                       (its prefix's bits past depth zero)
// id: 0x01 the run-head map under run keys v1 (written by earlier versions;
// forgotten when opened), 0x02 the team-head map, 0x03 the run-head map under
// run keys v2 (CONTRACT section 6a, "Which run key"). Integers big-endian.
// A node row is deleted in the same write that changes a head under it, and
// written again when the root is next computed: a node row present is
// always right, and one missing is computed from the rows below it.
// A store without a map's size row (written by a version that kept the maps
// in memory) is rebuilt from the `runs` or `teams` rows when opened.
//
// The nodes of the top kMemoryDepth levels are also kept in memory once
// LoadTop is called (at most 2^kMemoryDepth of them, whatever the map's
// size), with those whose hash a change made unknown marked as such: a
// root then reads the store only below those levels.
//
// Thread-compatible: the caller serializes writes (Apply, Rebuild, Root,
// LoadTop) against everything else; reads (Get, Prove) may run together.
#ifndef LEDGER_STORAGE_STOREDMAP_STOREDMAP_H_
#define LEDGER_STORAGE_STOREDMAP_STOREDMAP_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ledger/format/runmap/runmap.h"
#include "ledger/storage/store/types.h"

namespace ledger::storedmap {

class StoredMap {
 public:
  enum class Id : uint8_t { kRunsV1 = 1, kTeams = 2, kRuns = 3 };

  // `store` MUST outlive the map.
  StoredMap(store::Store* store, Id id) : store_(store), id_(id) {}

  // The number of log entries the stored map stands at; nullopt when it was
  // never written (a store of an earlier version) or was forgotten.
  absl::StatusOr<std::optional<uint64_t>> Size() const;

  // Replaces the whole map with the heads `scan` passes to its callback,
  // standing at `size`. Written in several commits; the size row last, so
  // that a crash meanwhile leaves a map that the next open rebuilds.
  using Put = absl::FunctionRef<absl::Status(const runmap::Key&, const runmap::Head&)>;
  absl::Status Rebuild(uint64_t size, absl::FunctionRef<absl::Status(Put)> scan);

  // Sets the heads of `leaves` and moves the size to `size`, in one commit.
  // INVALID_ARGUMENT (runmap::CheckHead) for a bad head changes nothing.
  absl::Status Apply(uint64_t size, absl::Span<const runmap::Leaf> leaves);

  absl::StatusOr<std::optional<runmap::Head>> Get(const runmap::Key& key) const;

  // The root. Node hashes it computes are written back (in commits of at
  // most kNodesPerCommit rows), so that the next root reads them.
  static constexpr size_t kNodesPerCommit = 10'000;
  absl::StatusOr<runmap::Hash> Root();

  // The key's path (runmap::ProvePath): an inclusion proof when present,
  // else an absence proof. Writes nothing.
  absl::StatusOr<runmap::Path> Prove(const runmap::Key& key) const;

  // Reads the top levels' node rows into memory; from then on they are
  // kept there too.
  static constexpr int kMemoryDepth = 16;
  absl::Status LoadTop();

  // Removes every row of the map `id` (its next open rebuilds it).
  static absl::Status Forget(store::Store& store, Id id);

  // Row keys, for tests.
  std::string SizeKey() const;
  std::string LeafKey(const runmap::Key& key) const;
  std::string NodeKey(const runmap::NodeId& node) const;

 private:
  // runmap::Source::leaves over the rows.
  absl::StatusOr<int> Leaves(const runmap::NodeId& node, runmap::Leaf* first) const;
  absl::StatusOr<std::optional<runmap::Hash>> Node(const runmap::NodeId& node) const;

  store::Store* const store_;
  const Id id_;
  // With LoadTop: every remembered node above kMemoryDepth, with its hash,
  // or nullopt for one that has two or more leaves under it and whose hash
  // a change made unknown. A node absent here has no row.
  bool top_loaded_ = false;
  absl::flat_hash_map<runmap::NodeId, std::optional<runmap::Hash>> top_;
};

}  // namespace ledger::storedmap

#endif  // LEDGER_STORAGE_STOREDMAP_STOREDMAP_H_
