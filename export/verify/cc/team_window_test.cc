// Closed team windows (CONTRACT section 7): a team window of format 4
// proves it holds every entry of its team logged in its times, through the
// team chain in the leaves and the team-head map, and a window cut short
// is refused even when re-signed with the ledger's key.
#include "export/pack/team_window.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "export/exporter/team_window_bounds.h"
#include "export/verify/cc/pack_test_fixture.h"
#include "gtest/gtest.h"
#include "ledger/format/receipt/entry.h"

namespace ledger {
namespace {

class TeamWindowTest : public PackTest {
 protected:
  void Configure(log::Log::Options& o) override {
    o.sequencer.clock = [this] { return now_; };
  }
  // The log signs a last checkpoint as it closes, reading the clock above:
  // it goes before this fixture's members do.
  void TearDown() override { log_.reset(); }

  // team-a's entries at seqs 0, 2, 3, 5, 6 (run-1: 0, 2, 6; run-2: 3, 5),
  // team-b's at 1 and 4; entry i logged at (i + 1) * 1000 us.
  void Populate() override {
    const char* plan[][3] = {{"team-a", "run-1", "agent_start"}, {"team-b", "run-9", "model_call"},
                             {"team-a", "run-1", "model_call"},  {"team-a", "run-2", "agent_start"},
                             {"team-b", "run-9", "model_call"},  {"team-a", "run-2", "agent_exec"},
                             {"team-a", "run-1", "agent_exec"}};
    for (const auto& [team, run, kind] : plan) AppendAt(team, run, kind);
  }

  void AppendAt(const std::string& team, const std::string& run, const std::string& kind) {
    now_ = (next_++ + 1) * 1000;
    std::string id = absl::StrCat("r", next_);
    std::string base =
        absl::StrCat(R"("team":")", team, R"(","run_id":")", run, R"(","step_id":"s","occurred_at_us":5)");
    std::string json =
        kind == "agent_start"  ? absl::StrCat(R"({"receipt_id":")", run, R"(-start","kind":"agent_start",)", base,
                                              R"(,"decision":"allow","timeout_ms":60000})")
        : kind == "agent_exec" ? absl::StrCat(R"({"receipt_id":")", id, R"(","kind":"agent_exec",)", base,
                                              R"(,"start_receipt_id":")", run, R"(-start","status":"failed"})")
                               : absl::StrCat(R"({"receipt_id":")", id, R"(","kind":"model_call",)", base,
                                              R"(,"route":"m","decision":"allow","input_tokens":3})");
    Append({json});
  }

  std::string Window(const std::string& team, int64_t from, int64_t to) {
    return Export(exporter::Scope{team, "", 0, 0, from, to}, absl::StrCat("w", ++windows_, ".tar.gz"));
  }

  pack::TeamWindow Bounds(const std::string& pack) {
    std::string dir = dir_.Sub(absl::StrCat("x", ++windows_));
    std::filesystem::create_directories(dir);
    auto files = *pack::ExtractArchive(pack, dir, pack::Limits());
    return *pack::ParseTeamWindow(Read(files[pack::kTeamWindow]));
  }

  // Drops the entries of `seqs` (with their proofs) and re-signs.
  std::string Drop(const std::string& pack, const std::vector<uint64_t>& seqs) {
    return Tamper(
        pack,
        [&](const std::string& dir) {
          int dropped = 0;
          std::vector<std::string> lines = absl::StrSplit(Read(dir + "/" + pack::kEntries), '\n', absl::SkipEmpty());
          KeepEntries(dir, [&](int i) {
            bool drop = false;
            for (uint64_t s : seqs) drop = drop || lines[i].find(absl::StrCat("\"seq\":", s, ",")) != std::string::npos;
            dropped += drop;
            return !drop;
          });
          auto m = nlohmann::json::parse(Read(dir + "/" + pack::kManifest));
          m["counts"]["entries"] = m["counts"]["entries"].get<int>() - dropped;
          Write(dir + "/" + pack::kManifest, m.dump() + "\n");
        },
        true);
  }

  std::string ReplaceTeamWindow(const std::string& pack, const pack::TeamWindow& w) {
    return Tamper(
        pack, [&](const std::string& dir) { Write(dir + "/" + pack::kTeamWindow, pack::EncodeTeamWindow(w)); }, true);
  }

  int64_t now_ = 0;
  int next_ = 0;
  int windows_ = 0;
};

std::string Complete(const std::string& team, int64_t from, int64_t to, uint64_t n, uint64_t k) {
  return absl::StrCat("complete: every entry of team ", team, " logged in [", from, ", ", to, ") up to seq ", n - 1,
                      " (team chain, ", k, " entries).");
}

TEST_F(TeamWindowTest, AWindowWithEntriesAfterItCarriesBothNeighbours) {
  std::string p = Window("team-a", 2500, 6500);
  verify::Result r = Verify(p);
  ASSERT_TRUE(r.ok) << r.Summary();
  EXPECT_EQ(r.entries, 3u);
  EXPECT_EQ(r.team_window, Complete("team-a", 2500, 6500, 7, 3));
  EXPECT_NE(r.Summary().find(r.team_window + "\n"), std::string::npos);
  pack::TeamWindow w = Bounds(p);
  ASSERT_TRUE(w.before && w.after);
  EXPECT_EQ(w.before->seq, 0u);
  EXPECT_EQ(w.after->seq, 6u);
  EXPECT_FALSE(w.head.has_value());
  // The page says what the window proves, in words.
  std::string dir = dir_.Sub("page");
  std::filesystem::create_directories(dir);
  std::string report = Read((*pack::ExtractArchive(p, dir, pack::Limits()))[pack::kReport]);
  EXPECT_NE(report.find("holds <strong>every</strong> entry of team <code>team-a</code> logged from"),
            std::string::npos);
  EXPECT_NE(report.find("<li><code>team-window.json</code>"), std::string::npos);
}

TEST_F(TeamWindowTest, AWindowReachingTheHeadCarriesTheTeamHeadProof) {
  std::string p = Window("team-a", 2500, 9000);
  verify::Result r = Verify(p);
  ASSERT_TRUE(r.ok) << r.Summary();
  EXPECT_EQ(r.team_window, Complete("team-a", 2500, 9000, 7, 4));
  pack::TeamWindow w = Bounds(p);
  ASSERT_TRUE(w.head && w.head->path.found);
  EXPECT_EQ(w.head->path.found->head.count, 5u);
  EXPECT_EQ(w.head->path.found->head.last_seq, 6u);
  EXPECT_FALSE(w.after.has_value());
}

TEST_F(TeamWindowTest, EmptyWindowsAndAbsentTeamsAreProvenToo) {
  // After the team's last entry: the head is the entry before the window.
  verify::Result late = Verify(Window("team-a", 8000, 9000));
  ASSERT_TRUE(late.ok) << late.Summary();
  EXPECT_EQ(late.team_window, Complete("team-a", 8000, 9000, 7, 0));
  // Between two entries of the team.
  std::string between = Window("team-b", 2500, 4500);
  verify::Result mid = Verify(between);
  ASSERT_TRUE(mid.ok) << mid.Summary();
  EXPECT_EQ(mid.team_window, Complete("team-b", 2500, 4500, 7, 0));
  EXPECT_EQ(Bounds(between).before->seq, 1u);
  EXPECT_EQ(Bounds(between).after->seq, 4u);
  // A team with no entry at all: an absence proof.
  std::string none = Window("team-z", 0, 9000);
  verify::Result absent = Verify(none);
  ASSERT_TRUE(absent.ok) << absent.Summary();
  EXPECT_EQ(absent.team_window, Complete("team-z", 0, 9000, 7, 0));
  EXPECT_FALSE(Bounds(none).head->path.found.has_value());
  // The team's first entry inside the window: nothing before it.
  std::string first = Window("team-a", 0, 1500);
  verify::Result from_start = Verify(first);
  ASSERT_TRUE(from_start.ok) << from_start.Summary();
  EXPECT_EQ(from_start.team_window, Complete("team-a", 0, 1500, 7, 1));
  EXPECT_FALSE(Bounds(first).before.has_value());
}

// The team's next entry after a window is found by reading forwards or, past
// the look-ahead, by walking the team chain down from its head: the same.
TEST_F(TeamWindowTest, ReadingForwardsAndWalkingTheChainFindTheSameNeighbours) {
  auto proof = *log_->ProveTeam("team-a");
  runmap::KeyedPath head{proof.key, proof.path};
  auto prove = [&](uint64_t seq) -> absl::StatusOr<std::vector<hash::Hash>> {
    auto p = log_->ProveInclusion(seq, proof.checkpoint.size);
    if (!p.ok()) return p.status();
    return p->path;
  };
  // Windows over seqs [2, 6) and [1, 2) (team-a's entries 2, 3, 5 and none).
  for (auto [hi, held] : {std::pair<uint64_t, exporter::WindowEntries>{6, {3, 2, {2, 0}}},
                          std::pair<uint64_t, exporter::WindowEntries>{2, {0, 0, {}}}}) {
    const log::LogView view = *log_->ViewAt(proof.checkpoint.size);
    auto read = *exporter::TeamWindowBounds(view, "team-a", head, hi, held, prove);
    auto walked = *exporter::TeamWindowBounds(view, "team-a", head, hi, held, prove, /*look_ahead=*/0);
    EXPECT_EQ(pack::EncodeTeamWindow(read), pack::EncodeTeamWindow(walked)) << hi;
    ASSERT_TRUE(read.after.has_value());
    EXPECT_EQ(read.after->seq, hi == 6 ? 6u : 2u);
    ASSERT_TRUE(read.before.has_value());
    EXPECT_EQ(read.before->seq, 0u);
  }
}

TEST_F(TeamWindowTest, AWholeRunDroppedFromTheWindowIsRefusedEvenResigned) {
  verify::Result r = Verify(Drop(Window("team-a", 2500, 6500), {3, 5}));
  ExpectFailure(r, pack::kTeamWindow, -1,
                "entry 6 follows the team's entry 5 (team_prev), which the pack does not hold");
}

TEST_F(TeamWindowTest, TheWindowsFirstOrLastEntryDroppedIsRefused) {
  ExpectFailure(Verify(Drop(Window("team-a", 2500, 6500), {2})), pack::kTeamWindow, -1,
                "entry 3 follows the team's entry 2 (team_prev), which the pack does not hold");
  ExpectFailure(Verify(Drop(Window("team-a", 2500, 9000), {6})), pack::kTeamWindow, -1,
                "head: the team's last entry up to tree size 7 is seq 6 with leaf hash ");
  // Without `before` as well: the first entry still names it.
  std::string p = Window("team-a", 2500, 6500);
  pack::TeamWindow w = Bounds(p);
  w.before.reset();
  ExpectFailure(Verify(ReplaceTeamWindow(p, w)), pack::kTeamWindow, -1,
                "entry 2 follows the team's entry 0 (team_prev), which the pack does not hold");
}

TEST_F(TeamWindowTest, ALaterAfterOrAnOlderHeadIsRefused) {
  std::string old_pack = Window("team-a", 2500, 7500);  // the head (seq 6) at size 7
  pack::TeamWindow old_bounds = Bounds(old_pack);
  AppendAt("team-a", "run-1", "model_call");  // seq 7, logged at 8000
  AppendAt("team-a", "run-1", "model_call");  // seq 8, logged at 9000
  std::string p = Window("team-a", 2500, 7500);
  pack::TeamWindow w = Bounds(p);
  ASSERT_TRUE(w.after);
  EXPECT_EQ(w.after->seq, 7u);
  // An entry further on as `after`: its team_prev is not the window's last.
  auto inclusion = *log_->ProveInclusion(8, 9);
  w.after = pack::Bound{8, *log_->View().GetLeaf(8), inclusion.path};
  ExpectFailure(Verify(ReplaceTeamWindow(p, w)), pack::kTeamWindow, -1,
                "entry 8 follows the team's entry 7 (team_prev), which the pack does not hold");
  // The head of the older tree, presented as current.
  pack::TeamWindow stale = Bounds(p);
  stale.after.reset();
  stale.head = old_bounds.head;
  ExpectFailure(Verify(ReplaceTeamWindow(p, stale)), pack::kTeamWindow, -1, "head: the proof leads to map root ");
}

TEST_F(TeamWindowTest, BoundsOutsideTheirPlaceAreRefused) {
  std::string p = Window("team-a", 2500, 6500);
  pack::TeamWindow w = Bounds(p);
  pack::TeamWindow inside = w;
  inside.after = pack::Bound{5, *log_->View().GetLeaf(5), log_->ProveInclusion(5, 7)->path};
  ExpectFailure(Verify(ReplaceTeamWindow(p, inside)), pack::kTeamWindow, -1,
                "after: entry 5 was logged at 6000, inside the window, which ends at 6500");
  pack::TeamWindow other_team = w;
  other_team.before = pack::Bound{1, *log_->View().GetLeaf(1), log_->ProveInclusion(1, 7)->path};
  ExpectFailure(Verify(ReplaceTeamWindow(p, other_team)), pack::kTeamWindow, -1, "before: entry 1 is of another team");
  pack::TeamWindow both = w;
  both.head = Bounds(Window("team-a", 2500, 9000)).head;
  ExpectFailure(Verify(ReplaceTeamWindow(p, both)), pack::kTeamWindow, -1, "want exactly one of after and head");
  // No team-window.json at all, re-signed.
  std::string removed = Tamper(
      p,
      [](const std::string& dir) {
        auto m = nlohmann::json::parse(Read(dir + "/" + pack::kManifest));
        m["files"].erase(pack::kTeamWindow);
        Write(dir + "/" + pack::kManifest, m.dump() + "\n");
        std::filesystem::remove(dir + "/" + pack::kTeamWindow);
      },
      true);
  ExpectFailure(Verify(removed), pack::kTeamWindow, -1,
                "missing: a team window whose checkpoint-time note signs a team-head map root carries its team chain "
                "proof");
}

// A store written before team chains (version 1 leaves, version 1 notes),
// then opened by this version: the window's part before the upgrade is
// said not to be proven.
TEST_F(TeamWindowTest, AWindowAcrossTheUpgradeSaysWhichPartIsProven) {
  testing::TempDir dir;
  log::Log::Options o;
  o.data_dir = dir.Sub("data");
  o.origin = "ledger.test/packs";
  o.checkpoint_interval_ms = 60'000;
  o.sequencer.projector = &projector_;
  o.sequencer.clock = [this] { return now_; };
  o.run_map = false;
  log_ = *log::Log::Open(o, signer_);
  next_ = 0;
  AppendAt("team-a", "run-1", "agent_start");  // seq 0, version 1
  AppendAt("team-a", "run-1", "model_call");   // seq 1, version 1
  EXPECT_EQ(receipt::ParseLeaf(*log_->View().GetLeaf(1))->version, 1);
  log_.reset();
  o.run_map = true;
  log_ = *log::Log::Open(o, signer_);
  AppendAt("team-a", "run-1", "model_call");  // seq 2, version 2, team_prev 1
  AppendAt("team-a", "run-1", "agent_exec");  // seq 3
  auto leaf = *receipt::ParseLeaf(*log_->View().GetLeaf(2));
  EXPECT_EQ(leaf.version, 2);
  EXPECT_EQ(leaf.team_prev, 1u);
  verify::Result across = Verify(Window("team-a", 1500, 9000));
  ASSERT_TRUE(across.ok) << across.Summary();
  EXPECT_EQ(across.team_window,
            "complete after seq 1: every entry of team team-a logged in [1500, 9000) after seq 1 up to seq 3 (team "
            "chain); the window's entries up to seq 1 are version 1 leaves, written before the ledger kept team "
            "chains: that none of them was left out is not proven.");
  verify::Result old = Verify(Window("team-a", 0, 1500));
  ASSERT_TRUE(old.ok) << old.Summary();
  EXPECT_EQ(old.team_window,
            "not proven complete: the team's entries around the window are version 1 leaves, written before the "
            "ledger kept team chains.");
  verify::Result after_upgrade = Verify(Window("team-a", 2500, 9000));
  ASSERT_TRUE(after_upgrade.ok) << after_upgrade.Summary();
  EXPECT_EQ(after_upgrade.team_window, Complete("team-a", 2500, 9000, 4, 2));
  log_.reset();
}

}  // namespace
}  // namespace ledger
