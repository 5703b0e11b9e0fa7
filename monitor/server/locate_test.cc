#include "monitor/server/locate.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ledger/format/hash/hash.h"
#include "tests/util/status_matchers.h"

namespace ledger::monitor {
namespace {

using ::ledger::testing::StatusIs;
using runmap::Head;
using runmap::Key;
using runmap::RunMap;
using ::testing::HasSubstr;

Key KeyOf(int i) { return hash::Sha256(absl::StrCat("run-", i)); }
Head HeadOf(uint64_t count) { return Head{count, count * 10, hash::Sha256(absl::StrCat("leaf-", count))}; }

// Two maps: the replay's (`ours`) and the one a ledger signed (`theirs`),
// the ledger answering paths from its own.
class LocateTest : public ::testing::Test {
 protected:
  void SetBoth(const Key& key, const Head& head) {
    ASSERT_TRUE(ours_.Set(key, head).ok());
    ASSERT_TRUE(theirs_.Set(key, head).ok());
  }

  absl::StatusOr<Located> Locate() {
    asked_.clear();
    const runmap::Hash root = theirs_.Root();
    return LocateDifference(ours_, root, [&](const Key& key) -> absl::StatusOr<runmap::KeyedPath> {
      asked_.push_back(key);
      auto path = theirs_.Prove(key);
      if (!path.ok()) return path.status();
      return runmap::KeyedPath{key, *path};
    });
  }

  RunMap ours_, theirs_;
  std::vector<Key> asked_;
};

TEST_F(LocateTest, AHeadMovedBackIsLocatedWithBothHeads) {
  for (int i = 0; i < 1000; ++i) SetBoth(KeyOf(i), HeadOf(i + 2));
  ASSERT_TRUE(theirs_.Set(KeyOf(417), HeadOf(3)).ok());
  auto located = Locate();
  ASSERT_TRUE(located.ok()) << located.status();
  EXPECT_EQ(located->key, KeyOf(417));
  EXPECT_EQ(located->ledger_head, HeadOf(3));
  EXPECT_EQ(located->replayed_head, HeadOf(419));
  EXPECT_TRUE(located->proof.path.found.has_value());
  // One path per level of the descent, about log2(1000), and each asked once.
  EXPECT_LE(located->proofs_asked, 16);
  EXPECT_EQ(located->proofs_asked, static_cast<int>(asked_.size()));
}

TEST_F(LocateTest, AKeyTheLedgerDropsIsLocatedWithItsAbsence) {
  for (int i = 0; i < 1000; ++i) SetBoth(KeyOf(i), HeadOf(i + 1));
  ASSERT_TRUE(ours_.Set(KeyOf(1000), HeadOf(5)).ok());
  auto located = Locate();
  ASSERT_TRUE(located.ok()) << located.status();
  EXPECT_EQ(located->key, KeyOf(1000));
  EXPECT_EQ(located->ledger_head, std::nullopt);
  EXPECT_EQ(located->replayed_head, HeadOf(5));
  EXPECT_FALSE(located->proof.path.found.has_value());
}

TEST_F(LocateTest, AKeyOnlyTheLedgerHoldsIsLocated) {
  for (int i = 0; i < 1000; ++i) SetBoth(KeyOf(i), HeadOf(i + 1));
  ASSERT_TRUE(theirs_.Set(KeyOf(5000), HeadOf(7)).ok());
  auto located = Locate();
  ASSERT_TRUE(located.ok()) << located.status();
  EXPECT_EQ(located->key, KeyOf(5000));
  EXPECT_EQ(located->ledger_head, HeadOf(7));
  EXPECT_EQ(located->replayed_head, std::nullopt);
}

TEST_F(LocateTest, EmptyMapsOnEitherSide) {
  ASSERT_TRUE(ours_.Set(KeyOf(1), HeadOf(1)).ok());
  auto dropped = Locate();
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(dropped->key, KeyOf(1));
  EXPECT_EQ(dropped->ledger_head, std::nullopt);

  ours_ = RunMap();
  ASSERT_TRUE(theirs_.Set(KeyOf(2), HeadOf(2)).ok());
  auto added = Locate();
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(added->key, KeyOf(2));
  EXPECT_EQ(added->replayed_head, std::nullopt);
}

TEST_F(LocateTest, KeysSharingLongPrefixes) {
  // Keys equal but for their last bits: the paths run 250 levels deep.
  Key base = KeyOf(0);
  for (int i = 0; i < 16; ++i) {
    Key k = base;
    k[31] = static_cast<uint8_t>(i);
    SetBoth(k, HeadOf(i + 1));
  }
  Key changed = base;
  changed[31] = 9;
  ASSERT_TRUE(theirs_.Set(changed, HeadOf(1)).ok());
  auto located = Locate();
  ASSERT_TRUE(located.ok()) << located.status();
  EXPECT_EQ(located->key, changed);
  EXPECT_EQ(located->ledger_head, HeadOf(1));
}

TEST_F(LocateTest, RandomChangesAreEachLocated) {
  std::mt19937_64 random(7);
  for (int i = 0; i < 3000; ++i) SetBoth(KeyOf(i), HeadOf(i + 1));
  for (int trial = 0; trial < 50; ++trial) {
    const int i = static_cast<int>(random() % 3000);
    const Head before = *ours_.Get(KeyOf(i));
    ASSERT_TRUE(theirs_.Set(KeyOf(i), HeadOf(before.count + 1)).ok());
    auto located = Locate();
    ASSERT_TRUE(located.ok()) << located.status();
    EXPECT_EQ(located->key, KeyOf(i)) << trial;
    EXPECT_LE(located->proofs_asked, 20) << trial;
    ASSERT_TRUE(theirs_.Set(KeyOf(i), before).ok());
  }
}

TEST_F(LocateTest, TheSameMapIsNotFound) {
  for (int i = 0; i < 10; ++i) SetBoth(KeyOf(i), HeadOf(i + 1));
  EXPECT_THAT(Locate().status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_TRUE(asked_.empty());
}

TEST_F(LocateTest, APathThatDoesNotLeadToTheSignedRootIsRefused) {
  for (int i = 0; i < 10; ++i) SetBoth(KeyOf(i), HeadOf(i + 1));
  ASSERT_TRUE(theirs_.Set(KeyOf(3), HeadOf(1)).ok());
  // A ledger that signs one root and answers from another map.
  auto located = LocateDifference(ours_, theirs_.Root(), [&](const Key& key) -> absl::StatusOr<runmap::KeyedPath> {
    return runmap::KeyedPath{key, *ours_.Prove(key)};
  });
  EXPECT_THAT(located.status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("does not lead to its signed root")));
  // And one that answers with a true path of a key not asked for.
  located = LocateDifference(ours_, theirs_.Root(), [&](const Key&) -> absl::StatusOr<runmap::KeyedPath> {
    return runmap::KeyedPath{KeyOf(100), *theirs_.Prove(KeyOf(100))};
  });
  EXPECT_THAT(located.status(), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("is not the run's key")));
}

TEST_F(LocateTest, TheLedgersErrorsArePassedOn) {
  ASSERT_TRUE(theirs_.Set(KeyOf(3), HeadOf(1)).ok());
  auto located = LocateDifference(ours_, theirs_.Root(), [&](const Key&) -> absl::StatusOr<runmap::KeyedPath> {
    return absl::UnavailableError("GET /map/runs/...: HTTP 503");
  });
  EXPECT_THAT(located.status(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("503")));
}

}  // namespace
}  // namespace ledger::monitor
