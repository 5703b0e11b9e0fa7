// The ExportService behind a real server on a loopback port: packs streamed
// to a real gRPC client verify offline; a scope that is not one is refused
// naming the field; the cosign hook fills the pack's checkpoint, and its
// refusal leaves no pack.
#include "export/service/export_service.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>

#include "export/verify/cc/verify.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/rpc/server/server.h"
#include "ledger/storage/log/log.h"
#include "tests/util/temp_dir.h"

namespace ledger::exporter {
namespace {

namespace pb = evidence::ledger::v1;

class ExportServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::Log::Options o;
    o.data_dir = dir_.Sub("data");
    o.origin = "ledger.test/export-service";
    log_ = *log::Log::Open(o, *note::Signer::Generate(o.origin));
    auto r = *receipt::FromJsonText(
        R"({"receipt_id":"a","kind":"tool_call","team":"team-a","run_id":"run-1","occurred_at_us":5,"tool":"git","decision":"allow"})");
    std::vector<const receipt::Receipt*> batch{&r};
    std::promise<void> done;
    ASSERT_TRUE(log_->Append("gateway", batch, [&](std::vector<sequencer::Outcome>) { done.set_value(); }).ok());
    done.get_future().wait();
    ASSERT_TRUE(log_->SignCheckpoint().ok());
    exports_ = std::make_unique<ExportService>(log_.get(), &gate_, nullptr);
  }
  void Serve() {
    server_ = *server::Server::Start(&gate_, "127.0.0.1:0", {exports_.get()});
    stub_ = pb::ExportService::NewStub(grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    server_.reset();
    log_.reset();
  }
  // The pack of run-1 written to `path`, or the call's status.
  grpc::Status Export(const pb::ExportRequest& request, const std::string& path) {
    grpc::ClientContext ctx;
    auto reader = stub_->Export(&ctx, request);
    std::ofstream out(path, std::ios::binary);
    pb::ExportChunk chunk;
    size_t bytes = 0;
    while (reader->Read(&chunk)) {
      out << chunk.data();
      bytes += chunk.data().size();
    }
    grpc::Status s = reader->Finish();
    if (s.ok()) {
      EXPECT_GT(bytes, 0u);
    }
    return s;
  }
  static pb::ExportRequest Run(const std::string& team, const std::string& run) {
    pb::ExportRequest request;
    request.mutable_run()->set_team(team);
    request.mutable_run()->set_run_id(run);
    return request;
  }

  testing::TempDir dir_;
  auth::Gate gate_{{}, nullptr};
  std::unique_ptr<log::Log> log_;
  std::unique_ptr<ExportService> exports_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<pb::ExportService::Stub> stub_;
};

TEST_F(ExportServiceTest, AStreamedPackVerifiesAndABadScopeIsRefusedNamingTheField) {
  Serve();
  std::string path = dir_.Sub("run.tar.gz");
  ASSERT_TRUE(Export(Run("team-a", "run-1"), path).ok());
  verify::Options with_key;
  with_key.vkey = log_->verifier_key();
  auto r = verify::VerifyPack(path, with_key);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok) << r->message;
  EXPECT_EQ(r->entries, 1u);
  grpc::Status no_run = Export(Run("team-a", ""), dir_.Sub("x.tar.gz"));
  EXPECT_EQ(no_run.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(no_run.error_message(), "run: team and run_id are required");
  grpc::Status no_scope = Export(pb::ExportRequest(), dir_.Sub("y.tar.gz"));
  EXPECT_EQ(no_scope.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  std::map<std::vector<std::string>, uint64_t> counted;
  for (const auto& [labels, n] : exports_->exports().Read()) counted[labels] = n;
  EXPECT_EQ(counted[(std::vector<std::string>{"run", "ok"})], 1u);
  EXPECT_EQ(counted[(std::vector<std::string>{"run", "invalid_argument"})], 1u);
}

// Issue 38: a mistyped run id wrote a pack that verified "OK: 0 entries".
// A scope with no entry is NOT_FOUND, nothing sent, unless allow_empty.
TEST_F(ExportServiceTest, AScopeWithNoEntryIsRefusedUnlessAllowEmpty) {
  Serve();
  grpc::Status run = Export(Run("team-a", "run-2"), dir_.Sub("run-2.tar.gz"));
  EXPECT_EQ(run.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(run.error_message(), "run team-a/run-2 has no entry up to tree size 1");
  pb::ExportRequest window;
  window.mutable_team()->set_team("team-a");
  window.mutable_team()->set_from_us(1767225600000000);
  window.mutable_team()->set_to_us(1767225601000000);
  grpc::Status empty = Export(window, dir_.Sub("window.tar.gz"));
  EXPECT_EQ(empty.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(empty.error_message(),
            "team team-a has no entry logged in [2026-01-01T00:00:00Z, 2026-01-01T00:00:01Z) up to tree size 1");

  pb::ExportRequest allowed = Run("team-a", "run-2");
  allowed.set_allow_empty(true);
  std::string path = dir_.Sub("allowed.tar.gz");
  ASSERT_TRUE(Export(allowed, path).ok());
  verify::Options with_key;
  with_key.vkey = log_->verifier_key();
  auto r = verify::VerifyPack(path, with_key);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok) << r->message;
  EXPECT_EQ(r->entries, 0u);
  std::map<std::vector<std::string>, uint64_t> counted;
  for (const auto& [labels, n] : exports_->exports().Read()) counted[labels] = n;
  EXPECT_EQ(counted[(std::vector<std::string>{"run", "not_found"})], 1u);
  EXPECT_EQ(counted[(std::vector<std::string>{"team", "not_found"})], 1u);
}

TEST_F(ExportServiceTest, TheCosignHookFillsTheCheckpointAndItsRefusalLeavesNoPack) {
  std::atomic<bool> refuse{false};  // read on gRPC's threads
  auto witness = *cosign::Cosigner::FromSeed("w.example/w", std::string(32, '\x07'));
  exports_->SetCosign([&](const std::string& note) -> absl::StatusOr<std::string> {
    if (refuse) return absl::UnavailableError("the checkpoint of size 1 lacks the witness quorum W");
    // A witness cosigns after the ledger signed (a verifier refuses a cosignature before the signed time).
    uint64_t now_s = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    return note + *witness.Cosign(note.substr(0, note.find("\n\n") + 1), now_s + 1);
  });
  Serve();
  std::string path = dir_.Sub("cosigned.tar.gz");
  ASSERT_TRUE(Export(Run("team-a", "run-1"), path).ok());
  verify::Options with_key;
  with_key.vkey = log_->verifier_key();
  auto r = verify::VerifyPack(path, with_key);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok) << r->message;  // a cosignature is ignored without a policy
  verify::Options under_policy = with_key;
  under_policy.policy = *tlogpolicy::Policy::Parse("log " + log_->verifier_key() + "\nwitness W " +
                                                   witness.VerifierKey() + "\nquorum W\n");
  auto under = verify::VerifyPack(path, under_policy);
  ASSERT_TRUE(under.ok()) << under.status();
  EXPECT_TRUE(under->ok) << under->message;
  refuse = true;
  grpc::Status s = Export(Run("team-a", "run-1"), dir_.Sub("refused.tar.gz"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(s.error_message(), "export: the checkpoint of size 1 lacks the witness quorum W");
  std::error_code ec;
  size_t staged = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec)) {
    // This process's packs (kPackPrefix<pid>-...): other tests may be exporting.
    staged += e.path().filename().string().starts_with(kPackPrefix + std::to_string(::getpid()) + "-") ? 1 : 0;
  }
  EXPECT_EQ(staged, 0u);
}

}  // namespace
}  // namespace ledger::exporter
