#include "ledger/storage/storedmap/storedmap.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ledger/storage/store/store.h"

namespace ledger::storedmap {
namespace {

using runmap::Hash;
using runmap::Head;
using runmap::Key;
using runmap::NodeId;

constexpr char kSizeRow = 0x00, kLeafRow = 0x01, kNodeRow = 0x02;
constexpr char kSizeFormat = 0x01;

void PutU64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t GetU64(std::string_view p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | static_cast<uint8_t>(p[static_cast<size_t>(i)]);
  return v;
}

std::string_view Bytes(const Hash& h) { return {reinterpret_cast<const char*>(h.data()), h.size()}; }

std::string MapName(StoredMap::Id id) { return id == StoredMap::Id::kTeams ? "team-head map" : "run-head map"; }

absl::Status Malformed(StoredMap::Id id, std::string_view what) {
  return absl::DataLossError(absl::StrCat(MapName(id), ": a stored ", std::string(what), " is malformed"));
}

}  // namespace

std::string StoredMap::SizeKey() const { return {static_cast<char>(id_), kSizeRow}; }

std::string StoredMap::LeafKey(const Key& key) const {
  std::string k{static_cast<char>(id_), kLeafRow};
  k.append(Bytes(key));
  return k;
}

std::string StoredMap::NodeKey(const NodeId& node) const {
  std::string k{static_cast<char>(id_), kNodeRow, static_cast<char>(node.depth)};
  k.append(reinterpret_cast<const char*>(node.prefix.data()), static_cast<size_t>((node.depth + 7) / 8));
  return k;
}

absl::StatusOr<std::optional<uint64_t>> StoredMap::Size() const {
  auto row = store_->GetMapRow(SizeKey());
  if (!row.ok()) return row.status();
  if (!row->has_value()) return std::nullopt;
  if ((*row)->size() != 9 || (**row)[0] != kSizeFormat) return Malformed(id_, "size");
  return GetU64(std::string_view(**row).substr(1));
}

absl::Status StoredMap::Forget(store::Store& store, Id id) {
  store::Batch batch = store.NewBatch();
  batch.DeleteMapRows(std::string(1, static_cast<char>(id)),
                      std::string(1, static_cast<char>(static_cast<int>(id) + 1)));
  return store.CommitMapRows(batch);
}

absl::Status StoredMap::Rebuild(uint64_t size, absl::FunctionRef<absl::Status(Put)> scan) {
  if (auto s = Forget(*store_, id_); !s.ok()) return s;
  top_.clear();
  store::Batch batch = store_->NewBatch();
  size_t pending = 0;
  absl::Status written;
  absl::Status scanned = scan([&](const Key& key, const Head& head) -> absl::Status {
    if (auto s = runmap::CheckHead(head); !s.ok()) {
      return absl::DataLossError(absl::StrCat(MapName(id_), ": ", s.message()));
    }
    batch.PutMapRow(LeafKey(key), runmap::HeadBytes(head));
    if (++pending == kNodesPerCommit) {
      written = store_->CommitMapRows(batch);
      batch = store_->NewBatch();
      pending = 0;
    }
    return written;
  });
  if (!scanned.ok()) return scanned;
  std::string value(1, kSizeFormat);
  PutU64(&value, size);
  batch.PutMapRow(SizeKey(), value);
  return store_->CommitMapRows(batch);
}

absl::Status StoredMap::Apply(uint64_t size, absl::Span<const runmap::Leaf> leaves) {
  for (const runmap::Leaf& leaf : leaves) {
    if (auto s = runmap::CheckHead(leaf.head); !s.ok()) return s;
  }
  const std::string first = LeafKey(Key{}), end{static_cast<char>(id_), kNodeRow};
  store::Batch batch = store_->NewBatch();
  absl::flat_hash_set<std::string> forgotten;
  for (const runmap::Leaf& leaf : leaves) {
    // Every remembered node above the leaf changes: those down to one bit
    // below its longest common prefix with a stored neighbour.
    const std::string at = LeafKey(leaf.key);
    auto before = store_->MapRows(first, at, 1, /*reverse=*/true);
    if (!before.ok()) return before.status();
    auto after = store_->MapRows(at + '\0', end, 1);
    if (!after.ok()) return after.status();
    int depth = 0;
    for (const auto* rows : {&*before, &*after}) {
      if (rows->empty()) continue;
      const std::string& k = rows->front().first;
      if (k.size() != 34) return Malformed(id_, "leaf key");
      Key other;
      std::copy(k.begin() + 2, k.end(), other.begin());
      depth = std::max(depth, runmap::CommonBits(other, leaf.key) + 1);
    }
    for (int d = 0; d < depth; ++d) {
      const NodeId id = runmap::NodeOf(leaf.key, d);
      std::string node = NodeKey(id);
      if (!forgotten.insert(node).second) continue;
      batch.DeleteMapRow(node);
      // A remembered node keeps its two or more leaves (none is ever
      // removed): only its hash is unknown now.
      if (top_loaded_ && d < kMemoryDepth) {
        if (auto it = top_.find(id); it != top_.end()) it->second.reset();
      }
    }
    batch.PutMapRow(at, runmap::HeadBytes(leaf.head));
  }
  std::string value(1, kSizeFormat);
  PutU64(&value, size);
  batch.PutMapRow(SizeKey(), value);
  return store_->CommitMapRows(batch);
}

absl::StatusOr<std::optional<Head>> StoredMap::Get(const Key& key) const {
  auto row = store_->GetMapRow(LeafKey(key));
  if (!row.ok()) return row.status();
  if (!row->has_value()) return std::nullopt;
  std::optional<Head> head = runmap::HeadOfBytes(**row);
  if (!head.has_value()) return Malformed(id_, "head");
  return head;
}

absl::Status StoredMap::LoadTop() {
  top_.clear();
  std::string from{static_cast<char>(id_), kNodeRow}, to = from + static_cast<char>(kMemoryDepth);
  auto rows = store_->MapRows(from, to, std::numeric_limits<size_t>::max());
  if (!rows.ok()) return rows.status();
  for (const auto& [k, v] : *rows) {
    NodeId node;
    node.depth = static_cast<uint8_t>(k[2]);
    size_t prefix_bytes = static_cast<size_t>((node.depth + 7) / 8);
    if (k.size() != 3 + prefix_bytes || v.size() != 32) return Malformed(id_, "node");
    std::copy(k.begin() + 3, k.end(), node.prefix.begin());
    Hash h;
    std::copy(v.begin(), v.end(), h.begin());
    top_.emplace(node, h);
  }
  top_loaded_ = true;
  return absl::OkStatus();
}

absl::StatusOr<int> StoredMap::Leaves(const NodeId& node, runmap::Leaf* first) const {
  if (top_loaded_ && node.depth < kMemoryDepth) {
    // A node whose hash a change made unknown: two or more leaves, and the
    // caller needs no first leaf then.
    if (auto it = top_.find(node); it != top_.end() && !it->second.has_value()) return 2;
  }
  Key hi = node.prefix;
  for (int i = node.depth; i < runmap::kKeyBits; ++i) hi[i / 8] |= static_cast<uint8_t>(0x80u >> (i % 8));
  // Leaf keys are all 34 bytes: those up to hi's are below hi's and a zero.
  auto rows = store_->MapRows(LeafKey(node.prefix), LeafKey(hi) + '\0', 2);
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return 0;
  const auto& [k, v] = rows->front();
  std::optional<Head> head = runmap::HeadOfBytes(v);
  if (k.size() != 34 || !head.has_value()) return Malformed(id_, "leaf");
  std::copy(k.begin() + 2, k.end(), first->key.begin());
  first->head = *head;
  return static_cast<int>(rows->size());
}

absl::StatusOr<std::optional<Hash>> StoredMap::Node(const NodeId& node) const {
  if (top_loaded_ && node.depth < kMemoryDepth) {
    auto it = top_.find(node);
    return it == top_.end() ? std::optional<Hash>() : it->second;
  }
  auto row = store_->GetMapRow(NodeKey(node));
  if (!row.ok()) return row.status();
  if (!row->has_value()) return std::optional<Hash>();
  if ((*row)->size() != 32) return Malformed(id_, "node");
  Hash h;
  std::copy((*row)->begin(), (*row)->end(), h.begin());
  return std::optional<Hash>(h);
}

absl::StatusOr<Hash> StoredMap::Root() {
  store::Batch batch = store_->NewBatch();
  size_t pending = 0;
  absl::Status written;
  auto leaves = [this](const NodeId& n, runmap::Leaf* first) { return Leaves(n, first); };
  auto node = [this](const NodeId& n) { return Node(n); };
  auto put = [&](const NodeId& n, const Hash& h) {
    batch.PutMapRow(NodeKey(n), Bytes(h));
    if (top_loaded_ && n.depth < kMemoryDepth) top_[n] = h;
    if (++pending == kNodesPerCommit) {
      if (written.ok()) written = store_->CommitMapRows(batch);
      batch = store_->NewBatch();
      pending = 0;
    }
  };
  absl::StatusOr<Hash> root = runmap::SubtreeHash(NodeId{}, runmap::Source{leaves, node, put});
  if (!root.ok()) return root.status();
  if (written.ok()) written = store_->CommitMapRows(batch);
  if (!written.ok()) return written;
  return root;
}

absl::StatusOr<runmap::Path> StoredMap::Prove(const Key& key) const {
  auto leaves = [this](const NodeId& n, runmap::Leaf* first) { return Leaves(n, first); };
  auto node = [this](const NodeId& n) { return Node(n); };
  auto put = [](const NodeId&, const Hash&) {};
  return runmap::ProvePath(key, runmap::Source{leaves, node, put});
}

}  // namespace ledger::storedmap
