#include "monitor/client/monitors.h"

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "monitor/server/monitor.h"
#include "monitor/server/testing.h"
#include "tests/util/status_matchers.h"
#include "util/sync/mutex.h"

namespace ledger::monitors {
namespace {

using ::ledger::monitor::testing::FakeLog;
using ::ledger::testing::StatusIs;
using ::testing::HasSubstr;

// A ledger's monitors client against a real Monitor (its HTTP handler,
// called in process) that reads a fake log.
class MonitorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::path(::testing::TempDir()) /
            absl::StrCat("monitors_test_", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "monitor");
    cosigner_ = std::make_shared<cosign::MapCosigner>(*cosign::MapCosigner::Generate("monitor.example"));
    for (int i = 0; i < 300; ++i) log_.leaves().Next(absl::StrCat("team-", i % 3), absl::StrCat("run-", i % 7));
    log_.Checkpoint();
    monitor_ = *monitor::Monitor::Open({.log_url = "http://log",
                                        .log_key = log_.key(),
                                        .cosigner = cosigner_,
                                        .dir = (root_ / "monitor").string(),
                                        .get = [this](const std::string& url) { return log_.Get(url); },
                                        .now = [] { return uint64_t{1767225700}; }});
  }

  tlogpolicy::Policy Policy() {
    return *tlogpolicy::Policy::Parse(
        absl::StrCat("log ", LogVkey(), "\nmonitor m1 ", cosigner_->VerifierKey(), " http://m1\nquorum none\n"));
  }
  std::string LogVkey() { return log_vkey_.empty() ? log_vkey_ = log_.vkey() : log_vkey_; }

  absl::StatusOr<std::unique_ptr<Monitors>> Start(int interval_ms = 3'600'000) {
    Post post = [this](const std::string& url, const std::string& body) -> absl::StatusOr<http::Reply> {
      ++posts_;
      EXPECT_EQ(url, "http://m1/cosign");
      http::HttpRequest r;
      r.method = "POST";
      r.path = "/cosign";
      r.body = body;
      if (!answer_.empty()) return http::Reply{200, "text/plain", answer_};
      http::HttpResponse out = monitor::Handle(r, *monitor_);
      return http::Reply{out.status, out.content_type, out.body};
    };
    return Monitors::Start(
        Policy(), [this]() -> absl::StatusOr<std::string> { return log_.note(); }, post,
        {.interval_ms = interval_ms,
         .keep =
             [this](uint64_t size, const hash::Hash& monitor, const std::string& line) {
               sync::MutexLock lock(&kept_mu_);
               kept_[size].emplace_back(monitor, line);
               return absl::OkStatus();
             },
         .kept = [this](uint64_t size) -> absl::StatusOr<std::vector<std::pair<hash::Hash, std::string>>> {
           sync::MutexLock lock(&kept_mu_);
           return kept_[size];
         }});
  }

  std::filesystem::path root_;
  std::shared_ptr<cosign::MapCosigner> cosigner_;
  FakeLog log_;
  std::unique_ptr<monitor::Monitor> monitor_;
  std::string log_vkey_, answer_;
  int posts_ = 0;
  // What the ledger's store keeps beside each time note.
  sync::Mutex kept_mu_;
  std::map<uint64_t, std::vector<std::pair<hash::Hash, std::string>>> kept_ ABSL_GUARDED_BY(kept_mu_);
};

TEST_F(MonitorsTest, AnExportGetsTheQuorumByAskingForItsNote) {
  auto m = Start();
  ASSERT_TRUE(m.ok()) << m.status();
  auto cosigned = (*m)->CosignedWithQuorum(log_.note(), std::chrono::seconds(60));
  ASSERT_TRUE(cosigned.ok()) << cosigned.status();
  EXPECT_TRUE(cosigned->starts_with(log_.note()));
  auto evaluation = Policy().EvaluateMonitors(*cosigned);
  ASSERT_TRUE(evaluation.ok());
  EXPECT_TRUE(evaluation->quorum);
  ASSERT_EQ((*m)->For(log_.note()).size(), 1u);
  EXPECT_EQ((*m)->For(log_.note())[0].monitor, "m1");
  EXPECT_EQ((*m)->For(log_.note())[0].time, 1767225700u);
  EXPECT_EQ((*m)->Cosigned(log_.note()), *cosigned);
  EXPECT_THAT((*m)->RenderMetrics(), HasSubstr("ledger_map_cosignatures_total{monitor=\"m1\"} 1\n"));
  EXPECT_THAT((*m)->RenderMetrics(), HasSubstr("ledger_map_cosigned_tree_size{monitor=\"m1\"} 300\n"));
  // Held: asked once only.
  EXPECT_TRUE((*m)->CosignedWithQuorum(log_.note(), std::chrono::seconds(60)).ok());
  EXPECT_EQ(posts_, 1);

  // A restart serves the line kept beside the note, without asking.
  m->reset();
  posts_ = 0;
  m = Start();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->Cosigned(log_.note()), *cosigned);
  EXPECT_EQ(posts_, 0);
  // A kept line that is not the monitor's, or of another note of that
  // size, is not served.
  const std::string forged = (*m)->For(log_.note())[0].line.substr(0, 20) + "AAAA\n";
  {
    sync::MutexLock lock(&kept_mu_);
    kept_[300].front().second = forged;
  }
  EXPECT_EQ((*m)->Cosigned(log_.note()), log_.note());
}

TEST_F(MonitorsTest, AForgedNoteIsRefusedByTheMonitorAndTheExportFails) {
  auto m = Start();
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE((*m)->CosignedWithQuorum(log_.note(), std::chrono::seconds(60)).ok());
  for (int i = 0; i < 10; ++i) log_.leaves().Next("team-0", "run-x");
  note::CheckpointTime forged = log_.leaves().Note();
  forged.team_map_root = hash::Sha256("another map");
  log_.Checkpoint(forged);
  // The monitor's 422 ends the wait at once: it will not cosign this note.
  EXPECT_THAT((*m)->CosignedWithQuorum(log_.note(), std::chrono::hours(1)),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("lacks the monitor quorum 1 after 3600000 ms: no map cosignature from m1 (m1 "
                                 "refused the note: halted: team_map at seq 309")));
  EXPECT_TRUE((*m)->For(log_.note()).empty());
  EXPECT_THAT((*m)->RenderMetrics(),
              HasSubstr("ledger_map_cosign_failures_total{monitor=\"m1\",reason=\"refused\"} 1\n"));
}

TEST_F(MonitorsTest, ANoteBelowTheMonitorsReplayIsAConflict) {
  auto m = Start();
  ASSERT_TRUE(m.ok());
  const std::string older = log_.note();
  for (int i = 0; i < 10; ++i) log_.leaves().Next("team-0", "run-x");
  log_.Checkpoint();
  ASSERT_TRUE((*m)->CosignedWithQuorum(log_.note(), std::chrono::seconds(60)).ok());
  EXPECT_THAT((*m)->CosignedWithQuorum(older, std::chrono::hours(1)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("m1: time note: of size 300, below the 310")));
  EXPECT_THAT((*m)->RenderMetrics(),
              HasSubstr("ledger_map_cosign_failures_total{monitor=\"m1\",reason=\"conflict\"} 1\n"));
}

TEST_F(MonitorsTest, AnAnswerThatIsNotTheMonitorsCosignatureIsNotKept) {
  // Another key's map cosignature of the same note.
  auto other = cosign::MapCosigner::Generate("monitor.example");
  ASSERT_TRUE(other.ok());
  std::string text = log_.note().substr(0, log_.note().find("\n\n") + 1);
  answer_ = *other->Cosign(text, 1767225700);
  auto m = Start();
  ASSERT_TRUE(m.ok());
  EXPECT_THAT((*m)->CosignedWithQuorum(log_.note(), std::chrono::hours(1)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("its answer is not its map cosignature")));
  EXPECT_TRUE((*m)->For(log_.note()).empty());
}

TEST_F(MonitorsTest, TheLatestNoteIsGivenInTheBackground) {
  auto m = Start(/*interval_ms=*/10);
  ASSERT_TRUE(m.ok());
  // No wait bounded by a clock: the test's timeout bounds it.
  while ((*m)->For(log_.note()).empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(monitor_->status().cosigned_size, 300u);
}

}  // namespace
}  // namespace ledger::monitors
