#include "ledger/log/log.h"

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ledger/log/key_file.h"
#include "ledger/log/run_heads.h"
#include "ledger/merkle/merkle.h"
#include "ledger/receipt/entry.h"
#include "ledger/store/testing.h"
#include "ledger/storedmap/storedmap.h"
#include "tests/util/temp_dir.h"

namespace ledger::log {
namespace {

receipt::Receipt Model(const std::string& id) {
  auto r = receipt::FromJsonText(R"({"kind":"model_call","team":"team-a","run_id":"run-1","occurred_at_us":1,)"
                                 R"("route":"r","decision":"allow"})");
  r->set_receipt_id(id);
  return *r;
}

std::vector<const receipt::Receipt*> Pointers(const std::vector<receipt::Receipt>& rs) {
  std::vector<const receipt::Receipt*> out;
  for (const auto& r : rs) out.push_back(&r);
  return out;
}

// Appends and waits: the receipts live until the outcomes are in.
std::vector<sequencer::Outcome> AppendAll(Log& log, std::vector<receipt::Receipt> rs) {
  std::promise<std::vector<sequencer::Outcome>> p;
  auto f = p.get_future();
  absl::Status s =
      log.Append("tester", Pointers(rs), [&](std::vector<sequencer::Outcome> o) { p.set_value(std::move(o)); });
  EXPECT_TRUE(s.ok()) << s;
  return f.get();
}

class LogTest : public ::testing::Test {
 protected:
  std::unique_ptr<Log> OpenLog() {
    auto log = TryOpen(false);
    EXPECT_TRUE(log.ok()) << log.status();
    return log.ok() ? *std::move(log) : nullptr;
  }
  absl::StatusOr<std::unique_ptr<Log>> TryOpen(bool accept_rollback) {
    Log::Options o;
    o.data_dir = dir_.Sub("data");
    o.origin = "ledger.test/log";
    o.checkpoint_interval_ms = 60'000;  // tests sign explicitly
    o.accept_rollback = accept_rollback;
    return Log::Open(o, signer_);
  }
  std::string Guard() {
    std::ifstream in(dir_.Sub("data") + "/" + Log::kGuardFile);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  testing::TempDir dir_;
  note::Signer signer_ = *note::Signer::Generate("ledger.test/log");
};

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
  EXPECT_EQ(out[1].status.message(), "team: required, 1-63 bytes of [a-z0-9-]");
  EXPECT_EQ(out[2].seq, 1u);
  EXPECT_EQ(log->head().size, 2u);
}

// Every checkpoint comes with its time note, signed by the ledger's key,
// naming it; the time is the clock's and never goes backwards.
TEST_F(LogTest, EveryCheckpointHasASignedTimeThatNeverGoesBackwards) {
  std::atomic<int64_t> now{1'767'225'600'000'000};
  Log::Options o;
  o.data_dir = dir_.Sub("data");
  o.origin = "ledger.test/log";
  o.checkpoint_interval_ms = 60'000;
  o.sequencer.clock = [&] { return now.load(); };
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
  EXPECT_TRUE(log->store().LegacyReceipts(10)->empty());
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

receipt::Receipt InRun(const std::string& id, const std::string& run) {
  receipt::Receipt r = Model(id);
  r.set_run_id(run);
  return r;
}

// Each checkpoint-time note signs the run-head map of its tree, and ProveRun
// proves a run's head (or its absence) against it.
TEST_F(LogTest, EveryCheckpointSignsTheRunHeadMapAndRunsAreProvedAgainstIt) {
  auto log = OpenLog();
  auto key = *note::Verifier::Parse(log->verifier_key());
  std::vector<sequencer::Outcome> a =
      AppendAll(*log, {InRun("a1", "run-a"), InRun("b1", "run-b"), InRun("a2", "run-a")});
  ASSERT_TRUE(log->SignCheckpoint().ok());
  auto cp = *log->Checkpoint(0);
  ASSERT_EQ(cp.size, 3u);
  auto time = *note::ParseCheckpointTime(*key.Open(cp.time_note));
  ASSERT_TRUE(time.run_map_root.has_value());
  EXPECT_EQ(cp.run_map_root, time.run_map_root);

  auto proof = *log->ProveRun("team-a", "run-a");
  EXPECT_EQ(proof.checkpoint.size, 3u);
  ASSERT_TRUE(proof.path.found.has_value());
  runmap::Head head = proof.path.found->head;
  EXPECT_EQ(head, (runmap::Head{2, 2, a[2].leaf_hash}));
  EXPECT_TRUE(
      runmap::VerifyInclusion(*time.run_map_root, *runmap::RunKey("team-a", "run-a"), head, proof.path.siblings).ok());
  // A shorter head (the run without its last entry) is refused.
  EXPECT_FALSE(runmap::VerifyInclusion(*time.run_map_root, *runmap::RunKey("team-a", "run-a"), {1, 0, a[0].leaf_hash},
                                       proof.path.siblings)
                   .ok());
  auto none = *log->ProveRun("team-a", "run-z");
  EXPECT_FALSE(none.path.found.has_value());
  runmap::AbsenceProof absence{none.path.siblings, none.path.other};
  EXPECT_TRUE(runmap::VerifyAbsence(*time.run_map_root, *runmap::RunKey("team-a", "run-z"), absence).ok());
  EXPECT_EQ(log->ProveRun("Team A", "run-a").status().code(), absl::StatusCode::kInvalidArgument);

  // Appended but not yet signed: the proof stays that of the latest checkpoint.
  AppendAll(*log, {InRun("a3", "run-a")});
  EXPECT_EQ(log->ProveRun("team-a", "run-a")->path.found->head.count, 2u);
  ASSERT_TRUE(log->SignCheckpoint().ok());
  EXPECT_EQ(log->ProveRun("team-a", "run-a")->path.found->head.count, 3u);
  hash::Hash root4 = *log->Checkpoint(0)->run_map_root;

  // The root is a function of the log: a replay of the entries gives it, and
  // so does a restart (the map is loaded from the run rows).
  log.reset();
  log = OpenLog();
  EXPECT_EQ(log->Checkpoint(0)->run_map_root, root4);
  EXPECT_EQ(log->ProveRun("team-a", "run-a")->path.found->head.count, 3u);
  auto replayed = *ReplayRunMap(log->store(), 4);
  EXPECT_EQ(replayed.Root(), root4);
}

receipt::Receipt OfTeam(const std::string& id, const std::string& team) {
  receipt::Receipt r = Model(id);
  r.set_team(team);
  return r;
}

// Every leaf carries its team's previous seq (team_prev), across batches,
// and each checkpoint-time note (version 3) signs the team-head map.
TEST_F(LogTest, LeavesChainEachTeamAndTheTeamHeadMapIsSigned) {
  auto log = OpenLog();
  AppendAll(*log, {OfTeam("a1", "team-a"), OfTeam("b1", "team-b"), OfTeam("a2", "team-a")});
  AppendAll(*log, {OfTeam("b2", "team-b")});
  AppendAll(*log, {OfTeam("a3", "team-a"), OfTeam("c1", "team-c")});
  const std::vector<std::optional<uint64_t>> want = {std::nullopt, std::nullopt, 0, 1, 2, std::nullopt};
  for (uint64_t seq = 0; seq < want.size(); ++seq) {
    auto e = *receipt::ParseLeaf(*log->store().GetLeaf(seq));
    EXPECT_EQ(e.version, 2) << seq;
    EXPECT_EQ(e.team_prev, want[seq]) << seq;
  }
  ASSERT_TRUE(log->SignCheckpoint().ok());
  auto key = *note::Verifier::Parse(log->verifier_key());
  auto cp = *log->Checkpoint(0);
  auto time = *note::ParseCheckpointTime(*key.Open(cp.time_note));
  EXPECT_EQ(time.version(), 3);
  ASSERT_TRUE(time.team_map_root.has_value());
  EXPECT_EQ(cp.team_map_root, time.team_map_root);
  EXPECT_EQ(ReplayTeamMap(log->store(), 6)->Root(), *time.team_map_root);

  auto proof = *log->ProveTeam("team-a");
  ASSERT_TRUE(proof.path.found.has_value());
  runmap::Head head = proof.path.found->head;
  EXPECT_EQ(head, (runmap::Head{3, 4, hash::LeafHash(*log->store().GetLeaf(4))}));
  EXPECT_TRUE(runmap::VerifyInclusion(*time.team_map_root, *runmap::TeamKey("team-a"), head, proof.path.siblings).ok());
  // A team key is not a run key: the run map does not hold it.
  EXPECT_FALSE(runmap::VerifyInclusion(*time.run_map_root, *runmap::TeamKey("team-a"), head, proof.path.siblings).ok());
  auto none = *log->ProveTeam("team-z");
  EXPECT_FALSE(none.path.found.has_value());
  EXPECT_TRUE(runmap::VerifyAbsence(*time.team_map_root, *runmap::TeamKey("team-z"),
                                    runmap::AbsenceProof{none.path.siblings, none.path.other})
                  .ok());

  // A restart loads the map from the team rows: the same root.
  log.reset();
  log = OpenLog();
  EXPECT_EQ(log->filled_team_heads(), 0u);
  EXPECT_EQ(log->Checkpoint(0)->team_map_root, time.team_map_root);
  AppendAll(*log, {OfTeam("a4", "team-a")});
  EXPECT_EQ(receipt::ParseLeaf(*log->store().GetLeaf(6))->team_prev, 4u);
}

// A store of a version without team rows: Open fills them from the log and
// signs its latest checkpoint again with a version 3 note.
TEST_F(LogTest, OpenFillsTheTeamRowsOfAnOlderStore) {
  hash::Hash root;
  {
    auto log = OpenLog();
    AppendAll(*log, {OfTeam("a1", "team-a"), OfTeam("b1", "team-b"), OfTeam("a2", "team-a")});
  }
  {
    auto store = *store::Store::Open(dir_.Sub("data") + "/db");
    root = ReplayTeamMap(*store, 3)->Root();
    auto b = store->NewBatch();
    b.DeleteTeamHead("team-a");
    b.DeleteTeamHead("team-b");
    ASSERT_TRUE(store->Commit(b).ok());
    ASSERT_FALSE(store->GetTeamHead("team-a")->has_value());
    auto key = *note::Verifier::Parse(signer_.VerifierKey());
    auto t = *note::ParseCheckpointTime(*key.Open(*store->GetCheckpointTime(3)));
    t.team_map_root.reset();  // the version 2 note an earlier version signed
    ASSERT_TRUE(store->PutCheckpoint(3, {}, *signer_.Sign(note::FormatCheckpointTime(t))).ok());
  }
  auto log = OpenLog();
  EXPECT_EQ(log->filled_team_heads(), 2u);
  EXPECT_EQ(log->Checkpoint(0)->team_map_root, root);
  auto key = *note::Verifier::Parse(signer_.VerifierKey());
  EXPECT_EQ(note::ParseCheckpointTime(*key.Open(log->Checkpoint(0)->time_note))->version(), 3);
  AppendAll(*log, {OfTeam("a3", "team-a")});
  EXPECT_EQ(receipt::ParseLeaf(*log->store().GetLeaf(3))->team_prev, 2u);
}

// Receipts of `runs` runs in three teams, `per_run` each.
std::vector<receipt::Receipt> ManyRuns(const std::string& prefix, int runs, int per_run) {
  std::vector<receipt::Receipt> out;
  for (int i = 0; i < per_run; ++i) {
    for (int r = 0; r < runs; ++r) {
      receipt::Receipt x = OfTeam(absl::StrCat(prefix, "-", r, "-", i), absl::StrCat("team-", r % 3));
      x.set_run_id(absl::StrCat("run-", r));
      out.push_back(std::move(x));
    }
  }
  return out;
}

// The stored maps' size rows, read with the log closed.
std::pair<std::optional<uint64_t>, std::optional<uint64_t>> StoredMapSizes(const std::string& db) {
  auto store = *store::Store::Open(db);
  storedmap::StoredMap runs(store.get(), storedmap::StoredMap::Id::kRuns);
  storedmap::StoredMap teams(store.get(), storedmap::StoredMap::Id::kTeams);
  return {*runs.Size(), *teams.Size()};
}

// The run-head and team-head maps live in the store, not in memory: they
// stand at the signed size after a restart, and a store written by a version
// that kept them in memory (no map rows at all) gets them rebuilt from its
// run and team rows at Open, with the roots it signed.
TEST_F(LogTest, TheMapsAreKeptInTheStoreAndAnOlderStoreHasThemRebuilt) {
  hash::Hash runs, teams;
  {
    auto log = OpenLog();
    AppendAll(*log, ManyRuns("a", 60, 3));
    AppendAll(*log, ManyRuns("b", 90, 1));
    ASSERT_TRUE(log->SignCheckpoint().ok());
    runs = *log->Checkpoint(0)->run_map_root;
    teams = *log->Checkpoint(0)->team_map_root;
    ASSERT_EQ(log->Checkpoint(0)->size, 270u);
  }
  const std::string db = dir_.Sub("data") + "/db";
  EXPECT_EQ(StoredMapSizes(db), std::make_pair(std::optional<uint64_t>(270), std::optional<uint64_t>(270)));
  {
    auto store = *store::Store::Open(db);
    EXPECT_EQ(ReplayRunMap(*store, 270)->Root(), runs);
    EXPECT_EQ(ReplayTeamMap(*store, 270)->Root(), teams);
    for (auto id : {storedmap::StoredMap::Id::kRuns, storedmap::StoredMap::Id::kTeams}) {
      ASSERT_TRUE(storedmap::StoredMap::Forget(*store, id).ok());
    }
  }
  EXPECT_EQ(StoredMapSizes(db), std::make_pair(std::optional<uint64_t>(), std::optional<uint64_t>()));
  {
    auto log = OpenLog();
    EXPECT_EQ(log->Checkpoint(0)->size, 270u);
    EXPECT_EQ(log->Checkpoint(0)->run_map_root, runs);
    EXPECT_EQ(log->Checkpoint(0)->team_map_root, teams);
    auto proof = *log->ProveRun("team-1", "run-4");
    ASSERT_TRUE(proof.path.found.has_value());
    EXPECT_EQ(proof.path.found->head.count, 4u);
    EXPECT_TRUE(
        runmap::VerifyInclusion(runs, *runmap::RunKey("team-1", "run-4"), proof.path.found->head, proof.path.siblings)
            .ok());
    AppendAll(*log, ManyRuns("c", 70, 1));
    ASSERT_TRUE(log->SignCheckpoint().ok());
    EXPECT_EQ(log->Checkpoint(0)->run_map_root, ReplayRunMap(log->store(), 340)->Root());
    EXPECT_EQ(log->Checkpoint(0)->team_map_root, ReplayTeamMap(log->store(), 340)->Root());
  }
  EXPECT_EQ(StoredMapSizes(db), std::make_pair(std::optional<uint64_t>(340), std::optional<uint64_t>(340)));
}

// Entries appended while the maps were not kept (--run-map=false) are caught
// up at the next Open that keeps them, from the rows of the runs and teams
// those entries touched.
TEST_F(LogTest, TheMapsCatchUpWithEntriesAppendedWithoutThem) {
  auto open = [&](bool run_map) {
    Log::Options o;
    o.data_dir = dir_.Sub("data");
    o.origin = "ledger.test/log";
    o.checkpoint_interval_ms = 60'000;
    o.run_map = run_map;
    return *Log::Open(o, signer_);
  };
  {
    auto log = open(true);
    AppendAll(*log, ManyRuns("a", 30, 2));
  }
  {
    auto log = open(false);
    AppendAll(*log, ManyRuns("b", 45, 1));  // 30 runs again and 15 new ones
  }
  const std::string db = dir_.Sub("data") + "/db";
  EXPECT_EQ(StoredMapSizes(db), std::make_pair(std::optional<uint64_t>(60), std::optional<uint64_t>(60)));
  auto log = open(true);
  EXPECT_EQ(log->Checkpoint(0)->size, 105u);
  EXPECT_EQ(log->Checkpoint(0)->run_map_root, ReplayRunMap(log->store(), 105)->Root());
  EXPECT_EQ(log->Checkpoint(0)->team_map_root, ReplayTeamMap(log->store(), 105)->Root());
  EXPECT_EQ(log->ProveRun("team-2", "run-44")->path.found->head.count, 1u);
  EXPECT_EQ(log->ProveRun("team-2", "run-5")->path.found->head.count, 3u);
}

// A checkpoint whose map writes fail (a full disk) is not signed, and the
// heads it took from the sequencer are not lost: the next checkpoint signs
// maps that hold them, the roots a replay of the entries gives.
TEST_F(LogTest, MapsWrittenWhileTheDiskFailsLoseNoHead) {
  store::Faults faults;
  faults.retryable = true;  // as a full disk is
  Log::Options o;
  o.data_dir = dir_.Sub("data");
  o.origin = "ledger.test/log";
  o.checkpoint_interval_ms = 60'000;
  o.faults = &faults;
  auto log = *Log::Open(o, signer_);
  AppendAll(*log, ManyRuns("a", 12, 2));
  ASSERT_TRUE(log->SignCheckpoint().ok());
  AppendAll(*log, ManyRuns("b", 20, 1));  // every team and some new runs
  faults.fail_syncs = true;
  EXPECT_FALSE(log->SignCheckpoint().ok());
  // One map may have been written and the other not: no proof is served
  // from them until a checkpoint signs them.
  EXPECT_EQ(log->ProveRun("team-0", "run-0").status().code(), absl::StatusCode::kUnavailable);
  faults.fail_syncs = false;
  // RocksDB resumes by itself; the checkpointer retries meanwhile.
  absl::Status signed_again;
  for (int i = 0; i < 100; ++i) {
    signed_again = log->SignCheckpoint();
    if (signed_again.ok() && log->Checkpoint(0)->size == 44) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(signed_again.ok()) << signed_again;
  ASSERT_EQ(log->Checkpoint(0)->size, 44u);
  EXPECT_EQ(log->Checkpoint(0)->run_map_root, ReplayRunMap(log->store(), 44)->Root());
  EXPECT_EQ(log->Checkpoint(0)->team_map_root, ReplayTeamMap(log->store(), 44)->Root());
  EXPECT_EQ(log->ProveTeam("team-1")->path.found->head.count, 15u);
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
    root = ReplayRunMap(*store, 3)->Root();
    auto b = store->NewBatch();
    b.PutRunHeadOfFormat1("team-a", "run-a", 2);
    b.PutRunHeadOfFormat1("team-a", "run-b", 1);
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
            (runmap::Head{3, 3, hash::LeafHash(*log->store().GetLeaf(3))}));
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

TEST(KeyFileTest, CreatedWithMode0600AndNeverOverwritten) {
  testing::TempDir dir;
  std::string path = dir.Sub("k");
  auto created = CreateKeyFile(path, "o.example/x");
  ASSERT_TRUE(created.ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(CreateKeyFile(path, "o.example/x").status().code(), absl::StatusCode::kAlreadyExists);
  auto read = ReadKeyFile(path, "o.example/x");
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->VerifierKey(), created->VerifierKey());
  EXPECT_EQ(ReadKeyFile(path, "o.example/y").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(KeyFileTest, LoadOrCreateReusesTheDataDirectoryKey) {
  testing::TempDir dir;
  auto first = LoadOrCreateKey(dir.path(), "", "o.example/x");
  auto second = LoadOrCreateKey(dir.path(), "", "o.example/x");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->VerifierKey(), second->VerifierKey());
}

}  // namespace
}  // namespace ledger::log
