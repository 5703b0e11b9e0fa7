// GetTeamSummary through the real gRPC API: each state counted, the
// overdue among the pending, the last activity and the history by day.
#include "query/service/query_test_fixture.h"

namespace ledger::query {
namespace {

using namespace ::ledger::query::test;  // NOLINT: the fixture and its receipts

TEST_F(QueryTest, ATeamSummaryCountsEachStateTheOverdueAndTheLastActivity) {
  auto summary = [&](const std::string& team) {
    pb::GetTeamSummaryRequest req;
    req.set_team(team);
    pb::TeamSummary out;
    grpc::ClientContext ctx;
    grpc::Status s = steps_->GetTeamSummary(&ctx, req, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return out;
  };
  Append({Start("p", "pending")});
  Append({Start("s", "ok"), Exec("s-x", "s", "ok", "succeeded")});
  Append({Start("f", "bad"), Exec("f-x", "f", "bad", "timed_out")});
  Append({Deny("d", "denied")});
  Append({Start("u", "lost", 500)});
  Append({Start("o", "elsewhere", 500, "run-9", "team-b")});
  const int64_t last_b = now_.load() - 1000;  // Append moves the clock on after it
  Append({Start("p2", "later")});
  const int64_t last_a = now_.load() - 1000;

  pb::TeamSummary a = summary("team-a");
  EXPECT_EQ(a.team(), "team-a");
  EXPECT_EQ(a.steps_pending(), 3);
  EXPECT_EQ(a.steps_succeeded(), 1);
  EXPECT_EQ(a.steps_failed(), 1);
  EXPECT_EQ(a.steps_denied(), 1);
  EXPECT_EQ(a.steps_unknown(), 0);
  EXPECT_EQ(a.steps_overdue(), 0);
  EXPECT_EQ(a.last_activity_us(), last_a);

  // Past the 500 ms deadlines, within the grace: overdue, still pending;
  // team-b's own is team-b's.
  now_ += 600 * 1000;
  a = summary("team-a");
  EXPECT_EQ(a.steps_pending(), 3);
  EXPECT_EQ(a.steps_overdue(), 1);
  pb::TeamSummary b = summary("team-b");
  EXPECT_EQ(b.steps_pending(), 1);
  EXPECT_EQ(b.steps_overdue(), 1);
  EXPECT_EQ(b.last_activity_us(), last_b);

  // Declared unknown: no longer pending nor overdue.
  now_ += kGraceMs * 1000;
  auto declared = sweeper_->SweepNow();
  ASSERT_TRUE(declared.ok()) << declared.status();
  EXPECT_EQ(*declared, 2);
  a = summary("team-a");
  EXPECT_EQ(a.steps_pending(), 2);
  EXPECT_EQ(a.steps_unknown(), 1);
  EXPECT_EQ(a.steps_overdue(), 0);
  EXPECT_GT(a.last_activity_us(), last_a);  // the step_unknown entry is the run's last

  // The history: each step counted in the bucket it began in, each run's
  // charged cost in its first entry's.
  pb::GetTeamSummaryRequest hreq;
  hreq.set_team("team-a");
  hreq.set_history_from_us(kT0);
  hreq.set_bucket_us(5000);  // "bad" began at +2 ms, "lost" at +4 ms: both in the first
  auto history = [&](int64_t from) {
    hreq.set_history_from_us(from);
    pb::TeamSummary h;
    grpc::ClientContext ctx;
    grpc::Status s = steps_->GetTeamSummary(&ctx, hreq, &h);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return h;
  };
  pb::TeamSummary h = history(kT0);
  ASSERT_GE(h.history_size(), 2);
  EXPECT_EQ(h.history(0).from_us(), kT0);
  EXPECT_EQ(h.history(0).steps_failed(), 1);
  EXPECT_EQ(h.history(0).steps_unknown(), 1);
  EXPECT_EQ(h.history(1).from_us(), kT0 + 5000);
  EXPECT_EQ(h.history(1).steps_failed() + h.history(1).steps_unknown(), 0);
  pb::GetRunRequest rr;
  rr.set_team("team-a");
  rr.set_run_id("run-1");
  pb::Run run;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(steps_->GetRun(&ctx, rr, &run).ok());
  }
  int64_t charged = 0;
  for (const pb::TeamBucket& b : h.history()) charged += b.charged_cost_micros();
  EXPECT_EQ(h.history(0).charged_cost_micros(), run.charged_cost_micros());
  EXPECT_EQ(charged, run.charged_cost_micros());
  // From +3 ms: "bad" and the run (first entry at +0) began before it.
  h = history(kT0 + 3000);
  ASSERT_GE(h.history_size(), 1);
  EXPECT_EQ(h.history(0).steps_failed(), 0);
  EXPECT_EQ(h.history(0).steps_unknown(), 1);
  EXPECT_EQ(h.history(0).charged_cost_micros(), 0);
  hreq.set_bucket_us(1);
  {
    grpc::ClientContext ctx;
    grpc::Status too_many = steps_->GetTeamSummary(&ctx, hreq, &h);
    EXPECT_EQ(too_many.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(too_many.error_message(), "bucket_us: at most 366 buckets");
  }

  pb::GetTeamSummaryRequest bad;
  bad.set_team("Team-A");
  pb::TeamSummary out;
  grpc::ClientContext ctx;
  grpc::Status s = steps_->GetTeamSummary(&ctx, bad, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "team: 'Team-A' is not 1-63 bytes of [a-z0-9-]");
}

}  // namespace
}  // namespace ledger::query
