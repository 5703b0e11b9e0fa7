// The query service's tests' fixture: a real gRPC server on a loopback
// port with the projector, the query service and a sweeper on an injected
// clock; and the receipts the tests append.
#ifndef QUERY_SERVICE_QUERY_TEST_FIXTURE_H_
#define QUERY_SERVICE_QUERY_TEST_FIXTURE_H_

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/rpc/auth/gate.h"
#include "ledger/rpc/server/server.h"
#include "ledger/rpc/service/service.h"
#include "ledger/storage/log/audit.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/store/testing.h"
#include "ledger_service.grpc.pb.h"
#include "query/projector/projector.h"
#include "query/service/query_service.h"
#include "query/sweeper/sweeper.h"
#include "tests/util/temp_dir.h"

namespace ledger::query::test {

inline constexpr int64_t kT0 = 1767225600000000;
inline constexpr int64_t kGraceMs = 1000;

class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override { Close(); }

  // The options of Open's log: its clock now_, its projector projector_.
  log::Log::Options LogOptions() {
    log::Log::Options o;
    o.data_dir = dir_.Sub("data");
    o.origin = "ledger.test/query";
    o.checkpoint_interval_ms = 60'000;
    o.sequencer.clock = [this] { return now_.load(); };
    o.sequencer.projector = &projector_;
    return o;
  }

  // The audit of the store, the log closed meanwhile and opened again.
  log::AuditReport AuditNow() {
    Close();
    auto store = store::Store::Open(dir_.Sub("data") + "/db");
    EXPECT_TRUE(store.ok()) << store.status();
    auto report = log::Audit(**store, *note::Verifier::Parse(signer_.VerifierKey()));
    EXPECT_TRUE(report.ok()) << report.status();
    store->reset();
    Open();
    return *report;
  }

  void Open() {
    auto log = log::Log::Open(LogOptions(), signer_);
    ASSERT_TRUE(log.ok()) << log.status();
    log_ = *std::move(log);
    query_ = std::make_unique<QueryService>(log_.get(), &gate_, [this] { return now_.load(); });
    ledger_service_ = std::make_unique<service::LedgerService>(log_.get(), &gate_);
    server_ = *server::Server::Start(&gate_, "127.0.0.1:0", {ledger_service_.get(), query_.get()});
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    ledger_ = pb::LedgerService::NewStub(channel_);
    steps_ = pb::QueryService::NewStub(channel_);
    Sweeper::Options so;
    so.grace_ms = kGraceMs;
    so.interval_ms = 0;
    so.clock = [this] { return now_.load(); };
    sweeper_ = std::make_unique<Sweeper>(log_.get(), so);
  }

  void Close() {
    sweeper_.reset();
    server_.reset();
    query_.reset();
    log_.reset();
  }

  // Appends JSON receipts; every one must be appended.
  std::vector<uint64_t> Append(const std::vector<std::string>& json) {
    pb::AppendRequest req;
    for (const auto& j : json) {
      auto r = receipt::FromJsonText(j);
      EXPECT_TRUE(r.ok()) << r.status() << j;
      *req.add_receipts() = *r;
    }
    pb::AppendResponse resp;
    grpc::ClientContext ctx;
    EXPECT_TRUE(ledger_->Append(&ctx, req, &resp).ok());
    std::vector<uint64_t> seqs;
    for (const auto& r : resp.results()) {
      EXPECT_EQ(r.code(), 0) << r.message();
      seqs.push_back(r.seq());
    }
    now_ += 1000;
    return seqs;
  }

  // The bytes GetEntries answers for `seq`.
  std::string Stored(uint64_t seq) {
    grpc::ClientContext ctx;
    pb::GetEntriesRequest er;
    er.set_from_seq(seq);
    er.set_to_seq(seq + 1);
    auto reader = ledger_->GetEntries(&ctx, er);
    pb::Entry e;
    EXPECT_TRUE(reader->Read(&e));
    EXPECT_TRUE(reader->Finish().ok());
    return e.leaf();
  }

  pb::Step Step(const std::string& step, int64_t attempt = 1, const std::string& team = "team-a",
                const std::string& run = "run-1") {
    pb::GetStepRequest req;
    req.set_team(team);
    req.set_run_id(run);
    req.set_step_id(step);
    req.set_attempt(attempt);
    pb::Step out;
    grpc::ClientContext ctx;
    grpc::Status s = steps_->GetStep(&ctx, req, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return out;
  }

  std::vector<pb::Anomaly> Anomalies(const pb::Step& s) {
    std::vector<pb::Anomaly> out;
    for (int a : s.anomalies()) out.push_back(static_cast<pb::Anomaly>(a));
    return out;
  }

  testing::TempDir dir_;
  std::atomic<int64_t> now_{kT0};
  StepProjector projector_;
  note::Signer signer_ = *note::Signer::Generate("ledger.test/query");
  std::unique_ptr<log::Log> log_;
  auth::Gate gate_{{}, nullptr};
  std::unique_ptr<QueryService> query_;
  std::unique_ptr<service::LedgerService> ledger_service_;
  std::unique_ptr<server::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::LedgerService::Stub> ledger_;
  std::unique_ptr<pb::QueryService::Stub> steps_;
  std::unique_ptr<Sweeper> sweeper_;
};

// The files of `dir` whose bytes hold `needle`.
inline std::vector<std::string> FilesHolding(const std::string& dir, std::string_view needle) {
  std::vector<std::string> out;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) {
    if (!f.is_regular_file()) continue;
    std::ifstream in(f.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.find(needle) != std::string::npos) out.push_back(f.path().string());
  }
  return out;
}

inline std::string Start(const std::string& id, const std::string& step, int timeout_ms = 60'000,
                         const std::string& run = "run-1", const std::string& team = "team-a") {
  return R"({"receipt_id":")" + id + R"(","kind":"agent_start","team":")" + team + R"(","run_id":")" + run +
         R"(","step_id":")" + step + R"(","occurred_at_us":1,"decision":"allow","timeout_ms":)" +
         std::to_string(timeout_ms) + R"(,"cost_reserved_micros":1000})";
}

inline std::string Deny(const std::string& id, const std::string& step) {
  return R"({"receipt_id":")" + id + R"(","kind":"agent_start","team":"team-a","run_id":"run-1","step_id":")" + step +
         R"(","occurred_at_us":1,"decision":"deny","reason":"image not allowed"})";
}

inline std::string Exec(const std::string& id, const std::string& start, const std::string& step,
                        const std::string& status, const std::string& run = "run-1",
                        const std::string& team = "team-a") {
  return R"({"receipt_id":")" + id + R"(","kind":"agent_exec","team":")" + team + R"(","run_id":")" + run +
         R"(","step_id":")" + step + R"(","occurred_at_us":2,"start_receipt_id":")" + start + R"(","status":")" +
         status + R"(","exit_code":0,"cost_micros":250})";
}

inline std::string Model(const std::string& id, const std::string& step, const std::string& decision) {
  return R"({"receipt_id":")" + id + R"(","kind":"model_call","team":"team-a","run_id":"run-1","step_id":")" + step +
         R"(","occurred_at_us":3,"route":"openai/gpt","decision":")" + decision +
         R"(","input_tokens":100,"output_tokens":20,"cost_micros":40})";
}

}  // namespace ledger::query::test

#endif  // QUERY_SERVICE_QUERY_TEST_FIXTURE_H_
