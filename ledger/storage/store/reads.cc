// The store's reads: single rows, and scans of entries and rows.
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ledger/format/retention/pruned.h"
#include "ledger/storage/store/internal/rows.h"
#include "ledger/storage/store/internal/store_rep.h"
#include "ledger/storage/store/store.h"
#include "rocksdb/db.h"
#include "rocksdb/iterator.h"
#include "util/sync/mutex.h"

namespace ledger::store {

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

Pruning Store::ReadPruning() const {
  auto v = rep_->Get(kDefault, kPruningKey, "read the retention row");
  if (!v.ok() || v->size() != kPruningSize) return Pruning{};
  return Pruning{GetU64(v->data() + 1), GetU64(v->data() + 9)};
}

absl::StatusOr<std::string> Store::PrunedReplay() const {
  return rep_->Get(kDefault, kPrunedReplayKey, "read the retention replay state");
}

absl::StatusOr<std::string> Store::RetentionPolicy(const hash::Hash& sha256) const {
  std::string key(kPolicyKeyPrefix);
  key.append(reinterpret_cast<const char*>(sha256.data()), sha256.size());
  return rep_->Get(kDefault, key, "read a retention policy");
}

absl::StatusOr<std::string> Store::PrunedLineOf(uint64_t seq) const {
  auto node = GetNode(0, seq);
  if (!node.ok()) {
    return absl::DataLossError(
        absl::StrCat("storage: entry ", seq, " was pruned and its leaf hash is missing: ", node.status().message()));
  }
  return retention::PrunedLine(seq, *node);
}

absl::StatusOr<std::string> Store::GetLeaf(uint64_t seq) const {
  auto leaf = rep_->Get(kEntries, U64Key(seq), absl::StrCat("entry ", seq));
  if (absl::IsNotFound(leaf.status()) && seq < rep_->pruned_below.load()) return PrunedLineOf(seq);
  return leaf;
}

absl::StatusOr<std::optional<std::pair<uint64_t, std::string>>> Store::NextStoredLeaf(uint64_t from,
                                                                                      uint64_t to) const {
  if (from >= to) return std::nullopt;
  rocksdb::ReadOptions options;
  std::string upper = U64Key(to);
  rocksdb::Slice upper_slice(upper);
  options.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(options, rep_->cfs[kEntries]));
  it->Seek(U64Key(from));
  if (!it->Valid()) {
    if (auto s = FromRocks(it->status(), "seek entries"); !s.ok()) return s;
    return std::nullopt;
  }
  if (it->key().size() != 8) return Malformed("entry key");
  return std::make_pair(GetU64(it->key().data()), it->value().ToString());
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

absl::Status Store::ScanRunSeqs(std::string_view team, std::string_view run_id, uint64_t below,
                                absl::FunctionRef<absl::Status(uint64_t seq)> fn) const {
  std::string prefix = RunSeqPrefix(team, run_id);
  std::string upper = prefix;
  PutU64(&upper, below);
  rocksdb::ReadOptions options = BulkRead();
  rocksdb::Slice upper_slice(upper);
  options.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(options, rep_->cfs[kRunSeqs]));
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    rocksdb::Slice key = it->key();
    if (key.size() != prefix.size() + 8 || !key.starts_with(prefix)) return Malformed("run index key");
    if (auto s = fn(GetU64(key.data() + prefix.size())); !s.ok()) return s;
  }
  return FromRocks(it->status(), "scan the run index");
}

absl::Status Store::ScanRunIndex(
    absl::FunctionRef<absl::Status(std::string_view team, std::string_view run_id, uint64_t seq)> fn) const {
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(BulkRead(), rep_->cfs[kRunSeqs]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view key(it->key().data(), it->key().size());
    size_t team_end = key.empty() ? 0 : 1 + static_cast<unsigned char>(key[0]);
    size_t run_end = key.size() > team_end ? team_end + 1 + static_cast<unsigned char>(key[team_end]) : 0;
    if (key.empty() || run_end == 0 || key.size() != run_end + 8) return Malformed("run index key");
    if (auto s = fn(key.substr(1, team_end - 1), key.substr(team_end + 1, run_end - team_end - 1),
                    GetU64(key.data() + run_end));
        !s.ok()) {
      return s;
    }
  }
  return FromRocks(it->status(), "scan the run index");
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
  const uint64_t pruned_below = rep_->pruned_below.load();
  // The pruned entries in [want, upto), read as their pruned lines.
  std::optional<std::pair<uint64_t, std::vector<hash::Hash>>> group;  // level-0 nodes read last
  auto pruned = [&](uint64_t upto) -> absl::Status {
    for (; want < upto; ++want) {
      if (want >= pruned_below) return absl::DataLossError(absl::StrCat("storage: entry ", want, " is missing"));
      const uint64_t g = want / kNodesPerGroup;
      if (!group.has_value() || group->first != g) {
        auto nodes = GetNodeGroup(0, g);
        if (!nodes.ok()) return nodes.status();
        group.emplace(g, *std::move(nodes));
      }
      const size_t i = want % kNodesPerGroup;
      if (i >= group->second.size()) {
        return absl::DataLossError(absl::StrCat("storage: entry ", want, " was pruned and its leaf hash is missing"));
      }
      if (auto s = fn(want, retention::PrunedLine(want, group->second[i])); !s.ok()) return s;
    }
    return absl::OkStatus();
  };
  for (it->Seek(U64Key(from)); it->Valid(); it->Next()) {
    if (it->key().size() != 8) return Malformed("entry key");
    uint64_t seq = GetU64(it->key().data());
    if (seq != want) {
      if (auto s = pruned(seq); !s.ok()) return s;
    }
    if (auto s = fn(seq, std::string_view(it->value().data(), it->value().size())); !s.ok()) {
      return s;
    }
    ++want;
  }
  if (auto s = FromRocks(it->status(), "scan entries"); !s.ok()) return s;
  return pruned(to);
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
  const uint64_t pruned_below = rep_->pruned_below.load();
  while (at.has_value()) {
    if (!it->Valid() || it->key().size() != 8 || GetU64(it->key().data()) != *at) {
      if (auto s = FromRocks(it->status(), "walk entries"); !s.ok()) return s;
      if (*at >= pruned_below) return absl::DataLossError(absl::StrCat("storage: entry ", *at, " is missing"));
      auto line = PrunedLineOf(*at);
      if (!line.ok()) return line.status();
      auto to = next(*at, *line);
      if (!to.ok()) return to.status();
      if (to->has_value() && **to >= *at) std::abort();  // the caller's contract
      dense = 0;
      if (to->has_value()) it->Seek(U64Key(**to));
      at = *to;
      continue;
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
absl::StatusOr<std::optional<uint64_t>> Store::NextTimedCheckpoint(uint64_t from) const {
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(rocksdb::ReadOptions(), rep_->cfs[kCheckpointTimes]));
  it->Seek(U64Key(from));
  if (!it->Valid()) {
    if (auto s = FromRocks(it->status(), "seek checkpoint times"); !s.ok()) return s;
    return std::nullopt;
  }
  if (it->key().size() != 8) return Malformed("checkpoint time key");
  return GetU64(it->key().data());
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
absl::StatusOr<std::string> Store::GetCheckpointTime(uint64_t size) const {
  return rep_->Get(kCheckpointTimes, U64Key(size), absl::StrCat("checkpoint time of size ", size));
}

absl::StatusOr<std::vector<std::pair<hash::Hash, std::string>>> Store::MapCosignatures(uint64_t size) const {
  const std::string from = U64Key(size), to = U64Key(size + 1);
  rocksdb::ReadOptions options;
  rocksdb::Slice lower = AsSlice(from), upper = AsSlice(to);
  options.iterate_lower_bound = &lower;
  options.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(options, rep_->cfs[kMapCosignatures]));
  std::vector<std::pair<hash::Hash, std::string>> lines;
  for (it->Seek(lower); it->Valid(); it->Next()) {
    hash::Hash monitor{};
    if (it->key().size() != 8 + monitor.size()) {
      return absl::DataLossError(
          absl::StrCat("storage: map cosignature of size ", size, ": a key of ", it->key().size(), " bytes, want 40"));
    }
    std::memcpy(monitor.data(), it->key().data() + 8, monitor.size());
    lines.emplace_back(monitor, it->value().ToString());
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scan map cosignatures");
  return lines;
}

absl::StatusOr<std::string> Store::TimeStamp(uint64_t size) const {
  auto line = rep_->Get(kTimeStamps, U64Key(size), absl::StrCat("time stamp of size ", size));
  if (absl::IsNotFound(line.status())) return std::string();
  return line;
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

namespace {

// The last row of a table keyed by a u64 (a seq or a tree size), with its
// value; nullopt when the table is empty.
absl::StatusOr<std::optional<std::pair<uint64_t, std::string>>> LastBySize(rocksdb::DB* db,
                                                                           rocksdb::ColumnFamilyHandle* cf,
                                                                           const char* what, const char* key_name) {
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), cf));
  it->SeekToLast();
  if (!it->Valid()) {
    if (auto s = FromRocks(it->status(), what); !s.ok()) return s;
    return std::nullopt;
  }
  if (it->key().size() != 8) return Malformed(key_name);
  return std::make_pair(GetU64(it->key().data()), it->value().ToString());
}

}  // namespace

absl::StatusOr<std::optional<uint64_t>> Store::LastLeafSeq() const {
  auto last = LastBySize(rep_->db.get(), rep_->cfs[kEntries], "read entries", "entry key");
  if (!last.ok()) return last.status();
  if (!last->has_value()) return std::nullopt;
  return (*last)->first;
}

absl::StatusOr<std::optional<std::pair<uint64_t, std::string>>> Store::LatestCheckpoint() const {
  return LastBySize(rep_->db.get(), rep_->cfs[kCheckpoints], "read checkpoints", "checkpoint key");
}

}  // namespace ledger::store
