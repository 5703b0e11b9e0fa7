// Sequencer::Replay and Options::replicate: a second store built from the
// batches a first one replicated holds the same leaves, tree and heads.
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/storage/sequencer/sequencer.h"
#include "ledger/storage/store/store.h"
#include "ledger/storage/store/testing.h"
#include "tests/util/status_matchers.h"
#include "tests/util/temp_dir.h"
#include "util/sync/mutex.h"

namespace ledger::sequencer {
namespace {

using ::ledger::testing::StatusIs;
using ::testing::HasSubstr;

struct Kept {
  std::deque<receipt::Receipt> receipts;
};

Submission MakeIn(Kept& kept, const std::string& id, const std::string& run, const std::string& team) {
  auto r = receipt::FromJsonText(R"({"kind":"model_call","occurred_at_us":1,"route":"r","decision":"allow"})");
  r->set_receipt_id(id);
  r->set_team(team);
  r->set_run_id(run);
  r->mutable_model_call()->set_model("m");
  std::string canonical = *receipt::Canonicalize(*r, receipt::Author::kEmitter);
  kept.receipts.push_back(*std::move(r));
  return Submission::Of(kept.receipts.back(), std::move(canonical), "emitter-" + team);
}

std::vector<Outcome> AppendWaiting(Sequencer& seq, std::vector<Submission> items) {
  std::promise<std::vector<Outcome>> p;
  auto f = p.get_future();
  absl::Status s = seq.Submit(std::move(items), [&](std::vector<Outcome> o) { p.set_value(std::move(o)); });
  EXPECT_TRUE(s.ok()) << s;
  return f.get();
}

std::pair<absl::Status, Head> ReplayWaiting(Sequencer& seq, std::vector<std::string> leaves) {
  std::promise<std::pair<absl::Status, Head>> p;
  auto f = p.get_future();
  absl::Status s = seq.Replay(std::move(leaves), [&](absl::Status st, Head h) { p.set_value({st, h}); });
  if (!s.ok()) return {s, {}};
  return f.get();
}

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    leader_store_ = *store::Store::Open(leader_dir_.path());
    follower_store_ = *store::Store::Open(follower_dir_.path());
  }
  // A leader whose every batch is recorded as the replicated log would.
  std::unique_ptr<Sequencer> StartLeader() {
    Sequencer::Options o;
    o.replicate = [this](const ReplicatedBatch& b) {
      sync::MutexLock lock(&mu_);
      if (!replicate_status_.ok()) return replicate_status_;
      batches_.push_back({b.first_seq, *b.leaves, b.size, b.root});
      return absl::OkStatus();
    };
    return *Sequencer::Start(leader_store_.get(), std::move(o));
  }
  struct Recorded {
    uint64_t first_seq;
    std::vector<std::string> leaves;
    uint64_t size;
    hash::Hash root;
  };
  std::vector<Recorded> Batches() {
    sync::MutexLock lock(&mu_);
    return batches_;
  }
  void FailReplication(absl::Status s) {
    sync::MutexLock lock(&mu_);
    replicate_status_ = std::move(s);
  }

  Kept kept_;
  testing::TempDir leader_dir_, follower_dir_;
  std::unique_ptr<store::Store> leader_store_, follower_store_;
  sync::Mutex mu_;
  std::vector<Recorded> batches_ ABSL_GUARDED_BY(mu_);
  absl::Status replicate_status_ ABSL_GUARDED_BY(mu_);
};

TEST_F(ReplayTest, AFollowerBuiltFromTheReplicatedBatchesHoldsTheLeadersLog) {
  auto leader = StartLeader();
  for (int round = 0; round < 5; ++round) {
    std::vector<Submission> items;
    for (int i = 0; i < 7; ++i) {
      items.push_back(MakeIn(kept_, absl::StrCat("r", round, "-", i), absl::StrCat("run-", i % 3),
                             i % 2 == 0 ? "team-a" : "team-b"));
    }
    for (const Outcome& o : AppendWaiting(*leader, std::move(items))) ASSERT_TRUE(o.status.ok()) << o.status;
  }
  const Head leader_head = leader->committed();
  ASSERT_EQ(leader_head.size, 35u);

  auto follower = *Sequencer::Start(follower_store_.get(), {});
  uint64_t expected_first = 0;
  for (const Recorded& b : Batches()) {
    EXPECT_EQ(b.first_seq, expected_first);
    auto [status, head] = ReplayWaiting(*follower, b.leaves);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(head.size, b.size);
    EXPECT_EQ(head.root, b.root);
    expected_first = b.size;
  }
  EXPECT_EQ(follower->committed().root, leader_head.root);
  EXPECT_EQ(follower->committed().chain_head, leader_head.chain_head);
  for (uint64_t seq = 0; seq < leader_head.size; ++seq) {
    EXPECT_EQ(*follower_store_->GetLeaf(seq), *leader_store_->GetLeaf(seq)) << seq;
  }
  EXPECT_EQ(**follower_store_->GetRunHead("team-a", "run-1"), **leader_store_->GetRunHead("team-a", "run-1"));
  EXPECT_EQ(**follower_store_->GetTeamHead("team-b"), **leader_store_->GetTeamHead("team-b"));
  // A retry on the follower's log finds the leader's seq.
  auto retried = *follower_store_->FindReceipt({store::IdSpace::kEmitter, "team-b", "r3-5"});
  ASSERT_TRUE(retried.has_value());
  EXPECT_EQ(retried->seq, (*leader_store_->FindReceipt({store::IdSpace::kEmitter, "team-b", "r3-5"}))->seq);
}

TEST_F(ReplayTest, AFailedReplicationAcknowledgesNothingAndWritesNothing) {
  auto leader = StartLeader();
  for (const Outcome& o : AppendWaiting(*leader, {MakeIn(kept_, "a", "run", "team-a")})) ASSERT_TRUE(o.status.ok());
  FailReplication(absl::UnavailableError("fence moved: epoch 2 is not ours"));
  auto out = AppendWaiting(*leader, {MakeIn(kept_, "b", "run", "team-a"), MakeIn(kept_, "c", "run", "team-a")});
  for (const Outcome& o : out) {
    EXPECT_THAT(o.status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("replication: fence moved")));
    EXPECT_THAT(std::string(o.status.message()), HasSubstr("retry with the same receipt_id"));
  }
  EXPECT_EQ(leader->committed().size, 1u);
  EXPECT_EQ((*leader_store_->ReadState()).size, 1u);
  EXPECT_THAT(leader_store_->GetLeaf(1).status(), StatusIs(absl::StatusCode::kNotFound));
  // Once replication works again, the retry appends them at the next seqs.
  FailReplication(absl::OkStatus());
  out = AppendWaiting(*leader, {MakeIn(kept_, "b", "run", "team-a"), MakeIn(kept_, "c", "run", "team-a")});
  ASSERT_TRUE(out[0].status.ok()) << out[0].status;
  EXPECT_EQ(out[0].seq, 1u);
  EXPECT_EQ(out[1].seq, 2u);
  EXPECT_EQ(Batches().back().first_seq, 1u);
}

TEST_F(ReplayTest, ATamperedLeafIsRefusedAndNothingOfItsBatchIsKept) {
  auto leader = StartLeader();
  AppendWaiting(*leader, {MakeIn(kept_, "a", "run", "team-a")});
  AppendWaiting(*leader, {MakeIn(kept_, "b", "run", "team-a"), MakeIn(kept_, "c", "run", "team-a")});
  auto batches = Batches();
  ASSERT_EQ(batches.size(), 2u);
  auto follower = *Sequencer::Start(follower_store_.get(), {});
  ASSERT_TRUE(ReplayWaiting(*follower, batches[0].leaves).first.ok());

  // Another time than the one built: the leader's leaf must be reproduced.
  std::vector<std::string> tampered = batches[1].leaves;
  auto entry = *receipt::ParseLeaf(tampered[1]);
  entry.run_prev = 0;  // the run's previous entry is seq 1, not 0
  tampered[1] = receipt::EncodeEntry(entry, receipt::Encode(entry.receipt));
  auto [status, head] = ReplayWaiting(*follower, tampered);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("replayed entry 2: the leaf built")));
  EXPECT_EQ(head.size, 1u);
  EXPECT_EQ((*follower_store_->ReadState()).size, 1u);
  EXPECT_THAT(follower_store_->GetLeaf(1).status(), StatusIs(absl::StatusCode::kNotFound));
  // The untampered batch still applies.
  auto [ok, after] = ReplayWaiting(*follower, batches[1].leaves);
  ASSERT_TRUE(ok.ok()) << ok;
  EXPECT_EQ(after.root, leader->committed().root);
}

TEST_F(ReplayTest, ALeaderBatchIsRefusedByAStoreWithAnotherHistory) {
  auto leader = StartLeader();
  AppendWaiting(*leader, {MakeIn(kept_, "a", "run", "team-a")});
  // The follower's store already has another first entry.
  auto follower = *Sequencer::Start(follower_store_.get(), {});
  AppendWaiting(*follower, {MakeIn(kept_, "z", "run", "team-a")});
  auto [status, head] = ReplayWaiting(*follower, Batches()[0].leaves);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("replayed entry 1")));
  EXPECT_EQ(head.size, 1u);
  // The same receipt id a second time is refused too.
  AppendWaiting(*leader, {MakeIn(kept_, "z", "run", "team-a")});
  auto [dup, unchanged] = ReplayWaiting(*follower, Batches()[1].leaves);
  EXPECT_THAT(dup, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("already in this node's log")));
  EXPECT_EQ(unchanged.size, 1u);
}

TEST_F(ReplayTest, AnUnparsableLeafIsRefusedBeforeAnythingIsQueued) {
  auto follower = *Sequencer::Start(follower_store_.get(), {});
  EXPECT_THAT(ReplayWaiting(*follower, {"{\"not\":\"a leaf\"}"}).first,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("replayed leaf 0")));
  EXPECT_EQ(follower->queued(), 0u);
}

// A leader of one receipt per batch whose first replicated commit waits
// until the writer has built the batch after it, so that the second is
// replicated while the first is being stored.
class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = *store::Store::Open(dir_.path(), &faults_); }
  std::unique_ptr<Sequencer> Start(uint64_t fail_at) {
    Sequencer::Options o;
    o.max_batch = 1;
    o.replicate = [this, fail_at](const ReplicatedBatch& b) -> absl::Status {
      const uint64_t stored = store_->ReadState()->size;
      bool first = false;
      {
        sync::MutexLock lock(&mu_);
        calls_.push_back({b.first_seq, stored});
        first = calls_.size() == 1;
      }
      while (first && seq_->stats().build_us.Read().count < 2)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (first) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // handed over
      // Once: the batch built again at that seq is replicated.
      if (b.first_seq == fail_at && !failed_.exchange(true)) {
        return absl::UnavailableError("fence moved: epoch 2 is not ours");
      }
      return absl::OkStatus();
    };
    auto seq = *Sequencer::Start(store_.get(), std::move(o));
    seq_ = seq.get();
    return seq;
  }
  // Two receipts submitted at once, each a batch: their outcomes.
  std::pair<Outcome, Outcome> AppendTwo(Sequencer& seq, const std::string& a, const std::string& b) {
    std::promise<std::vector<Outcome>> pa, pb;
    auto fa = pa.get_future(), fb = pb.get_future();
    EXPECT_TRUE(
        seq.Submit({MakeIn(kept_, a, "run", "team-a")}, [&](std::vector<Outcome> o) { pa.set_value(std::move(o)); })
            .ok());
    EXPECT_TRUE(
        seq.Submit({MakeIn(kept_, b, "run", "team-a")}, [&](std::vector<Outcome> o) { pb.set_value(std::move(o)); })
            .ok());
    return {fa.get()[0], fb.get()[0]};
  }
  struct Call {
    uint64_t first_seq;
    uint64_t stored;  // the store's size when the batch was replicated
  };
  std::vector<Call> Calls() {
    sync::MutexLock lock(&mu_);
    return calls_;
  }

  Kept kept_;
  testing::TempDir dir_;
  store::Faults faults_;
  std::unique_ptr<store::Store> store_;
  Sequencer* seq_ = nullptr;
  sync::Mutex mu_;
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
};

TEST_F(PipelineTest, ABatchWhoseReplicationFailsIsNotStoredAndTheOneBeforeItIsAcknowledged) {
  auto seq = Start(/*fail_at=*/1);
  auto [a, b] = AppendTwo(*seq, "a", "b");
  ASSERT_TRUE(a.status.ok()) << a.status;
  EXPECT_EQ(a.seq, 0u);
  EXPECT_THAT(b.status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("replication: fence moved")));
  EXPECT_EQ(seq->committed().size, 1u);
  EXPECT_EQ((*store_->ReadState()).size, 1u);
  EXPECT_THAT(store_->GetLeaf(1).status(), StatusIs(absl::StatusCode::kNotFound));
  const std::vector<Call> calls = Calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].first_seq, 1u);
  EXPECT_LE(calls[1].stored, 1u);
}

TEST_F(PipelineTest, AFailedStoreWriteAbortsTheReplicatedBatchAfterItWhichIsNeverStoredFirst) {
  auto seq = Start(/*fail_at=*/~0ull);
  faults_.fail_syncs = true;
  auto [a, b] = AppendTwo(*seq, "a", "b");
  // Both fail as a failed write does: the second, built on the first, was
  // replicated, then built again on the durable head (seq 0) and failed
  // there; it is never answered as aborted.
  for (const Outcome& o : {a, b}) {
    EXPECT_THAT(o.status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("storage: write failed"))) << o.status;
  }
  EXPECT_EQ(seq->committed().size, 0u);
  const std::vector<Call> calls = Calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].first_seq, 0u);
  EXPECT_EQ(calls[1].first_seq, 1u);  // while the first was being stored
  EXPECT_EQ(calls[2].first_seq, 0u);
  for (const Call& c : calls) EXPECT_LE(c.stored, c.first_seq);  // the store never runs ahead
  EXPECT_EQ((*store_->ReadState()).size, 0u);
  EXPECT_THAT(store_->GetLeaf(0).status(), StatusIs(absl::StatusCode::kNotFound));
}

// The first batch's replication fails while the second, built on it, waits
// for the replicator: the second is never replicated as built (its seqs
// would follow entries that do not exist), but built again from the
// durable head, replicated and stored at seq 0.
TEST_F(PipelineTest, AFailedReplicationAbortsTheBatchBuiltOnItBeforeItIsReplicated) {
  auto seq = Start(/*fail_at=*/0);
  auto [a, b] = AppendTwo(*seq, "a", "b");
  EXPECT_THAT(a.status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("replication: fence moved")));
  ASSERT_TRUE(b.status.ok()) << b.status;
  EXPECT_EQ(b.seq, 0u);
  const std::vector<Call> calls = Calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].first_seq, 0u);
  EXPECT_EQ(calls[1].first_seq, 0u);  // b as built again, never at seq 1
  EXPECT_EQ((*store_->ReadState()).size, 1u);
  EXPECT_EQ(receipt::ParseLeaf(*store_->GetLeaf(0))->receipt.receipt_id(), "b");
}

// The first batch's store write fails once (the store stays healthy) after
// the second, built on it, was replicated: the second is never written as
// built (a gap at seq 0), but built again, replicated again and stored at
// seq 0.
TEST_F(PipelineTest, AStoreWriteThatFailsOnceAbortsTheReplicatedBatchBuiltOnIt) {
  auto seq = Start(/*fail_at=*/~0ull);
  faults_.fail_next_commits = 1;
  auto [a, b] = AppendTwo(*seq, "a", "b");
  EXPECT_THAT(a.status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("storage: write failed")));
  ASSERT_TRUE(b.status.ok()) << b.status;
  EXPECT_EQ(b.seq, 0u);
  const std::vector<Call> calls = Calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[1].first_seq, 1u);  // replicated while the first was being stored
  EXPECT_EQ(calls[2].first_seq, 0u);
  EXPECT_EQ((*store_->ReadState()).size, 1u);
  EXPECT_EQ(receipt::ParseLeaf(*store_->GetLeaf(0))->receipt.receipt_id(), "b");
  EXPECT_THAT(store_->GetLeaf(1).status(), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace ledger::sequencer
