#include "ledger/storage/log/log_view.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/storage/store/store.h"

namespace ledger::log {

static_assert(LogView::kNodesPerGroup == store::kNodesPerGroup);

absl::StatusOr<RetentionPass> LogView::Retention() const { return ReadRetentionPass(*store_, 0); }

absl::StatusOr<std::string> LogView::RetentionPolicy(std::string_view sha256_hex) const {
  auto sha = hash::ParseHex(sha256_hex);
  if (!sha.ok()) return absl::DataLossError(absl::StrCat("retention: policy_sha256 ", sha.status().message()));
  return store_->RetentionPolicy(*sha);
}

absl::StatusOr<std::optional<std::pair<uint64_t, std::string>>> LogView::NextKeptLeaf(uint64_t from) const {
  return store_->NextStoredLeaf(from, size());
}

absl::StatusOr<std::string> LogView::GetLeaf(uint64_t seq) const {
  if (seq >= size()) {
    return absl::OutOfRangeError(absl::StrCat("seq: ", seq, " is beyond the tree size ", size()));
  }
  return store_->GetLeaf(seq);
}

absl::Status LogView::ScanLeaves(uint64_t from, uint64_t to,
                                 absl::FunctionRef<absl::Status(uint64_t seq, std::string_view leaf)> fn) const {
  if (to > size()) {
    return absl::OutOfRangeError(absl::StrCat("seq: ", to, " is beyond the tree size ", size()));
  }
  return store_->ScanLeaves(from, to, fn);
}

absl::Status LogView::ScanRunSeqs(std::string_view team, std::string_view run_id,
                                  absl::FunctionRef<absl::Status(uint64_t seq)> fn) const {
  return store_->ScanRunSeqs(team, run_id, size(), fn);
}

absl::Status LogView::WalkLeavesBack(
    uint64_t from,
    absl::FunctionRef<absl::StatusOr<std::optional<uint64_t>>(uint64_t seq, std::string_view leaf)> next) const {
  if (from >= size()) {
    return absl::OutOfRangeError(absl::StrCat("seq: ", from, " is beyond the tree size ", size()));
  }
  return store_->WalkLeavesBack(from, next);
}

absl::StatusOr<std::vector<hash::Hash>> LogView::GetNodeGroup(int level, uint64_t group) const {
  // The tree of size() holds the nodes of its perfect subtrees: size() >>
  // level of them at `level`.
  const uint64_t nodes = level < 0 || level >= 64 ? 0 : size() >> level;
  if (nodes == 0 || group > (nodes - 1) / kNodesPerGroup) {
    return absl::OutOfRangeError(absl::StrCat("tree node (level ", level, ", index ", group * kNodesPerGroup,
                                              ") is beyond the tree size ", size()));
  }
  auto stored = store_->GetNodeGroup(level, group);
  if (!stored.ok()) return stored.status();
  stored->resize(std::min<uint64_t>(stored->size(), nodes - group * kNodesPerGroup));
  return stored;
}

absl::StatusOr<std::optional<std::string>> LogView::GetProjection(projection::Table t, std::string_view key) const {
  return store_->GetProjection(t, key);
}

absl::Status LogView::ScanProjection(projection::Table t, std::string_view from, std::string_view to, bool reverse,
                                     absl::FunctionRef<bool(std::string_view key, std::string_view value)> fn) const {
  return store_->ScanProjection(t, from, to, reverse, fn);
}

absl::Status LogView::failure() const { return store_->failure(); }

store::Memory LogView::MemoryUse() const { return store_->MemoryUse(); }

const stats::Histogram& LogView::sync_us() const { return store_->sync_us(); }

}  // namespace ledger::log
