#include "ledger/format/replay/replay.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/replay/testing.h"
#include "tests/util/status_matchers.h"

namespace ledger::replay {
namespace {

using ::ledger::replay::testing::Leaves;
using ::ledger::testing::StatusIs;

Leaves Sample() {
  Leaves log;
  for (int i = 0; i < 40; ++i) log.Next(absl::StrCat("team-", i % 3), absl::StrCat("run-", i % 7));
  return log;
}

Replay ReplayOf(const Leaves& log) {
  Replay replay;
  for (const std::string& leaf : log.leaves()) {
    auto finding = replay.Append(leaf);
    EXPECT_FALSE(finding.has_value()) << finding->Text();
  }
  return replay;
}

TEST(ReplayTest, RecomputesTheTreeAndBothMaps) {
  Leaves log = Sample();
  Replay replay = ReplayOf(log);
  note::CheckpointTime note = log.Note();
  EXPECT_EQ(replay.size(), 40u);
  EXPECT_EQ(replay.root(), note.checkpoint.root);
  EXPECT_EQ(replay.runs_root(), *note.run_map_root);
  EXPECT_EQ(replay.teams_root(), *note.team_map_root);
  EXPECT_EQ(replay.runs(), 21u);  // 3 teams x 7 runs, all met within 21 entries
  EXPECT_EQ(replay.teams(), 3u);
  EXPECT_EQ(replay.RunHead("team-1", "run-1"), log.runs()["team-1/run-1"]);
  EXPECT_EQ(replay.TeamHead("team-2"), log.teams()["team-2"]);
  EXPECT_FALSE(replay.TeamHead("team-9").has_value());
  auto finding = replay.Check(note);
  EXPECT_FALSE(finding.has_value()) << finding->Text();
}

// The three forgeries a key-holding operator can sign: each is found.
TEST(ReplayTest, FindsAForgedRunHeadTeamHeadOrAbsentTeam) {
  Leaves log = Sample();
  Replay replay = ReplayOf(log);
  const note::CheckpointTime genuine = log.Note();

  // A run's head moved back, its tail dropped.
  Leaves back = log;
  runmap::Head& run = back.runs()["team-1/run-1"];
  run = {run.count - 1, run.last_seq - 21, hash::LeafHash(log.leaves()[run.last_seq - 21])};
  note::CheckpointTime forged = genuine;
  forged.run_map_root = back.RunMap().Root();
  auto finding = replay.Check(forged);
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->check, "run_map");
  EXPECT_EQ(finding->expected, hash::Hex(genuine.run_map_root.value()));
  EXPECT_EQ(finding->found, hash::Hex(forged.run_map_root.value()));

  // A team's head forged (its window closed early).
  Leaves early = log;
  runmap::Head& team = early.teams()["team-0"];
  team = {team.count - 1, team.last_seq - 3, hash::LeafHash(log.leaves()[team.last_seq - 3])};
  forged = genuine;
  forged.team_map_root = early.TeamMap().Root();
  finding = replay.Check(forged);
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->check, "team_map");

  // A team claimed absent.
  Leaves absent = log;
  absent.teams().erase("team-2");
  forged = genuine;
  forged.team_map_root = absent.TeamMap().Root();
  finding = replay.Check(forged);
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->check, "team_map");

  // Another root, another size.
  forged = genuine;
  forged.checkpoint.root[0] ^= 1;
  ASSERT_TRUE(replay.Check(forged).has_value());
  EXPECT_EQ(replay.Check(forged)->check, "root");
  forged = genuine;
  forged.checkpoint.size = 39;
  EXPECT_EQ(replay.Check(forged)->what, "time note of the checkpoint of size 39: tree size");
}

TEST(ReplayTest, RefusesABrokenChainAndChangesNothing) {
  Leaves log = Sample();
  Replay replay = ReplayOf(log);
  const hash::Hash root = replay.root(), runs = replay.runs_root(), teams = replay.teams_root();
  struct Case {
    std::string check;
    std::function<void(Leaves::Fields&)> tamper;
  } cases[] = {
      {"entry", [](Leaves::Fields& f) { f.seq += 1; }},
      {"chain", [](Leaves::Fields& f) { f.prev[3] ^= 1; }},
      {"run_chain", [](Leaves::Fields& f) { f.run_prev = std::nullopt; }},
      {"team_chain", [](Leaves::Fields& f) { f.team_prev = *f.team_prev - 1; }},
  };
  for (const Case& c : cases) {
    Leaves::Fields f = log.FieldsOf("team-1", "run-1");
    c.tamper(f);
    auto finding = replay.Append(log.Encode(f));
    ASSERT_TRUE(finding.has_value()) << c.check;
    EXPECT_EQ(finding->check, c.check);
    EXPECT_EQ(finding->seq, 40);
    EXPECT_EQ(replay.size(), 40u);
    EXPECT_EQ(replay.root(), root);
    EXPECT_EQ(replay.runs_root(), runs);
    EXPECT_EQ(replay.teams_root(), teams);
  }
  auto finding = replay.Append("not a leaf");
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->check, "entry");
  EXPECT_EQ(finding->expected, "a leaf in canonical form");
  // The genuine next leaf is still taken.
  EXPECT_FALSE(replay.Append(log.Next("team-1", "run-1")).has_value());
  EXPECT_EQ(replay.runs_root(), log.RunMap().Root());
}

TEST(ReplayTest, StateRoundTripsAndResumes) {
  Leaves log = Sample();
  Replay replay = ReplayOf(log);
  std::string state = replay.Encode();
  auto resumed = Replay::Decode(state);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->Encode(), state);
  for (int i = 0; i < 30; ++i) {
    std::string leaf = log.Next(absl::StrCat("team-", i % 4), absl::StrCat("run-", i % 5));
    ASSERT_FALSE(resumed->Append(leaf).has_value());
    ASSERT_FALSE(replay.Append(leaf).has_value());
  }
  EXPECT_EQ(resumed->Encode(), replay.Encode());
  EXPECT_FALSE(resumed->Check(log.Note()).has_value());
}

TEST(ReplayTest, StateRefusesDamage) {
  std::string state = ReplayOf(Sample()).Encode();
  std::string flipped = state;
  flipped[60] ^= 1;
  EXPECT_THAT(Replay::Decode(flipped),
              StatusIs(absl::StatusCode::kDataLoss, "replay state: checksum: the file is not what was written"));
  EXPECT_THAT(Replay::Decode(state.substr(0, state.size() - 1)), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(Replay::Decode("evidence-ledger/replay-state/v2\n" + state.substr(32)),
              StatusIs(absl::StatusCode::kDataLoss, ::testing::HasSubstr("header")));
  EXPECT_TRUE(Replay::Decode(Replay().Encode()).ok());
}

}  // namespace
}  // namespace ledger::replay
