#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "export/exporter/staging.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "ledger/format/note/note.h"
#include "ledger/rpc/server/server.h"
#include "ledger/rpc/service/service.h"
#include "ledger/storage/log/log.h"
#include "ledger_service.grpc.pb.h"
#include "ops/internal/dashboard_page.h"
#include "ops/internal/timeline.h"
#include "ops/metrics.h"
#include "tests/util/temp_dir.h"
#include "util/http/http.h"

namespace ledger::ops {
namespace {

namespace pb = evidence::ledger::v1;

TEST(Metrics, FiguresFromARealServer) {
  testing::TempDir dir;
  log::Log::Options o;
  o.data_dir = dir.Sub("data");
  o.origin = "ops.test/log";
  o.checkpoint_interval_ms = 10;
  auto log = log::Log::Open(o, *note::Signer::Generate(o.origin));
  ASSERT_TRUE(log.ok()) << log.status();
  auth::Gate gate({}, nullptr);
  service::LedgerService ledger(log->get(), &gate);
  auto server = server::Server::Start(&gate, "127.0.0.1:0", {&ledger});
  ASSERT_TRUE(server.ok());
  auto stub = pb::LedgerService::NewStub(grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  pb::AppendRequest req;
  for (int i = 0; i < 3; ++i) {
    pb::Receipt* r = req.add_receipts();
    r->set_receipt_id("r-" + std::to_string(i));
    r->set_team(i == 2 ? "Bad Team" : "team-a");
    r->set_run_id("run");
    r->set_step_id("s");
    r->set_occurred_at_us(1767225600000000);
    r->mutable_model_call()->set_route("m");
    r->mutable_model_call()->set_decision(pb::DECISION_ALLOW);
  }
  pb::AppendResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub->Append(&ctx, req, &resp).ok());
  grpc::ClientContext ctx2;
  ASSERT_TRUE(stub->Append(&ctx2, req, &resp).ok());  // the same again: duplicates
  (*log)->WaitForMore(1, std::chrono::seconds(5));
  while ((*log)->LatestCheckpointTime().first < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));

  Metrics metrics({.log = log->get(), .ledger = &ledger});
  std::string text = metrics.Render();
  for (const char* want : {
           "ledger_appends_total{kind=\"model_call\",result=\"ok\"} 2\n",
           "ledger_appends_total{kind=\"model_call\",result=\"duplicate\"} 2\n",
           "ledger_appends_total{kind=\"model_call\",result=\"invalid_argument\"} 2\n",
           "ledger_append_request_receipts_bucket{le=\"5\"} 2\n",
           "ledger_append_request_receipts_count 2\n",
           "ledger_commit_entries_count 1\n",
           "ledger_commit_entries_sum 2\n",
           "ledger_tree_size 2\n",
           "ledger_checkpoint_tree_size 2\n",
           "# TYPE ledger_fsync_seconds histogram\n",
           "# TYPE ledger_build_seconds histogram\n",
           "ledger_commit_seconds_count 1\n",
           "# TYPE ledger_commit_idle_seconds histogram\n",
           "ledger_replicate_seconds_count 0\n",
           "# TYPE ledger_checkpoint_seconds histogram\n",
           "# TYPE ledger_checkpoint_age_seconds gauge\n",
           "ledger_store_failed 0\n",
       }) {
    EXPECT_NE(text.find(want), std::string::npos) << "missing " << want << " in\n" << text;
  }
  EXPECT_EQ(text.find("ledger_fsync_seconds_count 0\n"), std::string::npos) << "no sync was timed";
}

TEST(TimelineTest, StepsInTheTablesOrderADeniedStepIsAMarkBarsSpanTheirTimesCallsAndDeadlinesInside) {
  constexpr int64_t kT = 1767225600000000;  // 2026-01-01T00:00:00Z
  evidence::ledger::v1::Step late, early, denied;
  late.set_step_id("late");
  late.set_state(evidence::ledger::v1::STEP_STATE_UNKNOWN);
  late.set_has_start(true);
  late.set_started_at_us(kT + 2'000'000);
  late.set_has_unknown(true);
  late.set_unknown_at_us(kT + 4'000'000);
  late.set_timeout_at_us(kT + 3'000'000);
  early.set_step_id("early");
  early.set_state(evidence::ledger::v1::STEP_STATE_SUCCEEDED);
  early.set_has_start(true);
  early.set_started_at_us(kT);
  early.set_has_completion(true);
  early.set_completed_at_us(kT + 1'000'000);
  denied.set_step_id("denied");
  denied.set_state(evidence::ledger::v1::STEP_STATE_DENIED);
  denied.set_has_start(true);
  denied.set_started_at_us(kT + 1'000'000);
  auto calls_of = [&](const evidence::ledger::v1::Step& s) {
    std::vector<TimelineCall> calls;
    if (s.step_id() == "early") {
      calls.push_back({kT + 500'000, "model_call m: allow", false});
      calls.push_back({kT + 1'000'000, "tool_call t: deny", true});
    }
    return calls;
  };
  std::string html = StepTimeline(
      {late, denied, early}, [](const auto& s) { return "/s/" + s.step_id(); }, calls_of);
  // The order given (the table's), not the order they began.
  size_t e = html.find(">early</a>"), d = html.find(">denied</a>"), l = html.find(">late</a>");
  ASSERT_NE(e, std::string::npos);
  EXPECT_LT(l, d);
  EXPECT_LT(d, e);
  // The unknown step's deadline, 3 s into a 4 s axis; the calls inside
  // early's bar, the denied one marked.
  EXPECT_NE(html.find("<span class=\"tl-deadline\" role=\"img\" aria-label=\"late: deadline "
                      "2026-01-01T00:00:03Z\""),
            std::string::npos);
  EXPECT_NE(html.find("style=\"left:75.000%\""), std::string::npos);
  EXPECT_NE(html.find("<span class=\"tl-call\" role=\"img\" aria-label=\"early: model_call m: allow at "
                      "2026-01-01T00:00:00Z\" title=\"early: model_call m: allow at 2026-01-01T00:00:00Z\" "
                      "style=\"left:12.500%\">"),
            std::string::npos);
  EXPECT_NE(html.find("<span class=\"tl-call denied\""), std::string::npos);
  EXPECT_NE(html.find("<span class=\"tl-bar succeeded\" role=\"img\" aria-label=\"early: succeeded, "
                      "2026-01-01T00:00:00Z to 2026-01-01T00:00:01Z (1.0 s)\""),
            std::string::npos);
  EXPECT_NE(html.find("style=\"left:0.000%;width:25.000%\""), std::string::npos);
  EXPECT_NE(html.find("<span class=\"tl-mark denied\" role=\"img\" aria-label=\"denied: denied at "
                      "2026-01-01T00:00:01Z\""),
            std::string::npos);
  EXPECT_NE(html.find("style=\"left:50.000%;width:50.000%\""), std::string::npos);
  EXPECT_EQ(html.find("tl-bar denied"), std::string::npos);
  EXPECT_EQ(StepTimeline({}, [](const auto&) { return ""; }), "");
}

TEST(TimelineTest, DurationsReadAsPeopleSayThem) {
  EXPECT_EQ(Duration(950'000), "950 ms");
  EXPECT_EQ(Duration(12'500'000), "12.5 s");
  EXPECT_EQ(Duration(200'000'000), "3 min 20 s");
  EXPECT_EQ(Duration(7'500'000'000), "2 h 5 min");
}

// A pruned entry (CONTRACT section 9) is a row that says so, with its
// proof, never a row silently left out.
TEST(DashboardPageTest, APrunedEntryIsARowThatSaysSo) {
  pb::Entry entry;
  entry.set_seq(42);
  entry.set_leaf(R"({"pruned":{"leaf_hash":")" + std::string(64, 'a') + R"(","seq":42}})");
  const std::string row = ops::page::ReceiptRow(entry);
  EXPECT_NE(row.find("pruned under the retention policy"), std::string::npos) << row;
  EXPECT_NE(row.find("/proofs/42"), std::string::npos) << row;
}

}  // namespace
}  // namespace ledger::ops
