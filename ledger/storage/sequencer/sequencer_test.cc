#include "ledger/storage/sequencer/sequencer.h"

#include <atomic>
#include <deque>
#include <future>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/projection/projection.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/storage/store/store.h"
#include "ledger/storage/store/testing.h"
#include "tests/util/status_matchers.h"
#include "tests/util/temp_dir.h"
#include "util/sync/mutex.h"

namespace ledger::sequencer {
namespace {

using ::ledger::testing::StatusIs;
using ::testing::StartsWith;

// Submissions point at their receipts, which must outlive the append: the
// tests keep them here for the whole run of the binary.
receipt::Receipt& Keep(receipt::Receipt r) {
  static sync::Mutex mu;
  static std::deque<receipt::Receipt>* kept = new std::deque<receipt::Receipt>();
  sync::MutexLock lock(&mu);
  kept->push_back(std::move(r));
  return kept->back();
}

Submission Make(const std::string& id, const std::string& run = "run-1", const std::string& model = "m",
                const std::string& team = "team-a") {
  auto r = receipt::FromJsonText(R"({"kind":"model_call","occurred_at_us":1,"route":"r","decision":"allow"})");
  r->set_receipt_id(id);
  r->set_team(team);
  r->set_run_id(run);
  r->mutable_model_call()->set_model(model);
  std::string canonical = *receipt::Canonicalize(*r, receipt::Author::kEmitter);
  return Submission::Of(Keep(*std::move(r)), std::move(canonical), "test");
}

// Submits and waits for the outcomes.
std::vector<Outcome> Append(Sequencer& seq, std::vector<Submission> items) {
  std::promise<std::vector<Outcome>> p;
  auto f = p.get_future();
  absl::Status s = seq.Submit(std::move(items), [&](std::vector<Outcome> o) { p.set_value(std::move(o)); });
  EXPECT_TRUE(s.ok()) << s;
  return f.get();
}

class SequencerTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = *store::Store::Open(dir_.path()); }
  std::unique_ptr<Sequencer> Start(Sequencer::Options o = {}) {
    auto s = Sequencer::Start(store_.get(), std::move(o));
    EXPECT_TRUE(s.ok()) << s.status();
    return *std::move(s);
  }
  testing::TempDir dir_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(SequencerTest, AssignsDenseSeqsAndChainsLeaves) {
  int64_t now = 1000;
  Sequencer::Options o;
  o.clock = [&] { return now; };
  auto seq = Start(o);
  auto out = Append(*seq, {Make("a"), Make("b", "run-2"), Make("c")});
  ASSERT_EQ(out.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(out[i].status.ok()) << out[i].status;
    EXPECT_EQ(out[i].seq, i);
    EXPECT_FALSE(out[i].duplicate);
  }
  auto e0 = *receipt::ParseLeaf(*store_->GetLeaf(0));
  auto e1 = *receipt::ParseLeaf(*store_->GetLeaf(1));
  auto e2 = *receipt::ParseLeaf(*store_->GetLeaf(2));
  EXPECT_EQ(e0.prev, receipt::kZeroHash);
  EXPECT_EQ(e1.prev, out[0].leaf_hash);
  EXPECT_EQ(e2.prev, out[1].leaf_hash);
  EXPECT_EQ(hash::LeafHash(*store_->GetLeaf(2)), out[2].leaf_hash);
  // Run chain: c follows a in run-1; b starts run-2.
  EXPECT_FALSE(e0.run_prev.has_value());
  EXPECT_FALSE(e1.run_prev.has_value());
  EXPECT_EQ(e2.run_prev, 0u);
  EXPECT_EQ(e2.emitter, "test");
  EXPECT_EQ(e2.logged_at_us, 1000);
  Head head = seq->committed();
  EXPECT_EQ(head.size, 3u);
  EXPECT_EQ(head.chain_head, out[2].leaf_hash);
  auto root = merkle::RootHash(3, [&](int l, uint64_t i) { return store_->GetNode(l, i); });
  EXPECT_EQ(head.root, *root);
}

TEST_F(SequencerTest, LoggedAtNeverDecreasesWhenTheClockGoesBack) {
  int64_t now = 5000;
  Sequencer::Options o;
  o.clock = [&] { return now; };
  auto seq = Start(o);
  Append(*seq, {Make("a")});
  now = 10;
  Append(*seq, {Make("b")});
  EXPECT_EQ(receipt::ParseLeaf(*store_->GetLeaf(1))->logged_at_us, 5000);
}

TEST_F(SequencerTest, RetryIsIdempotentAndConflictIsRefused) {
  auto seq = Start();
  auto first = Append(*seq, {Make("a"), Make("b")});
  auto again = Append(*seq, {Make("b"), Make("a", "run-1", "other-model"), Make("c")});
  ASSERT_TRUE(again[0].status.ok());
  EXPECT_TRUE(again[0].duplicate);
  EXPECT_EQ(again[0].seq, 1u);
  EXPECT_EQ(again[0].leaf_hash, first[1].leaf_hash);
  EXPECT_EQ(again[1].status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(again[1].status.message(), "receipt_id: 'a' is already in the log (seq 0) with different content");
  EXPECT_EQ(again[2].seq, 2u);
  EXPECT_EQ(seq->committed().size, 3u);
}

TEST_F(SequencerTest, DuplicateWithinOneBatch) {
  auto seq = Start();
  auto out = Append(*seq, {Make("a"), Make("a"), Make("a", "run-1", "x")});
  EXPECT_EQ(out[0].seq, 0u);
  EXPECT_TRUE(out[1].duplicate);
  EXPECT_EQ(out[1].seq, 0u);
  EXPECT_EQ(out[2].status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(seq->committed().size, 1u);
}

TEST_F(SequencerTest, ContinuesTheSameLogAfterRestart) {
  hash::Hash last;
  {
    auto seq = Start();
    last = Append(*seq, {Make("a"), Make("b")})[1].leaf_hash;
  }
  auto seq = Start();
  EXPECT_EQ(seq->committed().size, 2u);
  auto out = Append(*seq, {Make("c"), Make("a")});
  EXPECT_EQ(out[0].seq, 2u);
  EXPECT_TRUE(out[1].duplicate);
  auto e2 = *receipt::ParseLeaf(*store_->GetLeaf(2));
  EXPECT_EQ(e2.prev, last);
  EXPECT_EQ(e2.run_prev, 1u);
}

TEST_F(SequencerTest, ConcurrentSubmittersGetDenseUniqueSeqs) {
  auto seq = Start();
  constexpr int kThreads = 8, kPerThread = 200;
  std::vector<std::thread> threads;
  sync::Mutex mu;
  std::set<uint64_t> seqs;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; i += 4) {
        std::vector<Submission> items;
        for (int k = 0; k < 4; ++k) {
          items.push_back(Make("t" + std::to_string(t) + "-" + std::to_string(i + k), "run-" + std::to_string(t)));
        }
        for (const auto& o : Append(*seq, std::move(items))) {
          ASSERT_TRUE(o.status.ok());
          sync::MutexLock lock(&mu);
          EXPECT_TRUE(seqs.insert(o.seq).second);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(seqs.size(), size_t{kThreads * kPerThread});
  EXPECT_EQ(*seqs.rbegin(), uint64_t{kThreads * kPerThread - 1});
  // Each run's chain links back through its own entries only.
  for (uint64_t s = 0; s < seqs.size(); ++s) {
    auto e = *receipt::ParseLeaf(*store_->GetLeaf(s));
    if (e.run_prev.has_value()) {
      auto p = *receipt::ParseLeaf(*store_->GetLeaf(*e.run_prev));
      EXPECT_EQ(p.receipt.run_id(), e.receipt.run_id());
      EXPECT_LT(*e.run_prev, s);
    }
  }
}

TEST(SequencerFaultTest, FailedCommitIsUnavailableAndNothingRunsAheadOfTheDisk) {
  testing::TempDir dir;
  store::Faults faults;
  hash::Hash head_a;
  {
    auto store = *store::Store::Open(dir.path(), &faults);
    auto seq = *Sequencer::Start(store.get(), {});
    auto a = Append(*seq, {Make("f-a")});
    ASSERT_TRUE(a[0].status.ok());
    head_a = a[0].leaf_hash;
    faults.fail_syncs = true;
    auto b = Append(*seq, {Make("f-b"), Make("f-c")});
    for (const auto& o : b) {
      EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable) << o.status;
      EXPECT_NE(o.status.message().find("retry with the same receipt_id"), std::string::npos);
    }
    Head h = seq->committed();
    EXPECT_EQ(h.size, 1u);  // memory did not run ahead of the disk
    EXPECT_EQ(h.chain_head, head_a);
  }
  faults.fail_syncs = false;
  // After a restart the retry lands at seq 1 whether or not the unsynced
  // batch survived in the WAL, and never twice.
  auto store = *store::Store::Open(dir.path());
  auto seq = *Sequencer::Start(store.get(), {});
  auto retry = Append(*seq, {Make("f-b"), Make("f-c"), Make("f-d")});
  EXPECT_EQ(retry[0].seq, 1u);
  EXPECT_EQ(retry[1].seq, 2u);
  EXPECT_EQ(retry[2].seq, 3u);
  EXPECT_FALSE(retry[2].duplicate);
  EXPECT_EQ(seq->committed().size, 4u);
  auto e1 = *receipt::ParseLeaf(*store->GetLeaf(1));
  EXPECT_EQ(e1.prev, head_a);
}

// Batch B's commit fails while batch C, built on it, waits behind it for the
// committer: C is never written (its seqs would follow entries the store
// does not hold), its receipts are built again from the durable head, and
// the store stays whole. The fault fails B's commit alone and leaves
// RocksDB healthy, so a C written anyway would succeed and leave the gap.
TEST(SequencerFaultTest, ABatchBuiltOnAFailedOneIsNeverWritten) {
  testing::TempDir dir;
  store::Faults faults;
  auto store = *store::Store::Open(dir.path(), &faults);
  auto seq = *Sequencer::Start(store.get(), {});
  ASSERT_TRUE(Append(*seq, {Make("k-a")})[0].status.ok());
  faults.fail_next_commits = 1;
  faults.hold_commits = true;
  std::promise<std::vector<Outcome>> b, c;
  ASSERT_TRUE(seq->Submit({Make("k-b")}, [&](std::vector<Outcome> o) { b.set_value(std::move(o)); }).ok());
  // B's commit is held; C is taken and built on B meanwhile
  // (two batches in flight), then handed to the committer behind B.
  while (seq->queued() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(seq->Submit({Make("k-c"), Make("k-d")}, [&](std::vector<Outcome> o) { c.set_value(std::move(o)); }).ok());
  while (seq->queued() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // C's build and hand-over
  faults.hold_commits = false;
  auto b_out = b.get_future().get();
  EXPECT_EQ(b_out[0].status.code(), absl::StatusCode::kUnavailable) << b_out[0].status;
  // C: built again from the durable head and stored after A, never at the
  // seqs it had on B.
  auto c_out = c.get_future().get();
  ASSERT_EQ(c_out.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(c_out[i].status.ok()) << c_out[i].status;
    EXPECT_EQ(c_out[i].seq, 1 + i) << "built on the failed batch";
  }
  // The store is whole: every seq below its size holds the entry that
  // chains to the one before it.
  auto state = store->ReadState();
  ASSERT_TRUE(state.ok());
  hash::Hash prev = receipt::kZeroHash;
  for (uint64_t s = 0; s < state->size; ++s) {
    auto leaf = store->GetLeaf(s);
    ASSERT_TRUE(leaf.ok()) << "seq " << s << " of " << state->size << ": " << leaf.status();
    auto entry = receipt::ParseLeaf(*leaf);
    ASSERT_TRUE(entry.ok());
    EXPECT_EQ(entry->seq, s);
    EXPECT_EQ(entry->prev, prev) << "seq " << s;
    prev = hash::LeafHash(*leaf);
  }
  EXPECT_EQ(seq->committed().size, state->size);
}

// Holds the writer in the middle of building the batch that holds receipt
// `id` (the first time only), until released.
class GateProjector final : public projection::Projector {
 public:
  explicit GateProjector(std::string id) : id_(std::move(id)), released_(release_.get_future().share()) {}
  absl::Status Apply(absl::Span<const projection::Entry> entries, projection::Txn&) override {
    for (const projection::Entry& e : entries) {
      if (e.receipt->receipt_id() == id_ && !held_.exchange(true)) {
        entered_.set_value();
        released_.wait();
      }
    }
    return absl::OkStatus();
  }
  void WaitEntered() { entered_.get_future().wait(); }
  void Release() { release_.set_value(); }

 private:
  const std::string id_;
  std::atomic<bool> held_{false};
  std::promise<void> entered_, release_;
  std::shared_future<void> released_;
};

// Batch B's commit fails while the writer is still building C on it: C is
// never handed to the committer (its seqs would follow B's), but built
// again from the durable head once B is finished.
TEST(SequencerFaultTest, ABatchWhoseBaseFailsWhileItIsBuiltIsNeverHandedOver) {
  testing::TempDir dir;
  store::Faults faults;
  auto store = *store::Store::Open(dir.path(), &faults);
  GateProjector gate("m-c");
  Sequencer::Options o;
  o.projector = &gate;
  auto seq = *Sequencer::Start(store.get(), std::move(o));
  ASSERT_TRUE(Append(*seq, {Make("m-a")})[0].status.ok());
  faults.fail_next_commits = 1;
  faults.hold_commits = true;
  std::promise<std::vector<Outcome>> b, c;
  ASSERT_TRUE(seq->Submit({Make("m-b")}, [&](std::vector<Outcome> o) { b.set_value(std::move(o)); }).ok());
  while (seq->queued() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(seq->Submit({Make("m-c")}, [&](std::vector<Outcome> o) { c.set_value(std::move(o)); }).ok());
  gate.WaitEntered();  // the writer builds C on B, B's commit held
  faults.hold_commits = false;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // B's commit fails and is settled
  gate.Release();
  EXPECT_EQ(b.get_future().get()[0].status.code(), absl::StatusCode::kUnavailable);
  auto c_out = c.get_future().get();
  ASSERT_TRUE(c_out[0].status.ok()) << c_out[0].status;
  EXPECT_EQ(c_out[0].seq, 1u) << "built on the failed batch";
  EXPECT_EQ(store->ReadState()->size, 2u);
  EXPECT_EQ(receipt::ParseLeaf(*store->GetLeaf(1))->receipt.receipt_id(), "m-c");
}

// The disk comes back: the same process appends again, from where the
// durable log ends, and a restart finds exactly what was acknowledged.
TEST(SequencerFaultTest, ServesAgainWhenTheFaultClearsWithoutARestart) {
  testing::TempDir dir;
  store::Faults faults;
  faults.retryable = true;  // as a full disk is
  {
    auto store = *store::Store::Open(dir.path(), &faults);
    auto seq = *Sequencer::Start(store.get(), {});
    ASSERT_TRUE(Append(*seq, {Make("g-a")})[0].status.ok());
    for (bool writes : {false, true}) {
      (writes ? faults.fail_writes : faults.fail_syncs) = true;
      auto failed = Append(*seq, {Make(writes ? "g-w" : "g-s")});
      EXPECT_EQ(failed[0].status.code(), absl::StatusCode::kUnavailable) << failed[0].status;
      (writes ? faults.fail_writes : faults.fail_syncs) = false;
    }
    // RocksDB resumes in the background: a client retries meanwhile.
    std::vector<Outcome> again;
    for (int i = 0; i < 50; ++i) {
      again = Append(*seq, {Make("g-b"), Make("g-s")});
      if (again[0].status.ok()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(again[0].status.ok()) << again[0].status;
    EXPECT_EQ(again[0].seq, 1u);
    EXPECT_EQ(again[1].seq, 2u);
    EXPECT_FALSE(again[1].duplicate);
    EXPECT_EQ(seq->committed().size, 3u);
    EXPECT_TRUE(store->failure().ok());
  }
  auto store = *store::Store::Open(dir.path());
  EXPECT_EQ(store->ReadState()->size, 3u);
  EXPECT_EQ(receipt::ParseLeaf(*store->GetLeaf(1))->receipt.receipt_id(), "g-b");
  EXPECT_EQ(receipt::ParseLeaf(*store->GetLeaf(2))->receipt.receipt_id(), "g-s");
  EXPECT_THAT(store->GetLeaf(3), StatusIs(absl::StatusCode::kNotFound, StartsWith("storage: entry 3:")));
  EXPECT_FALSE(store->FindReceipt({store::IdSpace::kEmitter, "team-a", "g-w"})->has_value());
}

// An error RocksDB cannot resume from (as EIO): the store says so, so that
// the server can exit and be restarted; the restart finds every
// acknowledged entry.
TEST(SequencerFaultTest, UnrecoverableFailureIsReportedAndARestartRecovers) {
  testing::TempDir dir;
  store::Faults faults;
  {
    auto store = *store::Store::Open(dir.path(), &faults);
    ledger::store::Testing::SetResumeWindow(*store, std::chrono::milliseconds(200));
    auto seq = *Sequencer::Start(store.get(), {});
    ASSERT_TRUE(Append(*seq, {Make("h-a")})[0].status.ok());
    faults.fail_syncs = true;
    EXPECT_EQ(Append(*seq, {Make("h-b")})[0].status.code(), absl::StatusCode::kUnavailable);
    faults.fail_syncs = false;
    EXPECT_EQ(Append(*seq, {Make("h-b")})[0].status.code(), absl::StatusCode::kUnavailable);
    EXPECT_TRUE(store->failure().ok());  // still within the resume window
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(Append(*seq, {Make("h-b")})[0].status.code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(store->failure().code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(store->failure().message().find("storage: writes have failed for 200ms and RocksDB has not resumed"),
              std::string::npos)
        << store->failure();
    EXPECT_EQ(seq->committed().size, 1u);
  }
  auto store = *store::Store::Open(dir.path());
  auto seq = *Sequencer::Start(store.get(), {});
  auto retry = Append(*seq, {Make("h-b")});
  ASSERT_TRUE(retry[0].status.ok());
  EXPECT_EQ(retry[0].seq, 1u);
}

TEST_F(SequencerTest, FullQueueIsResourceExhausted) {
  Sequencer::Options o;
  o.max_queued = 3;
  auto seq = Start(o);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> writer_busy;
  // The first request's callback holds the writer until released.
  ASSERT_TRUE(seq->Submit({Make("hold")},
                          [&](std::vector<Outcome>) {
                            writer_busy.set_value();
                            released.wait();
                          })
                  .ok());
  writer_busy.get_future().wait();
  std::atomic<int> done{0};
  auto count = [&](std::vector<Outcome>) { ++done; };
  EXPECT_TRUE(seq->Submit({Make("q1"), Make("q2")}, count).ok());
  EXPECT_TRUE(seq->Submit({Make("q3")}, count).ok());
  absl::Status full = seq->Submit({Make("q4")}, count);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(full.message(), "ledger: append queue is full (3 receipts waiting); retry with back-off");
  release.set_value();
  seq.reset();  // drains the queue before stopping
  EXPECT_EQ(done.load(), 2);
  EXPECT_EQ(store_->ReadState()->size, 4u);
}

// Receipt ids are unique per team: the same id in two teams is two
// entries, in one batch or in two, and a retry finds its own team's.
TEST_F(SequencerTest, ReceiptIdsAreScopedByTeam) {
  auto seq = Start();
  auto first = Append(*seq, {Make("same", "run-1", "m", "team-a"), Make("same", "run-1", "n", "team-b")});
  ASSERT_TRUE(first[0].status.ok() && first[1].status.ok());
  EXPECT_FALSE(first[0].duplicate || first[1].duplicate);
  EXPECT_EQ(first[1].seq, 1u);
  auto again = Append(*seq, {Make("same", "run-1", "n", "team-b"), Make("same", "run-1", "n", "team-c")});
  EXPECT_TRUE(again[0].duplicate);
  EXPECT_EQ(again[0].seq, 1u);
  EXPECT_FALSE(again[1].duplicate);
  EXPECT_EQ(again[1].seq, 2u);
  auto changed = Append(*seq, {Make("same", "run-1", "other", "team-a")});
  EXPECT_EQ(changed[0].status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(changed[0].status.message(), "receipt_id: 'same' is already in the log (seq 0) with different content");
}

Submission MakeFrom(const std::string& emitter, const std::string& id) {
  Submission s = Make(id, "run-" + emitter);
  s.emitter = emitter;
  return s;
}

// An emitter with a deep queue does not keep another's receipt waiting
// behind it: the writer takes them in turn, a large submission in slices,
// and the large submission is still answered once, in order.
TEST_F(SequencerTest, TakesEmittersInTurnAndSplitsLargeSubmissions) {
  Sequencer::Options o;
  o.max_batch = 400;
  o.emitter_slice = 100;
  auto seq = Start(o);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> writer_busy;
  ASSERT_TRUE(seq->Submit({MakeFrom("flood", "hold")},
                          [&](std::vector<Outcome>) {
                            writer_busy.set_value();
                            released.wait();
                          })
                  .ok());
  writer_busy.get_future().wait();
  // Three submissions of 300 from the flood (900 queued), then one receipt.
  std::vector<std::promise<std::vector<Outcome>>> floods(3);
  for (int f = 0; f < 3; ++f) {
    std::vector<Submission> items;
    for (int i = 0; i < 300; ++i) items.push_back(MakeFrom("flood", absl::StrCat("f", f, "-", i)));
    ASSERT_TRUE(
        seq->Submit(std::move(items), [&, f](std::vector<Outcome> o) { floods[f].set_value(std::move(o)); }).ok());
  }
  std::promise<std::vector<Outcome>> polite;
  ASSERT_TRUE(
      seq->Submit({MakeFrom("polite", "p")}, [&](std::vector<Outcome> o) { polite.set_value(std::move(o)); }).ok());
  EXPECT_EQ(seq->queued(), 901u);
  release.set_value();
  // The next batch: the flood's first slice, the polite receipt, then the
  // flood's next slices up to 400 receipts. In arrival order it would have
  // been seq 901.
  auto p = polite.get_future().get();
  ASSERT_EQ(p.size(), 1u);
  ASSERT_TRUE(p[0].status.ok()) << p[0].status;
  EXPECT_EQ(p[0].seq, 101u);
  uint64_t next = 1;
  for (int f = 0; f < 3; ++f) {
    auto out = floods[f].get_future().get();
    ASSERT_EQ(out.size(), 300u);
    for (int i = 0; i < 300; ++i) {
      ASSERT_TRUE(out[i].status.ok()) << out[i].status;
      if (next == 101) ++next;  // the polite receipt's
      EXPECT_EQ(out[i].seq, next++) << "flood " << f << " receipt " << i;
      EXPECT_EQ(receipt::ParseLeaf(*store_->GetLeaf(out[i].seq))->receipt.receipt_id(), absl::StrCat("f", f, "-", i));
    }
  }
  EXPECT_EQ(seq->committed().size, 902u);
}

}  // namespace
}  // namespace ledger::sequencer
