#include "ledger/storage/log/log.h"

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/runmap/runmap.h"
#include "ledger/storage/log/log_testing.h"
#include "ledger/storage/log/run_heads.h"
#include "ledger/storage/store/store.h"
#include "ledger/storage/store/testing.h"
#include "tests/util/status_matchers.h"
#include "tests/util/temp_dir.h"

namespace ledger::log {
namespace {

using ::ledger::testing::StatusIs;

TEST_F(LogTest, FreshLogHasASignedEmptyCheckpoint) {
  auto log = OpenLog();
  auto cp = log->Checkpoint(0);
  ASSERT_TRUE(cp.ok()) << cp.status();
  EXPECT_EQ(cp->size, 0u);
  EXPECT_EQ(cp->root, hash::EmptyRoot());
  auto v = *note::Verifier::Parse(log->verifier_key());
  auto text = v.Open(cp->note);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "ledger.test/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n");
}

TEST_F(LogTest, AppendsProvesAndChecksConsistency) {
  auto log = OpenLog();
  std::vector<receipt::Receipt> batch;
  for (int i = 0; i < 10; ++i) batch.push_back(Model("r" + std::to_string(i)));
  auto out = AppendAll(*log, batch);
  ASSERT_TRUE(log->SignCheckpoint().ok());
  auto cp10 = *log->Checkpoint(0);
  EXPECT_EQ(cp10.size, 10u);
  for (uint64_t seq = 0; seq < 10; ++seq) {
    auto inc = log->ProveInclusion(seq, 0);
    ASSERT_TRUE(inc.ok()) << inc.status();
    EXPECT_EQ(inc->leaf_hash, out[seq].leaf_hash);
    EXPECT_EQ(inc->checkpoint, cp10.note);
    EXPECT_TRUE(merkle::VerifyInclusion(seq, 10, inc->leaf_hash, inc->path, cp10.root).ok());
  }
  AppendAll(*log, {Model("r10"), Model("r11"), Model("r12")});
  ASSERT_TRUE(log->SignCheckpoint().ok());
  auto cp13 = *log->Checkpoint(0);
  auto proof = log->ProveConsistency(10, 0);
  ASSERT_TRUE(proof.ok());
  EXPECT_EQ(proof->from_size, 10u);
  EXPECT_EQ(proof->to_size, 13u);
  EXPECT_TRUE(merkle::VerifyConsistency(10, 13, cp10.root, cp13.root, proof->hashes).ok());
  EXPECT_EQ(log->ProveConsistency(14, 13).status().message(), "from_size: 14 is larger than to_size 13");
  EXPECT_EQ(log->ProveConsistency(0, 14).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(log->Checkpoint(10)->note, cp10.note);
  EXPECT_EQ(*log->SeqOf("team-a", "r11"), 11u);
  EXPECT_EQ(log->SeqOf("team-a", "nope").status().message(), "receipt_id: 'nope' of team 'team-a' is not in the log");
  EXPECT_EQ(log->ProveInclusion(13, 0).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(log->ProveInclusion(0, 14).status().message(), "tree_size: 14 is beyond the log's size 13");
  EXPECT_EQ(log->Checkpoint(7).status().message(), "tree_size: no checkpoint of size 7 was signed");
}

TEST_F(LogTest, InvalidReceiptsFailAloneAndValidNeighboursAreAppended) {
  auto log = OpenLog();
  auto bad = Model("bad");
  bad.set_team("Team A");
  auto out = AppendAll(*log, {Model("a"), bad, Model("b")});
  EXPECT_EQ(out[0].seq, 0u);
  EXPECT_EQ(out[1].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out[1].status.message(), "team: 'Team A' is not 1-63 bytes of [a-z0-9-]");
  EXPECT_EQ(out[2].seq, 1u);
  EXPECT_EQ(log->head().size, 2u);
}

// CONTRACT section 5d: after a rotation at seq s, checkpoints past s are
// the new key's (with the old key's line in a transition); the old
// checkpoints still verify, by the old key, after a restart; the old key
// is refused at Open, naming the new one; a key made for the rotation and
// left beside the old key file is taken.
TEST_F(LogTest, ARotationMovesTheCheckpointsPastItToTheNewKey) {
  auto log = OpenLog();
  ASSERT_EQ(AppendAll(*log, {Model("m-0"), Model("m-1")}).size(), 2u);
  ASSERT_TRUE(log->SignCheckpoint().ok());
  note::Signer next = *note::Signer::Generate("ledger.test/log");
  EXPECT_THAT(log->RotateKey(signer_, {}).status(), StatusIs(absl::StatusCode::kFailedPrecondition));
  Log::RotateOptions transition;
  transition.transition_sizes = 1;
  auto rotated = log->RotateKey(next, transition);
  ASSERT_TRUE(rotated.ok()) << rotated.status();
  EXPECT_EQ(rotated->seq, 2u);
  EXPECT_EQ(log->verifier_key(), next.VerifierKey());
  ASSERT_TRUE(log->SignCheckpoint().ok());
  auto old_key = *note::Verifier::Parse(signer_.VerifierKey());
  auto new_key = *note::Verifier::Parse(next.VerifierKey());
  // Size 3 holds the rotation: the new key's line, then the old one's.
  EXPECT_TRUE(new_key.Open(log->Checkpoint(3)->note).ok());
  EXPECT_TRUE(old_key.Open(log->Checkpoint(3)->note).ok());
  ASSERT_EQ(AppendAll(*log, {Model("m-2")}).size(), 1u);
  ASSERT_TRUE(log->SignCheckpoint().ok());
  EXPECT_TRUE(new_key.Open(log->Checkpoint(4)->note).ok());
  EXPECT_FALSE(old_key.Open(log->Checkpoint(4)->note).ok());  // past the transition
  EXPECT_THAT(log->SignNoteAt(2, "x\n").status(), StatusIs(absl::StatusCode::kFailedPrecondition));
  log.reset();
  Log::Options o;
  o.data_dir = dir_.Sub("data");
  o.origin = "ledger.test/log";
  o.checkpoint_interval_ms = 60'000;
  EXPECT_THAT(Log::Open(o, signer_).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::HasSubstr(next.VerifierKey())));
  // A restart with the old key file and the new key beside it.
  o.next_key = next;
  bool took = false;
  o.took_next_key = [&took] {
    took = true;
    return absl::OkStatus();
  };
  auto reopened = Log::Open(o, signer_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_TRUE(took);
  EXPECT_EQ((*reopened)->verifier_key(), next.VerifierKey());
  EXPECT_TRUE(old_key.Open((*reopened)->ViewAt(2)->checkpoint().note).ok());
  ASSERT_EQ((*reopened)->Rotations().size(), 1u);
  EXPECT_EQ((*reopened)->Keys().ranges().size(), 2u);
}

// Every checkpoint comes with its time note, signed by the ledger's key,
// naming it; the time is the clock's and never goes backwards.
TEST_F(LogTest, EveryCheckpointHasASignedTimeThatNeverGoesBackwards) {
  std::atomic<int64_t> now{1'767'225'600'000'000};
  Log::Options o = ClockedOptions(&now);
  auto log = *Log::Open(o, signer_);
  auto verifier = *note::Verifier::Parse(signer_.VerifierKey());
  auto check = [&](const SignedCheckpoint& cp, int64_t want_us) {
    EXPECT_EQ(cp.signed_at_us, want_us);
    auto text = verifier.Open(cp.time_note);
    ASSERT_TRUE(text.ok()) << text.status();
    auto t = note::ParseCheckpointTime(*text);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->checkpoint.origin, "ledger.test/log");
    EXPECT_EQ(t->checkpoint.size, cp.size);
    EXPECT_EQ(t->checkpoint.root, cp.root);
    EXPECT_EQ(t->time_us, want_us);
  };
  check(*log->Checkpoint(0), 1'767'225'600'000'000);
  ASSERT_EQ(AppendAll(*log, {Model("m-0")}).size(), 1u);
  now = 1'767'225'700'000'000;
  ASSERT_TRUE(log->SignCheckpoint().ok());
  check(*log->Checkpoint(0), 1'767'225'700'000'000);
  ASSERT_EQ(AppendAll(*log, {Model("m-1")}).size(), 1u);
  now = 1'000;  // the clock went back
  ASSERT_TRUE(log->SignCheckpoint().ok());
  check(*log->Checkpoint(2), 1'767'225'700'000'000);
  check(*log->Checkpoint(1), 1'767'225'700'000'000);  // an older one, read from the store
  log.reset();
  now = 1'767'225'800'000'000;
  log = *Log::Open(o, signer_);
  check(*log->Checkpoint(0), 1'767'225'700'000'000);  // the same checkpoint, its own time
}

// An entry logged after the clock was read for a checkpoint is in its
// head: the time note's time is never before it (verifiers refuse a time
// before an entry's logged_at_us), and what fell due by that later time is
// declared first and signed with it.
TEST_F(LogTest, TheSignedTimeIsNeverBeforeAnEntryItCovers) {
  const int64_t t0 = 1'767'225'600'000'000;
  std::atomic<int64_t> now{t0};
  auto log = *Log::Open(ClockedOptions(&now), signer_);
  std::vector<int64_t> asked;
  log->SetBeforeSign([&](int64_t t) {
    asked.push_back(t);
    if (asked.size() == 1) {  // an emitter's entry lands while the checkpoint is made
      now += 5'000;
      AppendAll(*log, {Model("late")});
    }
    return 0;
  });
  ASSERT_TRUE(log->SignCheckpoint().ok());
  SignedCheckpoint cp = *log->Checkpoint(0);
  EXPECT_EQ(cp.size, 1u);
  EXPECT_EQ(cp.signed_at_us, t0 + 5'000);
  EXPECT_EQ(asked, (std::vector<int64_t>{t0, t0 + 5'000}));
  // Something falls due by the later time: it is declared, and in the head signed.
  asked.clear();
  log->SetBeforeSign([&](int64_t t) {
    asked.push_back(t);
    if (asked.size() == 1) {
      now += 5'000;
      AppendAll(*log, {Model("late-2")});
      return 0;
    }
    if (asked.size() == 2) {
      AppendAll(*log, {Model("declared")});
      return 1;
    }
    return 0;
  });
  ASSERT_TRUE(log->SignCheckpoint().ok());
  cp = *log->Checkpoint(0);
  EXPECT_EQ(cp.size, 3u);
  EXPECT_EQ(cp.signed_at_us, t0 + 10'000);
  EXPECT_EQ(asked, (std::vector<int64_t>{t0 + 5'000, t0 + 10'000}));
  log->SetBeforeSign(nullptr);
}

TEST_F(LogTest, NoCallerAppendsAsTheLedger) {
  auto log = OpenLog();
  std::vector<receipt::Receipt> rs = {Model("m-1")};
  absl::Status s = log->Append("ledger", Pointers(rs), [](std::vector<sequencer::Outcome>) {});
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "emitter: 'ledger' is the name of the ledger's own entries; no caller appends as it");
  EXPECT_EQ(log->head().size, 0u);
}

TEST_F(LogTest, SeqOfFindsOnlyTheTeamsOwnReceipt) {
  auto log = OpenLog();
  receipt::Receipt b = Model("same");
  b.set_team("team-b");
  auto out = AppendAll(*log, {Model("same"), b});
  ASSERT_TRUE(out[0].status.ok() && out[1].status.ok());
  EXPECT_EQ(*log->SeqOf("team-a", "same"), 0u);
  EXPECT_EQ(*log->SeqOf("team-b", "same"), 1u);
  auto none = log->SeqOf("team-c", "same");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(), "receipt_id: 'same' of team 'team-c' is not in the log");
  // An emitter's id never names the ledger's entry of the same id.
  EXPECT_EQ(log->SeqOf("team-a", "ledger.unknown.0").status().code(), absl::StatusCode::kNotFound);
}

// A store whose receipt index is of format 1 (rows keyed by the bare id) is
// rewritten at Open; a row that does not point at its receipt is DATA_LOSS.
TEST_F(LogTest, OpenMigratesReceiptRowsOfFormat1) {
  {
    auto log = OpenLog();
    ASSERT_EQ(AppendAll(*log, {Model("m-0"), Model("m-1")}).size(), 2u);
  }
  {
    // What a ledger of format 1 left: each row keyed by the bare id.
    auto store = *store::Store::Open(dir_.Sub("data") + "/db");
    auto b = store->NewBatch();
    for (const char* id : {"m-0", "m-1"}) {
      store::ReceiptKey key{store::IdSpace::kEmitter, "team-a", id};
      b.PutReceipt({store::IdSpace::kLegacy, {}, id}, **store->FindReceipt(key));
      b.DeleteLegacyReceipt(store::EncodeReceiptKey(key));  // deletes the row of that stored key
    }
    ASSERT_TRUE(store->Commit(b).ok());
    ASSERT_EQ(store->LegacyReceipts(10)->size(), 2u);
    ASSERT_FALSE(store->FindReceipt({store::IdSpace::kEmitter, "team-a", "m-0"})->has_value());
  }
  auto log = OpenLog();
  EXPECT_EQ(log->migrated_receipts(), 2u);
  EXPECT_TRUE(TestingStoreOf(*log).LegacyReceipts(10)->empty());
  EXPECT_EQ(*log->SeqOf("team-a", "m-1"), 1u);
  auto retry = AppendAll(*log, {Model("m-1")});
  EXPECT_TRUE(retry[0].duplicate);
  EXPECT_EQ(retry[0].seq, 1u);
}

TEST_F(LogTest, MigrationRefusesARowThatDoesNotPointAtItsReceipt) {
  {
    auto log = OpenLog();
    ASSERT_EQ(AppendAll(*log, {Model("m-0")}).size(), 1u);
  }
  {
    auto store = *store::Store::Open(dir_.Sub("data") + "/db");
    auto b = store->NewBatch();
    b.PutReceipt({store::IdSpace::kLegacy, {}, "forged"}, {0, {}, {}});
    ASSERT_TRUE(store->Commit(b).ok());
  }
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->integrity().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(log->integrity().message(),
            "receipt index: the format-1 row of 'forged' points at seq 0, which does not hold that receipt");
}

// A store whose run rows are of format 1 (the last seq alone) is migrated
// at Open from its entries, and its latest checkpoint gets a time note of
// format 2.
TEST_F(LogTest, OpenMigratesRunRowsOfFormat1) {
  {
    auto log = OpenLog();
    AppendAll(*log, {InRun("a1", "run-a"), InRun("b1", "run-b"), InRun("a2", "run-a")});
  }
  hash::Hash root;
  {
    // The rows as an earlier version stored them: 8 bytes, the last seq.
    auto store = *store::Store::Open(dir_.Sub("data") + "/db");
    root = ReplayRunMap(*store, 3, runmap::KeyVersion::kV2)->Root();
    auto b = store->NewBatch();
    ledger::store::Testing::PutRunHeadOfFormat1(b, "team-a", "run-a", 2);
    ledger::store::Testing::PutRunHeadOfFormat1(b, "team-a", "run-b", 1);
    ASSERT_TRUE(store->Commit(b).ok());
    ASSERT_EQ(store->GetRunHead("team-a", "run-a")->value().count, 0u);
  }
  // And the latest time note as format 1.
  {
    auto store = *store::Store::Open(dir_.Sub("data") + "/db");
    auto key = *note::Verifier::Parse(signer_.VerifierKey());
    auto t = *note::ParseCheckpointTime(*key.Open(*store->GetCheckpointTime(3)));
    t.run_map_root.reset();
    ASSERT_TRUE(store->PutCheckpoint(3, {}, *signer_.Sign(note::FormatCheckpointTime(t))).ok());
  }
  auto log = OpenLog();
  EXPECT_EQ(log->migrated_run_heads(), 2u);
  EXPECT_EQ(log->Checkpoint(0)->run_map_root, root);
  EXPECT_EQ(log->ProveRun("team-a", "run-a")->path.found->head.count, 2u);
  AppendAll(*log, {InRun("a3", "run-a")});
  ASSERT_TRUE(log->SignCheckpoint().ok());
  EXPECT_EQ(log->ProveRun("team-a", "run-a")->path.found->head,
            (runmap::Head{3, 3, hash::LeafHash(*TestingStoreOf(*log).GetLeaf(3))}));
}

TEST_F(LogTest, TooManyReceiptsInOneRequest) {
  auto log = OpenLog();
  std::vector<receipt::Receipt> many(1001, Model("x"));
  auto s = log->Append("t", Pointers(many), [](std::vector<sequencer::Outcome>) { FAIL(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "receipts: at most 1000 per request, got 1001");
}

TEST_F(LogTest, ClosingSignsTheFinalCheckpointAndReopenContinues) {
  {
    auto log = OpenLog();
    AppendAll(*log, {Model("a"), Model("b")});
  }
  {
    // Signed at close, not only at the next start.
    auto store = *store::Store::Open(dir_.Sub("data") + "/db");
    EXPECT_EQ((*store->LatestCheckpoint())->first, 2u);
    EXPECT_EQ(Guard(), (*store->LatestCheckpoint())->second);
  }
  auto log = OpenLog();
  EXPECT_EQ(log->Checkpoint(0)->size, 2u);
  EXPECT_TRUE(log->integrity().ok());
  auto out = AppendAll(*log, {Model("c")});
  EXPECT_EQ(out[0].seq, 2u);
}

TEST_F(LogTest, AnotherKeyIsRefusedAtStart) {
  { OpenLog(); }
  Log::Options o;
  o.data_dir = dir_.Sub("data");
  o.origin = "ledger.test/log";
  auto log = Log::Open(o, *note::Signer::Generate("ledger.test/log"));
  EXPECT_EQ(log.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(LogTest, KeyNamedOtherThanTheOriginIsRefused) {
  Log::Options o;
  o.data_dir = dir_.Sub("data");
  o.origin = "ledger.test/other";
  auto log = Log::Open(o, signer_);
  EXPECT_EQ(log.status().message(), "signing key: named 'ledger.test/log' but the origin is 'ledger.test/other'");
}

TEST_F(LogTest, AlteredTreeNodeRefusesAppendsWithDataLoss) {
  hash::Hash good_root, leaf_c;
  {
    auto log = OpenLog();
    leaf_c = AppendAll(*log, {Model("a"), Model("b"), Model("c")})[2].leaf_hash;
    ASSERT_TRUE(log->SignCheckpoint().ok());
    good_root = log->Checkpoint(0)->root;
  }
  hash::Hash forged = hash::LeafHash("forged");
  {
    auto store = *store::Store::Open(dir_.Sub("data") + "/db");
    auto b = store->NewBatch();
    b.PutNode(1, 0, forged);
    ASSERT_TRUE(store->Commit(b).ok());
  }
  auto log = OpenLog();
  // Size 3 = node(1, 0) over leaves 0-1, then leaf 2.
  hash::Hash bad_root = hash::NodeHash(forged, leaf_c);
  EXPECT_EQ(log->integrity().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(log->integrity().message(), "integrity: at tree size 3 the stored nodes give root " + hash::Hex(bad_root) +
                                            " but the signed checkpoint says " + hash::Hex(good_root));
  receipt::Receipt d = Model("d");
  auto s = log->Append("t", {&d}, [](std::vector<sequencer::Outcome>) { FAIL(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
}

TEST_F(LogTest, GuardFileHoldsTheLatestCheckpoint) {
  auto log = OpenLog();
  EXPECT_EQ(Guard(), log->Checkpoint(0)->note);
  AppendAll(*log, {Model("a"), Model("b")});
  ASSERT_TRUE(log->SignCheckpoint().ok());
  EXPECT_EQ(log->Checkpoint(0)->size, 2u);
  EXPECT_EQ(Guard(), log->Checkpoint(0)->note);
}

// A copy of the store from before the last checkpoint put back in place.
TEST_F(LogTest, StoreBehindTheGuardIsRefusedUnlessAccepted) {
  std::string db = dir_.Sub("data") + "/db", old = dir_.Sub("old-db");
  std::string signed_at_3;
  {
    auto log = OpenLog();
    AppendAll(*log, {Model("a")});
  }
  std::filesystem::copy(db, old, std::filesystem::copy_options::recursive);
  {
    auto log = OpenLog();
    AppendAll(*log, {Model("b"), Model("c")});
    ASSERT_TRUE(log->SignCheckpoint().ok());
    signed_at_3 = log->Checkpoint(0)->note;
  }
  std::filesystem::remove_all(db);
  std::filesystem::rename(old, db);
  auto root = note::ParseCheckpoint(*note::Verifier::Parse(signer_.VerifierKey())->Open(signed_at_3))->root;
  auto refused = TryOpen(false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "rollback guard: the store holds 1 entries but a checkpoint of size 3 (root " + hash::Hex(root) +
                ") was signed: the store was rolled back; to start anyway, knowing that checkpoints already "
                "given out may not be consistent with the ones signed from now on, pass --accept-rollback");
  EXPECT_EQ(Guard(), signed_at_3);  // refusing changes nothing
  auto accepted = TryOpen(true);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  std::string kept = dir_.Sub("data") + "/" + Log::kGuardFile + ".rolled-back-3";
  EXPECT_EQ((*accepted)->rollback_accepted(),
            "the store holds 1 entries but a checkpoint of size 3 (root " + hash::Hex(root) +
                ") was signed: the store was rolled back; the refused checkpoint is kept in " + kept);
  std::ifstream in(kept);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), signed_at_3);
  EXPECT_EQ(Guard(), (*accepted)->Checkpoint(0)->note);
  EXPECT_EQ((*accepted)->Checkpoint(0)->size, 1u);
}

// Another log of the same key and origin, as long as this one: same size,
// other root.
TEST_F(LogTest, StoreOfAnotherHistoryIsRefused) {
  std::string db = dir_.Sub("data") + "/db", other = dir_.Sub("other-db");
  {
    auto log = OpenLog();
    AppendAll(*log, {Model("x"), Model("y")});
  }
  std::filesystem::rename(db, other);
  std::filesystem::remove(dir_.Sub("data") + "/" + Log::kGuardFile);  // the other log's
  hash::Hash root;
  {
    auto log = OpenLog();
    AppendAll(*log, {Model("a"), Model("b")});
    ASSERT_TRUE(log->SignCheckpoint().ok());
    root = log->Checkpoint(0)->root;
  }
  std::filesystem::remove_all(db);
  std::filesystem::rename(other, db);
  auto store_root = [&] {
    auto store = *store::Store::Open(db);
    return *merkle::RootHash(2, [&](int l, uint64_t i) { return store->GetNode(l, i); });
  }();
  auto refused = TryOpen(false);
  EXPECT_EQ(refused.status().message(),
            "rollback guard: at tree size 2 the store's root is " + hash::Hex(store_root) +
                " but the signed checkpoint in " + dir_.Sub("data") + "/" + Log::kGuardFile + " says " +
                hash::Hex(root) +
                ": the store is not the log that signed it; to start anyway, knowing that "
                "checkpoints already given out may not be consistent with the ones signed from now on, pass "
                "--accept-rollback");
}

TEST_F(LogTest, GuardFileThatDoesNotVerifyIsRefused) {
  { OpenLog(); }
  std::ofstream(dir_.Sub("data") + "/" + Log::kGuardFile) << "not a note\n";
  auto refused = TryOpen(false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  std::string message(refused.status().message());
  std::string head = "rollback guard: the checkpoint in " + dir_.Sub("data") + "/" + Log::kGuardFile +
                     " is not a checkpoint of 'ledger.test/log' signed by this key: ";
  EXPECT_EQ(message.substr(0, head.size()), head);
  EXPECT_NE(message.find("; to start anyway"), std::string::npos) << message;
}

}  // namespace
}  // namespace ledger::log
