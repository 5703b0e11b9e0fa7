// The store's rows, inside the library: column families in their order,
// keys and the encodings of values, as documented in store.h. Not part of
// the store's interface.
#ifndef LEDGER_STORAGE_STORE_INTERNAL_ROWS_H_
#define LEDGER_STORAGE_STORE_INTERNAL_ROWS_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/projection/projection.h"
#include "ledger/storage/store/store.h"
#include "rocksdb/options.h"
#include "rocksdb/slice.h"
#include "rocksdb/status.h"

namespace ledger::store {

constexpr char kFormatV1 = 0x01;
constexpr char kStateKey[] = "state";
constexpr char kPruningKey[] = "retention";
constexpr char kPrunedReplayKey[] = "retention_replay";
constexpr char kPolicyKeyPrefix[] = "retention_policy/";
constexpr size_t kPruningSize = 1 + 8 + 8;
constexpr size_t kStateSize = 1 + 8 + 32 + 8;
constexpr size_t kReceiptRefSize = 1 + 8 + 32 + 32;

// Order matters: it is the order of Store::Rep::cfs. The projection tables
// follow, in projection::Table order.
enum Cf {
  kDefault = 0,
  kEntries,
  kReceipts,
  kNodes,
  kRuns,
  kCheckpoints,
  kCheckpointTimes,
  kTeams,
  kMaps,
  kMapCosignatures,
  kRunSeqs,
  kTimeStamps,
  kLogCfCount
};
constexpr int kCfCount = kLogCfCount + projection::kTableCount;

inline int ProjectionCf(projection::Table t) { return kLogCfCount + static_cast<int>(t); }

// The column family's name in RocksDB.
const char* CfName(int cf);

inline void PutU64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

inline uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | static_cast<uint8_t>(p[i]);
  return v;
}

inline std::string U64Key(uint64_t v) {
  std::string k;
  PutU64(&k, v);
  return k;
}

inline std::string NodeKey(int level, uint64_t group) {
  std::string k(1, static_cast<char>(level));
  PutU64(&k, group);
  return k;
}

constexpr char kRunHeadFormat2 = 0x02;
constexpr size_t kRunHeadBytes = 1 + 8 + 8 + 32;

inline std::string RunKey(std::string_view team, std::string_view run_id) {
  std::string k(1, static_cast<char>(team.size()));
  k.append(team);
  k.append(run_id);
  return k;
}

// A run's rows in `run_seqs`: this prefix, then the seq.
inline std::string RunSeqPrefix(std::string_view team, std::string_view run_id) {
  std::string k(1, static_cast<char>(team.size()));
  k.append(team);
  k.push_back(static_cast<char>(run_id.size()));
  k.append(run_id);
  return k;
}

inline void AppendHash(std::string* out, const hash::Hash& h) {
  out->append(reinterpret_cast<const char*>(h.data()), h.size());
}

inline hash::Hash ReadHash(const char* p) {
  hash::Hash h;
  std::memcpy(h.data(), p, h.size());
  return h;
}

// A RocksDB status as the store reports it, naming `what` failed.
absl::Status FromRocks(const rocksdb::Status& s, std::string_view what);
// DATA_LOSS: a row that does not parse.
absl::Status Malformed(std::string_view what);
inline rocksdb::Slice AsSlice(std::string_view s) { return {s.data(), s.size()}; }

// The first byte of a receipt index key of format 2; no receipt_id (a
// format-1 key) starts with it.
constexpr char kReceiptKeyV2 = 0x00;

absl::StatusOr<ReceiptKey> DecodeReceiptKey(std::string_view k);
absl::StatusOr<ReceiptRef> DecodeReceiptRef(std::string_view v);
absl::StatusOr<RunHead> DecodeRunHead(std::string_view v);
// A run's or a team's head, format 2.
std::string EncodeHead(const RunHead& head);

// Reads of many entries or rows in a row (exports, replays, audits, tiles)
// pass by the cache: they would evict the indexes, filters and hot blocks
// appends and lookups use, and raise memory by what they read.
rocksdb::ReadOptions BulkRead();

}  // namespace ledger::store

#endif  // LEDGER_STORAGE_STORE_INTERNAL_ROWS_H_
