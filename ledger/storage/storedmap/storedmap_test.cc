#include "ledger/storage/storedmap/storedmap.h"

#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ledger/storage/store/store.h"
#include "tests/util/temp_dir.h"

namespace ledger::storedmap {
namespace {

using runmap::Head;
using runmap::Key;

Key RandomKey(std::mt19937_64& rng) {
  Key k;
  for (auto& b : k) b = static_cast<uint8_t>(rng());
  return k;
}

Head HeadOf(uint64_t n) {
  Head h{n % 7 + 1, n + 10, {}};
  h.last_leaf_hash[0] = static_cast<uint8_t>(n);
  h.last_leaf_hash[31] = static_cast<uint8_t>(n >> 8);
  return h;
}

// The stored map and the in-memory one must give the same path (inclusion
// or absence, every sibling) for `key`.
void ExpectSamePath(StoredMap& stored, runmap::RunMap& memory, const Key& key) {
  auto a = stored.Prove(key);
  auto b = memory.Prove(key);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->found.has_value(), b->found.has_value());
  if (a->found && b->found) {
    EXPECT_EQ(a->found->key, b->found->key);
    EXPECT_EQ(a->found->head, b->found->head);
  }
  EXPECT_EQ(a->siblings, b->siblings);
  EXPECT_EQ(a->other.has_value(), b->other.has_value());
  if (a->other && b->other) {
    EXPECT_EQ(a->other->key, b->other->key);
    EXPECT_EQ(a->other->value_hash, b->other->value_hash);
  }
}

class StoredMapTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = *store::Store::Open(dir_.path()); }
  void Rounds(StoredMap::Id id, bool top);
  testing::TempDir dir_;
  std::unique_ptr<store::Store> store_;
};

// Rounds of inserts and updates, including keys that share long prefixes
// (neighbours that split deep nodes): after each, the same root and the same
// proofs as the in-memory map's; with the top levels in memory (LoadTop,
// here after rows were written) and without.
TEST_F(StoredMapTest, RootsAndProofsAreTheInMemoryMapsAfterEveryRound) {
  for (bool top : {false, true}) {
    SCOPED_TRACE(top ? "top levels in memory" : "rows only");
    Rounds(top ? StoredMap::Id::kTeams : StoredMap::Id::kRuns, top);
  }
}

void StoredMapTest::Rounds(StoredMap::Id id, bool top) {
  std::mt19937_64 rng(7);
  StoredMap stored(store_.get(), id);
  runmap::RunMap memory;
  EXPECT_EQ(*stored.Root(), memory.Root());  // the empty map
  std::vector<Key> keys;
  uint64_t n = 0;
  for (int round = 0; round < 12; ++round) {
    std::vector<runmap::Leaf> leaves;
    for (int i = 0; i < 40; ++i) {
      Key k;
      if (!keys.empty() && i % 3 == 0) {
        k = keys[rng() % keys.size()];  // an update
      } else if (!keys.empty() && i % 3 == 1) {
        k = keys[rng() % keys.size()];  // a close neighbour: the same first bits
        k[31 - static_cast<int>(rng() % 4)] ^= static_cast<uint8_t>(1 + rng() % 255);
        keys.push_back(k);
      } else {
        k = RandomKey(rng);
        keys.push_back(k);
      }
      leaves.push_back({k, HeadOf(++n)});
      ASSERT_TRUE(memory.Set(k, HeadOf(n)).ok());
    }
    ASSERT_TRUE(stored.Apply(1000 + round, leaves).ok());
    if (top && round == 2) {
      ASSERT_TRUE(stored.LoadTop().ok());
    }
    EXPECT_EQ(*stored.Size(), std::optional<uint64_t>(1000 + round));
    auto root = stored.Root();
    ASSERT_TRUE(root.ok()) << root.status();
    ASSERT_EQ(*root, memory.Root()) << "round " << round;
    for (int i = 0; i < 10; ++i) {
      ExpectSamePath(stored, memory, keys[rng() % keys.size()]);
      ExpectSamePath(stored, memory, RandomKey(rng));
    }
  }
  for (const Key& k : keys) EXPECT_EQ(*stored.Get(k), memory.Get(k));
  EXPECT_EQ(*stored.Get(RandomKey(rng)), std::nullopt);
}

// The rows outlive the process: a reopened store gives the same root and
// proofs, and a node row that is missing is computed again, right.
TEST_F(StoredMapTest, ReopenedAndWithNodeRowsMissingTheRootIsTheSame) {
  std::mt19937_64 rng(11);
  runmap::RunMap memory;
  std::vector<runmap::Leaf> leaves;
  for (uint64_t i = 0; i < 500; ++i) {
    leaves.push_back({RandomKey(rng), HeadOf(i)});
    ASSERT_TRUE(memory.Set(leaves.back().key, leaves.back().head).ok());
  }
  {
    StoredMap stored(store_.get(), StoredMap::Id::kTeams);
    ASSERT_TRUE(stored.Apply(42, leaves).ok());
    ASSERT_EQ(*stored.Root(), memory.Root());
  }
  store_.reset();
  store_ = *store::Store::Open(dir_.path());
  StoredMap stored(store_.get(), StoredMap::Id::kTeams);
  EXPECT_EQ(*stored.Size(), std::optional<uint64_t>(42));
  // Remembered: the root's own row holds the root.
  auto top = store_->GetMapRow(stored.NodeKey(runmap::NodeId{}));
  ASSERT_TRUE(top.ok() && top->has_value());
  EXPECT_EQ(**top, std::string(reinterpret_cast<const char*>(memory.Root().data()), 32));
  // Forget the root's row and one on a path below it.
  store::Batch batch = store_->NewBatch();
  batch.DeleteMapRow(stored.NodeKey(runmap::NodeId{}));
  batch.DeleteMapRow(stored.NodeKey(runmap::NodeOf(leaves[3].key, 2)));
  ASSERT_TRUE(store_->CommitMapRows(batch).ok());
  EXPECT_EQ(*stored.Root(), memory.Root());
  ExpectSamePath(stored, memory, leaves[3].key);
  // The other map of the same store is untouched and empty.
  StoredMap runs(store_.get(), StoredMap::Id::kRuns);
  EXPECT_EQ(*runs.Size(), std::nullopt);
  EXPECT_EQ(*runs.Root(), runmap::EmptyHash());
}

TEST_F(StoredMapTest, RebuildReplacesEverythingAndForgetLeavesNothing) {
  std::mt19937_64 rng(3);
  StoredMap stored(store_.get(), StoredMap::Id::kRuns);
  std::vector<runmap::Leaf> old_leaves;
  for (uint64_t i = 0; i < 50; ++i) old_leaves.push_back({RandomKey(rng), HeadOf(i)});
  ASSERT_TRUE(stored.Apply(5, old_leaves).ok());
  ASSERT_TRUE(stored.Root().ok());
  runmap::RunMap memory;
  std::vector<runmap::Leaf> leaves;
  for (uint64_t i = 0; i < 25'000; ++i) {  // more than one commit's worth of rows
    leaves.push_back({RandomKey(rng), HeadOf(i)});
    ASSERT_TRUE(memory.Set(leaves.back().key, leaves.back().head).ok());
  }
  ASSERT_TRUE(stored
                  .Rebuild(77,
                           [&](StoredMap::Put put) -> absl::Status {
                             for (const auto& l : leaves) {
                               if (auto s = put(l.key, l.head); !s.ok()) return s;
                             }
                             return absl::OkStatus();
                           })
                  .ok());
  EXPECT_EQ(*stored.Size(), std::optional<uint64_t>(77));
  EXPECT_EQ(*stored.Get(old_leaves[0].key), std::nullopt);
  EXPECT_EQ(*stored.Root(), memory.Root());
  ExpectSamePath(stored, memory, leaves[123].key);
  ASSERT_TRUE(StoredMap::Forget(*store_, StoredMap::Id::kRuns).ok());
  EXPECT_EQ(*stored.Size(), std::nullopt);
  EXPECT_TRUE(store_->MapRows(std::string(1, 1), std::string(1, 2), 1)->empty());
  EXPECT_EQ(*stored.Root(), runmap::EmptyHash());
}

// A head the map refuses changes nothing, and a malformed row is DATA_LOSS.
TEST_F(StoredMapTest, BadHeadChangesNothingAndMalformedRowsAreDataLoss) {
  std::mt19937_64 rng(5);
  StoredMap stored(store_.get(), StoredMap::Id::kRuns);
  Key a = RandomKey(rng), b = RandomKey(rng);
  ASSERT_TRUE(stored.Apply(1, {{a, HeadOf(1)}}).ok());
  auto root = *stored.Root();
  absl::Status bad = stored.Apply(2, {{b, HeadOf(2)}, {a, Head{0, 5, {}}}});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_EQ(*stored.Size(), std::optional<uint64_t>(1));
  EXPECT_EQ(*stored.Get(b), std::nullopt);
  EXPECT_EQ(*stored.Root(), root);

  store::Batch batch = store_->NewBatch();
  batch.PutMapRow(stored.LeafKey(b), "short");
  ASSERT_TRUE(store_->CommitMapRows(batch).ok());
  EXPECT_EQ(stored.Get(b).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(stored.Root().status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(stored.Root().status().message(), "run-head map: a stored leaf is malformed");
}

}  // namespace
}  // namespace ledger::storedmap
