#include "monitor/server/monitor.h"

#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ledger/format/replay/testing.h"
#include "ledger/format/runmap/proof_json.h"
#include "monitor/server/testing.h"
#include "nlohmann/json.hpp"
#include "tests/util/status_matchers.h"
#include "util/files/files.h"

namespace ledger::monitor {
namespace {

using ::ledger::replay::testing::Leaves;
using ::ledger::testing::StatusIs;
using ::testing::HasSubstr;

using ::ledger::monitor::testing::FakeLog;
using ::ledger::monitor::testing::kOrigin;

class MonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("monitor_test_", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    cosigner_ = std::make_shared<cosign::MapCosigner>(*cosign::MapCosigner::Generate("monitor.example"));
  }

  absl::StatusOr<std::unique_ptr<Monitor>> Open() {
    Options o{.log_url = "http://log",
              .log_key = log_.key(),
              .cosigner = cosigner_,
              .dir = dir_.string(),
              .get = [this](const std::string& url) { return log_.Get(url); },
              .now = [] { return uint64_t{1767225700}; },
              .save_every = 512};
    return Monitor::Open(std::move(o));
  }

  // A new directory and log of 300 entries whose note the monitor cosigned.
  absl::StatusOr<std::unique_ptr<Monitor>> Restart() {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    log_ = FakeLog();
    Grow(300);
    log_.Checkpoint();
    auto m = Open();
    if (!m.ok()) return m.status();
    if (auto round = (*m)->Step(); !round.ok()) return round.status();
    return m;
  }

  void Grow(int n) {
    for (int i = 0; i < n; ++i) {
      int k = static_cast<int>(log_.leaves().leaves().size());
      log_.leaves().Next(absl::StrCat("team-", k % 3), absl::StrCat("run-", k % 11));
    }
  }

  std::filesystem::path dir_;
  std::shared_ptr<cosign::MapCosigner> cosigner_;
  FakeLog log_;
};

TEST_F(MonitorTest, CosignsAGenuineNoteAndResumesAfterARestart) {
  Grow(700);
  log_.Checkpoint();
  auto m = Open();
  ASSERT_TRUE(m.ok()) << m.status();
  auto round = (*m)->Step();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_TRUE(round->cosigned);
  EXPECT_EQ(round->replayed, 700u);
  EXPECT_EQ(log_.bundles_, 3);  // 256 + 256 + a partial of 188
  const std::string cosigned = (*m)->Cosigned();
  ASSERT_TRUE(cosigned.starts_with(log_.note()));
  auto verifier = cosign::MapCosignatureVerifier::Parse(cosigner_->VerifierKey());
  ASSERT_TRUE(verifier.ok());
  EXPECT_THAT(verifier->Verify(cosigned), StatusIs(absl::StatusCode::kOk));
  EXPECT_EQ(*verifier->Verify(cosigned), 1767225700u);
  EXPECT_EQ(*files::ReadFile((dir_ / "cosigned.note").string()), cosigned);
  // The same note again: nothing to do.
  round = (*m)->Step();
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->skipped, "cosigned already");

  // Restarted, it reads only what it had not replayed.
  m->reset();
  Grow(100);
  log_.Checkpoint();
  log_.bundles_ = 0;
  m = Open();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->status().replayed, 700u);
  EXPECT_EQ((*m)->Cosigned(), cosigned);
  round = (*m)->Step();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_TRUE(round->cosigned);
  EXPECT_EQ(round->replayed, 100u);
  EXPECT_EQ(log_.bundles_, 2);  // the bundle of 512..767, a partial of 768..799
  EXPECT_THAT(verifier->Verify((*m)->Cosigned()), StatusIs(absl::StatusCode::kOk));
  EXPECT_THAT((*m)->RenderMetrics(), HasSubstr("ledger_monitor_cosigned_tree_size 800\n"));
  EXPECT_THAT((*m)->RenderMetrics(), HasSubstr("ledger_monitor_alarm 0\n"));
}

// The three forgeries of a key-holding operator: a run's head moved back, a
// team's head forged, a team claimed absent; each signed with the log's key.
TEST_F(MonitorTest, RefusesAForgedMapRootRaisesTheAlarmAndStaysHalted) {
  // Entry k is of team-(k % 3) and run-(k % 11): run-1 of team-1 has an
  // entry every 33, team-0 every 3.
  struct Forgery {
    std::string name, check;
    std::function<void(Leaves&)> forge;
    bool teams;
    std::string team, run_id;  // the difference the evidence names
    uint64_t first_differing_seq;
    bool moved_back;
  } forgeries[] = {
      {"run head moved back", "run_map",
       [](Leaves& l) {
         runmap::Head& h = l.runs()["team-1/run-1"];
         h = {h.count - 1, h.last_seq - 33, hash::LeafHash(l.leaves()[h.last_seq - 33])};
       },
       false, "team-1", "run-1", 331, true},
      {"team head forged", "team_map",
       [](Leaves& l) {
         runmap::Head& h = l.teams()["team-0"];
         h = {h.count - 1, h.last_seq - 3, hash::LeafHash(l.leaves()[h.last_seq - 3])};
       },
       true, "team-0", "", 339, true},
      {"team claimed absent", "team_map", [](Leaves& l) { l.teams().erase("team-2"); }, true, "team-2", "", 2, false},
  };
  for (const Forgery& f : forgeries) {
    SCOPED_TRACE(f.name);
    auto m = Restart();
    ASSERT_TRUE(m.ok());
    const std::string genuine = (*m)->Cosigned();
    Grow(40);
    Leaves forged = log_.leaves();
    f.forge(forged);
    note::CheckpointTime note = log_.leaves().Note();
    if (f.teams) {
      note.team_map_root = forged.TeamMap().Root();
    } else {
      note.run_map_root = forged.RunMap().Root();
    }
    log_.Checkpoint(note);
    log_.ServeMaps(forged);
    EXPECT_THAT((*m)->Step(), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("halted: " + f.check)));
    EXPECT_EQ((*m)->Cosigned(), genuine);  // never the forged note
    EXPECT_THAT((*m)->RenderMetrics(), HasSubstr("ledger_monitor_alarm 1\n"));
    auto evidence = nlohmann::json::parse(*files::ReadFile((dir_ / "alarm.json").string()));
    EXPECT_EQ(evidence["finding"]["check"], f.check);
    EXPECT_EQ(evidence["refused_note"], log_.note());
    EXPECT_EQ(evidence["last_cosigned_note"], genuine);
    EXPECT_EQ(evidence["entries_since_cosigned"]["from"], 300);
    EXPECT_EQ(evidence["entries_since_cosigned"]["to"], 340);
    // The note the entries give is the genuine one's body.
    EXPECT_EQ(evidence["replayed_note"], note::FormatCheckpointTime(log_.leaves().Note()));
    // Which run or team the ledger misstates, and from which entry on.
    const nlohmann::json& d = evidence["difference"];
    EXPECT_EQ(d["map"], f.teams ? "teams" : "runs") << d.dump();
    EXPECT_EQ(d["team"], f.team) << d.dump();
    EXPECT_EQ(d.contains("run_id"), !f.teams) << d.dump();
    if (!f.teams) {
      EXPECT_EQ(d["run_id"], f.run_id);
    }
    EXPECT_EQ(d["first_differing_seq"], f.first_differing_seq) << d.dump();
    EXPECT_EQ(d["moved_back"], f.moved_back) << d.dump();
    const runmap::Key key =
        f.teams ? runmap::TeamKeyOf(f.team) : runmap::RunKeyOf(f.team, f.run_id, runmap::KeyVersion::kV2);
    EXPECT_EQ(d["key"], hash::Hex(key));
    EXPECT_EQ(d["replayed_head"]["last_seq"], f.teams ? log_.leaves().teams()[f.team].last_seq
                                                      : log_.leaves().runs()[f.team + "/" + f.run_id].last_seq);
    EXPECT_EQ(d["ledger_head"].is_null(), f.name == "team claimed absent");
    EXPECT_EQ(d["at_tree_size"], 340);
    EXPECT_EQ(d["at_note"], log_.note());
    EXPECT_EQ(d["proofs_asked"], log_.map_paths_);
    // The ledger's path verifies against the root it signed.
    auto proof = runmap::ParseProof(d["proof"].dump());
    ASSERT_TRUE(proof.ok());
    EXPECT_TRUE(runmap::VerifyProof(f.teams ? *note.team_map_root : *note.run_map_root, key, *proof).ok());
    EXPECT_THAT((*m)->status().alarm, HasSubstr("the ledger misstates " + f.team));
    // Halted: the genuine note is not cosigned either, not even after a restart.
    log_.Checkpoint();
    EXPECT_THAT((*m)->Step(), StatusIs(absl::StatusCode::kFailedPrecondition));
    m->reset();
    EXPECT_THAT(Open(), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("alarm.json")));
    // An operator's word: the file removed, it goes on.
    std::filesystem::remove(dir_ / "alarm.json");
    m = Open();
    ASSERT_TRUE(m.ok()) << m.status();
    auto round = (*m)->Step();
    ASSERT_TRUE(round.ok()) << round.status();
    EXPECT_TRUE(round->cosigned);
  }
}

// A forged run head in a note that the ledger has since signed past: the
// monitor carries its replay on to the ledger's latest note in a copy and
// finds the key there; with no map served, the evidence says why.
TEST_F(MonitorTest, TheKeyIsLocatedAtTheLedgersLaterNoteOrSaidNotLocated) {
  for (bool serve : {true, false}) {
    SCOPED_TRACE(serve ? "maps served" : "no maps served");
    auto m = Restart();
    ASSERT_TRUE(m.ok());
    Grow(40);
    auto forge = [&] {
      Leaves forged = log_.leaves();
      runmap::Head& h = forged.runs()["team-1/run-1"];
      h = {h.count - 1, h.last_seq - 33, hash::LeafHash(forged.leaves()[h.last_seq - 33])};
      note::CheckpointTime note = log_.leaves().Note();
      note.run_map_root = forged.RunMap().Root();
      log_.Checkpoint(note);
      if (serve) log_.ServeMaps(forged);
    };
    forge();
    const std::string refused = log_.note();
    Grow(25);  // the ledger signs on, its map still forged
    forge();
    EXPECT_THAT((*m)->Cosign(refused), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("run_map")));
    auto evidence = nlohmann::json::parse(*files::ReadFile((dir_ / "alarm.json").string()));
    const nlohmann::json& d = evidence["difference"];
    EXPECT_EQ(evidence["refused_note"], refused);
    if (!serve) {
      EXPECT_THAT(d["not_located"].get<std::string>(), HasSubstr("HTTP 404")) << d.dump();
      continue;
    }
    EXPECT_EQ(d["at_tree_size"], 365) << d.dump();
    EXPECT_EQ(d["at_note"], log_.note());
    EXPECT_EQ(d["team"], "team-1");
    EXPECT_EQ(d["run_id"], "run-1");
    EXPECT_EQ(d["first_differing_seq"], 364);  // 1 + 33 * 11
    EXPECT_EQ(d["moved_back"], true);
  }
}

TEST_F(MonitorTest, AnotherHistoryUnderTheSameKeyRaisesTheAlarm) {
  Grow(10);
  log_.Checkpoint();
  auto m = Open();
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE((*m)->Step().ok());
  // The log rewritten from its start (another history, signed with its key):
  // the entries after the ten replayed do not chain to them.
  Leaves other;
  other.set_origin(kOrigin);
  for (int i = 0; i < 12; ++i) other.Next("team-x", absl::StrCat("run-", i));
  log_.leaves() = other;
  log_.Checkpoint();
  EXPECT_THAT((*m)->Step(), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("halted: chain at seq 10")));
  auto evidence = nlohmann::json::parse(*files::ReadFile((dir_ / "alarm.json").string()));
  EXPECT_EQ(evidence["finding"]["check"], "chain");
  EXPECT_EQ(evidence["finding"]["seq"], 10);
  EXPECT_EQ(evidence["replayed_note"], "");  // the entries stop short of the note
}

TEST_F(MonitorTest, ANoteNotSignedByTheLogIsRefusedWithoutAlarm) {
  Grow(3);
  log_.Checkpoint();
  FakeLog impostor;
  impostor.leaves() = log_.leaves();
  impostor.Checkpoint();
  log_.Checkpoint();
  auto m = Open();
  ASSERT_TRUE(m.ok());
  log_ = impostor;  // same entries, another key
  EXPECT_THAT((*m)->Step(), StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("not signed by the log's key")));
  EXPECT_EQ((*m)->status().alarm, "");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "alarm.json"));
}

// A log that pruned entries this monitor has not replayed (CONTRACT
// section 9) is not a lying log: the monitor says it cannot go on, and
// raises no alarm.
TEST_F(MonitorTest, EntriesPrunedBeforeItsReplayStopItWithoutAlarm) {
  Grow(300);
  log_.Checkpoint();
  log_.pruned_below_ = 20;
  auto m = Open();
  ASSERT_TRUE(m.ok());
  EXPECT_THAT((*m)->Step(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                     HasSubstr("entry 0 was pruned under the log's retention policy before this "
                                               "monitor replayed it")));
  EXPECT_EQ((*m)->status().alarm, "");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "alarm.json"));
}

// POST /cosign: a ledger asks for the note an export needs.
TEST_F(MonitorTest, CosignsANoteItIsGivenOnceItReplayedToIt) {
  Grow(300);
  log_.Checkpoint();
  const std::string older = log_.note();
  Grow(100);
  log_.Checkpoint();
  const std::string newer = log_.note();
  auto m = Open();
  ASSERT_TRUE(m.ok());
  auto c = (*m)->Cosign(newer);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->now);
  EXPECT_EQ(c->size, 400u);
  EXPECT_EQ(c->replayed, 400u);
  auto verifier = cosign::MapCosignatureVerifier::Parse(cosigner_->VerifierKey());
  EXPECT_THAT(verifier->Verify(newer + c->line), StatusIs(absl::StatusCode::kOk));
  // Asked again: the same line, nothing replayed.
  auto again = (*m)->Cosign(newer);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->now);
  EXPECT_EQ(again->line, c->line);
  // A note below the replay can no longer be checked.
  EXPECT_THAT((*m)->Cosign(older),
              StatusIs(absl::StatusCode::kOutOfRange,
                       "time note: of size 300, below the 400 entries this monitor replayed; it cosigns notes at or "
                       "beyond them"));
  EXPECT_THAT((*m)->Cosign("not a note"), StatusIs(absl::StatusCode::kPermissionDenied));
  // After a restart it still knows the note it cosigned last.
  m->reset();
  m = Open();
  ASSERT_TRUE(m.ok());
  again = (*m)->Cosign(newer);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->now);
  EXPECT_EQ(again->line, c->line);
}

TEST_F(MonitorTest, AnUnreachableLogIsRetriedFromWhereItStopped) {
  Grow(1000);
  log_.Checkpoint();
  log_.fail_after_ = 3;  // the note and two bundles, then nothing
  auto m = Open();
  ASSERT_TRUE(m.ok());
  EXPECT_THAT((*m)->Step(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("connect: refused")));
  EXPECT_EQ((*m)->status().replayed, 512u);
  EXPECT_EQ((*m)->Cosigned(), "");
  m->reset();
  log_.fail_after_ = -1;
  log_.bundles_ = 0;
  m = Open();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->status().replayed, 512u);  // saved before the failure was returned
  auto round = (*m)->Step();
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_TRUE(round->cosigned);
  EXPECT_EQ(log_.bundles_, 2);
}

TEST_F(MonitorTest, SkipsNotesItDoesNotCosign) {
  Grow(5);
  note::CheckpointTime v3 = log_.leaves().Note();
  v3.runs_keyed_by_team = false;
  log_.Checkpoint(v3);
  auto m = Open();
  ASSERT_TRUE(m.ok());
  auto round = (*m)->Step();
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->skipped, "time note: of version 3; monitors cosign version 4 only");
  EXPECT_EQ(log_.bundles_, 0);
}

TEST_F(MonitorTest, ADamagedStateIsRefused) {
  Grow(5);
  log_.Checkpoint();
  {
    auto m = Open();
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE((*m)->Step().ok());
  }
  std::string state = *files::ReadFile((dir_ / "replay.state").string());
  state[40] ^= 1;
  ASSERT_TRUE(files::WriteFileAtomically((dir_ / "replay.state").string(), state).ok());
  EXPECT_THAT(Open(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("replay.state: replay state: checksum")));
}

TEST(EntryBundlePathTest, GroupsOfThreeDigits) {
  EXPECT_EQ(EntryBundlePath(0, 256), "tile/entries/000");
  EXPECT_EQ(EntryBundlePath(7, 3), "tile/entries/007.p/3");
  EXPECT_EQ(EntryBundlePath(1234, 256), "tile/entries/x001/234");
  EXPECT_EQ(EntryBundlePath(1234067, 255), "tile/entries/x001/x234/067.p/255");
}

TEST(EntryBundleTest, HoldsExactlyItsWidth) {
  std::string bundle = std::string("\0\2ab\0\1c", 7);
  auto leaves = ParseEntryBundle(bundle, 2);
  ASSERT_TRUE(leaves.ok());
  EXPECT_EQ((*leaves)[0], "ab");
  EXPECT_EQ((*leaves)[1], "c");
  EXPECT_THAT(ParseEntryBundle(bundle, 3), StatusIs(absl::StatusCode::kDataLoss, "entry bundle: 2 entries, want 3"));
  EXPECT_THAT(ParseEntryBundle(bundle.substr(0, 6), 2), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("cut short")));
}

}  // namespace
}  // namespace ledger::monitor
