// Erasure (CONTRACT section 8) through the log and the query service: the
// body goes from the store's files, the step's view says what is known,
// the projections rebuilt from the log say the same, a stop midway is
// finished by the next start, and the refusals change nothing.
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>

#include "gtest/gtest.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/redaction.h"
#include "ledger/storage/log/audit.h"
#include "ledger/storage/store/testing.h"
#include "query/service/query_test_fixture.h"
#include "tests/util/status_matchers.h"

namespace ledger::query {
namespace {

using namespace ::ledger::query::test;  // NOLINT: the fixture and its receipts
using ::ledger::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kMarker[] = "ERASE-ME-4242";

std::string DenyWith(const std::string& id, const std::string& step, const std::string& reason) {
  return R"({"receipt_id":")" + id + R"(","kind":"agent_start","team":"team-a","run_id":"run-1","step_id":")" + step +
         R"(","occurred_at_us":1,"decision":"deny","reason":")" + reason + R"("})";
}

std::string Tool(const std::string& id, const std::string& step, const std::string& target) {
  return R"({"receipt_id":")" + id + R"(","kind":"tool_call","team":"team-a","run_id":"run-1","step_id":")" + step +
         R"(","occurred_at_us":3,"tool":"crm","target":")" + target + R"(","decision":"allow","cost_micros":7})";
}

class ErasureTest : public QueryTest {
 protected:
  log::Log::Erasure Of(uint64_t seq, const std::string& reason = "GDPR art. 17 request 881") {
    return {.seq = seq, .reason = reason, .requested_by = "cn:alice-admin", .approved_by = "cn:bob-admin"};
  }
};

TEST_F(ErasureTest, ADeniedStartsBodyLeavesTheStoreAndItsStepIsUnknownRedacted) {
  auto seqs = Append({DenyWith("d1", "deploy", std::string("customer ") + kMarker), Start("s1", "build"),
                      Tool("t1", "build", std::string("https://crm.example/") + kMarker),
                      Exec("x1", "s1", "build", "succeeded")});
  ASSERT_EQ(Step("deploy").state(), pb::STEP_STATE_DENIED);
  ASSERT_EQ(Step("build").calls().tool_calls_allowed(), 1);
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  const std::string data = dir_.Sub("data");
  // The marker is on disk before (the WAL or a table file).
  ASSERT_FALSE(FilesHolding(data, kMarker).empty());
  const hash::Hash root = log_->Checkpoint(0)->root;
  const auto proof = log_->ProveInclusion(seqs[0], 0);
  ASSERT_TRUE(proof.ok());

  auto erased = log_->Erase(Of(seqs[0]));
  ASSERT_TRUE(erased.ok()) << erased.status();
  EXPECT_EQ(erased->seq, seqs[0]);
  auto tool = log_->Erase(Of(seqs[2], "court order 2026-117"));
  ASSERT_TRUE(tool.ok()) << tool.status();

  // The step: unknown, redacted, nothing of the erased start left.
  pb::Step deploy = Step("deploy");
  EXPECT_EQ(deploy.state(), pb::STEP_STATE_UNKNOWN);
  EXPECT_EQ(Anomalies(deploy), std::vector<pb::Anomaly>{pb::ANOMALY_REDACTED});
  EXPECT_EQ(deploy.reason(), "");
  EXPECT_EQ(deploy.decision(), pb::DECISION_UNSPECIFIED);
  EXPECT_TRUE(deploy.has_start());
  // The erased call is not counted; the step it belonged to is as it was.
  pb::Step build = Step("build");
  EXPECT_EQ(build.state(), pb::STEP_STATE_SUCCEEDED);
  EXPECT_EQ(build.calls().tool_calls_allowed(), 0);
  EXPECT_TRUE(Anomalies(build).empty());

  // The redacted lines stand where the leaves stood; the proofs are the same.
  const std::string stored = Stored(seqs[0]);
  auto line = receipt::ParseRedacted(stored);
  ASSERT_TRUE(line.ok()) << stored;
  EXPECT_EQ(line->by, erased->by);
  EXPECT_EQ(line->leaf_hash, proof->leaf_hash);
  auto after = log_->ProveInclusion(seqs[0], proof->tree_size);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->path, proof->path);
  EXPECT_EQ(after->leaf_hash, proof->leaf_hash);
  EXPECT_EQ(log_->Checkpoint(proof->tree_size)->root, root);

  // No file of the data directory holds the erased bytes.
  EXPECT_EQ(FilesHolding(data, kMarker), std::vector<std::string>{});
  // The audit finds the store whole.
  log::AuditReport report = AuditNow();
  EXPECT_TRUE(report.ok) << report.Summary();
}

TEST_F(ErasureTest, ARebuildOfTheProjectionsSaysWhatTheLiveOnesSay) {
  auto seqs = Append({Start("s1", "build"), Tool("t1", "build", "x"), Exec("x1", "s1", "build", "succeeded"),
                      Start("s2", "test"), Exec("x2", "s2", "test", "failed")});
  ASSERT_TRUE(log_->Erase(Of(seqs[2])).ok());  // a completion
  ASSERT_TRUE(log_->Erase(Of(seqs[3])).ok());  // a start whose completion stays
  pb::Step build = Step("build"), test = Step("test");
  EXPECT_EQ(build.state(), pb::STEP_STATE_UNKNOWN);
  EXPECT_EQ(build.exec_status(), pb::EXEC_STATUS_UNSPECIFIED);
  EXPECT_EQ(build.exec_cost_micros(), 0);
  EXPECT_EQ(build.calls().tool_calls_allowed(), 1);
  EXPECT_EQ(test.state(), pb::STEP_STATE_UNKNOWN);
  EXPECT_EQ(Anomalies(test), std::vector<pb::Anomaly>{pb::ANOMALY_REDACTED});
  pb::GetRunRequest rr;
  rr.set_team("team-a");
  rr.set_run_id("run-1");
  pb::Run live_run;
  {
    grpc::ClientContext c;
    ASSERT_TRUE(steps_->GetRun(&c, rr, &live_run).ok());
  }
  EXPECT_EQ(live_run.steps_unknown(), 2);
  EXPECT_EQ(live_run.steps_succeeded(), 0);
  Close();
  ASSERT_TRUE(log::RebuildProjections(dir_.Sub("data"), projector_, nullptr).ok());
  Open();
  EXPECT_EQ(Step("build").SerializeAsString(), build.SerializeAsString());
  EXPECT_EQ(Step("test").SerializeAsString(), test.SerializeAsString());
  pb::Run rebuilt;
  grpc::ClientContext c;
  ASSERT_TRUE(steps_->GetRun(&c, rr, &rebuilt).ok());
  EXPECT_EQ(rebuilt.SerializeAsString(), live_run.SerializeAsString());
}

TEST_F(ErasureTest, RefusalsChangeNothing) {
  auto seqs = Append({Start("s1", "build", 500)});
  now_ += (500 + kGraceMs) * 1000;
  ASSERT_EQ(*sweeper_->SweepNow(), 1);
  const uint64_t unknown = Step("build").unknown_seq();
  const uint64_t size = log_->head().size;
  EXPECT_THAT(log_->Erase(Of(unknown)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "erase: entry " + std::to_string(unknown) +
                           " is the ledger's own (step_unknown): entries the ledger wrote are never erased"));
  EXPECT_THAT(log_->Erase(Of(size)),
              StatusIs(absl::StatusCode::kOutOfRange, "erase: seq " + std::to_string(size) + " is not in the log of " +
                                                          std::to_string(size) + " entries"));
  EXPECT_THAT(log_->Erase(Of(seqs[0], "")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reason: required, why the entry is erased")));
  EXPECT_THAT(log_->Erase(Of(seqs[0], "bell \a")),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("reason: ")));
  log::Log::Erasure alone = Of(seqs[0]);
  alone.approved_by = alone.requested_by;
  EXPECT_EQ(log_->Erase(alone).status().message(),
            "erase: the second approver must be another admin than cn:alice-admin, who asked");
  EXPECT_EQ(log_->head().size, size);
  auto erased = log_->Erase(Of(seqs[0]));
  ASSERT_TRUE(erased.ok()) << erased.status();
  EXPECT_THAT(log_->Erase(Of(erased->by)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("is the ledger's own (redaction)")));
  auto again = log_->Erase(Of(seqs[0]));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(again.status().message(),
            "erase: entry " + std::to_string(seqs[0]) + " was erased by redaction entry " + std::to_string(erased->by));
  // The service: in plain text every caller is `local`, so the approval
  // of the one who asked is refused.
  pb::EraseRequest request;
  request.set_seq(seqs[0]);
  request.set_reason("why");
  pb::EraseResponse asked, second;
  grpc::ClientContext c1, c2;
  ASSERT_TRUE(ledger_->Erase(&c1, request, &asked).ok());
  EXPECT_TRUE(asked.pending());
  grpc::Status s = ledger_->Erase(&c2, request, &second);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "erase: the second approver must be another admin than local, who asked");
}

// A stop after the redaction entry was committed and before the body went:
// the next start finishes it, and the audit before that says so.
TEST_F(ErasureTest, AStopMidwayIsFinishedByTheNextStart) {
  auto seqs = Append({Start("s1", "build"), Tool("t1", "build", kMarker)});
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  const std::string leaf = Stored(seqs[1]);
  auto entry = receipt::ParseLeaf(leaf);
  ASSERT_TRUE(entry.ok());
  receipt::Receipt redaction =
      receipt::Redaction(*entry, hash::LeafHash(leaf), "GDPR", "cn:alice-admin", "cn:bob-admin", now_.load());
  std::promise<std::vector<sequencer::Outcome>> done;
  ASSERT_TRUE(log_->AppendAsLedger({&redaction}, [&](auto o) { done.set_value(std::move(o)); }).ok());
  auto outcome = done.get_future().get();
  ASSERT_TRUE(outcome[0].status.ok()) << outcome[0].status;
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  // Stopped here: the store is not clean.
  sweeper_.reset();
  server_.reset();
  query_.reset();
  ledger_service_.reset();
  {
    // Read the store as it was left, without opening the log (which would finish the erasure).
    log_.reset();
    auto store = store::Store::Open(dir_.Sub("data") + "/db");
    ASSERT_TRUE(store.ok());
    auto report = log::Audit(**store, *note::Verifier::Parse(signer_.VerifierKey()));
    ASSERT_TRUE(report.ok());
    EXPECT_FALSE(report->ok);
    EXPECT_EQ(report->check, "redaction");
    EXPECT_EQ(report->found, "its body (the erasure did not finish)");
  }
  Open();
  EXPECT_EQ(Step("build").calls().tool_calls_allowed(), 0);
  EXPECT_EQ(FilesHolding(dir_.Sub("data"), kMarker), std::vector<std::string>{});
  EXPECT_TRUE(AuditNow().ok);
}

}  // namespace
}  // namespace ledger::query
