#include "ledger/store/store.h"

#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace ledger::store {
namespace {

TEST(StoreTest, EmptyStoreHasEmptyState) {
  testing::TempDir dir;
  auto store = Store::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status();
  auto state = (*store)->ReadState();
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->size, 0u);
  EXPECT_EQ(state->head, hash::Hash{});
  EXPECT_FALSE((*store)->LatestCheckpoint()->has_value());
  EXPECT_EQ((*store)->GetLeaf(0).status().code(), absl::StatusCode::kNotFound);
}

TEST(StoreTest, CommittedBatchSurvivesReopen) {
  testing::TempDir dir;
  hash::Hash h0 = hash::LeafHash("a"), h1 = hash::LeafHash("b");
  {
    auto store = *Store::Open(dir.path());
    Batch b = store->NewBatch();
    b.PutEntry(0, "a");
    b.PutEntry(1, "b");
    b.PutReceipt("r-0", {0, h0, hash::Sha256("ra")});
    b.PutNode(0, 0, h0);
    b.PutNode(0, 1, h1);
    b.PutNode(1, 0, hash::NodeHash(h0, h1));
    b.PutRunHead("team-a", "run-1", 1);
    b.PutState({2, h1, 77});
    ASSERT_TRUE(store->Commit(b).ok());
    ASSERT_TRUE(store->PutCheckpoint(2, "note two\n").ok());
    ASSERT_TRUE(store->PutCheckpoint(1, "note one\n").ok());
  }
  auto store = *Store::Open(dir.path());
  auto state = *store->ReadState();
  EXPECT_EQ(state.size, 2u);
  EXPECT_EQ(state.head, h1);
  EXPECT_EQ(state.last_logged_at_us, 77);
  EXPECT_EQ(*store->GetLeaf(1), "b");
  EXPECT_EQ(*store->GetNode(1, 0), hash::NodeHash(h0, h1));
  auto ref = *store->FindReceipt("r-0");
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->seq, 0u);
  EXPECT_EQ(ref->leaf_hash, h0);
  EXPECT_EQ(ref->digest, hash::Sha256("ra"));
  EXPECT_FALSE(store->FindReceipt("r-1")->has_value());
  EXPECT_EQ(**store->GetRunHead("team-a", "run-1"), 1u);
  EXPECT_FALSE(store->GetRunHead("team-a", "run-2")->has_value());
  // The run key is length-prefixed: ("team-a", "run-1") is not ("team-ar", "un-1").
  EXPECT_FALSE(store->GetRunHead("team-ar", "un-1")->has_value());
  auto latest = *store->LatestCheckpoint();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->first, 2u);
  EXPECT_EQ(latest->second, "note two\n");
  EXPECT_EQ(*store->GetCheckpoint(1), "note one\n");
}

TEST(StoreTest, ScanLeavesInOrderAndReportsGaps) {
  testing::TempDir dir;
  auto store = *Store::Open(dir.path());
  Batch b = store->NewBatch();
  for (uint64_t i = 0; i < 10; ++i) {
    if (i != 6) b.PutEntry(i, "leaf" + std::to_string(i));
  }
  ASSERT_TRUE(store->Commit(b).ok());
  std::string seen;
  ASSERT_TRUE(store->ScanLeaves(2, 5, [&](uint64_t seq, std::string_view leaf) {
    seen += std::to_string(seq) + "=" + std::string(leaf) + ";";
    return absl::OkStatus();
  }).ok());
  EXPECT_EQ(seen, "2=leaf2;3=leaf3;4=leaf4;");
  auto gap = store->ScanLeaves(4, 9, [](uint64_t, std::string_view) { return absl::OkStatus(); });
  EXPECT_EQ(gap.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(gap.message(), "storage: entry 6 is missing");
  auto tail = store->ScanLeaves(8, 12, [](uint64_t, std::string_view) { return absl::OkStatus(); });
  EXPECT_EQ(tail.message(), "storage: entry 10 is missing");
}

TEST(StoreTest, SecondOpenOfALockedDirectoryFails) {
  testing::TempDir dir;
  auto first = Store::Open(dir.path());
  ASSERT_TRUE(first.ok());
  auto second = Store::Open(dir.path());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace ledger::store
