#include "ledger/storage/log/log_view.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/log/log_testing.h"

namespace ledger::log {
namespace {

std::vector<receipt::Receipt> Receipts(int from, int to) {
  std::vector<receipt::Receipt> out;
  for (int i = from; i < to; ++i) out.push_back(Model("r" + std::to_string(i)));
  return out;
}

// Every leaf the view's ScanLeaves gives for [from, to).
absl::StatusOr<std::vector<std::string>> Scanned(const LogView& view, uint64_t from, uint64_t to) {
  std::vector<std::string> leaves;
  absl::Status s = view.ScanLeaves(from, to, [&](uint64_t, std::string_view leaf) {
    leaves.emplace_back(leaf);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return leaves;
}

// The node at (level, index) read through the view's node groups.
absl::StatusOr<hash::Hash> NodeOf(const LogView& view, int level, uint64_t index) {
  auto group = view.GetNodeGroup(level, index / LogView::kNodesPerGroup);
  if (!group.ok()) return group.status();
  if (index % LogView::kNodesPerGroup >= group->size()) return absl::NotFoundError("not in the group");
  return (*group)[index % LogView::kNodesPerGroup];
}

// Counts the entries applied, in one record: a projection of the latest
// state, whatever checkpoint a view is taken at.
class CountingProjector final : public projection::Projector {
 public:
  absl::Status Apply(absl::Span<const projection::Entry> entries, projection::Txn& txn) override {
    auto stored = txn.Get(projection::Table::kRuns, "count");
    if (!stored.ok()) return stored.status();
    uint64_t n = stored->has_value() ? std::stoull(**stored) : 0;
    txn.Put(projection::Table::kRuns, "count", std::to_string(n + entries.size()));
    return absl::OkStatus();
  }
};

TEST_F(LogTest, AViewIsOfTheLatestCheckpointAndReadsNoLeafBeyondIt) {
  auto log = OpenLog();
  AppendAll(*log, Receipts(0, 10));
  ASSERT_TRUE(log->SignCheckpoint().ok());
  AppendAll(*log, Receipts(10, 13));  // committed, not yet in a checkpoint
  const LogView view = log->View();
  EXPECT_EQ(view.size(), 10u);
  EXPECT_EQ(view.checkpoint().note, log->Checkpoint(0)->note);
  std::vector<std::string> all;
  ASSERT_TRUE(log->ScanEntries(0, 13,
                               [&](uint64_t, std::string_view leaf) {
                                 all.emplace_back(leaf);
                                 return absl::OkStatus();
                               })
                  .ok());
  EXPECT_EQ(*view.GetLeaf(9), all[9]);
  EXPECT_EQ(view.GetLeaf(10).status(), absl::OutOfRangeError("seq: 10 is beyond the tree size 10"));
  EXPECT_EQ(*Scanned(view, 4, 10), std::vector<std::string>(all.begin() + 4, all.begin() + 10));
  EXPECT_EQ(Scanned(view, 4, 11).status(), absl::OutOfRangeError("seq: 11 is beyond the tree size 10"));
  std::vector<uint64_t> walked;
  ASSERT_TRUE(view.WalkLeavesBack(9,
                                  [&](uint64_t seq, std::string_view leaf) -> absl::StatusOr<std::optional<uint64_t>> {
                                    EXPECT_EQ(leaf, all[seq]);
                                    walked.push_back(seq);
                                    return seq >= 3 ? std::optional<uint64_t>(seq - 3) : std::nullopt;
                                  })
                  .ok());
  EXPECT_EQ(walked, (std::vector<uint64_t>{9, 6, 3, 0}));
  auto never = [](uint64_t, std::string_view) -> absl::StatusOr<std::optional<uint64_t>> {
    ADD_FAILURE() << "called beyond the view";
    return std::nullopt;
  };
  EXPECT_EQ(view.WalkLeavesBack(10, never), absl::OutOfRangeError("seq: 10 is beyond the tree size 10"));
  EXPECT_EQ(view.WalkLeavesBack(12, never), absl::OutOfRangeError("seq: 12 is beyond the tree size 10"));
}

TEST_F(LogTest, AViewAtAnOlderSizeReadsOnlyThatTreeAfterTheLogGrew) {
  auto log = OpenLog();
  AppendAll(*log, Receipts(0, 5));
  ASSERT_TRUE(log->SignCheckpoint().ok());
  const SignedCheckpoint cp5 = *log->Checkpoint(0);
  AppendAll(*log, Receipts(5, 40));
  ASSERT_TRUE(log->SignCheckpoint().ok());
  auto old = log->ViewAt(5);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->size(), 5u);
  EXPECT_EQ(old->checkpoint().note, cp5.note);
  EXPECT_EQ(old->checkpoint().time_note, cp5.time_note);
  EXPECT_EQ(Scanned(*old, 0, 5)->size(), 5u);
  EXPECT_EQ(old->GetLeaf(5).status(), absl::OutOfRangeError("seq: 5 is beyond the tree size 5"));
  EXPECT_EQ(Scanned(*old, 0, 40).status(), absl::OutOfRangeError("seq: 40 is beyond the tree size 5"));
  // The nodes of the tree of 5 only: five leaf hashes, one node of level 2,
  // none of level 3, though the store holds the tree of 40.
  EXPECT_EQ(old->GetNodeGroup(0, 0)->size(), 5u);
  EXPECT_EQ(log->View().GetNodeGroup(0, 0)->size(), 16u);
  EXPECT_EQ(old->GetNodeGroup(2, 0)->size(), 1u);
  EXPECT_EQ(old->GetNodeGroup(3, 0).status(),
            absl::OutOfRangeError("tree node (level 3, index 0) is beyond the tree size 5"));
  EXPECT_EQ(old->GetNodeGroup(0, 1).status(),
            absl::OutOfRangeError("tree node (level 0, index 16) is beyond the tree size 5"));
  EXPECT_EQ(old->GetNodeGroup(-1, 0).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(old->GetNodeGroup(64, 0).status().code(), absl::StatusCode::kOutOfRange);
  // What the view's nodes prove is what the log proves at that size.
  auto node = [&](int level, uint64_t index) { return NodeOf(*old, level, index); };
  EXPECT_EQ(*merkle::RootHash(5, node), cp5.root);
  for (uint64_t seq = 0; seq < 5; ++seq) {
    EXPECT_EQ(*merkle::InclusionProof(seq, 5, node), log->ProveInclusion(seq, 5)->path) << seq;
  }
  EXPECT_EQ(log->ViewAt(7).status(), absl::NotFoundError("tree_size: no checkpoint of size 7 was signed"));
  EXPECT_EQ(log->ViewAt(0)->size(), 0u);  // the empty tree's, signed at Open
  EXPECT_EQ(log->ViewAt(0)->GetLeaf(0).status().code(), absl::StatusCode::kOutOfRange);
}

TEST_F(LogTest, AViewReadsTheLatestProjectionsWhateverItsSize) {
  CountingProjector projector;
  Log::Options o;
  o.data_dir = dir_.Sub("data");
  o.origin = "ledger.test/log";
  o.checkpoint_interval_ms = 60'000;
  o.sequencer.projector = &projector;
  auto log = *Log::Open(o, signer_);
  const LogView empty = log->View();
  EXPECT_EQ(empty.GetProjection(projection::Table::kRuns, "count").value(), std::nullopt);
  AppendAll(*log, Receipts(0, 3));
  ASSERT_TRUE(log->SignCheckpoint().ok());
  AppendAll(*log, Receipts(3, 7));
  const LogView view = *log->ViewAt(3);
  EXPECT_EQ(view.GetProjection(projection::Table::kRuns, "count").value(), "7");
  EXPECT_EQ(empty.GetProjection(projection::Table::kRuns, "count").value(), "7");
  std::vector<std::string> keys;
  ASSERT_TRUE(view.ScanProjection(projection::Table::kRuns, "", "", false,
                                  [&](std::string_view key, std::string_view) {
                                    keys.emplace_back(key);
                                    return true;
                                  })
                  .ok());
  EXPECT_EQ(keys, std::vector<std::string>{"count"});
}

TEST_F(LogTest, AViewTellsTheStoresHealthAndMemory) {
  auto log = OpenLog();
  AppendAll(*log, Receipts(0, 3));
  const LogView view = log->View();
  EXPECT_TRUE(view.failure().ok());
  EXPECT_EQ(view.MemoryUse().budget, store::kDefaultMemoryBytes);
  EXPECT_GT(view.MemoryUse().cache, 0u);
  EXPECT_GT(view.sync_us().Read().count, 0u);  // every commit is synced
}

// A log that has signed nothing yet (a replicated node before it leads or
// adopts a checkpoint) still gives a view: of the empty tree, with the
// store's health.
TEST_F(LogTest, BeforeAnyCheckpointTheViewIsOfTheEmptyTree) {
  Log::Options o;
  o.data_dir = dir_.Sub("data");
  o.origin = "ledger.test/log";
  o.checkpoint_interval_ms = 60'000;
  o.replicated = Log::Options::Replicated{[] { return absl::UnavailableError("not the leader"); }, nullptr,
                                          [](const SignedCheckpoint&) { return absl::OkStatus(); }};
  auto log = *Log::Open(o, signer_);
  ASSERT_EQ(log->Checkpoint(0).status().code(), absl::StatusCode::kNotFound);
  const LogView view = log->View();
  EXPECT_EQ(view.size(), 0u);
  EXPECT_EQ(view.checkpoint().note, "");
  EXPECT_EQ(view.GetLeaf(0).status(), absl::OutOfRangeError("seq: 0 is beyond the tree size 0"));
  EXPECT_EQ(view.GetNodeGroup(0, 0).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(view.failure().ok());
}

}  // namespace
}  // namespace ledger::log
