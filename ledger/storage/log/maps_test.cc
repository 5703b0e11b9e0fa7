// The run-head and team-head maps: what each checkpoint signs, the team
// chain in the leaves, and the maps kept in the store across restarts,
// older stores and failed writes.
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/runmap/runmap.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/log/log_testing.h"
#include "ledger/storage/log/run_heads.h"
#include "ledger/storage/store/store.h"
#include "ledger/storage/store/testing.h"
#include "ledger/storage/storedmap/storedmap.h"
#include "tests/util/status_matchers.h"

namespace ledger::log {
namespace {

using ::ledger::testing::StatusIs;
using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::StartsWith;

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
  EXPECT_TRUE(runmap::VerifyInclusion(*time.run_map_root, *runmap::RunKey("team-a", "run-a", runmap::KeyVersion::kV2),
                                      head, proof.path.siblings)
                  .ok());
  // A shorter head (the run without its last entry) is refused.
  EXPECT_THAT(
      runmap::VerifyInclusion(*time.run_map_root, *runmap::RunKey("team-a", "run-a", runmap::KeyVersion::kV2),
                              {1, 0, a[0].leaf_hash}, proof.path.siblings),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(StartsWith("proof: leads to root "), EndsWith(", expected " + hash::Hex(*time.run_map_root)))));
  auto none = *log->ProveRun("team-a", "run-z");
  EXPECT_FALSE(none.path.found.has_value());
  runmap::AbsenceProof absence{none.path.siblings, none.path.other};
  EXPECT_TRUE(
      runmap::VerifyAbsence(*time.run_map_root, *runmap::RunKey("team-a", "run-z", runmap::KeyVersion::kV2), absence)
          .ok());
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
  auto replayed = *ReplayRunMap(TestingStoreOf(*log), 4, runmap::KeyVersion::kV2);
  EXPECT_EQ(replayed.Root(), root4);
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
    auto e = *receipt::ParseLeaf(*TestingStoreOf(*log).GetLeaf(seq));
    EXPECT_EQ(e.version, 2) << seq;
    EXPECT_EQ(e.team_prev, want[seq]) << seq;
  }
  ASSERT_TRUE(log->SignCheckpoint().ok());
  auto key = *note::Verifier::Parse(log->verifier_key());
  auto cp = *log->Checkpoint(0);
  auto time = *note::ParseCheckpointTime(*key.Open(cp.time_note));
  EXPECT_EQ(time.version(), 4);
  ASSERT_TRUE(time.team_map_root.has_value());
  EXPECT_EQ(cp.team_map_root, time.team_map_root);
  EXPECT_EQ(ReplayTeamMap(TestingStoreOf(*log), 6)->Root(), *time.team_map_root);

  auto proof = *log->ProveTeam("team-a");
  ASSERT_TRUE(proof.path.found.has_value());
  runmap::Head head = proof.path.found->head;
  EXPECT_EQ(head, (runmap::Head{3, 4, hash::LeafHash(*TestingStoreOf(*log).GetLeaf(4))}));
  EXPECT_TRUE(runmap::VerifyInclusion(*time.team_map_root, *runmap::TeamKey("team-a"), head, proof.path.siblings).ok());
  // A team key is not a run key: the run map does not hold it.
  EXPECT_THAT(
      runmap::VerifyInclusion(*time.run_map_root, *runmap::TeamKey("team-a"), head, proof.path.siblings),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(StartsWith("proof: leads to root "), EndsWith(", expected " + hash::Hex(*time.run_map_root)))));
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
  EXPECT_EQ(receipt::ParseLeaf(*TestingStoreOf(*log).GetLeaf(6))->team_prev, 4u);
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
    ledger::store::Testing::DeleteTeamHead(b, "team-a");
    ledger::store::Testing::DeleteTeamHead(b, "team-b");
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
  EXPECT_EQ(note::ParseCheckpointTime(*key.Open(log->Checkpoint(0)->time_note))->version(), 4);
  AppendAll(*log, {OfTeam("a3", "team-a")});
  EXPECT_EQ(receipt::ParseLeaf(*TestingStoreOf(*log).GetLeaf(3))->team_prev, 2u);
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
    EXPECT_EQ(ReplayRunMap(*store, 270, runmap::KeyVersion::kV2)->Root(), runs);
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
    EXPECT_TRUE(runmap::VerifyInclusion(runs, *runmap::RunKey("team-1", "run-4", runmap::KeyVersion::kV2),
                                        proof.path.found->head, proof.path.siblings)
                    .ok());
    AppendAll(*log, ManyRuns("c", 70, 1));
    ASSERT_TRUE(log->SignCheckpoint().ok());
    EXPECT_EQ(log->Checkpoint(0)->run_map_root,
              ReplayRunMap(TestingStoreOf(*log), 340, runmap::KeyVersion::kV2)->Root());
    EXPECT_EQ(log->Checkpoint(0)->team_map_root, ReplayTeamMap(TestingStoreOf(*log), 340)->Root());
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
  EXPECT_EQ(log->Checkpoint(0)->run_map_root, ReplayRunMap(TestingStoreOf(*log), 105, runmap::KeyVersion::kV2)->Root());
  EXPECT_EQ(log->Checkpoint(0)->team_map_root, ReplayTeamMap(TestingStoreOf(*log), 105)->Root());
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
  EXPECT_THAT(log->SignCheckpoint(),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(StartsWith("storage: write maps: "), EndsWith("injected sync failure"))));
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
  EXPECT_EQ(log->Checkpoint(0)->run_map_root, ReplayRunMap(TestingStoreOf(*log), 44, runmap::KeyVersion::kV2)->Root());
  EXPECT_EQ(log->Checkpoint(0)->team_map_root, ReplayTeamMap(TestingStoreOf(*log), 44)->Root());
  EXPECT_EQ(log->ProveTeam("team-1")->path.found->head.count, 15u);
}

}  // namespace
}  // namespace ledger::log
