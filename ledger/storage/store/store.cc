#include "ledger/storage/store/store.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "ledger/storage/store/internal/rocksdb_plugins.h"
#include "ledger/storage/store/internal/rows.h"
#include "ledger/storage/store/internal/store_rep.h"
#include "ledger/storage/store/testing.h"
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
  uint64_t group = index / kNodesPerGroup;
  size_t offset = (index % kNodesPerGroup) * 32;
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

void Batch::PutRunSeq(std::string_view team, std::string_view run_id, uint64_t seq) {
  std::string key = RunSeqPrefix(team, run_id);
  PutU64(&key, seq);
  rep_->Put(kRunSeqs, key, "");
}

void Batch::PutRunHead(std::string_view team, std::string_view run_id, const RunHead& head) {
  rep_->Put(kRuns, RunKey(team, run_id), EncodeHead(head));
}

void Batch::PutTeamHead(std::string_view team, const RunHead& head) { rep_->Put(kTeams, team, EncodeHead(head)); }

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

void Batch::PutProjectionsWithLog(const projection::OverlayTxn::Writes& writes) {
  for (int t = 0; t < projection::kTableCount; ++t) {
    const int cf = ProjectionCf(static_cast<projection::Table>(t));
    for (const auto& [key, value] : writes[t]) {
      if (value.has_value()) {
        rep_->Put(cf, key, *value);
      } else if (!rep_->wb.Delete((*rep_->cfs)[cf], AsSlice(key)).ok()) {
        std::abort();
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

void Batch::PutPruning(const Pruning& p) {
  std::string v(1, kFormatV1);
  PutU64(&v, p.below);
  PutU64(&v, p.finished_pass);
  rep_->Put(kDefault, kPruningKey, v);
  rep_->pruned_below = p.below;
}

void Batch::PutPrunedReplay(std::string_view state) { rep_->Put(kDefault, kPrunedReplayKey, state); }

void Batch::PutRetentionPolicy(const hash::Hash& sha256, std::string_view text) {
  std::string key(kPolicyKeyPrefix);
  key.append(reinterpret_cast<const char*>(sha256.data()), sha256.size());
  rep_->Put(kDefault, key, text);
}

void Batch::DeleteEntry(uint64_t seq) {
  if (!rep_->wb.Delete((*rep_->cfs)[kEntries], U64Key(seq)).ok()) std::abort();
}

void Batch::DeleteRunSeq(std::string_view team, std::string_view run_id, uint64_t seq) {
  std::string key = RunSeqPrefix(team, run_id);
  PutU64(&key, seq);
  if (!rep_->wb.Delete((*rep_->cfs)[kRunSeqs], key).ok()) std::abort();
}

void Batch::DeleteReceipt(const ReceiptKey& key) {
  if (!rep_->wb.Delete((*rep_->cfs)[kReceipts], EncodeReceiptKey(key)).ok()) std::abort();
}

Store::Store(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}

Store::~Store() = default;

const stats::Histogram& Store::sync_us() const { return rep_->sync_us; }

uint64_t Store::TableReaderBytes() const {
  uint64_t bytes = 0;
  rep_->db->GetAggregatedIntProperty("rocksdb.estimate-table-readers-mem", &bytes);
  return bytes;
}

Memory Store::MemoryUse() const {
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
  rep->faults = faults;
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
  // A run's rows share their prefix (delta-encoded in a block) and differ
  // in a seq: LZ4 leaves little of them. Each run's rows arrive in seq
  // order, runs taking turns: a memtable insert starts where the run's last
  // one ended.
  rocksdb::ColumnFamilyOptions run_seq_options = cf_options;
  run_seq_options.compression = rocksdb::kLZ4Compression;
  run_seq_options.memtable_insert_with_hint_prefix_extractor.reset(NewKeyPrefix(false, 2, "ledger.RunSeqs.v1"));
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (int cf = 0; cf < kCfCount; ++cf) {
    bool lookup = cf == kReceipts || cf == kRuns || cf == kTeams || cf == kMaps || cf >= kLogCfCount;
    descriptors.emplace_back(CfName(cf), cf == kEntries                                    ? entry_options
                                         : cf == kRunSeqs                                  ? run_seq_options
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
  auto store = std::unique_ptr<Store>(new Store(std::move(rep)));
  auto pruning = store->rep_->Get(kDefault, kPruningKey, "read the retention row");
  if (pruning.ok()) {
    if (pruning->size() != kPruningSize || (*pruning)[0] != kFormatV1) return Malformed("retention row");
    store->rep_->pruned_below.store(GetU64(pruning->data() + 1));
  } else if (!absl::IsNotFound(pruning.status())) {
    return pruning.status();
  }
  return store;
}

Batch Store::NewBatch(const Batch* base) const {
  auto rep = std::make_unique<Batch::Rep>();
  rep->store = this;
  rep->base = base != nullptr ? base->rep_.get() : nullptr;
  rep->cfs = &rep_->cfs;
  return Batch(std::move(rep));
}

absl::Status Store::Commit(Batch& batch) {
  if (const Faults* f = rep_->faults; f != nullptr) {
    while (f->hold_commits) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (f->fail_next_commits.load() > 0 && f->fail_next_commits.fetch_sub(1) > 0) {
      return absl::UnavailableError("storage: injected commit failure");
    }
    if (f->commits_before_failing.load() == 0) return absl::UnavailableError("storage: injected commit failure");
    if (f->commits_before_failing.load() > 0) f->commits_before_failing.fetch_sub(1);
  }
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
  if (b.pruned_below.has_value()) rep_->pruned_below.store(*b.pruned_below);
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
absl::Status Store::CommitMapRows(Batch& batch) {
  Batch::Rep& b = *batch.rep_;
  if (!b.groups.empty() || b.pwb.Count() > 0) std::abort();  // a bug: map rows only
  if (b.wb.Count() == 0) return absl::OkStatus();
  rocksdb::WriteOptions options;
  options.sync = true;
  return FromRocks(rep_->db->Write(options, &b.wb), "write maps");
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

absl::Status Store::PutTimeStamp(uint64_t size, std::string_view line) {
  rocksdb::WriteOptions options;
  options.sync = true;
  return FromRocks(rep_->db->Put(options, rep_->cfs[kTimeStamps], U64Key(size), AsSlice(line)), "write time stamp");
}

absl::Status Store::PutMapCosignature(uint64_t size, const hash::Hash& monitor, std::string_view line) {
  rocksdb::WriteBatch wb;
  std::string key = U64Key(size);
  key.append(reinterpret_cast<const char*>(monitor.data()), monitor.size());
  if (!wb.Put(rep_->cfs[kMapCosignatures], key, AsSlice(line)).ok()) std::abort();
  rocksdb::WriteOptions options;
  options.sync = true;
  return FromRocks(rep_->db->Write(options, &wb), "write map cosignature");
}

absl::Status Store::failure() const {
  sync::MutexLock lock(&rep_->failure_mu);
  return rep_->failure;
}

absl::Status Store::Purge(uint64_t seq, const std::vector<std::pair<projection::Table, std::string>>& keys) {
  rocksdb::FlushOptions wait;
  if (auto s = FromRocks(rep_->db->Flush(wait, rep_->cfs), "purge: flush"); !s.ok()) return s;
  rocksdb::CompactRangeOptions options;
  options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  auto compact = [&](int cf, const std::string& from, const std::string& to) {
    rocksdb::Slice begin(from), end(to);
    return FromRocks(rep_->db->CompactRange(options, rep_->cfs[cf], &begin, &end), "purge: compact");
  };
  if (auto s = compact(kEntries, U64Key(seq), U64Key(seq + 1)); !s.ok()) return s;
  for (const auto& [table, key] : keys) {
    if (auto s = compact(ProjectionCf(table), key, key + std::string(1, '\0')); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Store::CompactPruned(uint64_t below) {
  rocksdb::FlushOptions wait;
  if (auto s = FromRocks(rep_->db->Flush(wait, rep_->cfs), "retention: flush"); !s.ok()) return s;
  rocksdb::CompactRangeOptions options;
  options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  std::string from = U64Key(0), to = U64Key(below);
  rocksdb::Slice begin(from), end(to);
  if (auto s = FromRocks(rep_->db->CompactRange(options, rep_->cfs[kEntries], &begin, &end), "retention: compact");
      !s.ok()) {
    return s;
  }
  std::vector<int> whole = {kReceipts, kRunSeqs};
  for (int t = 0; t < projection::kTableCount; ++t) whole.push_back(ProjectionCf(static_cast<projection::Table>(t)));
  for (int cf : whole) {
    if (auto s = FromRocks(rep_->db->CompactRange(options, rep_->cfs[cf], nullptr, nullptr), "retention: compact");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Store::Backup(const std::string& dir) const {
  rocksdb::Checkpoint* raw = nullptr;
  if (auto s = FromRocks(rocksdb::Checkpoint::Create(rep_->db.get(), &raw), "backup"); !s.ok()) return s;
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  return FromRocks(checkpoint->CreateCheckpoint(dir, /*log_size_for_flush=*/0), absl::StrCat("backup to ", dir));
}

}  // namespace ledger::store
