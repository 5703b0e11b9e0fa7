// The ledger service end to end: a real server on a loopback port, real gRPC clients, a real
// RocksDB store in a temporary directory.
#include "ledger/rpc/service/service.h"

#include <atomic>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "google/protobuf/dynamic_message.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "health.grpc.pb.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/rpc/server/server.h"
#include "ledger/storage/log/log.h"
#include "ledger_service.grpc.pb.h"
#include "tests/util/temp_dir.h"
#include "util/sync/mutex.h"

namespace ledger {
namespace {

namespace pb = evidence::ledger::v1;

pb::Receipt Receipt(const std::string& id, const std::string& run, int i) {
  pb::Receipt r;
  r.set_receipt_id(id);
  r.set_team("team-" + std::to_string(i % 3));
  r.set_run_id(run);
  r.set_step_id("step-" + std::to_string(i % 7));
  r.set_occurred_at_us(1767225600000000 + i);
  auto* m = r.mutable_model_call();
  m->set_provider("openai");
  m->set_model("demo-openai");
  m->set_route("demo-openai");
  m->set_decision(i % 5 == 0 ? pb::DECISION_DENY : pb::DECISION_ALLOW);
  m->set_input_tokens(i);
  m->set_output_tokens(0);
  m->set_cost_micros(i * 10);
  return r;
}

class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::Log::Options o;
    o.data_dir = dir_.Sub("data");
    o.origin = "ledger.test/e2e";
    o.checkpoint_interval_ms = 50;
    log_ = *log::Log::Open(o, *note::Signer::Generate("ledger.test/e2e"));
    ledger_ = std::make_unique<service::LedgerService>(log_.get(), &gate_);
    server_ = *server::Server::Start(&gate_, "127.0.0.1:0", {ledger_.get()});
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = pb::LedgerService::NewStub(channel_);
  }
  void TearDown() override {
    server_.reset();
    log_.reset();
  }

  pb::AppendResponse Append(const std::vector<pb::Receipt>& rs, grpc::Status* status = nullptr) {
    pb::AppendRequest req;
    for (const auto& r : rs) *req.add_receipts() = r;
    pb::AppendResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = stub_->Append(&ctx, req, &resp);
    if (status != nullptr) {
      *status = s;
    } else {
      EXPECT_TRUE(s.ok()) << s.error_message();
    }
    return resp;
  }

  std::vector<std::string> AllLeaves() {
    grpc::ClientContext ctx;
    pb::GetEntriesRequest req;
    req.set_from_seq(0);
    req.set_to_seq(log_->head().size);
    auto reader = stub_->GetEntries(&ctx, req);
    std::vector<std::string> out;
    pb::Entry e;
    while (reader->Read(&e)) {
      EXPECT_EQ(e.seq(), out.size());
      EXPECT_EQ(e.leaf_hash(), std::string(hash::AsBytes(hash::LeafHash(e.leaf()))));
      out.push_back(e.leaf());
    }
    EXPECT_TRUE(reader->Finish().ok());
    return out;
  }

  testing::TempDir dir_;
  auth::Gate gate_{{}, nullptr};
  std::unique_ptr<log::Log> log_;
  std::unique_ptr<service::LedgerService> ledger_;
  std::unique_ptr<server::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::LedgerService::Stub> stub_;
};

TEST_F(E2eTest, ConcurrentUnaryAndStreamClientsGetDenseUniqueSeqs) {
  constexpr int kUnaryClients = 8, kUnaryEach = 60;
  constexpr int kStreamClients = 4, kBatches = 10, kBatchSize = 50;
  sync::Mutex mu;
  std::map<std::string, uint64_t> seq_of;  // receipt_id -> seq
  std::vector<std::thread> threads;
  for (int c = 0; c < kUnaryClients; ++c) {
    threads.emplace_back([&, c] {
      auto stub = pb::LedgerService::NewStub(channel_);
      for (int i = 0; i < kUnaryEach; ++i) {
        std::string id = "u" + std::to_string(c) + "-" + std::to_string(i);
        pb::AppendRequest req;
        *req.add_receipts() = Receipt(id, "run-u" + std::to_string(c), i);
        pb::AppendResponse resp;
        grpc::ClientContext ctx;
        ASSERT_TRUE(stub->Append(&ctx, req, &resp).ok());
        ASSERT_EQ(resp.results_size(), 1);
        ASSERT_EQ(resp.results(0).code(), 0) << resp.results(0).message();
        sync::MutexLock lock(&mu);
        seq_of[id] = resp.results(0).seq();
      }
    });
  }
  for (int c = 0; c < kStreamClients; ++c) {
    threads.emplace_back([&, c] {
      auto stub = pb::LedgerService::NewStub(channel_);
      grpc::ClientContext ctx;
      auto stream = stub->AppendStream(&ctx);
      std::vector<std::vector<std::string>> sent;
      for (int b = 0; b < kBatches; ++b) {
        pb::AppendRequest req;
        sent.emplace_back();
        for (int i = 0; i < kBatchSize; ++i) {
          std::string id = "s" + std::to_string(c) + "-" + std::to_string(b) + "-" + std::to_string(i);
          *req.add_receipts() = Receipt(id, "run-s" + std::to_string(c), i);
          sent.back().push_back(id);
        }
        ASSERT_TRUE(stream->Write(req));
      }
      stream->WritesDone();
      pb::AppendResponse resp;
      size_t b = 0;
      while (stream->Read(&resp)) {
        ASSERT_LT(b, sent.size());
        ASSERT_EQ(resp.results_size(), kBatchSize);
        for (int i = 0; i < kBatchSize; ++i) {
          ASSERT_EQ(resp.results(i).code(), 0) << resp.results(i).message();
          sync::MutexLock lock(&mu);
          seq_of[sent[b][i]] = resp.results(i).seq();
        }
        ++b;
      }
      EXPECT_EQ(b, sent.size());
      EXPECT_TRUE(stream->Finish().ok());
    });
  }
  for (auto& t : threads) t.join();

  const size_t total = kUnaryClients * kUnaryEach + kStreamClients * kBatches * kBatchSize;
  ASSERT_EQ(seq_of.size(), total);
  std::set<uint64_t> seqs;
  for (const auto& [id, seq] : seq_of) seqs.insert(seq);
  ASSERT_EQ(seqs.size(), total);
  EXPECT_EQ(*seqs.rbegin(), total - 1);

  // Every entry is the receipt we were told, every prev link and run link holds.
  std::vector<std::string> leaves = AllLeaves();
  ASSERT_EQ(leaves.size(), total);
  hash::Hash prev = receipt::kZeroHash;
  std::map<std::string, uint64_t> last_in_run;
  merkle::Frontier tree;
  for (uint64_t seq = 0; seq < leaves.size(); ++seq) {
    auto e = receipt::ParseLeaf(leaves[seq]);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->seq, seq);
    EXPECT_EQ(e->prev, prev) << "seq " << seq;
    EXPECT_EQ(seq_of.at(e->receipt.receipt_id()), seq);
    EXPECT_EQ(e->emitter, "local");
    std::string run = e->receipt.team() + "/" + e->receipt.run_id();
    if (auto it = last_in_run.find(run); it != last_in_run.end()) {
      EXPECT_EQ(e->run_prev, it->second);
    } else {
      EXPECT_FALSE(e->run_prev.has_value());
    }
    last_in_run[run] = seq;
    prev = hash::LeafHash(leaves[seq]);
    tree.Append(prev, [](int, uint64_t, const hash::Hash&) {});
  }

  // The signed checkpoint commits to exactly these leaves.
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  grpc::ClientContext ctx;
  pb::Checkpoint cp;
  ASSERT_TRUE(stub_->GetCheckpoint(&ctx, pb::GetCheckpointRequest(), &cp).ok());
  EXPECT_EQ(cp.tree_size(), total);
  EXPECT_EQ(cp.root_hash(), std::string(hash::AsBytes(tree.Root())));
  auto verifier = *note::Verifier::Parse(log_->verifier_key());
  auto text = verifier.Open(cp.note());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(note::ParseCheckpoint(*text)->root, tree.Root());

  // Inclusion proofs by seq and by receipt id verify against it.
  std::mt19937 rng(7);
  for (int k = 0; k < 20; ++k) {
    uint64_t seq = rng() % total;
    for (bool by_id : {false, true}) {
      pb::GetInclusionProofRequest req;
      if (by_id) {
        auto entry = receipt::ParseLeaf(leaves[seq]);
        req.set_receipt_id(entry->receipt.receipt_id());
        req.set_team(entry->receipt.team());
      } else {
        req.set_seq(seq);
      }
      pb::InclusionProof proof;
      grpc::ClientContext c2;
      ASSERT_TRUE(stub_->GetInclusionProof(&c2, req, &proof).ok());
      EXPECT_EQ(proof.seq(), seq);
      EXPECT_EQ(proof.checkpoint(), cp.note());
      std::vector<hash::Hash> path;
      for (const auto& h : proof.hashes()) path.push_back(*hash::FromBytes(h));
      EXPECT_TRUE(merkle::VerifyInclusion(seq, total, hash::LeafHash(leaves[seq]), path, tree.Root()).ok());
    }
  }
}

TEST_F(E2eTest, RetriesAreIdempotentOverUnaryAndStream) {
  std::vector<pb::Receipt> batch = {Receipt("a", "r", 1), Receipt("b", "r", 2)};
  auto first = Append(batch);
  auto again = Append(batch);
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(first.results(i).duplicate());
    EXPECT_TRUE(again.results(i).duplicate());
    EXPECT_EQ(again.results(i).seq(), first.results(i).seq());
    EXPECT_EQ(again.results(i).leaf_hash(), first.results(i).leaf_hash());
  }
  grpc::ClientContext ctx;
  auto stream = stub_->AppendStream(&ctx);
  pb::AppendRequest req;
  for (const auto& r : batch) *req.add_receipts() = r;
  ASSERT_TRUE(stream->Write(req));
  pb::AppendResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_TRUE(resp.results(0).duplicate());
  EXPECT_EQ(resp.results(1).seq(), first.results(1).seq());
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(log_->head().size, 2u);

  // Same id, other content: ALREADY_EXISTS, nothing written.
  pb::Receipt changed = Receipt("a", "r", 1);
  changed.mutable_model_call()->set_cost_micros(999);
  auto conflict = Append({changed});
  EXPECT_EQ(conflict.results(0).code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(conflict.results(0).message(), "receipt_id: 'a' is already in the log (seq 0) with different content");
  EXPECT_EQ(log_->head().size, 2u);
}

TEST_F(E2eTest, EachInvalidReceiptNamesItsFieldWhileNeighboursAreAppended) {
  std::vector<pb::Receipt> batch;
  for (int i = 0; i < 6; ++i) batch.push_back(Receipt("ok-" + std::to_string(i), "r", i));
  batch[1].set_team("Team_A");
  batch[3].clear_run_id();
  batch[4].mutable_model_call()->set_request_sha256("not-a-digest");
  pb::Receipt start;
  start.set_receipt_id("start-1");
  start.set_team("team-a");
  start.set_run_id("r");
  start.set_step_id("s");
  start.set_occurred_at_us(5);
  start.mutable_agent_start()->set_decision(pb::DECISION_ALLOW);
  batch.push_back(start);  // allowed without timeout_ms
  auto resp = Append(batch);
  ASSERT_EQ(resp.results_size(), 7);
  EXPECT_EQ(resp.results(1).code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(resp.results(1).message(), "team: 'Team_A' is not 1-63 bytes of [a-z0-9-]");
  EXPECT_EQ(resp.results(3).message(), "run_id: required, at most 128 bytes");
  EXPECT_EQ(resp.results(4).message(), "request_sha256: must be a SHA-256 digest: 64 lowercase hex digits");
  EXPECT_EQ(resp.results(6).message(), "timeout_ms: required when decision is allow, 1..86400000");
  std::vector<uint64_t> seqs;
  for (int i : {0, 2, 5}) {
    EXPECT_EQ(resp.results(i).code(), 0);
    seqs.push_back(resp.results(i).seq());
  }
  EXPECT_EQ(seqs, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(log_->head().size, 3u);
}

TEST_F(E2eTest, ReceiptsCarryingCredentialsAreRefusedNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> secrets = {
      {"Authorization: Basic YWxpY2U6czNjcmV0LXBhc3M=", "a Basic authorization value"},
      {"postgres://admin:s3cret@db.internal:5432/ledger", "a URL with a password"},
      {"glpat-xZ7k_9Qw-Lm3Np8RtYv2", "a GitLab token"},
      {"hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "a Hugging Face token"},
      {"-----BEGIN PGP PRIVATE KEY BLOCK-----", "a PGP private key block"},
      {"?sv=2022-11-02&sig=4Xq9t%2BlK0n6yZ2aF3hQ8wE1rT5uI7oP9sD4fG6hJ8k%3D", "an Azure SAS signature"},
      {"BEARER abcdefghijklmnop0123", "a Bearer token"},
  };
  std::vector<pb::Receipt> batch;
  for (size_t i = 0; i < secrets.size(); ++i) {
    batch.push_back(Receipt("secret-" + std::to_string(i), "r", static_cast<int>(i)));
    (*batch.back().mutable_attributes())["auth"] = secrets[i].first;
    batch.push_back(Receipt("clean-" + std::to_string(i), "r", static_cast<int>(i)));
    (*batch.back().mutable_attributes())["auth"] = "Basic auth, see https://wiki.example.com/auth";
  }
  auto resp = Append(batch);
  ASSERT_EQ(resp.results_size(), static_cast<int>(2 * secrets.size()));
  for (size_t i = 0; i < secrets.size(); ++i) {
    const auto& refused = resp.results(static_cast<int>(2 * i));
    EXPECT_EQ(refused.code(), grpc::StatusCode::INVALID_ARGUMENT) << secrets[i].first;
    EXPECT_EQ(refused.message(), "attributes.auth: looks like " + secrets[i].second +
                                     ": an audit log must not hold credentials; record a digest or a "
                                     "credential id instead");
    EXPECT_EQ(resp.results(static_cast<int>(2 * i + 1)).code(), 0);
  }
  EXPECT_EQ(log_->head().size, secrets.size());
}

TEST_F(E2eTest, RequestLevelErrors) {
  std::vector<pb::Receipt> many;
  for (int i = 0; i < 1001; ++i) many.push_back(Receipt("m" + std::to_string(i), "r", i));
  grpc::Status status;
  Append(many, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "receipts: at most 1000 per request, got 1001");

  grpc::ClientContext c1;
  pb::GetEntriesRequest er;
  er.set_from_seq(0);
  er.set_to_seq(5);
  auto reader = stub_->GetEntries(&c1, er);
  pb::Entry e;
  EXPECT_FALSE(reader->Read(&e));
  grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(s.error_message(), "to_seq: 5 is beyond the log's size 0");

  grpc::ClientContext c2;
  pb::GetInclusionProofRequest ir;
  ir.set_receipt_id("missing");
  pb::InclusionProof proof;
  s = stub_->GetInclusionProof(&c2, ir, &proof);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "team: required with receipt_id (receipt ids are unique per team)");

  grpc::ClientContext c2b;
  ir.set_team("team-a");
  s = stub_->GetInclusionProof(&c2b, ir, &proof);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "receipt_id: 'missing' of team 'team-a' is not in the log");

  grpc::ClientContext c3;
  pb::GetConsistencyProofRequest cr;
  cr.set_from_size(3);
  pb::ConsistencyProof cproof;
  s = stub_->GetConsistencyProof(&c3, cr, &cproof);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
}

TEST_F(E2eTest, HealthCheckSaysServing) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext ctx;
  grpc::health::v1::HealthCheckResponse resp;
  ASSERT_TRUE(health->Check(&ctx, grpc::health::v1::HealthCheckRequest(), &resp).ok());
  EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

// Server reflection, spoken through a generic stub with the protocol's
// message types as the reflection library registered them.
TEST_F(E2eTest, ReflectionListsTheServices) {
  const auto* pool = google::protobuf::DescriptorPool::generated_pool();
  const auto* req_type = pool->FindMessageTypeByName("grpc.reflection.v1alpha.ServerReflectionRequest");
  const auto* resp_type = pool->FindMessageTypeByName("grpc.reflection.v1alpha.ServerReflectionResponse");
  ASSERT_NE(req_type, nullptr);
  ASSERT_NE(resp_type, nullptr);
  google::protobuf::DynamicMessageFactory factory;
  std::unique_ptr<google::protobuf::Message> req(factory.GetPrototype(req_type)->New());
  req->GetReflection()->SetString(req.get(), req_type->FindFieldByName("list_services"), "");
  std::string wire = req->SerializeAsString();

  grpc::GenericStub stub(channel_);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  auto call = stub.PrepareCall(&ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  void* tag;
  bool ok;
  auto step = [&](intptr_t want) {
    ASSERT_TRUE(cq.Next(&tag, &ok));
    ASSERT_TRUE(ok);
    ASSERT_EQ(reinterpret_cast<intptr_t>(tag), want);
  };
  call->StartCall(reinterpret_cast<void*>(1));
  step(1);
  grpc::Slice slice(wire);
  grpc::ByteBuffer out(&slice, 1);
  call->Write(out, reinterpret_cast<void*>(2));
  step(2);
  grpc::ByteBuffer in;
  call->Read(&in, reinterpret_cast<void*>(3));
  step(3);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(in.Dump(&slices).ok());
  std::string bytes;
  for (const auto& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  std::unique_ptr<google::protobuf::Message> resp(factory.GetPrototype(resp_type)->New());
  ASSERT_TRUE(resp->ParseFromString(bytes));
  std::string text = resp->DebugString();
  EXPECT_NE(text.find("\"evidence.ledger.v1.LedgerService\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"grpc.health.v1.Health\""), std::string::npos) << text;
  call->WritesDone(reinterpret_cast<void*>(4));
  step(4);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  step(5);
  EXPECT_TRUE(status.ok());
}

TEST_F(E2eTest, VerifierKeyAndCheckpointAgree) {
  Append({Receipt("x", "r", 1)});
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  grpc::ClientContext c1, c2;
  pb::VerifierKey key;
  ASSERT_TRUE(stub_->GetVerifierKey(&c1, pb::GetVerifierKeyRequest(), &key).ok());
  EXPECT_EQ(key.origin(), "ledger.test/e2e");
  pb::Checkpoint cp;
  pb::GetCheckpointRequest req;
  req.set_tree_size(1);
  ASSERT_TRUE(stub_->GetCheckpoint(&c2, req, &cp).ok());
  auto text = note::Verifier::Parse(key.vkey())->Open(cp.note());
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(note::ParseCheckpoint(*text)->size, 1u);
}

}  // namespace
}  // namespace ledger
