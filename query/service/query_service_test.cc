// Steps through the real gRPC API: a server on a loopback port with the
// projector, the query service and a sweeper on an injected clock.
#include "query/service/query_service.h"

#include <atomic>
#include <future>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "ledger/rpc/server/server.h"
#include "ledger/rpc/service/service.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/store/testing.h"
#include "ledger_service.grpc.pb.h"
#include "query/projector/keys.h"
#include "query/projector/projector.h"
#include "query/service/query_test_fixture.h"
#include "query/sweeper/sweeper.h"
#include "tests/util/temp_dir.h"

namespace ledger::query {
namespace {

using namespace ::ledger::query::test;  // NOLINT: the fixture and its receipts

TEST_F(QueryTest, EveryState) {
  Append({Start("p", "pending")});
  Append(
      {Start("s", "ok"), Model("m1", "ok", "allow"), Model("m2", "ok", "deny"), Exec("s-x", "s", "ok", "succeeded")});
  Append({Start("f", "bad"), Exec("f-x", "f", "bad", "timed_out")});
  Append({Deny("d", "denied")});
  Append({Start("u", "lost", 500)});
  now_ += (500 + kGraceMs) * 1000;
  auto declared = sweeper_->SweepNow();
  ASSERT_TRUE(declared.ok()) << declared.status();
  EXPECT_EQ(*declared, 1);

  EXPECT_EQ(Step("pending").state(), pb::STEP_STATE_PENDING);
  pb::Step ok = Step("ok");
  EXPECT_EQ(ok.state(), pb::STEP_STATE_SUCCEEDED);
  EXPECT_EQ(ok.calls().model_calls_allowed(), 1);
  EXPECT_EQ(ok.calls().model_calls_denied(), 1);
  EXPECT_EQ(ok.actual_cost_micros(), 250 + 80);
  EXPECT_EQ(ok.seqs_size(), 4);
  pb::Step bad = Step("bad");
  EXPECT_EQ(bad.state(), pb::STEP_STATE_FAILED);
  EXPECT_EQ(bad.exec_status(), pb::EXEC_STATUS_TIMED_OUT);
  EXPECT_EQ(bad.charged_cost_micros(), 1000);
  EXPECT_EQ(Step("denied").state(), pb::STEP_STATE_DENIED);
  pb::Step lost = Step("lost");
  EXPECT_EQ(lost.state(), pb::STEP_STATE_UNKNOWN);
  EXPECT_EQ(lost.deadline_us(), lost.started_at_us() + (500 + kGraceMs) * 1000);

  // The declaration is an entry of the log, written by the ledger.
  grpc::ClientContext ctx;
  pb::GetEntriesRequest er;
  er.set_from_seq(lost.unknown_seq());
  er.set_to_seq(lost.unknown_seq() + 1);
  auto reader = ledger_->GetEntries(&ctx, er);
  pb::Entry e;
  ASSERT_TRUE(reader->Read(&e));
  EXPECT_NE(e.leaf().find(R"("emitter":"ledger")"), std::string::npos);
  EXPECT_NE(e.leaf().find(R"("kind":"step_unknown")"), std::string::npos);
  EXPECT_NE(e.leaf().find(R"("receipt_id":"ledger.unknown.)" + std::to_string(lost.start_seq())), std::string::npos);
  EXPECT_TRUE(reader->Finish().ok());

  pb::GetRunRequest rr;
  rr.set_team("team-a");
  rr.set_run_id("run-1");
  pb::Run run;
  grpc::ClientContext c2;
  ASSERT_TRUE(steps_->GetRun(&c2, rr, &run).ok());
  EXPECT_EQ(run.steps_pending(), 1);
  EXPECT_EQ(run.steps_succeeded(), 1);
  EXPECT_EQ(run.steps_failed(), 1);
  EXPECT_EQ(run.steps_denied(), 1);
  EXPECT_EQ(run.steps_unknown(), 1);
  ASSERT_EQ(run.unknown_steps_size(), 1);
  EXPECT_EQ(run.unknown_steps(0).step_id(), "lost");
  // pending: 0 charged; ok: 330; bad: max(250, 1000); lost: max(0, 1000).
  EXPECT_EQ(run.charged_cost_micros(), 330 + 1000 + 1000);
}

TEST_F(QueryTest, EveryAnomaly) {
  Append({Start("late", "late", 100)});
  now_ += (100 + kGraceMs) * 1000 + 1;
  ASSERT_EQ(*sweeper_->SweepNow(), 1);
  Append({Exec("late-x", "late", "late", "succeeded")});
  pb::Step late = Step("late");
  EXPECT_EQ(late.state(), pb::STEP_STATE_UNKNOWN);  // the declaration stays visible
  EXPECT_TRUE(late.has_unknown());
  EXPECT_TRUE(late.has_completion());
  EXPECT_EQ(Anomalies(late), std::vector<pb::Anomaly>{pb::ANOMALY_LATE_COMPLETION});

  Append({Exec("orphan-x", "never-started", "orphan", "succeeded")});
  EXPECT_EQ(Anomalies(Step("orphan")), std::vector<pb::Anomaly>{pb::ANOMALY_ORPHAN_COMPLETION});

  Append({Start("dup", "dup"), Exec("dup-1", "dup", "dup", "failed"), Exec("dup-2", "dup", "dup", "failed"),
          Exec("dup-3", "dup", "dup", "killed")});
  pb::Step dup = Step("dup");
  EXPECT_EQ(dup.exec_status(), pb::EXEC_STATUS_FAILED);
  EXPECT_EQ(Anomalies(dup),
            (std::vector<pb::Anomaly>{pb::ANOMALY_DUPLICATE_COMPLETION, pb::ANOMALY_CONFLICTING_COMPLETION}));

  Append({Start("mm", "mm"), Exec("mm-x", "mm", "other-step", "succeeded")});
  pb::Step mm = Step("mm");
  EXPECT_EQ(mm.state(), pb::STEP_STATE_PENDING);
  EXPECT_EQ(Anomalies(mm), std::vector<pb::Anomaly>{pb::ANOMALY_MISMATCHED_COMPLETION});

  Append({Deny("deny", "deny"), Exec("deny-x", "deny", "deny", "succeeded")});
  pb::Step deny = Step("deny");
  EXPECT_EQ(deny.state(), pb::STEP_STATE_DENIED);
  EXPECT_EQ(Anomalies(deny), std::vector<pb::Anomaly>{pb::ANOMALY_COMPLETION_AFTER_DENY});

  // ListSteps by anomaly.
  pb::ListStepsRequest req;
  req.mutable_filter()->set_team("team-a");
  req.mutable_filter()->add_anomalies(pb::ANOMALY_LATE_COMPLETION);
  req.mutable_filter()->add_anomalies(pb::ANOMALY_COMPLETION_AFTER_DENY);
  pb::ListStepsResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(steps_->ListSteps(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.steps_size(), 2);
  EXPECT_EQ(resp.steps(0).step_id(), "deny");  // newest first
  EXPECT_EQ(resp.steps(1).step_id(), "late");
}

TEST_F(QueryTest, SweeperDeclaresInDeadlineThenSeqOrderAndAcrossARestart) {
  // Deadlines: c (t+200ms) < a (t+300ms) = b (t+300ms, later seq).
  Append({Start("a", "a", 300), Start("b", "b", 300), Start("c", "c", 200)});
  Close();
  now_ += 10'000'000;  // the server was down past every deadline
  Open();
  ASSERT_EQ(*sweeper_->SweepNow(), 3);
  EXPECT_EQ(*sweeper_->SweepNow(), 0);  // nothing twice
  uint64_t uc = Step("c").unknown_seq(), ua = Step("a").unknown_seq(), ub = Step("b").unknown_seq();
  EXPECT_LT(uc, ua);
  EXPECT_LT(ua, ub);
  EXPECT_EQ(Step("a").state(), pb::STEP_STATE_UNKNOWN);
}

// One step that cannot be declared (its record is damaged here; a receipt
// id taken first was the attack) never holds up the steps due after it.
TEST_F(QueryTest, SweeperDeclaresEveryOtherStepPastOneThatFails) {
  Append({Start("a", "a", 100), Start("b", "b", 200), Start("c", "c", 300)});
  Close();
  {
    auto store = *store::Store::Open(dir_.Sub("data") + "/db");
    auto b = store->NewBatch();
    b.PutProjection(projection::Table::kSteps, EncodeStepKey({"team-a", "run-1", "a", 1}), "not a step");
    ASSERT_TRUE(store->Commit(b).ok());
  }
  now_ += 10'000'000;
  Open();
  EXPECT_EQ(*sweeper_->SweepNow(), 2);
  EXPECT_EQ(Step("b").state(), pb::STEP_STATE_UNKNOWN);
  EXPECT_EQ(Step("c").state(), pb::STEP_STATE_UNKNOWN);
  EXPECT_EQ(sweeper_->failures(), 1u);
  EXPECT_EQ(sweeper_->overdue(), 1u);
  EXPECT_EQ(*sweeper_->SweepNow(), 0);
  EXPECT_EQ(sweeper_->failures(), 2u);  // tried again at every sweep
  EXPECT_EQ(sweeper_->overdue(), 1u);
  EXPECT_EQ(sweeper_->declared(), 2u);
}

// A checkpoint signed at T never leaves a step due by T undeclared: its
// time note would make an honest run pack read as an overdue pending step.
TEST_F(QueryTest, ACheckpointSignedAfterADeadlineHoldsTheDeclaration) {
  Append({Start("a", "a", 300)});
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  uint64_t before = log_->Checkpoint(0)->size;
  now_ += 300'000 + kGraceMs * 1000;  // due now; the sweeper has not run (interval 0)
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  auto cp = *log_->Checkpoint(0);
  EXPECT_EQ(cp.size, before + 1);
  EXPECT_EQ(cp.signed_at_us, now_.load());
  EXPECT_EQ(Step("a").state(), pb::STEP_STATE_UNKNOWN);
  EXPECT_LT(Step("a").unknown_seq(), cp.size);
  sweeper_.reset();  // no hook any more: the log signs without it
  Append({Start("b", "b", 300)});
  now_ += 300'000 + kGraceMs * 1000;
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  EXPECT_EQ(Step("b").state(), pb::STEP_STATE_PENDING);
}

TEST_F(QueryTest, RestartInTheMiddleOfAPendingStep) {
  Append({Start("a", "a", 5'000)});
  now_ += 2'000'000;
  EXPECT_EQ(*sweeper_->SweepNow(), 0);  // not due yet
  Close();
  Open();
  EXPECT_EQ(Step("a").state(), pb::STEP_STATE_PENDING);  // recovered from the projection
  now_ += 3'000'000 + kGraceMs * 1000;
  EXPECT_EQ(*sweeper_->SweepNow(), 1);
  EXPECT_EQ(Step("a").state(), pb::STEP_STATE_UNKNOWN);
}

TEST_F(QueryTest, ListStepsFiltersPagesAndValidates) {
  for (int i = 0; i < 25; ++i) {
    std::string id = "s" + std::to_string(i);
    std::vector<std::string> batch = {Start(id, id, 60'000, i % 2 ? "run-odd" : "run-even")};
    if (i % 3 == 0) batch.push_back(Exec(id + "-x", id, id, "succeeded", i % 2 ? "run-odd" : "run-even"));
    Append(batch);
  }
  auto list = [&](pb::ListStepsRequest req) {
    std::vector<std::string> ids;
    while (true) {
      pb::ListStepsResponse resp;
      grpc::ClientContext ctx;
      grpc::Status s = steps_->ListSteps(&ctx, req, &resp);
      EXPECT_TRUE(s.ok()) << s.error_message();
      for (const auto& st : resp.steps()) ids.push_back(st.step_id());
      if (resp.next_page_token().empty()) break;
      req.set_page_token(resp.next_page_token());
    }
    return ids;
  };
  pb::ListStepsRequest all;
  all.mutable_filter()->set_team("team-a");
  all.set_page_size(4);
  auto ids = list(all);
  ASSERT_EQ(ids.size(), 25u);
  EXPECT_EQ(ids.front(), "s24");
  EXPECT_EQ(ids.back(), "s0");
  pb::ListStepsRequest done = all;
  done.mutable_filter()->add_states(pb::STEP_STATE_SUCCEEDED);
  EXPECT_EQ(list(done), (std::vector<std::string>{"s24", "s21", "s18", "s15", "s12", "s9", "s6", "s3", "s0"}));
  pb::ListStepsRequest pending = all;
  pending.mutable_filter()->add_states(pb::STEP_STATE_PENDING);
  auto pending_ids = list(pending);
  ASSERT_EQ(pending_ids.size(), 16u);  // 25 started, 9 completed
  EXPECT_EQ(pending_ids.front(), "s23");
  EXPECT_EQ(pending_ids.back(), "s1");
  pb::ListStepsRequest odd = all;
  odd.mutable_filter()->set_run_id("run-odd");
  odd.mutable_filter()->add_states(pb::STEP_STATE_PENDING);
  odd.mutable_filter()->add_states(pb::STEP_STATE_SUCCEEDED);
  EXPECT_EQ(list(odd).size(), 12u);

  auto error = [&](pb::ListStepsRequest req) {
    pb::ListStepsResponse resp;
    grpc::ClientContext ctx;
    return steps_->ListSteps(&ctx, req, &resp);
  };
  pb::ListStepsRequest no_team;
  EXPECT_EQ(error(no_team).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(error(no_team).error_message(), "filter.team: required, 1-63 bytes of [a-z0-9-]");
  pb::ListStepsRequest upper_team = all;
  upper_team.mutable_filter()->set_team("Team-A");  // there, so not "required"
  EXPECT_EQ(error(upper_team).error_message(), "filter.team: 'Team-A' is not 1-63 bytes of [a-z0-9-]");
  pb::ListStepsRequest big = all;
  big.set_page_size(1001);
  EXPECT_EQ(error(big).error_message(), "page_size: must be 0..1000 (0: 100)");
  pb::ListStepsRequest token = all;
  token.set_page_token("garbage");
  EXPECT_EQ(error(token).error_message(), "page_token: not a token of this query");
}

TEST_F(QueryTest, ListStepsByTraceIdKeepsTheFirstReceiptsTraceId) {
  const std::string a(32, 'a'), b(32, 'b');
  auto traced = [](std::string json, const std::string& trace) {
    json.insert(json.size() - 1, R"(,"trace_id":")" + trace + "\"");
    return json;
  };
  Append({traced(Start("s1", "step-1"), a), traced(Start("s2", "step-2"), b), Start("s3", "step-3")});
  Append({traced(Exec("s1-x", "s1", "step-1", "succeeded"), b)});  // a later receipt's trace is not the step's
  EXPECT_EQ(Step("step-1").trace_id(), a);
  EXPECT_EQ(Step("step-3").trace_id(), "");
  auto list = [&](const std::string& trace) {
    pb::ListStepsRequest req;
    req.mutable_filter()->set_team("team-a");
    req.mutable_filter()->set_trace_id(trace);
    pb::ListStepsResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = steps_->ListSteps(&ctx, req, &resp);
    std::vector<std::string> ids;
    if (!s.ok()) return std::vector<std::string>{s.error_message()};
    for (const auto& st : resp.steps()) ids.push_back(st.step_id());
    return ids;
  };
  EXPECT_EQ(list(a), (std::vector<std::string>{"step-1"}));
  EXPECT_EQ(list(b), (std::vector<std::string>{"step-2"}));
  EXPECT_EQ(list(std::string(129, 'c')), (std::vector<std::string>{"filter.trace_id: at most 128 bytes"}));
}

TEST_F(QueryTest, PaginationIsStableUnderConcurrentAppends) {
  for (int i = 0; i < 60; ++i) Append({Start("old" + std::to_string(i), "old" + std::to_string(i))});
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    auto stub = pb::LedgerService::NewStub(channel_);
    for (int i = 0; !stop; ++i) {
      pb::AppendRequest req;
      *req.add_receipts() = *receipt::FromJsonText(Start("new" + std::to_string(i), "new" + std::to_string(i)));
      pb::AppendResponse resp;
      grpc::ClientContext ctx;
      stub->Append(&ctx, req, &resp);
      now_ += 1000;
    }
  });
  std::vector<std::string> seen;
  pb::ListStepsRequest req;
  req.mutable_filter()->set_team("team-a");
  req.set_page_size(7);
  // The first page may hold new steps; every later page continues below it.
  while (true) {
    pb::ListStepsResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(steps_->ListSteps(&ctx, req, &resp).ok());
    for (const auto& s : resp.steps()) seen.push_back(s.step_id());
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
  }
  stop = true;
  writer.join();
  std::set<std::string> unique(seen.begin(), seen.end());
  EXPECT_EQ(unique.size(), seen.size()) << "a step was listed twice";
  for (int i = 0; i < 60; ++i) EXPECT_TRUE(unique.count("old" + std::to_string(i))) << i;
}

TEST_F(QueryTest, WatchResumesWithoutGapOrDuplicateWhileAppendsContinue) {
  std::atomic<int> appended{0};
  std::thread writer([&] {
    auto stub = pb::LedgerService::NewStub(channel_);
    for (int i = 0; i < 150; ++i) {
      pb::AppendRequest req;
      std::string id = "w" + std::to_string(i);
      *req.add_receipts() = *receipt::FromJsonText(Start(id, id));
      *req.add_receipts() = *receipt::FromJsonText(Model(id + "-m", "elsewhere", "allow"));
      *req.add_receipts() = *receipt::FromJsonText(Exec(id + "-x", id, id, "succeeded"));
      pb::AppendResponse resp;
      grpc::ClientContext ctx;
      ASSERT_TRUE(stub->Append(&ctx, req, &resp).ok());
      ++appended;
    }
  });
  std::vector<uint64_t> got;
  int64_t after = -1;
  // Three sessions, each cut off part way; the last reads to the end.
  for (int session = 0; session < 3; ++session) {
    grpc::ClientContext ctx;
    pb::WatchStepsRequest req;
    req.mutable_filter()->set_team("team-a");
    req.set_after_seq(after);
    auto reader = steps_->WatchSteps(&ctx, req);
    pb::StepChange change;
    size_t want = session < 2 ? 60 : 300;  // 150 steps x 2 changes each
    while (got.size() < want && reader->Read(&change)) {
      got.push_back(change.seq());
      after = static_cast<int64_t>(change.seq());
    }
    ctx.TryCancel();
    reader->Finish().IgnoreError();
  }
  writer.join();
  ASSERT_EQ(got.size(), 300u);
  for (size_t i = 1; i < got.size(); ++i) ASSERT_LT(got[i - 1], got[i]) << "out of order or repeated";
  // Exactly the entries that changed a step: every start and exec; the
  // calls (to another step) are not changes.
  std::set<uint64_t> expected;
  const log::LogView view = log_->View();
  ASSERT_TRUE(view.ScanProjection(projection::Table::kChanges, "", "", false,
                                  [&](std::string_view k, std::string_view) {
                                    expected.insert(ReadU64(k));
                                    return true;
                                  })
                  .ok());
  EXPECT_EQ(std::set<uint64_t>(got.begin(), got.end()), expected);
}

TEST_F(QueryTest, GetStepNotFoundAndListRuns) {
  pb::GetStepRequest req;
  req.set_team("team-a");
  req.set_run_id("run-1");
  req.set_step_id("nope");
  pb::Step out;
  grpc::ClientContext ctx;
  grpc::Status s = steps_->GetStep(&ctx, req, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "step: no step 'nope' (attempt 1) in run 'run-1' of team team-a");
  Append({Start("a", "a", 1000, "r1"), Start("b", "b", 1000, "r2"), Start("c", "c", 1000, "r3")});
  Append({Start("d", "d", 1000, "r4", "team-b")});
  pb::ListRunsRequest lr;
  lr.set_team("team-a");
  lr.set_page_size(2);
  std::vector<std::string> runs;
  while (true) {
    pb::ListRunsResponse resp;
    grpc::ClientContext c;
    ASSERT_TRUE(steps_->ListRuns(&c, lr, &resp).ok());
    for (const auto& r : resp.runs()) runs.push_back(r.run_id());
    if (resp.next_page_token().empty()) break;
    lr.set_page_token(resp.next_page_token());
  }
  EXPECT_EQ(runs, (std::vector<std::string>{"r3", "r2", "r1"}));
}

// Every projection record, table by table, of a log's view or a stopped
// ledger's store.
template <typename Projections>
std::map<std::string, std::string> Dump(const Projections& store) {
  std::map<std::string, std::string> out;
  for (int t = 0; t < projection::kTableCount; ++t) {
    auto table = static_cast<projection::Table>(t);
    EXPECT_TRUE(store
                    .ScanProjection(table, "", "", false,
                                    [&](std::string_view k, std::string_view v) {
                                      out[std::string(projection::TableName(table)) + "/" + std::string(k)] =
                                          std::string(v);
                                      return true;
                                    })
                    .ok());
  }
  return out;
}

TEST_F(QueryTest, RebuildIsByteIdenticalToLiveProjections) {
  std::mt19937 rng(42);
  std::vector<std::string> started;
  for (int round = 0; round < 60; ++round) {
    std::vector<std::string> batch;
    for (int k = 0; k < 20; ++k) {
      int n = round * 20 + k;
      std::string id = "r" + std::to_string(n);
      std::string run = "run-" + std::to_string(rng() % 7);
      switch (rng() % 8) {
        case 0:
        case 1:
        case 2:
          batch.push_back(Start(id, "st" + std::to_string(n), 1 + rng() % 3000, run));
          started.push_back(id + "|" + run + "|st" + std::to_string(n));
          break;
        case 3:
          batch.push_back(Deny(id, "dn" + std::to_string(n)));
          break;
        case 4:
        case 5: {
          if (started.empty()) break;
          std::string s = started[rng() % started.size()];
          std::string sid = s.substr(0, s.find('|'));
          std::string srun = s.substr(s.find('|') + 1, s.rfind('|') - s.find('|') - 1);
          std::string step = s.substr(s.rfind('|') + 1);
          const char* st[] = {"succeeded", "failed", "killed", "succeeded"};
          // Sometimes the wrong step, sometimes twice: anomalies too.
          batch.push_back(Exec(id, sid, rng() % 10 == 0 ? "wrong" : step, st[rng() % 4], srun));
          break;
        }
        case 6:
          batch.push_back(Model(id, "st" + std::to_string(rng() % (n + 1)), rng() % 3 ? "allow" : "deny"));
          break;
        default:
          batch.push_back(Exec(id, "ghost" + std::to_string(n), "gh", "error"));
          break;
      }
    }
    if (!batch.empty()) Append(batch);
    if (round % 10 == 9) {
      now_ += 2'000'000;
      ASSERT_TRUE(sweeper_->SweepNow().ok());
    }
  }
  auto live = Dump(log_->View());
  ASSERT_GT(live.size(), 1000u);
  uint64_t size = log_->head().size;
  Close();
  uint64_t progress_seen = 0;
  ASSERT_TRUE(log::RebuildProjections(dir_.Sub("data"), projector_, [&](uint64_t done, uint64_t) {
                progress_seen = done;
              }).ok());
  EXPECT_EQ(progress_seen, size);
  auto store = *store::Store::Open(dir_.Sub("data") + "/db");
  auto rebuilt = Dump(*store);
  EXPECT_EQ(rebuilt.size(), live.size());
  EXPECT_TRUE(rebuilt == live) << "rebuilt projections differ from the live ones";
  store.reset();
  Open();  // and the rebuilt store passes the open check
}

TEST_F(QueryTest, ProjectionsBehindTheLogAreCaughtUpAtOpen) {
  Close();
  testing::TempDir other;
  {
    log::Log::Options o;
    o.data_dir = other.Sub("data");
    o.origin = "ledger.test/query";
    auto plain = *log::Log::Open(o, signer_);  // no projector
    std::promise<void> done;
    receipt::Receipt a = *receipt::FromJsonText(Start("a", "a"));
    ASSERT_TRUE(plain->Append("t", {&a}, [&](std::vector<sequencer::Outcome>) { done.set_value(); }).ok());
    done.get_future().wait();
  }
  log::Log::Options o;
  o.data_dir = other.Sub("data");
  o.origin = "ledger.test/query";
  o.sequencer.projector = &projector_;
  std::map<std::string, std::string> caught_up;
  {
    auto log = log::Log::Open(o, signer_);  // catches up the one entry
    ASSERT_TRUE(log.ok()) << log.status();
    caught_up = Dump((*log)->View());
    ASSERT_TRUE(caught_up.count("p_steps/" + EncodeStepKey({"team-a", "run-1", "a", 1})));
  }
  ASSERT_TRUE(log::RebuildProjections(other.Sub("data"), projector_, nullptr).ok());
  {
    auto store = *store::Store::Open(other.Sub("data") + "/db");
    EXPECT_TRUE(Dump(*store) == caught_up);
  }
  Open();
}

}  // namespace
}  // namespace ledger::query
