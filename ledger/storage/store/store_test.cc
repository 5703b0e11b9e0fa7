#include "ledger/storage/store/store.h"

#include "absl/strings/str_cat.h"
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
    b.PutReceipt({IdSpace::kEmitter, "team-a", "r-0"}, {0, h0, hash::Sha256("ra")});
    b.PutNode(0, 0, h0);
    b.PutNode(0, 1, h1);
    b.PutNode(1, 0, hash::NodeHash(h0, h1));
    b.PutRunHead("team-a", "run-1", {2, 1, h1});
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
  auto ref = *store->FindReceipt({IdSpace::kEmitter, "team-a", "r-0"});
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->seq, 0u);
  EXPECT_EQ(ref->leaf_hash, h0);
  EXPECT_EQ(ref->digest, hash::Sha256("ra"));
  EXPECT_FALSE(store->FindReceipt({IdSpace::kEmitter, "team-a", "r-1"})->has_value());
  // Receipt ids are the team's and the space's own.
  EXPECT_FALSE(store->FindReceipt({IdSpace::kEmitter, "team-b", "r-0"})->has_value());
  EXPECT_FALSE(store->FindReceipt({IdSpace::kLedger, "team-a", "r-0"})->has_value());
  EXPECT_FALSE(store->FindReceipt({IdSpace::kLegacy, {}, "r-0"})->has_value());
  EXPECT_EQ(**store->GetRunHead("team-a", "run-1"), (RunHead{2, 1, h1}));
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
  ASSERT_TRUE(store
                  ->ScanLeaves(2, 5,
                               [&](uint64_t seq, std::string_view leaf) {
                                 seen += std::to_string(seq) + "=" + std::string(leaf) + ";";
                                 return absl::OkStatus();
                               })
                  .ok());
  EXPECT_EQ(seen, "2=leaf2;3=leaf3;4=leaf4;");
  auto gap = store->ScanLeaves(4, 9, [](uint64_t, std::string_view) { return absl::OkStatus(); });
  EXPECT_EQ(gap.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(gap.message(), "storage: entry 6 is missing");
  auto tail = store->ScanLeaves(8, 12, [](uint64_t, std::string_view) { return absl::OkStatus(); });
  EXPECT_EQ(tail.message(), "storage: entry 10 is missing");
}

// The run index: a run's seqs ascending, below the bound asked, and none of
// another run's, even where team and run_id run into each other ("a"/"bc",
// "ab"/"c") or one run_id begins another ("b", "bc"); it survives a reopen.
TEST(StoreTest, RunIndexScansOneRunsSeqsBelowABound) {
  testing::TempDir dir;
  {
    auto store = *Store::Open(dir.path());
    Batch b = store->NewBatch();
    const std::pair<const char*, const char*> runs[] = {{"a", "bc"}, {"ab", "c"}, {"a", "b"}};
    for (uint64_t seq = 0; seq < 30; ++seq) b.PutRunSeq(runs[seq % 3].first, runs[seq % 3].second, seq);
    b.PutRunSeq("a", "bc", 1000);
    ASSERT_TRUE(store->Commit(b).ok());
  }
  auto store = *Store::Open(dir.path());
  auto seqs = [&](std::string_view team, std::string_view run, uint64_t below) {
    std::string seen;
    absl::Status s = store->ScanRunSeqs(team, run, below, [&](uint64_t seq) {
      absl::StrAppend(&seen, seq, ",");
      return absl::OkStatus();
    });
    EXPECT_TRUE(s.ok()) << s;
    return seen;
  };
  EXPECT_EQ(seqs("a", "bc", 13), "0,3,6,9,12,");
  EXPECT_EQ(seqs("a", "bc", 5000), "0,3,6,9,12,15,18,21,24,27,1000,");
  EXPECT_EQ(seqs("ab", "c", 12), "1,4,7,10,");
  EXPECT_EQ(seqs("a", "b", 9), "2,5,8,");
  EXPECT_EQ(seqs("a", "bcd", 5000), "");
  EXPECT_EQ(seqs("a", "bc", 0), "");
  // fn's error stops the scan and is returned.
  int calls = 0;
  absl::Status stopped = store->ScanRunSeqs("a", "bc", 5000, [&](uint64_t) {
    ++calls;
    return absl::CancelledError("enough");
  });
  EXPECT_EQ(stopped, absl::CancelledError("enough"));
  EXPECT_EQ(calls, 1);
}

// A walk that goes one seq back for long stretches (read ahead in windows),
// jumps, goes dense again, and meets a missing entry: every seq is visited
// once, in order, with its own leaf, and the gap is DATA_LOSS.
TEST(StoreTest, WalkLeavesBackDenseStretchesJumpsAndGaps) {
  testing::TempDir dir;
  auto store = *Store::Open(dir.path());
  constexpr uint64_t kTop = 3 * Store::kWarmEntries + 500;
  Batch b = store->NewBatch();
  for (uint64_t i = 0; i < kTop; ++i) {
    if (i != 7) b.PutEntry(i, "leaf" + std::to_string(i));
  }
  ASSERT_TRUE(store->Commit(b).ok());
  // Dense from the top down to kWarmEntries + 100, then every 1,000th seq
  // down to 3,000, then dense again to 8 (7 is missing).
  auto next_of = [&](uint64_t at) -> std::optional<uint64_t> {
    if (at > Store::kWarmEntries + 100) return at - 1;
    if (at > 3000) return at - 1000 < 3000 ? 3000 : at - 1000;
    if (at > 8) return at - 1;
    return std::nullopt;
  };
  std::vector<uint64_t> want;
  for (std::optional<uint64_t> at = kTop - 1; at; at = next_of(*at)) want.push_back(*at);
  std::vector<uint64_t> seen;
  bool leaves_match = true;
  auto walked = store->WalkLeavesBack(
      kTop - 1, [&](uint64_t seq, std::string_view leaf) -> absl::StatusOr<std::optional<uint64_t>> {
        seen.push_back(seq);
        leaves_match = leaves_match && leaf == "leaf" + std::to_string(seq);
        return next_of(seq);
      });
  ASSERT_TRUE(walked.ok()) << walked;
  EXPECT_EQ(seen, want);
  EXPECT_TRUE(leaves_match);
  auto gap = store->WalkLeavesBack(100, [&](uint64_t seq, std::string_view) -> absl::StatusOr<std::optional<uint64_t>> {
    return seq > 0 ? std::optional<uint64_t>(seq - 1) : std::nullopt;
  });
  EXPECT_EQ(gap.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(gap.message(), "storage: entry 7 is missing");
}

hash::Hash H(int level, uint64_t index) { return hash::Sha256(std::to_string(level) + "/" + std::to_string(index)); }

TEST(StoreTest, NodesAcrossGroupsBatchesAndReopen) {
  testing::TempDir dir;
  const uint64_t n = 3 * kNodesPerGroup + 5;
  {
    auto store = *Store::Open(dir.path());
    // Nodes arrive in index order over several batches that split groups.
    uint64_t next = 0;
    for (uint64_t chunk : {7, 1, 20, 25}) {
      Batch b = store->NewBatch();
      for (uint64_t k = 0; k < chunk && next < n; ++k, ++next) {
        b.PutNode(0, next, H(0, next));
        if (next % 2 == 1) b.PutNode(1, next / 2, H(1, next / 2));
      }
      ASSERT_TRUE(store->Commit(b).ok());
    }
    for (uint64_t i = 0; i < n; ++i) EXPECT_EQ(*store->GetNode(0, i), H(0, i)) << i;
  }
  auto store = *Store::Open(dir.path());  // no cached groups: read back from disk
  for (uint64_t i = 0; i < n; ++i) EXPECT_EQ(*store->GetNode(0, i), H(0, i)) << i;
  for (uint64_t i = 0; i < n / 2; ++i) EXPECT_EQ(*store->GetNode(1, i), H(1, i)) << i;
  EXPECT_EQ(store->GetNode(0, n).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->GetNode(1, n / 2).status().code(), absl::StatusCode::kNotFound);
  // Continuing a partial group after reopening keeps what it held.
  Batch b = store->NewBatch();
  b.PutNode(0, n, H(0, n));
  ASSERT_TRUE(store->Commit(b).ok());
  EXPECT_EQ(*store->GetNode(0, n - 1), H(0, n - 1));
  EXPECT_EQ(*store->GetNode(0, n), H(0, n));
}

TEST(StoreTest, BatchBasedOnAnUncommittedBatchContinuesItsGroups) {
  testing::TempDir dir;
  auto store = *Store::Open(dir.path());
  Batch first = store->NewBatch();
  for (uint64_t i = 0; i < 3; ++i) first.PutNode(0, i, H(0, i));
  Batch second = store->NewBatch(&first);
  for (uint64_t i = 3; i < 5; ++i) second.PutNode(0, i, H(0, i));
  ASSERT_TRUE(store->Commit(first).ok());
  ASSERT_TRUE(store->Commit(second).ok());
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(*store->GetNode(0, i), H(0, i)) << i;
}

TEST(StoreTest, ProjectionRecordsScanAndDrop) {
  testing::TempDir dir;
  auto store = *Store::Open(dir.path());
  using projection::Table;
  Batch b = store->NewBatch();
  for (std::string k : {"a1", "a2", "a3", "b1"}) b.PutProjection(Table::kIndex, k, "v" + k);
  b.PutProjection(Table::kSteps, "a2", "step");
  b.PutEntry(0, "leaf");
  ASSERT_TRUE(store->Commit(b).ok());
  Batch d = store->NewBatch();
  d.DeleteProjection(Table::kIndex, "a3");
  ASSERT_TRUE(store->Commit(d).ok());

  EXPECT_EQ(**store->GetProjection(Table::kIndex, "a1"), "va1");
  EXPECT_FALSE(store->GetProjection(Table::kIndex, "a3")->has_value());
  EXPECT_EQ(**store->GetProjection(Table::kSteps, "a2"), "step");
  std::string seen;
  auto collect = [&](std::string_view k, std::string_view) {
    seen += std::string(k) + ",";
    return true;
  };
  ASSERT_TRUE(store->ScanProjection(Table::kIndex, "a", "b", false, collect).ok());
  EXPECT_EQ(seen, "a1,a2,");
  seen.clear();
  ASSERT_TRUE(store->ScanProjection(Table::kIndex, "a", "", true, collect).ok());
  EXPECT_EQ(seen, "b1,a2,a1,");
  seen.clear();
  ASSERT_TRUE(store
                  ->ScanProjection(Table::kIndex, "", "", true,
                                   [&](std::string_view k, std::string_view) {
                                     seen += std::string(k) + ",";
                                     return seen.size() < 6;  // stop after two
                                   })
                  .ok());
  EXPECT_EQ(seen, "b1,a2,");

  ASSERT_TRUE(store->DropProjections().ok());
  EXPECT_FALSE(store->GetProjection(Table::kIndex, "a1")->has_value());
  EXPECT_FALSE(store->GetProjection(Table::kSteps, "a2")->has_value());
  EXPECT_EQ(*store->GetLeaf(0), "leaf");  // the log is untouched
}

TEST(StoreTest, SecondOpenOfALockedDirectoryFails) {
  testing::TempDir dir;
  auto first = Store::Open(dir.path());
  ASSERT_TRUE(first.ok());
  auto second = Store::Open(dir.path());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

// The receipt index's key grammar (store.h), pinned byte for byte: stored
// data depends on it.
TEST(StoreTest, ReceiptKeysOfFormat2AreSpaceTeamAndId) {
  using namespace std::string_literals;
  EXPECT_EQ(EncodeReceiptKey({IdSpace::kEmitter, "team-a", "r-1"}), "\x00\x01\x06team-ar-1"s);
  EXPECT_EQ(EncodeReceiptKey({IdSpace::kLedger, "t", "ledger.unknown.5"}), "\x00\x02\x01tledger.unknown.5"s);
  EXPECT_EQ(EncodeReceiptKey({IdSpace::kLegacy, {}, "r-1"}), "r-1");
}

TEST(StoreTest, ScanReceiptsReadsBothFormatsAndLegacyReceiptsOnlyFormat1) {
  testing::TempDir dir;
  auto store = *Store::Open(dir.path());
  Batch b = store->NewBatch();
  b.PutReceipt({IdSpace::kEmitter, "team-a", "x"}, {1, {}, {}});
  b.PutReceipt({IdSpace::kEmitter, "team-b", "x"}, {2, {}, {}});
  b.PutReceipt({IdSpace::kLedger, "team-a", "x"}, {3, {}, {}});
  b.PutReceipt({IdSpace::kLegacy, {}, "old-2"}, {5, {}, {}});
  b.PutReceipt({IdSpace::kLegacy, {}, "old-1"}, {4, {}, {}});
  ASSERT_TRUE(store->Commit(b).ok());
  std::vector<std::string> seen;
  ASSERT_TRUE(store
                  ->ScanReceipts([&](const ReceiptKey& k, const ReceiptRef& ref) {
                    seen.push_back(absl::StrCat(static_cast<int>(k.space), "/", std::string(k.team), "/",
                                                std::string(k.receipt_id), "=", ref.seq));
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(seen,
            (std::vector<std::string>{"1/team-a/x=1", "1/team-b/x=2", "2/team-a/x=3", "0//old-1=4", "0//old-2=5"}));
  auto legacy = *store->LegacyReceipts(1);
  ASSERT_EQ(legacy.size(), 1u);
  EXPECT_EQ(legacy[0].first, "old-1");
  EXPECT_EQ(legacy[0].second.seq, 4u);
  Batch d = store->NewBatch();
  d.DeleteLegacyReceipt("old-1");
  d.DeleteLegacyReceipt("old-2");
  ASSERT_TRUE(store->Commit(d).ok());
  EXPECT_TRUE(store->LegacyReceipts(10)->empty());
  EXPECT_EQ((**store->FindReceipt({IdSpace::kEmitter, "team-b", "x"})).seq, 2u);
}

// The memory budget: refused below the minimum; memtables are charged to
// the one cache; partitioned indexes and filters still find every key after
// a reopen (from table files) and answer misses.
TEST(StoreTest, MemoryBudgetIsOneCacheChargedForMemtables) {
  testing::TempDir dir;
  auto small = Store::Open(dir.path(), nullptr, kMinMemoryBytes - 1);
  ASSERT_EQ(small.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(small.status().message(), "memory: at least 16 MiB, not 15 MiB");
  constexpr int kKeys = 20000;
  {
    auto store = *Store::Open(dir.path(), nullptr, 32 << 20);
    for (int batch = 0; batch < 10; ++batch) {
      Batch b = store->NewBatch();
      for (int i = batch * kKeys / 10; i < (batch + 1) * kKeys / 10; ++i) {
        std::string id = absl::StrCat("r-", i);
        b.PutEntry(static_cast<uint64_t>(i), id);
        b.PutReceipt({IdSpace::kEmitter, "team-a", id},
                     {static_cast<uint64_t>(i), hash::LeafHash(id), hash::Sha256(id)});
      }
      ASSERT_TRUE(store->Commit(b).ok());
    }
    Memory m = store->MemoryUse();
    EXPECT_EQ(m.budget, uint64_t{32} << 20);
    EXPECT_GT(m.memtables, 0u);
    EXPECT_GE(m.cache, m.memtables);
  }
  auto store = *Store::Open(dir.path(), nullptr, kMinMemoryBytes);
  for (int i = 0; i < kKeys; i += 997) {
    std::string id = absl::StrCat("r-", i);
    auto ref = store->FindReceipt({IdSpace::kEmitter, "team-a", id});
    ASSERT_TRUE(ref.ok() && ref->has_value()) << id;
    EXPECT_EQ((*ref)->seq, static_cast<uint64_t>(i));
  }
  EXPECT_FALSE(store->FindReceipt({IdSpace::kEmitter, "team-a", "r-missing"})->has_value());
  EXPECT_EQ(store->MemoryUse().budget, kMinMemoryBytes);
}

}  // namespace
}  // namespace ledger::store
