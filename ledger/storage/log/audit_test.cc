#include "ledger/storage/log/audit.h"

#include <filesystem>
#include <functional>
#include <future>

#include "gtest/gtest.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/store/testing.h"
#include "tests/util/temp_dir.h"

namespace ledger::log {
namespace {

constexpr char kOrigin[] = "ledger.test/audit";

receipt::Receipt Call(int i) {
  auto r = receipt::FromJsonText(
      absl::StrCat(R"({"kind":"model_call","team":"team-a","run_id":"run-)", i % 3,
                   R"(","occurred_at_us":1,"route":"r","decision":"allow","receipt_id":"id-)", i, R"("})"));
  return *r;
}

// A log of 40 entries in three runs, checkpoints at 0, 10, 25 and 40,
// written once; each test audits a copy, altered directly in RocksDB.
class AuditTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    signer_ = new note::Signer(*note::Signer::Generate(kOrigin));
    Log::Options o;
    o.data_dir = dir_->Sub("pristine");
    o.origin = kOrigin;
    o.checkpoint_interval_ms = 3'600'000;
    auto log = *Log::Open(o, *signer_);
    int next = 0;
    for (int until : {10, 25, 40}) {
      std::vector<receipt::Receipt> rs;
      for (; next < until; ++next) rs.push_back(Call(next));
      std::vector<const receipt::Receipt*> ptrs;
      for (const auto& r : rs) ptrs.push_back(&r);
      std::promise<void> done;
      ASSERT_TRUE(log->Append("tester", ptrs, [&](std::vector<sequencer::Outcome>) { done.set_value(); }).ok());
      done.get_future().wait();
      ASSERT_TRUE(log->SignCheckpoint().ok());
    }
  }
  static void TearDownTestSuite() {
    delete signer_;
    delete dir_;
  }

  // A copy of the pristine store, open for tampering.
  std::unique_ptr<store::Store> Copy() {
    std::string to =
        dir_->Sub(absl::StrCat(::testing::UnitTest::GetInstance()->current_test_info()->name(), "-", ++copies_));
    std::filesystem::copy(dir_->Sub("pristine") + "/db", to, std::filesystem::copy_options::recursive);
    return *store::Store::Open(to);
  }

  static AuditReport Run(const store::Store& store) {
    auto key = *note::Verifier::Parse(signer_->VerifierKey());
    auto report = Audit(store, key);
    EXPECT_TRUE(report.ok()) << report.status();
    return *report;
  }

  // The audit's summary of a copy of the store, edited by `edit`.
  std::string SummaryAfter(const std::function<void(store::Batch&)>& edit) {
    auto store = Copy();
    auto b = store->NewBatch();
    edit(b);
    EXPECT_TRUE(store->Commit(b).ok());
    return Run(*store).Summary();
  }

  static std::string LeafHashOf(const store::Store& s, uint64_t seq) {
    return hash::Hex(hash::LeafHash(*s.GetLeaf(seq)));
  }

  static testing::TempDir* dir_;
  static note::Signer* signer_;
  int copies_ = 0;
};

testing::TempDir* AuditTest::dir_ = nullptr;
note::Signer* AuditTest::signer_ = nullptr;

TEST_F(AuditTest, PristineStoreIsConsistent) {
  auto store = Copy();
  AuditReport r = Run(*store);
  EXPECT_TRUE(r.ok) << r.Summary();
  EXPECT_EQ(r.entries, 40u);
  EXPECT_EQ(r.checkpoints, 4u);
  EXPECT_EQ(r.nodes, 78u);  // complete subtrees of 40 leaves: 40 + 20 + 10 + 5 + 2 + 1
  EXPECT_EQ(r.runs, 3u);
  EXPECT_EQ(r.Summary(),
            "OK: 40 entries, 78 tree nodes, 4 checkpoints and 3 runs are consistent; 4 signed run-head map roots "
            "recomputed.\n");
}

TEST_F(AuditTest, AlteredEntry) {
  auto store = Copy();
  std::string original = LeafHashOf(*store, 7);
  std::string leaf = *store->GetLeaf(7);
  leaf.replace(leaf.find(R"("route":"r")"), 11, R"("route":"x")");
  auto b = store->NewBatch();
  b.PutEntry(7, leaf);
  ASSERT_TRUE(store->Commit(b).ok());
  AuditReport r = Run(*store);
  EXPECT_EQ(r.Summary(), "INCONSISTENT: receipt_index at seq 7: receipt index row of 'id-7': leaf hash: expected " +
                             hash::Hex(hash::LeafHash(leaf)) + ", found " + original + "\n");
  EXPECT_EQ(r.Json()["finding"]["check"], "receipt_index");
  EXPECT_EQ(r.Json()["finding"]["seq"], 7);
}

TEST_F(AuditTest, EntryThatIsNotCanonical) {
  auto store = Copy();
  std::string leaf = *store->GetLeaf(3);
  leaf.insert(1, " ");
  auto b = store->NewBatch();
  b.PutEntry(3, leaf);
  ASSERT_TRUE(store->Commit(b).ok());
  EXPECT_EQ(Run(*store).Summary(),
            "INCONSISTENT: entry at seq 3: leaf: expected a leaf in canonical form, found leaf: not in canonical "
            "form\n");
}

TEST_F(AuditTest, AlteredNode) {
  auto store = Copy();
  hash::Hash good = *store->GetNode(1, 2), forged = hash::LeafHash("forged");
  auto b = store->NewBatch();
  b.PutNode(1, 2, forged);
  ASSERT_TRUE(store->Commit(b).ok());
  // Node (1, 2) covers leaves 4 and 5: leaf 5 completes it.
  EXPECT_EQ(Run(*store).Summary(), "INCONSISTENT: node at seq 5: node (level 1, index 2): expected " + hash::Hex(good) +
                                       ", found " + hash::Hex(forged) + "\n");
}

TEST_F(AuditTest, AlteredIndexRow) {
  auto store = Copy();
  auto ref = **store->FindReceipt({store::IdSpace::kEmitter, "team-a", "id-13"});
  auto b = store->NewBatch();
  b.PutReceipt({store::IdSpace::kEmitter, "team-a", "id-12"}, ref);
  ASSERT_TRUE(store->Commit(b).ok());
  EXPECT_EQ(Run(*store).Summary(),
            "INCONSISTENT: receipt_index at seq 12: receipt index row of 'id-12': expected seq 12, found seq 13\n");
}

// An operator with the key re-signs a checkpoint's time as earlier than the
// one before it: the times of a ledger's checkpoints never go back.
TEST_F(AuditTest, CheckpointTimeThatGoesBackwards) {
  auto store = Copy();
  auto cp = *note::ParseCheckpoint(*note::Verifier::Parse(signer_->VerifierKey())->Open(*store->GetCheckpoint(25)));
  auto earlier =
      *note::ParseCheckpointTime(*note::Verifier::Parse(signer_->VerifierKey())->Open(*store->GetCheckpointTime(10)));
  std::string forged =
      *signer_->Sign(note::FormatCheckpointTime({cp, earlier.time_us - 1, std::nullopt, std::nullopt}));
  ASSERT_TRUE(store->PutCheckpoint(25, {}, forged).ok());
  EXPECT_EQ(Run(*store).Summary(),
            absl::StrCat("INCONSISTENT: checkpoint_time at seq 24: time note of the checkpoint of size 25: time: "
                         "expected at least ",
                         earlier.time_us, " (the time of an earlier checkpoint), found ", earlier.time_us - 1, "\n"));
}

TEST_F(AuditTest, CheckpointTimeOfAnotherCheckpointOrKey) {
  auto store = Copy();
  auto other = *note::Signer::Generate(kOrigin);
  auto cp = *note::ParseCheckpoint(*note::Verifier::Parse(signer_->VerifierKey())->Open(*store->GetCheckpoint(25)));
  ASSERT_TRUE(
      store->PutCheckpoint(25, {}, *other.Sign(note::FormatCheckpointTime({cp, 1, std::nullopt, std::nullopt}))).ok());
  EXPECT_EQ(Run(*store).Summary().substr(0, 96),
            "INCONSISTENT: checkpoint_time at seq 24: time note of the checkpoint of size 25: signature: expe");
  note::Checkpoint wrong = cp;
  wrong.size = 40;
  ASSERT_TRUE(
      store->PutCheckpoint(25, {}, *signer_->Sign(note::FormatCheckpointTime({wrong, 1, std::nullopt, std::nullopt})))
          .ok());
  std::string root = hash::Hex(cp.root);
  EXPECT_EQ(Run(*store).Summary(),
            "INCONSISTENT: checkpoint_time at seq 24: time note of the checkpoint of size 25: checkpoint: expected "
            "ledger.test/audit 25 " +
                root + ", found ledger.test/audit 40 " + root + "\n");
}

TEST_F(AuditTest, CheckpointWithAnotherRoot) {
  auto store = Copy();
  hash::Hash wrong = hash::LeafHash("wrong");
  std::string forged = *signer_->Sign(note::FormatCheckpoint({kOrigin, 25, wrong}));
  ASSERT_TRUE(store->PutCheckpoint(25, forged).ok());
  hash::Hash root = *merkle::RootHash(25, [&](int l, uint64_t i) { return store->GetNode(l, i); });
  EXPECT_EQ(Run(*store).Summary(), "INCONSISTENT: checkpoint at seq 24: checkpoint of size 25: root: expected " +
                                       hash::Hex(root) + ", found " + hash::Hex(wrong) + "\n");
}

TEST_F(AuditTest, CheckpointSignedByAnotherKey) {
  auto store = Copy();
  auto other = *note::Signer::Generate(kOrigin);
  auto note = *note::Verifier::Parse(signer_->VerifierKey())->Open(*store->GetCheckpoint(10));
  ASSERT_TRUE(store->PutCheckpoint(10, *other.Sign(note)).ok());
  AuditReport r = Run(*store);
  EXPECT_EQ(r.check, "checkpoint");
  EXPECT_EQ(r.seq, 9);
  EXPECT_EQ(r.what, "checkpoint of size 10: signature");
  EXPECT_EQ(r.expected, std::string("a valid signature by ") + kOrigin);
  EXPECT_FALSE(r.found.empty());
}

TEST_F(AuditTest, AlteredTreeSize) {
  auto store = Copy();
  auto state = *store->ReadState();
  state.size = 39;
  auto b = store->NewBatch();
  b.PutState(state);
  ASSERT_TRUE(store->Commit(b).ok());
  EXPECT_EQ(Run(*store).Summary(),
            "INCONSISTENT: state: tree size: expected 40, the number of entries stored, found 39\n");
}

TEST_F(AuditTest, AlteredRunHead) {
  auto store = Copy();
  auto b = store->NewBatch();
  b.PutRunHead("team-a", "run-1", {12, 34, hash::Sha256("x")});
  ASSERT_TRUE(store->Commit(b).ok());
  // run-1 holds 1, 4, ..., 37.
  EXPECT_EQ(Run(*store).Summary(),
            "INCONSISTENT: run_head at seq 37: run head of team-a/run-1: expected 37 (entry 13 of the run, leaf hash " +
                LeafHashOf(*store, 37) + "), found 34 (entry 12 of the run, leaf hash " + hash::Hex(hash::Sha256("x")) +
                ")\n");
}

TEST_F(AuditTest, RunHeadWithAnotherCount) {
  auto store = Copy();
  auto b = store->NewBatch();
  hash::Hash h = *hash::ParseHex(LeafHashOf(*store, 37));
  b.PutRunHead("team-a", "run-1", {12, 37, h});  // one entry fewer than the run has
  ASSERT_TRUE(store->Commit(b).ok());
  EXPECT_EQ(Run(*store).Summary(),
            "INCONSISTENT: run_head at seq 37: run head of team-a/run-1: expected 37 (entry 13 of the run, leaf hash " +
                LeafHashOf(*store, 37) + "), found 37 (entry 12 of the run, leaf hash " + LeafHashOf(*store, 37) +
                ")\n");
}

// The run index (run-1 holds 1, 4, ..., 37): a store written before it was
// kept lacks a run's first rows, and that is consistent; a row lost in the
// middle or at the end, or one naming another run's entry, is not.
TEST_F(AuditTest, RunIndexWithoutItsFirstRowsIsConsistent) {
  EXPECT_EQ(SummaryAfter([](store::Batch& b) {
              for (uint64_t seq : {1, 4, 7}) store::Testing::DeleteRunSeq(b, "team-a", "run-1", seq);
              for (uint64_t seq = 2; seq < 40; seq += 3) {
                store::Testing::DeleteRunSeq(b, "team-a", "run-2", seq);
              }
            }).substr(0, 3),
            "OK:");
}

TEST_F(AuditTest, RunIndexRowLostInTheMiddleAtTheEndOrOfAnotherRun) {
  EXPECT_EQ(SummaryAfter([](store::Batch& b) { store::Testing::DeleteRunSeq(b, "team-a", "run-1", 19); }),
            "INCONSISTENT: run_index at seq 22: run index row of team-a/run-1 at seq 22: the run's entry before it: "
            "expected seq 19 (its run_prev), found seq 16 (the row before it)\n");
  EXPECT_EQ(SummaryAfter([](store::Batch& b) { store::Testing::DeleteRunSeq(b, "team-a", "run-1", 37); }),
            "INCONSISTENT: run_index at seq 34: run index of team-a/run-1: expected rows up to the run's head, seq "
            "37, found rows up to seq 34\n");
  EXPECT_EQ(SummaryAfter([](store::Batch& b) { b.PutRunSeq("team-a", "run-1", 2); }),  // run-2's
            "INCONSISTENT: run_index at seq 2: run index row of team-a/run-1 at seq 2: expected an entry of "
            "team-a/run-1, found an entry of team-a/run-2\n");
}

// The operator signs a run-head map root that leaves out run-1's last entry:
// the key verifies it, the entries refute it.
TEST_F(AuditTest, SignedRunMapRootThatTheEntriesRefute) {
  auto store = Copy();
  auto key = *note::Verifier::Parse(signer_->VerifierKey());
  auto time = *note::ParseCheckpointTime(*key.Open(*store->GetCheckpointTime(40)));
  ASSERT_TRUE(time.run_map_root.has_value());
  runmap::RunMap lie;
  for (int run = 0; run < 3; ++run) {
    // run-r holds r, r + 3, ...: its true head is its last entry below 40.
    uint64_t last = 39 - (39 - run) % 3, count = (last - run) / 3 + 1;
    if (run == 1) last -= 3, --count;  // drop run-1's last entry (seq 37)
    hash::Hash h = *hash::ParseHex(LeafHashOf(*store, last));
    ASSERT_TRUE(
        lie.Set(runmap::RunKeyOf("team-a", absl::StrCat("run-", run), runmap::KeyVersion::kV2), {count, last, h}).ok());
  }
  hash::Hash false_root = lie.Root();
  ASSERT_NE(false_root, *time.run_map_root);
  hash::Hash true_root = *time.run_map_root;
  time.run_map_root = false_root;
  ASSERT_TRUE(store->PutCheckpoint(40, {}, *signer_->Sign(note::FormatCheckpointTime(time))).ok());
  EXPECT_EQ(Run(*store).Summary(),
            "INCONSISTENT: run_map at seq 39: time note of the checkpoint of size 40: run-head map root (signed): "
            "expected " +
                hash::Hex(true_root) + ", found " + hash::Hex(false_root) + "\n");
}

TEST_F(AuditTest, AlteredTeamHead) {
  auto store = Copy();
  auto b = store->NewBatch();
  b.PutTeamHead("team-a", {39, 38, hash::Sha256("x")});  // one entry fewer than the team has
  ASSERT_TRUE(store->Commit(b).ok());
  EXPECT_EQ(Run(*store).Summary(),
            "INCONSISTENT: team_head at seq 39: team head of team-a: expected 39 (entry 40 of the team, leaf hash " +
                LeafHashOf(*store, 39) + "), found 38 (entry 39 of the team, leaf hash " +
                hash::Hex(hash::Sha256("x")) + ")\n");
}

// The operator signs a team-head map root that leaves out the team's last
// entry: the key verifies it, the entries refute it.
TEST_F(AuditTest, SignedTeamMapRootThatTheEntriesRefute) {
  auto store = Copy();
  auto key = *note::Verifier::Parse(signer_->VerifierKey());
  auto time = *note::ParseCheckpointTime(*key.Open(*store->GetCheckpointTime(40)));
  ASSERT_TRUE(time.team_map_root.has_value());
  runmap::RunMap lie;
  ASSERT_TRUE(lie.Set(runmap::TeamKeyOf("team-a"), {39, 38, *hash::ParseHex(LeafHashOf(*store, 38))}).ok());
  hash::Hash true_root = *time.team_map_root;
  time.team_map_root = lie.Root();
  ASSERT_TRUE(store->PutCheckpoint(40, {}, *signer_->Sign(note::FormatCheckpointTime(time))).ok());
  EXPECT_EQ(Run(*store).Summary(),
            "INCONSISTENT: team_map at seq 39: time note of the checkpoint of size 40: team-head map root (signed): "
            "expected " +
                hash::Hex(true_root) + ", found " + hash::Hex(lie.Root()) + "\n");
}

}  // namespace
}  // namespace ledger::log
