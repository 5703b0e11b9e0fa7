// ShardLog against a real PostgreSQL: the test's wrapper
// (tests/replication/with_pg.py) starts one as an unprivileged user and
// gives its URI in LEDGER_TEST_PG_URI. Each test uses its own origin.
#include "ledger/storage/replication/shard_log.h"

#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/storage/replication/pg.h"
#include "tests/util/status_matchers.h"

namespace ledger::replication {
namespace {

using ::ledger::testing::StatusIs;
using ::testing::HasSubstr;

std::string Uri() {
  const char* uri = std::getenv("LEDGER_TEST_PG_URI");
  return uri != nullptr ? uri : "";
}

class ShardLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Uri().empty()) GTEST_SKIP() << "LEDGER_TEST_PG_URI is not set (run through tests/replication/with_pg.py)";
    origin_ = absl::StrCat("shard-log-test/", ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::unique_ptr<ShardLog> Open() {
    auto log = ShardLog::Open({Uri(), "", origin_, std::chrono::milliseconds(5000)});
    EXPECT_TRUE(log.ok()) << log.status();
    return log.ok() ? *std::move(log) : nullptr;
  }
  // A batch of `n` leaves from `first`, with the tree it makes over the
  // leaves before (`leaves_` keeps them all).
  sequencer::ReplicatedBatch Batch(uint64_t first, int n) {
    held_.emplace_back();
    for (int i = 0; i < n; ++i) held_.back().push_back(absl::StrCat("{\"leaf\":", first + i, "}"));
    for (const auto& l : held_.back()) frontier_.Append(hash::LeafHash(l), [](int, uint64_t, const hash::Hash&) {});
    return {first, &held_.back(), first + n, frontier_.Root()};
  }
  // Ends the lease of the shard's holder now, as if it had stopped renewing.
  void Expire(ShardLog& log) {
    auto fence = log.Read();
    ASSERT_TRUE(fence.ok());
    ASSERT_TRUE(log.Release(fence->epoch, fence->holder).ok());
  }

  std::string origin_;
  std::deque<std::vector<std::string>> held_;
  merkle::Frontier frontier_;
};

TEST(ShardLogUri, APasswordInTheUriIsRefusedBeforeConnecting) {
  for (const char* uri : {"postgresql://ledger:secret@127.0.0.1:1/ledger", "host=127.0.0.1 password=secret"}) {
    EXPECT_THAT(ShardLog::Open({uri, "", "o", std::chrono::milliseconds(100)}).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--replication-password-file")))
        << uri;
  }
  EXPECT_THAT(ShardLog::Open({"postgresql://[", "", "o", std::chrono::milliseconds(100)}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a libpq connection URI")));
}

TEST(ShardLogLeaves, RoundTripAndCutShort) {
  std::vector<std::string> leaves{"a", "", std::string(70000, 'x')};
  std::string bytes = EncodeLeaves(leaves);
  EXPECT_EQ(*DecodeLeaves(bytes), leaves);
  EXPECT_THAT(DecodeLeaves(bytes.substr(0, bytes.size() - 1)).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("cut short")));
  EXPECT_THAT(DecodeLeaves(bytes.substr(0, 2)).status(), StatusIs(absl::StatusCode::kDataLoss));
}

TEST_F(ShardLogTest, ADeposedLeaderCannotCommitEvenAtTheRightSize) {
  auto a = Open(), b = Open();
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->Init(0, hash::EmptyRoot()).ok());
  auto taken = a->TakeOver("node-a", "a:1", std::chrono::seconds(30));
  ASSERT_TRUE(taken.ok() && taken->has_value()) << taken.status();
  EXPECT_EQ((*taken)->epoch, 1);
  ASSERT_TRUE(a->Commit(1, Batch(0, 3)).ok());
  // A live lease is not taken.
  auto refused = b->TakeOver("node-b", "b:1", std::chrono::seconds(30));
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->has_value());

  Expire(*a);
  auto b_taken = b->TakeOver("node-b", "b:1", std::chrono::seconds(30));
  ASSERT_TRUE(b_taken.ok() && b_taken->has_value());
  EXPECT_EQ((*b_taken)->epoch, 2);
  EXPECT_EQ((*b_taken)->size, 3u);
  EXPECT_EQ((*b_taken)->root, frontier_.Root());

  // The old epoch's next batch, at exactly the fence's size: refused.
  merkle::Frontier before = frontier_;
  EXPECT_THAT(a->Commit(1, Batch(3, 2)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("the fence is at epoch 2 (node-b), size 3")));
  EXPECT_THAT(a->Renew(1, "node-a", std::chrono::seconds(30)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("epoch 1 is over")));
  frontier_ = before;
  held_.pop_back();
  // The new epoch commits there; a batch not at the fence's size is refused.
  ASSERT_TRUE(b->Commit(2, Batch(3, 2)).ok());
  EXPECT_THAT(b->Commit(2, Batch(3, 1)), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("size 5")));
  auto fence = b->Read();
  ASSERT_TRUE(fence.ok());
  EXPECT_EQ(fence->size, 5u);
  EXPECT_EQ(fence->epoch, 2);

  auto batches = b->Batches(0, 1 << 20);
  ASSERT_TRUE(batches.ok());
  ASSERT_EQ(batches->size(), 2u);
  EXPECT_EQ((*batches)[0].first_seq, 0u);
  EXPECT_EQ((*batches)[0].epoch, 1);
  EXPECT_EQ((*batches)[0].leaves, held_[0]);
  EXPECT_EQ((*batches)[1].first_seq, 3u);
  EXPECT_EQ((*batches)[1].epoch, 2);
  EXPECT_EQ((*batches)[1].size, 5u);
}

TEST_F(ShardLogTest, CheckpointsOfAnEndedEpochOrAnotherNoteAreRefused) {
  auto a = Open(), b = Open();
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->Init(0, hash::EmptyRoot()).ok());
  ASSERT_TRUE(a->TakeOver("node-a", "a:1", std::chrono::seconds(30)).ok());
  ASSERT_TRUE(a->Commit(1, Batch(0, 2)).ok());
  ASSERT_TRUE(a->PutCheckpoint(1, 2, "note-2", "time-2").ok());
  // Past the fence: refused.
  EXPECT_THAT(a->PutCheckpoint(1, 3, "note-3", "time-3"), StatusIs(absl::StatusCode::kFailedPrecondition));
  // The same size again: the time note may be signed anew, the note not changed.
  EXPECT_TRUE(a->PutCheckpoint(1, 2, "note-2", "time-2b").ok());
  EXPECT_THAT(a->PutCheckpoint(1, 2, "another-note", "time"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("another note")));
  Expire(*a);
  ASSERT_TRUE(b->TakeOver("node-b", "b:1", std::chrono::seconds(30)).ok());
  EXPECT_THAT(a->PutCheckpoint(1, 2, "note-2", "time-2c"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("epoch 1 is over")));
  auto cps = b->Checkpoints(0, 10);
  ASSERT_TRUE(cps.ok());
  ASSERT_EQ(cps->size(), 1u);
  EXPECT_EQ((*cps)[0].note, "note-2");
  EXPECT_EQ((*cps)[0].time_note, "time-2b");
}

TEST_F(ShardLogTest, TrimKeepsWhatANodeStillNeedsAndWhatNoCheckpointCovers) {
  auto a = Open();
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->Init(0, hash::EmptyRoot()).ok());
  ASSERT_TRUE(a->TakeOver("node-a", "a:1", std::chrono::seconds(30)).ok());
  for (uint64_t first = 0; first < 10; first += 2) ASSERT_TRUE(a->Commit(1, Batch(first, 2)).ok());
  ASSERT_TRUE(a->PutCheckpoint(1, 6, "n6", "t6").ok());
  ASSERT_TRUE(a->Report("node-a", "a:1", 10).ok());
  ASSERT_TRUE(a->Report("node-b", "b:1", 4).ok());
  // node-b needs [4, ...): batches up to size 4 go.
  auto trimmed = a->Trim(std::chrono::seconds(600));
  ASSERT_TRUE(trimmed.ok()) << trimmed.status();
  EXPECT_EQ(*trimmed, 2u);
  EXPECT_EQ(**a->FirstKept(), 4u);
  // node-b caught up: the checkpoint (6) bounds it.
  ASSERT_TRUE(a->Report("node-b", "b:1", 10).ok());
  EXPECT_EQ(*a->Trim(std::chrono::seconds(600)), 1u);
  EXPECT_EQ(**a->FirstKept(), 6u);
  auto tail = a->Tail();
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->batches, 2u);
  // The first kept batch starts at 6: reading from 4 finds it, not 4.
  auto from4 = a->Batches(4, 1 << 20);
  ASSERT_TRUE(from4.ok());
  EXPECT_EQ(from4->front().first_seq, 6u);
}

TEST_F(ShardLogTest, AWitnessCosignatureIsKeptPerWitnessAndNeverGoesBack) {
  auto a = Open(), b = Open();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  auto none = b->Cosignatures();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  ASSERT_TRUE(a->PutCosignature({"w1", 10, "- w1 A10\n"}).ok());
  ASSERT_TRUE(a->PutCosignature({"w2", 7, "- w2 B7\n"}).ok());
  ASSERT_TRUE(a->PutCosignature({"w1", 12, "- w1 A12\n"}).ok());
  // A node that recorded later, but of an older checkpoint, moves nothing back.
  ASSERT_TRUE(b->PutCosignature({"w1", 11, "- w1 A11\n"}).ok());
  auto got = b->Cosignatures();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].witness, "w1");
  EXPECT_EQ((*got)[0].size, 12u);
  EXPECT_EQ((*got)[0].line, "- w1 A12\n");
  EXPECT_EQ((*got)[1].witness, "w2");
  EXPECT_EQ((*got)[1].size, 7u);
  // Another shard's origin sees none of them.
  auto other = ShardLog::Open({Uri(), "", origin_ + "-other", std::chrono::milliseconds(5000)});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE((*other)->Cosignatures()->empty());
}

// Every node of a shard opens the same database at start, often at the same
// moment: each must find the tables, none may fail on another's CREATE.
TEST(ShardLogSchema, NodesOpeningANewDatabaseTogetherAllStart) {
  if (Uri().empty()) GTEST_SKIP() << "LEDGER_TEST_PG_URI is not set";
  ASSERT_NE(Uri().find("/ledger?"), std::string::npos) << Uri();
  auto admin = pg::Connection::Open(Uri(), "", std::chrono::milliseconds(5000));
  ASSERT_TRUE(admin.ok()) << admin.status();
  for (int round = 0; round < 6; ++round) {
    const std::string db = absl::StrCat("schema_race_", getpid(), "_", round);
    ASSERT_TRUE((*admin)->Exec(absl::StrCat("CREATE DATABASE ", db), {}, std::chrono::milliseconds(30000)).ok());
    const std::string uri = absl::StrReplaceAll(Uri(), {{"/ledger?", absl::StrCat("/", db, "?")}});
    constexpr int kNodes = 8;
    std::vector<absl::Status> opened(kNodes);
    std::vector<std::thread> nodes;
    for (int i = 0; i < kNodes; ++i) {
      nodes.emplace_back([&, i] {
        opened[i] = ShardLog::Open({uri, "", absl::StrCat("node-", i), std::chrono::milliseconds(10000)}).status();
      });
    }
    for (auto& t : nodes) t.join();
    for (int i = 0; i < kNodes; ++i)
      EXPECT_TRUE(opened[i].ok()) << "round " << round << ", node " << i << ": " << opened[i];
  }
}

}  // namespace
}  // namespace ledger::replication
