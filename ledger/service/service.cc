#include "ledger/service/service.h"

#include <chrono>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace ledger::service {
namespace {

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

std::string AsString(const hash::Hash& h) { return std::string(hash::AsBytes(h)); }

// The identity an entry records as its emitter. Without transport security
// every caller is the local operator.
std::string Caller(grpc::CallbackServerContext*) { return "local"; }

void FillResults(const std::vector<sequencer::Outcome>& outcomes, pb::AppendResponse* out) {
  out->mutable_results()->Reserve(static_cast<int>(outcomes.size()));
  for (const auto& o : outcomes) {
    pb::AppendResult* r = out->add_results();
    if (o.status.ok()) {
      r->set_seq(o.seq);
      r->set_leaf_hash(AsString(o.leaf_hash));
      r->set_duplicate(o.duplicate);
    } else {
      r->set_code(static_cast<int>(o.status.code()));
      r->set_message(std::string(o.status.message()));
    }
  }
}

// Every receipt of a request failed with the same status (stream mode).
void FillAllFailed(int n, const absl::Status& s, pb::AppendResponse* out) {
  for (int i = 0; i < n; ++i) {
    pb::AppendResult* r = out->add_results();
    r->set_code(static_cast<int>(s.code()));
    r->set_message(std::string(s.message()));
  }
}

// Pointers into `request`, which MUST outlive the append.
std::vector<const receipt::Receipt*> ReceiptsOf(const pb::AppendRequest& request) {
  std::vector<const receipt::Receipt*> out;
  out.reserve(request.receipts_size());
  for (const auto& r : request.receipts()) out.push_back(&r);
  return out;
}

grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* ctx, const absl::Status& s) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpc(s));
  return reactor;
}

// Batches in, results out in request order. Up to kMaxInFlight batches are
// being appended at once; beyond that the reactor stops reading, which is
// the stream's back-pressure. The reactor finishes only when no append is
// in flight, so the log's callbacks never outlive it.
class AppendStreamReactor final
    : public grpc::ServerBidiReactor<pb::AppendRequest, pb::AppendResponse> {
 public:
  AppendStreamReactor(log::Log* log, std::string caller) : log_(log), caller_(std::move(caller)) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!ok) {
      reads_done_ = true;
      MaybeFinish();
      return;
    }
    slots_.push_back(std::make_unique<Slot>());
    Slot* slot = slots_.back().get();
    ++in_flight_;
    // The slot owns the request until its response is written.
    slot->request.Swap(&request_);
    int n = slot->request.receipts_size();
    std::vector<const receipt::Receipt*> receipts = ReceiptsOf(slot->request);
    lock.unlock();
    absl::Status s = log_->Append(caller_, std::move(receipts),
                                  [this, slot](std::vector<sequencer::Outcome> out) {
                                    std::lock_guard<std::mutex> l(mu_);
                                    FillResults(out, &slot->response);
                                    Complete(slot);
                                  });
    lock.lock();
    if (!s.ok()) {
      FillAllFailed(n, s, &slot->response);
      Complete(slot);
    }
    if (in_flight_ < kMaxInFlight) {
      StartRead(&request_);
    } else {
      read_paused_ = true;
    }
  }

  void OnWriteDone(bool ok) override {
    std::unique_ptr<Slot> written;  // freed after the lock: it holds a whole batch
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    written = std::move(slots_.front());
    slots_.pop_front();
    if (!ok) broken_ = true;
    if (read_paused_ && in_flight_ < kMaxInFlight && !broken_) {
      read_paused_ = false;
      StartRead(&request_);
    }
    WriteNext();
    MaybeFinish();
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    broken_ = true;
    MaybeFinish();
  }

  void OnDone() override { delete this; }

 private:
  static constexpr int kMaxInFlight = 8;

  struct Slot {
    pb::AppendRequest request;
    pb::AppendResponse response;
    bool ready = false;
  };

  void Complete(Slot* slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    slot->ready = true;
    --in_flight_;
    WriteNext();
    MaybeFinish();
  }

  void WriteNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || broken_ || slots_.empty() || !slots_.front()->ready) return;
    writing_ = true;
    StartWrite(&slots_.front()->response);
  }

  void MaybeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || in_flight_ > 0 || writing_) return;
    if (broken_ || (reads_done_ && slots_.empty())) {
      finished_ = true;
      Finish(grpc::Status::OK);
    }
  }

  log::Log* const log_;
  const std::string caller_;
  std::mutex mu_;
  pb::AppendRequest request_;
  std::deque<std::unique_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool read_paused_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

// Streams entries in chunks read from the store, one write at a time.
class EntriesReactor final : public grpc::ServerWriteReactor<pb::Entry> {
 public:
  EntriesReactor(const log::Log* log, uint64_t from, uint64_t to)
      : log_(log), next_(from), to_(to) {
    Next();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::CANCELLED);
      return;
    }
    Next();
  }

  void OnDone() override { delete this; }

 private:
  static constexpr uint64_t kChunk = 512;

  void Next() {
    if (pos_ == chunk_.size()) {
      if (next_ >= to_) {
        Finish(grpc::Status::OK);
        return;
      }
      chunk_.clear();
      pos_ = 0;
      uint64_t end = std::min(to_, next_ + kChunk);
      absl::Status s = log_->ScanEntries(next_, end, [&](uint64_t seq, std::string_view leaf) {
        pb::Entry e;
        e.set_seq(seq);
        e.set_leaf(std::string(leaf));
        e.set_leaf_hash(AsString(hash::LeafHash(leaf)));
        chunk_.push_back(std::move(e));
        return absl::OkStatus();
      });
      if (!s.ok()) {
        Finish(ToGrpc(s));
        return;
      }
      next_ = end;
    }
    StartWrite(&chunk_[pos_++]);
  }

  const log::Log* const log_;
  uint64_t next_;
  const uint64_t to_;
  std::vector<pb::Entry> chunk_;
  size_t pos_ = 0;
};

}  // namespace

grpc::ServerUnaryReactor* LedgerService::Append(grpc::CallbackServerContext* ctx,
                                                const pb::AppendRequest* request,
                                                pb::AppendResponse* response) {
  auto* reactor = ctx->DefaultReactor();
  // gRPC keeps `request` alive until Finish.
  absl::Status s = log_->Append(Caller(ctx), ReceiptsOf(*request),
                                [reactor, response](std::vector<sequencer::Outcome> out) {
                                  FillResults(out, response);
                                  reactor->Finish(grpc::Status::OK);
                                });
  if (!s.ok()) reactor->Finish(ToGrpc(s));
  return reactor;
}

grpc::ServerBidiReactor<pb::AppendRequest, pb::AppendResponse>* LedgerService::AppendStream(
    grpc::CallbackServerContext* ctx) {
  return new AppendStreamReactor(log_, Caller(ctx));
}

grpc::ServerUnaryReactor* LedgerService::GetCheckpoint(grpc::CallbackServerContext* ctx,
                                                       const pb::GetCheckpointRequest* request,
                                                       pb::Checkpoint* response) {
  auto cp = log_->Checkpoint(request->tree_size());
  if (cp.ok()) {
    response->set_tree_size(cp->size);
    response->set_root_hash(AsString(cp->root));
    response->set_note(cp->note);
  }
  return Finish(ctx, cp.status());
}

grpc::ServerUnaryReactor* LedgerService::GetVerifierKey(grpc::CallbackServerContext* ctx,
                                                        const pb::GetVerifierKeyRequest*,
                                                        pb::VerifierKey* response) {
  response->set_vkey(log_->verifier_key());
  response->set_origin(log_->origin());
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* LedgerService::GetInclusionProof(
    grpc::CallbackServerContext* ctx, const pb::GetInclusionProofRequest* request,
    pb::InclusionProof* response) {
  uint64_t seq = request->seq();
  switch (request->entry_case()) {
    case pb::GetInclusionProofRequest::kSeq:
      break;
    case pb::GetInclusionProofRequest::kReceiptId: {
      auto found = log_->SeqOf(request->receipt_id());
      if (!found.ok()) return Finish(ctx, found.status());
      seq = *found;
      break;
    }
    case pb::GetInclusionProofRequest::ENTRY_NOT_SET:
      return Finish(ctx, absl::InvalidArgumentError("entry: set seq or receipt_id"));
  }
  auto proof = log_->ProveInclusion(seq, request->tree_size());
  if (proof.ok()) {
    response->set_seq(proof->seq);
    response->set_leaf_hash(AsString(proof->leaf_hash));
    response->set_tree_size(proof->tree_size);
    for (const auto& h : proof->path) response->add_hashes(AsString(h));
    response->set_checkpoint(proof->checkpoint);
  }
  return Finish(ctx, proof.status());
}

grpc::ServerUnaryReactor* LedgerService::GetConsistencyProof(
    grpc::CallbackServerContext* ctx, const pb::GetConsistencyProofRequest* request,
    pb::ConsistencyProof* response) {
  uint64_t to = request->to_size();
  auto proof = log_->ProveConsistency(request->from_size(), &to);
  if (proof.ok()) {
    response->set_from_size(request->from_size());
    response->set_to_size(to);
    for (const auto& h : *proof) response->add_hashes(AsString(h));
  }
  return Finish(ctx, proof.status());
}

grpc::ServerUnaryReactor* LedgerService::Backup(grpc::CallbackServerContext* ctx,
                                                const pb::BackupRequest* request,
                                                pb::BackupResponse* response) {
  // Flushing and linking files takes a while: not on gRPC's thread.
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  std::thread([this, reactor, request, response] {
    auto info = log_->Backup(request->dir());
    if (info.ok()) {
      response->set_dir(request->dir());
      response->set_tree_size(info->tree_size);
      response->set_checkpoint(info->checkpoint);
    }
    reactor->Finish(ToGrpc(info.status()));
  }).detach();
  return reactor;
}

grpc::ServerWriteReactor<pb::Entry>* LedgerService::GetEntries(
    grpc::CallbackServerContext* ctx, const pb::GetEntriesRequest* request) {
  uint64_t size = log_->head().size;
  absl::Status bad;
  if (request->from_seq() > request->to_seq()) {
    bad = absl::InvalidArgumentError(absl::StrCat("from_seq: ", request->from_seq(),
                                                  " is larger than to_seq ", request->to_seq()));
  } else if (request->to_seq() > size) {
    bad = absl::OutOfRangeError(
        absl::StrCat("to_seq: ", request->to_seq(), " is beyond the log's size ", size));
  }
  if (!bad.ok()) {
    class Failed final : public grpc::ServerWriteReactor<pb::Entry> {
     public:
      explicit Failed(const absl::Status& s) { Finish(ToGrpc(s)); }
      void OnDone() override { delete this; }
    };
    return new Failed(bad);
  }
  return new EntriesReactor(log_, request->from_seq(), request->to_seq());
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(log::Log* log, const std::string& listen,
                                                      std::vector<grpc::Service*> extra) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("listen: '", listen, "' is not HOST:PORT"));
  }
  std::unique_ptr<Server> server(new Server());
  server->service_ = std::make_unique<LedgerService>(log);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(server->service_.get());
  for (grpc::Service* s : extra) builder.RegisterService(s);
  builder.SetMaxReceiveMessageSize(kMaxRequestBytes);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("listen: cannot listen on ", listen));
  }
  server->server_->GetHealthCheckService()->SetServingStatus(true);
  server->address_ = absl::StrCat(listen.substr(0, colon), ":", server->port_);
  return server;
}

Server::~Server() { Shutdown(); }

void Server::Shutdown() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server_->Wait();
  server_.reset();
}

}  // namespace ledger::service
