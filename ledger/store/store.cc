#include "ledger/store/store.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "ledger/store/rocksdb_plugins.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/checkpoint.h"
#include "rocksdb/write_batch.h"
#include "rocksdb/write_buffer_manager.h"
#include "util/sync/mutex.h"

namespace ledger::store {
namespace {

constexpr char kFormatV1 = 0x01;
constexpr char kStateKey[] = "state";
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
  kLogCfCount
};
constexpr int kCfCount = kLogCfCount + projection::kTableCount;
const char* const kLogCfNames[kLogCfCount] = {"default",     "entries",          "receipts", "nodes", "runs",
                                              "checkpoints", "checkpoint_times", "teams",    "maps"};

int ProjectionCf(projection::Table t) { return kLogCfCount + static_cast<int>(t); }

const char* CfName(int cf) {
  return cf < kLogCfCount ? kLogCfNames[cf] : projection::TableName(static_cast<projection::Table>(cf - kLogCfCount));
}

void PutU64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | static_cast<uint8_t>(p[i]);
  return v;
}

std::string U64Key(uint64_t v) {
  std::string k;
  PutU64(&k, v);
  return k;
}

std::string NodeKey(int level, uint64_t group) {
  std::string k(1, static_cast<char>(level));
  PutU64(&k, group);
  return k;
}

constexpr char kRunHeadFormat2 = 0x02;
constexpr size_t kRunHeadBytes = 1 + 8 + 8 + 32;

absl::StatusOr<RunHead> DecodeRunHead(std::string_view v);

std::string RunKey(std::string_view team, std::string_view run_id) {
  std::string k(1, static_cast<char>(team.size()));
  k.append(team);
  k.append(run_id);
  return k;
}

void AppendHash(std::string* out, const hash::Hash& h) {
  out->append(reinterpret_cast<const char*>(h.data()), h.size());
}

hash::Hash ReadHash(const char* p) {
  hash::Hash h;
  std::memcpy(h.data(), p, h.size());
  return h;
}

absl::Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = absl::StrCat("storage: ", std::string(what), ": ", s.ToString());
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  if (s.IsCorruption()) return absl::DataLossError(msg);
  return absl::UnavailableError(msg);
}

absl::Status Malformed(std::string_view what) {
  return absl::DataLossError(absl::StrCat("storage: malformed ", std::string(what)));
}

rocksdb::Slice AsSlice(std::string_view s) { return {s.data(), s.size()}; }

// The first byte of a receipt index key of format 2; no receipt_id (a
// format-1 key) starts with it.
constexpr char kReceiptKeyV2 = 0x00;

absl::StatusOr<ReceiptKey> DecodeReceiptKey(std::string_view k) {
  if (k.empty()) return Malformed("receipt index key");
  if (k[0] != kReceiptKeyV2) return ReceiptKey{IdSpace::kLegacy, {}, k};
  if (k.size() < 4) return Malformed("receipt index key");
  auto space = static_cast<IdSpace>(k[1]);
  if (space != IdSpace::kEmitter && space != IdSpace::kLedger) return Malformed("receipt index key");
  size_t team = static_cast<uint8_t>(k[2]);
  if (k.size() <= 3 + team) return Malformed("receipt index key");
  return ReceiptKey{space, k.substr(3, team), k.substr(3 + team)};
}

absl::StatusOr<ReceiptRef> DecodeReceiptRef(std::string_view v) {
  if (v.size() != kReceiptRefSize || v[0] != kFormatV1) return Malformed("receipt index row");
  ReceiptRef ref;
  ref.seq = GetU64(v.data() + 1);
  ref.leaf_hash = ReadHash(v.data() + 9);
  ref.digest = ReadHash(v.data() + 41);
  return ref;
}

absl::StatusOr<RunHead> DecodeRunHead(std::string_view v) {
  RunHead head;
  if (v.size() == 8) {  // format 1: the last seq alone
    head.last_seq = GetU64(v.data());
    return head;
  }
  if (v.size() != kRunHeadBytes || v[0] != kRunHeadFormat2) return Malformed("run head");
  head.count = GetU64(v.data() + 1);
  head.last_seq = GetU64(v.data() + 9);
  head.last_leaf_hash = ReadHash(v.data() + 17);
  if (head.count == 0 || head.count > head.last_seq + 1) return Malformed("run head");
  return head;
}

}  // namespace

std::string EncodeReceiptKey(const ReceiptKey& key) {
  if (key.space == IdSpace::kLegacy) return std::string(key.receipt_id);
  std::string k;
  k.reserve(3 + key.team.size() + key.receipt_id.size());
  k.push_back(kReceiptKeyV2);
  k.push_back(static_cast<char>(key.space));
  k.push_back(static_cast<char>(key.team.size()));
  k.append(key.team);
  k.append(key.receipt_id);
  return k;
}

struct Batch::Rep {
  rocksdb::WriteBatch wb;   // the log's records: written with the WAL, synced
  rocksdb::WriteBatch pwb;  // projection records: written without the WAL
  const Store* store = nullptr;
  const std::vector<rocksdb::ColumnFamilyHandle*>* cfs = nullptr;
  // Node records this batch rewrites, by (level, group): their whole value.
  std::map<std::pair<int, uint64_t>, std::string> groups;
  const Rep* base = nullptr;  // the uncommitted batch this one follows
  absl::Status error;         // a node record that could not be read
  void Put(int cf, std::string_view key, std::string_view value) {
    // WriteBatch::Put only fails when the batch exceeds its size limit,
    // which is unlimited here.
    if (!wb.Put((*cfs)[cf], AsSlice(key), AsSlice(value)).ok()) std::abort();
  }
};

namespace {

// Reads of many entries or rows in a row (exports, replays, audits, tiles)
// pass by the cache: they would evict the indexes, filters and hot blocks
// appends and lookups use, and raise memory by what they read.
rocksdb::ReadOptions BulkRead() {
  rocksdb::ReadOptions options;
  options.fill_cache = false;
  return options;
}

}  // namespace

struct Store::Rep {
  stats::Histogram sync_us{stats::Histogram::Decades(1e7)};  // before env, which reports to it
  std::unique_ptr<rocksdb::Env> env;                         // timing syncs, with injected faults, if any; outlives db
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  rocksdb::ColumnFamilyOptions projection_options;
  uint64_t memory_bytes = 0;
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

Batch::Batch(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
Batch::~Batch() = default;
Batch::Batch(Batch&&) noexcept = default;
Batch& Batch::operator=(Batch&&) noexcept = default;

void Batch::PutEntry(uint64_t seq, std::string_view leaf) { rep_->Put(kEntries, U64Key(seq), leaf); }

void Batch::PutReceipt(const ReceiptKey& key, const ReceiptRef& ref) {
  std::string v(1, kFormatV1);
  PutU64(&v, ref.seq);
  AppendHash(&v, ref.leaf_hash);
  AppendHash(&v, ref.digest);
  rep_->Put(kReceipts, EncodeReceiptKey(key), v);
}

void Batch::DeleteLegacyReceipt(std::string_view receipt_id) {
  if (!rep_->wb.Delete((*rep_->cfs)[kReceipts], AsSlice(receipt_id)).ok()) std::abort();
}

void Batch::PutNode(int level, uint64_t index, const hash::Hash& h) {
  uint64_t group = index / Store::kNodesPerGroup;
  size_t offset = (index % Store::kNodesPerGroup) * 32;
  auto [it, fresh] = rep_->groups.try_emplace({level, group});
  std::string& value = it->second;
  if (fresh && offset > 0 && rep_->base != nullptr) {
    if (auto b = rep_->base->groups.find({level, group}); b != rep_->base->groups.end()) {
      value = b->second;
      fresh = false;
    }
  }
  if (fresh && offset > 0) {
    auto stored = rep_->store->NodeGroup(level, group);
    if (!stored.ok()) {
      rep_->error = stored.status();
      return;
    }
    value = *std::move(stored);
  }
  if (offset > value.size()) std::abort();  // nodes of a level are put in order
  value.resize(std::max(value.size(), offset + 32));
  std::memcpy(value.data() + offset, h.data(), 32);
}

void Batch::PutRunHeadOfFormat1(std::string_view team, std::string_view run_id, uint64_t last_seq) {
  rep_->Put(kRuns, RunKey(team, run_id), U64Key(last_seq));
}

namespace {

// A run's or a team's head, format 2.
std::string EncodeHead(const RunHead& head) {
  std::string v;
  v.reserve(kRunHeadBytes);
  v.push_back(kRunHeadFormat2);
  v.append(U64Key(head.count));
  v.append(U64Key(head.last_seq));
  v.append(reinterpret_cast<const char*>(head.last_leaf_hash.data()), head.last_leaf_hash.size());
  return v;
}

}  // namespace

void Batch::PutRunHead(std::string_view team, std::string_view run_id, const RunHead& head) {
  rep_->Put(kRuns, RunKey(team, run_id), EncodeHead(head));
}

void Batch::PutTeamHead(std::string_view team, const RunHead& head) { rep_->Put(kTeams, team, EncodeHead(head)); }

void Batch::DeleteTeamHead(std::string_view team) {
  if (!rep_->wb.Delete((*rep_->cfs)[kTeams], AsSlice(team)).ok()) std::abort();
}

void Batch::PutMapRow(std::string_view key, std::string_view value) { rep_->Put(kMaps, key, value); }

void Batch::DeleteMapRow(std::string_view key) {
  if (!rep_->wb.Delete((*rep_->cfs)[kMaps], AsSlice(key)).ok()) std::abort();
}

void Batch::DeleteMapRows(std::string_view from, std::string_view to) {
  if (!rep_->wb.DeleteRange((*rep_->cfs)[kMaps], AsSlice(from), AsSlice(to)).ok()) std::abort();
}

void Batch::PutProjection(projection::Table t, std::string_view key, std::string_view value) {
  if (!rep_->pwb.Put((*rep_->cfs)[ProjectionCf(t)], AsSlice(key), AsSlice(value)).ok()) {
    std::abort();
  }
}

void Batch::DeleteProjection(projection::Table t, std::string_view key) {
  if (!rep_->pwb.Delete((*rep_->cfs)[ProjectionCf(t)], AsSlice(key)).ok()) std::abort();
}

void Batch::PutProjections(const projection::OverlayTxn::Writes& writes) {
  for (int t = 0; t < projection::kTableCount; ++t) {
    auto table = static_cast<projection::Table>(t);
    for (const auto& [key, value] : writes[t]) {
      if (value.has_value()) {
        PutProjection(table, key, *value);
      } else {
        DeleteProjection(table, key);
      }
    }
  }
}

void Batch::PutState(const State& s) {
  std::string v(1, kFormatV1);
  PutU64(&v, s.size);
  AppendHash(&v, s.head);
  PutU64(&v, static_cast<uint64_t>(s.last_logged_at_us));
  rep_->Put(kDefault, kStateKey, v);
}

Store::Store(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}

Store::~Store() = default;

const stats::Histogram& Store::sync_us() const { return rep_->sync_us; }

uint64_t Store::TableReaderBytes() const {
  uint64_t bytes = 0;
  rep_->db->GetAggregatedIntProperty("rocksdb.estimate-table-readers-mem", &bytes);
  return bytes;
}

Store::Memory Store::MemoryUse() const {
  Memory m;
  m.budget = rep_->memory_bytes;
  m.cache = rep_->cache->GetUsage();
  m.cache_pinned = rep_->cache->GetPinnedUsage();
  rep_->db->GetAggregatedIntProperty("rocksdb.size-all-mem-tables", &m.memtables);
  m.table_readers = TableReaderBytes();
  return m;
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& dir, Faults* faults, uint64_t memory_bytes) {
  if (memory_bytes < kMinMemoryBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory: at least ", kMinMemoryBytes >> 20, " MiB, not ", memory_bytes >> 20, " MiB"));
  }
  auto rep = std::make_unique<Rep>();
  rep->memory_bytes = memory_bytes;
  // Index and filter blocks go first in the cache's high-priority half, so
  // data blocks are evicted before them.
  rocksdb::LRUCacheOptions cache_options;
  cache_options.capacity = memory_bytes;
  cache_options.high_pri_pool_ratio = 0.5;
  rep->cache = rocksdb::NewLRUCache(cache_options);
  rocksdb::Options options;
  // Memtables of every column family together take at most half the
  // budget, charged to the cache: their memory is the cache's.
  options.write_buffer_manager = std::make_shared<rocksdb::WriteBufferManager>(memory_bytes / 2, rep->cache);
  rep->env = rocksdb::NewCompositeEnv(NewStoreFileSystem(rocksdb::FileSystem::Default(), faults, &rep->sync_us));
  options.env = rep->env.get();
  options.create_if_missing = true;
  options.info_log = NewStderrLogger();
  options.create_missing_column_families = true;
  // Made here, so that RocksDB does not report a new store's missing
  // directory as an error.
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  options.IncreaseParallelism(2);
  options.max_open_files = 512;
  // Projection records skip the WAL; flushing every column family together
  // keeps what reaches disk a state at one batch boundary, which the
  // projected-size marker names.
  options.atomic_flush = true;
  // After a retryable write error (a full disk), RocksDB tries to resume
  // every 100 ms until it can.
  options.bgerror_resume_retry_interval = 100'000;

  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.block_cache = rep->cache;
  // Indexes and filters grow with the store (about 2 bytes per key):
  // outside the cache they would grow RSS without bound. Partitioned, a
  // lookup reads only the partition it needs; level 0's and the top-level
  // indexes stay pinned, as each flush and lookup uses them.
  table.cache_index_and_filter_blocks = true;
  table.cache_index_and_filter_blocks_with_high_priority = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  table.pin_top_level_index_and_filter = true;
  table.index_type = rocksdb::BlockBasedTableOptions::IndexType::kTwoLevelIndexSearch;
  table.partition_filters = true;
  table.metadata_block_size = 4096;
  // Debian's RocksDB computes CRC-32C without the CPU's instruction; XXH3
  // block checksums cost the flush thread a fraction of that. Each table
  // file records its checksum type, so older files still read.
  table.checksum = rocksdb::kXXH3;
  rocksdb::ColumnFamilyOptions cf_options(options);
  cf_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  // Hashes and ids do not compress; leaves (JSON) do, and LZ4 costs the
  // flush thread little.
  cf_options.compression = rocksdb::kNoCompression;
  rocksdb::ColumnFamilyOptions entry_options = cf_options;
  entry_options.compression = rocksdb::kLZ4Compression;
  // Entries arrive in key order: a memtable insert can start where the last
  // one ended instead of searching the skip list.
  entry_options.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(0));

  // Receipt ids and run heads are looked up once per append, and most
  // lookups of receipt ids miss: a memtable bloom filter answers those
  // without searching the memtable.
  rocksdb::ColumnFamilyOptions lookup_options = cf_options;
  lookup_options.memtable_whole_key_filtering = true;
  lookup_options.memtable_prefix_bloom_size_ratio = 0.05;
  // Step changes arrive in seq order, like entries, and are only scanned,
  // never looked up by key: no memtable bloom filter to feed.
  rocksdb::ColumnFamilyOptions change_options = cf_options;
  change_options.memtable_insert_with_hint_prefix_extractor = entry_options.memtable_insert_with_hint_prefix_extractor;
  rocksdb::ColumnFamilyOptions index_options = lookup_options;
  index_options.memtable_insert_with_hint_prefix_extractor.reset(NewKeyPrefix(true, 1, "ledger.IndexFamilyAndTeam.v1"));
  rocksdb::ColumnFamilyOptions step_options = lookup_options;
  step_options.memtable_insert_with_hint_prefix_extractor.reset(NewKeyPrefix(false, 2, "ledger.TeamAndRun.v1"));
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (int cf = 0; cf < kCfCount; ++cf) {
    bool lookup = cf == kReceipts || cf == kRuns || cf == kTeams || cf == kMaps || cf >= kLogCfCount;
    descriptors.emplace_back(CfName(cf), cf == kEntries                                    ? entry_options
                                         : cf == ProjectionCf(projection::Table::kChanges) ? change_options
                                         : cf == ProjectionCf(projection::Table::kIndex)   ? index_options
                                         : cf == ProjectionCf(projection::Table::kSteps)   ? step_options
                                         : lookup                                          ? lookup_options
                                                                                           : cf_options);
  }
  rep->projection_options = lookup_options;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(rocksdb::DBOptions(options), dir, descriptors, &rep->cfs, &db);
  if (!s.ok()) return FromRocks(s, absl::StrCat("open ", dir));
  rep->db.reset(db);
  return std::unique_ptr<Store>(new Store(std::move(rep)));
}

Batch Store::NewBatch(const Batch* base) const {
  auto rep = std::make_unique<Batch::Rep>();
  rep->store = this;
  rep->base = base != nullptr ? base->rep_.get() : nullptr;
  rep->cfs = &rep_->cfs;
  return Batch(std::move(rep));
}

absl::Status Store::Commit(Batch& batch) {
  Batch::Rep& b = *batch.rep_;
  if (!b.error.ok()) return b.error;
  b.base = nullptr;
  for (const auto& [key, value] : b.groups) b.Put(kNodes, NodeKey(key.first, key.second), value);
  if (rep_->resume_needed) {
    // The failed batch never reached the memtables, but its record may sit
    // unsynced in the old WAL. RocksDB resumes by itself from a retryable
    // error (a full disk), switching to a new WAL; once a flush of every
    // column family goes through, recovery skips the old WAL, so the failed
    // batch can never reappear, even after a crash. An error it cannot
    // resume from keeps failing: after the resume window the store says so, and
    // a restart (reopening the store) recovers.
    rocksdb::FlushOptions wait;
    rocksdb::Status r = rep_->db->Flush(wait, rep_->cfs);
    if (!r.ok()) {
      absl::Status s = FromRocks(r, "the disk is still failing");
      if (std::chrono::steady_clock::now() - rep_->failed_at > rep_->resume_window) {
        sync::MutexLock lock(&rep_->failure_mu);
        rep_->failure = absl::UnavailableError(absl::StrCat("storage: writes have failed for ",
                                                            absl::FormatDuration(absl::FromChrono(rep_->resume_window)),
                                                            " and RocksDB has not resumed: ", s.message()));
        return rep_->failure;
      }
      return s;
    }
    rep_->resume_needed = false;
  }
  rocksdb::WriteOptions options;
  options.sync = true;
  if (b.wb.Count() > 0) {
    if (auto s = FromRocks(rep_->db->Write(options, &b.wb), "commit"); !s.ok()) {
      if (!rep_->resume_needed) rep_->failed_at = std::chrono::steady_clock::now();
      rep_->resume_needed = true;
      return s;
    }
  }
  if (b.pwb.Count() > 0) {
    rocksdb::WriteOptions no_wal;
    no_wal.disableWAL = true;
    rocksdb::Status s = rep_->db->Write(no_wal, &b.pwb);
    if (!s.ok()) {
      // The log's part is durable and cannot be taken back; memory must not
      // claim projections the store does not have. A restart catches the
      // projections up from the log.
      std::fprintf(stderr, "storage: projection write failed after the log's: %s; stopping\n", s.ToString().c_str());
      std::abort();
    }
  }
  sync::MutexLock lock(&rep_->open_mu);
  for (const auto& [key, value] : b.groups) {
    auto& open = rep_->open_groups[key.first];
    if (open.second.empty() || key.second >= open.first) open = {key.second, value};
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Store::NodeGroup(int level, uint64_t group) const {
  {
    sync::MutexLock lock(&rep_->open_mu);
    auto it = rep_->open_groups.find(level);
    if (it != rep_->open_groups.end() && it->second.first == group) return it->second.second;
  }
  auto v = rep_->Get(kNodes, NodeKey(level, group), absl::StrCat("tree nodes (level ", level, ", group ", group, ")"));
  if (absl::IsNotFound(v.status())) return std::string();
  if (!v.ok()) return v.status();
  if (v->empty() || v->size() % 32 != 0 || v->size() > kNodesPerGroup * 32) {
    return Malformed("tree node record");
  }
  return v;
}

absl::StatusOr<State> Store::ReadState() const {
  auto v = rep_->Get(kDefault, kStateKey, "read state");
  if (absl::IsNotFound(v.status())) return State{};
  if (!v.ok()) return v.status();
  if (v->size() != kStateSize || (*v)[0] != kFormatV1) return Malformed("state record");
  State s;
  s.size = GetU64(v->data() + 1);
  s.head = ReadHash(v->data() + 9);
  s.last_logged_at_us = static_cast<int64_t>(GetU64(v->data() + 41));
  return s;
}

absl::StatusOr<std::string> Store::GetLeaf(uint64_t seq) const {
  return rep_->Get(kEntries, U64Key(seq), absl::StrCat("entry ", seq));
}

absl::StatusOr<hash::Hash> Store::GetNode(int level, uint64_t index) const {
  auto v = rep_->Get(kNodes, NodeKey(level, index / kNodesPerGroup),
                     absl::StrCat("tree node (level ", level, ", index ", index, ")"));
  if (!v.ok()) return v.status();
  if (v->empty() || v->size() % 32 != 0 || v->size() > kNodesPerGroup * 32) {
    return Malformed("tree node record");
  }
  size_t offset = (index % kNodesPerGroup) * 32;
  if (v->size() < offset + 32) {
    return absl::NotFoundError(absl::StrCat("storage: tree node (level ", level, ", index ", index, "): NotFound"));
  }
  return ReadHash(v->data() + offset);
}

absl::StatusOr<std::vector<hash::Hash>> Store::GetNodeGroup(int level, uint64_t group) const {
  auto v = rep_->Get(kNodes, NodeKey(level, group),
                     absl::StrCat("tree node (level ", level, ", index ", group * kNodesPerGroup, ")"));
  if (!v.ok()) return v.status();
  if (v->empty() || v->size() % 32 != 0 || v->size() > kNodesPerGroup * 32) {
    return Malformed("tree node record");
  }
  std::vector<hash::Hash> out(v->size() / 32);
  for (size_t i = 0; i < out.size(); ++i) out[i] = ReadHash(v->data() + i * 32);
  return out;
}

absl::StatusOr<std::optional<ReceiptRef>> Store::FindReceipt(const ReceiptKey& key) const {
  auto v = rep_->Get(kReceipts, EncodeReceiptKey(key), "receipt index");
  if (absl::IsNotFound(v.status())) return std::nullopt;
  if (!v.ok()) return v.status();
  return DecodeReceiptRef(*v);
}

absl::StatusOr<std::optional<RunHead>> Store::GetRunHead(std::string_view team, std::string_view run_id) const {
  auto v = rep_->Get(kRuns, RunKey(team, run_id), "run head");
  if (absl::IsNotFound(v.status())) return std::nullopt;
  if (!v.ok()) return v.status();
  return DecodeRunHead(*v);
}

absl::Status Store::ScanLeaves(uint64_t from, uint64_t to,
                               absl::FunctionRef<absl::Status(uint64_t seq, std::string_view leaf)> fn) const {
  if (from >= to) return absl::OkStatus();
  rocksdb::ReadOptions options = BulkRead();
  std::string upper = U64Key(to);
  rocksdb::Slice upper_slice(upper);
  options.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(options, rep_->cfs[kEntries]));
  uint64_t want = from;
  for (it->Seek(U64Key(from)); it->Valid(); it->Next()) {
    if (it->key().size() != 8) return Malformed("entry key");
    uint64_t seq = GetU64(it->key().data());
    if (seq != want) {
      return absl::DataLossError(absl::StrCat("storage: entry ", want, " is missing"));
    }
    if (auto s = fn(seq, std::string_view(it->value().data(), it->value().size())); !s.ok()) {
      return s;
    }
    ++want;
  }
  if (auto s = FromRocks(it->status(), "scan entries"); !s.ok()) return s;
  if (want != to) {
    return absl::DataLossError(absl::StrCat("storage: entry ", want, " is missing"));
  }
  return absl::OkStatus();
}

absl::Status Store::WalkLeavesBack(
    uint64_t from,
    absl::FunctionRef<absl::StatusOr<std::optional<uint64_t>>(uint64_t seq, std::string_view leaf)> next) const {
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(rocksdb::ReadOptions(), rep_->cfs[kEntries]));
  std::optional<uint64_t> at = from;
  it->Seek(U64Key(from));
  // Steps of one seq back in a row, and the lowest seq read forwards.
  constexpr int kDenseSteps = 64;
  int dense = 0;
  uint64_t warm_from = from;
  auto warm = [&](uint64_t below) {
    uint64_t lo = below > kWarmEntries ? below - kWarmEntries : 0;
    rocksdb::ReadOptions options = BulkRead();
    options.readahead_size = 2 << 20;
    std::string lo_key = U64Key(lo), hi_key = U64Key(below);
    rocksdb::Slice hi_slice(hi_key);
    options.iterate_upper_bound = &hi_slice;
    std::unique_ptr<rocksdb::Iterator> ahead(rep_->db->NewIterator(options, rep_->cfs[kEntries]));
    for (ahead->Seek(lo_key); ahead->Valid(); ahead->Next()) {
    }
    warm_from = lo;
  };
  while (at.has_value()) {
    if (!it->Valid() || it->key().size() != 8 || GetU64(it->key().data()) != *at) {
      if (auto s = FromRocks(it->status(), "walk entries"); !s.ok()) return s;
      return absl::DataLossError(absl::StrCat("storage: entry ", *at, " is missing"));
    }
    auto to = next(*at, std::string_view(it->value().data(), it->value().size()));
    if (!to.ok()) return to.status();
    if (to->has_value() && **to >= *at) std::abort();  // the caller's contract
    if (to->has_value() && **to + 1 == *at) {
      if (++dense >= kDenseSteps && **to < warm_from) warm(*at);
      it->Prev();
    } else if (to->has_value()) {
      dense = 0;
      it->Seek(U64Key(**to));
    }
    at = *to;
  }
  return absl::OkStatus();
}

absl::Status Store::CommitMapRows(Batch& batch) {
  Batch::Rep& b = *batch.rep_;
  if (!b.groups.empty() || b.pwb.Count() > 0) std::abort();  // a bug: map rows only
  if (b.wb.Count() == 0) return absl::OkStatus();
  rocksdb::WriteOptions options;
  options.sync = true;
  return FromRocks(rep_->db->Write(options, &b.wb), "write maps");
}

absl::StatusOr<std::optional<std::string>> Store::GetMapRow(std::string_view key) const {
  auto v = rep_->Get(kMaps, key, "maps");
  if (absl::IsNotFound(v.status())) return std::nullopt;
  if (!v.ok()) return v.status();
  return *std::move(v);
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Store::MapRows(std::string_view from,
                                                                                std::string_view to, size_t limit,
                                                                                bool reverse) const {
  rocksdb::ReadOptions options;
  rocksdb::Slice lower = AsSlice(from), upper = AsSlice(to);
  options.iterate_lower_bound = &lower;
  options.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(options, rep_->cfs[kMaps]));
  std::vector<std::pair<std::string, std::string>> rows;
  for (reverse ? it->SeekToLast() : it->Seek(lower); it->Valid() && rows.size() < limit;
       reverse ? it->Prev() : it->Next()) {
    rows.emplace_back(it->key().ToString(), it->value().ToString());
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scan maps");
  return rows;
}

absl::StatusOr<std::optional<std::string>> Store::GetProjection(projection::Table t, std::string_view key) const {
  auto v = rep_->Get(ProjectionCf(t), key, projection::TableName(t));
  if (absl::IsNotFound(v.status())) return std::nullopt;
  if (!v.ok()) return v.status();
  return *std::move(v);
}

absl::Status Store::ScanProjection(projection::Table t, std::string_view from, std::string_view to, bool reverse,
                                   absl::FunctionRef<bool(std::string_view key, std::string_view value)> fn) const {
  rocksdb::ReadOptions options;
  rocksdb::Slice lower = AsSlice(from), upper = AsSlice(to);
  options.iterate_lower_bound = &lower;
  if (!to.empty()) options.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(options, rep_->cfs[ProjectionCf(t)]));
  if (reverse) {
    it->SeekToLast();
  } else {
    it->Seek(lower);
  }
  for (; it->Valid(); reverse ? it->Prev() : it->Next()) {
    if (!fn(std::string_view(it->key().data(), it->key().size()),
            std::string_view(it->value().data(), it->value().size()))) {
      break;
    }
  }
  return FromRocks(it->status(), absl::StrCat("scan ", projection::TableName(t)));
}

absl::Status Store::DropProjections() {
  for (int i = 0; i < projection::kTableCount; ++i) {
    int cf = kLogCfCount + i;
    rocksdb::Status s = rep_->db->DropColumnFamily(rep_->cfs[cf]);
    if (!s.ok()) return FromRocks(s, absl::StrCat("drop ", CfName(cf)));
    rep_->db->DestroyColumnFamilyHandle(rep_->cfs[cf]).PermitUncheckedError();
    rep_->cfs[cf] = nullptr;
    s = rep_->db->CreateColumnFamily(rep_->projection_options, CfName(cf), &rep_->cfs[cf]);
    if (!s.ok()) return FromRocks(s, absl::StrCat("create ", CfName(cf)));
  }
  return absl::OkStatus();
}

absl::Status Store::PutCheckpoint(uint64_t size, std::string_view note, std::string_view time_note) {
  rocksdb::WriteBatch wb;
  std::string key = U64Key(size);
  if (!note.empty() && !wb.Put(rep_->cfs[kCheckpoints], key, AsSlice(note)).ok()) std::abort();
  if (!time_note.empty() && !wb.Put(rep_->cfs[kCheckpointTimes], key, AsSlice(time_note)).ok()) std::abort();
  rocksdb::WriteOptions options;
  options.sync = true;
  return FromRocks(rep_->db->Write(options, &wb), "write checkpoint");
}

absl::StatusOr<std::string> Store::GetCheckpointTime(uint64_t size) const {
  return rep_->Get(kCheckpointTimes, U64Key(size), absl::StrCat("checkpoint time of size ", size));
}

absl::StatusOr<std::string> Store::GetCheckpoint(uint64_t size) const {
  return rep_->Get(kCheckpoints, U64Key(size), absl::StrCat("checkpoint of size ", size));
}

absl::Status Store::ScanRows(int cf, absl::FunctionRef<absl::Status(std::string_view, std::string_view)> fn,
                             const char* what) const {
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(BulkRead(), rep_->cfs[cf]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto s = fn(std::string_view(it->key().data(), it->key().size()),
                std::string_view(it->value().data(), it->value().size()));
    if (!s.ok()) return s;
  }
  return FromRocks(it->status(), what);
}

absl::Status Store::ScanReceipts(
    absl::FunctionRef<absl::Status(const ReceiptKey& key, const ReceiptRef& ref)> fn) const {
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(BulkRead(), rep_->cfs[kReceipts]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view k(it->key().data(), it->key().size());
    auto key = DecodeReceiptKey(k);
    if (!key.ok()) return key.status();
    auto ref = DecodeReceiptRef(std::string_view(it->value().data(), it->value().size()));
    if (!ref.ok()) return ref.status();
    if (auto s = fn(*key, *ref); !s.ok()) return s;
  }
  return FromRocks(it->status(), "scan the receipt index");
}

absl::StatusOr<std::vector<std::pair<std::string, ReceiptRef>>> Store::LegacyReceipts(size_t limit) const {
  std::vector<std::pair<std::string, ReceiptRef>> rows;
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(rocksdb::ReadOptions(), rep_->cfs[kReceipts]));
  for (it->Seek(rocksdb::Slice("\1", 1)); it->Valid() && rows.size() < limit; it->Next()) {
    auto ref = DecodeReceiptRef(std::string_view(it->value().data(), it->value().size()));
    if (!ref.ok()) return ref.status();
    rows.emplace_back(it->key().ToString(), *ref);
  }
  if (auto s = FromRocks(it->status(), "scan the receipt index"); !s.ok()) return s;
  return rows;
}

absl::StatusOr<std::optional<RunHead>> Store::GetTeamHead(std::string_view team) const {
  auto v = rep_->Get(kTeams, team, "team head");
  if (absl::IsNotFound(v.status())) return std::nullopt;
  if (!v.ok()) return v.status();
  auto head = DecodeRunHead(*v);
  if (head.ok() && head->count == 0) return Malformed("team head");
  return head;
}

absl::Status Store::ScanTeamHeads(
    absl::FunctionRef<absl::Status(std::string_view team, const RunHead& head)> fn) const {
  return ScanRows(
      kTeams,
      [&](std::string_view key, std::string_view v) -> absl::Status {
        auto head = DecodeRunHead(v);
        if (!head.ok()) return head.status();
        if (key.empty() || head->count == 0) return Malformed("team head");
        return fn(key, *head);
      },
      "scan team heads");
}

absl::Status Store::ScanRunHeads(
    absl::FunctionRef<absl::Status(std::string_view team, std::string_view run_id, const RunHead& head)> fn) const {
  return ScanRows(
      kRuns,
      [&](std::string_view key, std::string_view v) -> absl::Status {
        if (key.empty() || key.size() < 1u + static_cast<unsigned char>(key[0])) return Malformed("run head");
        auto head = DecodeRunHead(v);
        if (!head.ok()) return head.status();
        size_t n = static_cast<unsigned char>(key[0]);
        return fn(key.substr(1, n), key.substr(1 + n), *head);
      },
      "scan run heads");
}

namespace {

// A row reader for tables keyed by a tree size (u64): fn(size, value).
auto BySize(absl::FunctionRef<absl::Status(uint64_t size, std::string_view value)> fn, const char* key_name) {
  return [fn, key_name](std::string_view key, std::string_view v) -> absl::Status {
    if (key.size() != 8) return Malformed(key_name);
    return fn(GetU64(key.data()), v);
  };
}

}  // namespace

absl::Status Store::ScanCheckpoints(absl::FunctionRef<absl::Status(uint64_t size, std::string_view note)> fn) const {
  return ScanRows(kCheckpoints, BySize(fn, "checkpoint key"), "scan checkpoints");
}

absl::Status Store::ScanCheckpointTimes(
    absl::FunctionRef<absl::Status(uint64_t size, std::string_view time_note)> fn) const {
  return ScanRows(kCheckpointTimes, BySize(fn, "checkpoint time key"), "scan checkpoint times");
}

absl::StatusOr<std::optional<uint64_t>> Store::LastLeafSeq() const {
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(rocksdb::ReadOptions(), rep_->cfs[kEntries]));
  it->SeekToLast();
  if (!it->Valid()) {
    if (auto s = FromRocks(it->status(), "read entries"); !s.ok()) return s;
    return std::nullopt;
  }
  if (it->key().size() != 8) return Malformed("entry key");
  return GetU64(it->key().data());
}

void Store::set_resume_window(std::chrono::milliseconds window) { rep_->resume_window = window; }

absl::Status Store::failure() const {
  sync::MutexLock lock(&rep_->failure_mu);
  return rep_->failure;
}

absl::Status Store::Backup(const std::string& dir) const {
  rocksdb::Checkpoint* raw = nullptr;
  if (auto s = FromRocks(rocksdb::Checkpoint::Create(rep_->db.get(), &raw), "backup"); !s.ok()) return s;
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  return FromRocks(checkpoint->CreateCheckpoint(dir, /*log_size_for_flush=*/0), absl::StrCat("backup to ", dir));
}

absl::StatusOr<std::optional<std::pair<uint64_t, std::string>>> Store::LatestCheckpoint() const {
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(rocksdb::ReadOptions(), rep_->cfs[kCheckpoints]));
  it->SeekToLast();
  if (!it->Valid()) {
    if (auto s = FromRocks(it->status(), "read checkpoints"); !s.ok()) return s;
    return std::nullopt;
  }
  if (it->key().size() != 8) return Malformed("checkpoint key");
  return std::make_pair(GetU64(it->key().data()), it->value().ToString());
}

}  // namespace ledger::store
