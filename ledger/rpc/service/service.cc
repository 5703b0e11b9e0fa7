#include "ledger/rpc/service/service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/runmap/proof_json.h"
#include "ledger/rpc/server/status.h"
#include "ledger/rpc/server/timers.h"
#include "ledger/rpc/service/internal/append.h"
#include "util/sync/mutex.h"

namespace ledger::service {

using server::IdleStreams;
using server::Later;
using server::ToGrpc;

namespace {

using auth::Action;

std::string AsString(const hash::Hash& h) { return std::string(hash::AsBytes(h)); }

std::string KindName(const receipt::Receipt& r) {
  switch (r.body_case()) {
    case receipt::Receipt::kAgentStart:
      return "agent_start";
    case receipt::Receipt::kAgentExec:
      return "agent_exec";
    case receipt::Receipt::kModelCall:
      return "model_call";
    case receipt::Receipt::kToolCall:
      return "tool_call";
    case receipt::Receipt::kStepUnknown:
      return "step_unknown";
    case receipt::Receipt::kLeaderEpoch:
      return "leader_epoch";
    case receipt::Receipt::kKeyRotation:
      return "key_rotation";
    default:
      return "none";
  }
}

bool Denied(const receipt::Receipt& r) {
  return (r.has_agent_start() && r.agent_start().decision() == pb::DECISION_DENY) ||
         (r.has_model_call() && r.model_call().decision() == pb::DECISION_DENY) ||
         (r.has_tool_call() && r.tool_call().decision() == pb::DECISION_DENY);
}

grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* ctx, const absl::Status& s) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpc(s));
  return reactor;
}

// A refusal answered after `hold_us` (0: at once).
grpc::ServerUnaryReactor* FinishLater(grpc::CallbackServerContext* ctx, const absl::Status& s, int64_t hold_us,
                                      Later* later) {
  if (hold_us <= 0) return Finish(ctx, s);
  auto* reactor = ctx->DefaultReactor();
  later->Run(hold_us, [reactor, s] { reactor->Finish(ToGrpc(s)); });
  return reactor;
}

// Streams entries in chunks read from the store, one write at a time. A
// caller that may not read every team's entries gets those of its teams
// and, at the first entry of another team, PERMISSION_DENIED naming its seq.
// Each chunk is read under the policy in force then: a caller the policy
// dropped meanwhile gets PERMISSION_DENIED instead of the next chunk.
class EntriesReactor final : public grpc::ServerWriteReactor<pb::Entry> {
 public:
  // Entries of `ranges` ([from, to) each, ascending, not overlapping).
  EntriesReactor(const log::Log* log, const auth::Gate* gate, auth::Caller caller,
                 std::vector<std::pair<uint64_t, uint64_t>> ranges)
      : log_(log), gate_(gate), caller_(std::move(caller)), ranges_(std::move(ranges)) {
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
      while (range_ < ranges_.size() && next_ >= ranges_[range_].second) {
        if (++range_ < ranges_.size()) next_ = ranges_[range_].first;
      }
      if (!denied_.ok() || range_ == ranges_.size()) {
        Finish(ToGrpc(denied_));
        return;
      }
      chunk_.clear();
      pos_ = 0;
      gate_->Refresh(&caller_);
      if (absl::Status s = caller_.CheckRole(Action::kReadEntries); !s.ok()) {
        Finish(ToGrpc(s));
        return;
      }
      all_ = caller_.CoversAllTeams(Action::kReadEntries);
      uint64_t end = std::min(ranges_[range_].second, next_ + kChunk);
      absl::Status s = log_->ScanEntries(next_, end, [&](uint64_t seq, std::string_view leaf) {
        if (!all_) {
          auto team = receipt::TeamOf(leaf);
          if (!team.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", team.status().message()));
          absl::Status allowed = caller_.CheckEntry(Action::kReadEntries, *team, seq);
          if (!allowed.ok()) {
            denied_ = allowed;
            return denied_;
          }
        }
        pb::Entry e;
        e.set_seq(seq);
        e.set_leaf(std::string(leaf));
        e.set_leaf_hash(AsString(hash::LeafHash(leaf)));
        chunk_.push_back(std::move(e));
        return absl::OkStatus();
      });
      if (!s.ok() && !denied_.ok()) {
        if (chunk_.empty()) {
          Finish(ToGrpc(denied_));
          return;
        }
      } else if (!s.ok()) {
        Finish(ToGrpc(s));
        return;
      }
      next_ = end;
    }
    StartWrite(&chunk_[pos_++]);
  }

  const log::Log* const log_;
  const auth::Gate* const gate_;
  auth::Caller caller_;
  bool all_ = false;
  absl::Status denied_;
  const std::vector<std::pair<uint64_t, uint64_t>> ranges_;
  size_t range_ = 0;
  uint64_t next_ = ranges_.empty() ? 0 : ranges_.front().first;
  std::vector<pb::Entry> chunk_;
  size_t pos_ = 0;
};

// The runs of consecutive entries of a request's `seqs`, checked.
absl::StatusOr<std::vector<std::pair<uint64_t, uint64_t>>> RangesOf(const pb::GetEntriesRequest& request,
                                                                    uint64_t size) {
  constexpr int kMaxSeqs = 1000;
  if (request.seqs_size() > kMaxSeqs) {
    return absl::InvalidArgumentError(absl::StrCat("seqs: at most ", kMaxSeqs, ", got ", request.seqs_size()));
  }
  if (request.from_seq() != 0 || request.to_seq() != 0) {
    return absl::InvalidArgumentError("from_seq, to_seq: must be 0 when seqs are given");
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (int i = 0; i < request.seqs_size(); ++i) {
    uint64_t seq = request.seqs(i);
    if (!ranges.empty() && seq < ranges.back().second) {
      return absl::InvalidArgumentError(
          absl::StrCat("seqs[", i, "]: ", seq, " is not above seqs[", i - 1, "] (ascending, without repeats)"));
    }
    if (seq >= size) {
      return absl::OutOfRangeError(absl::StrCat("seqs[", i, "]: ", seq, " is beyond the log's size ", size));
    }
    if (!ranges.empty() && seq == ranges.back().second) {
      ++ranges.back().second;
    } else {
      ranges.emplace_back(seq, seq + 1);
    }
  }
  return ranges;
}

}  // namespace

LedgerService::LedgerService(log::Log* log, auth::Gate* gate, int64_t stream_idle_ms,
                             const backup::BackupRoot* backup_root)
    : log_(log),
      gate_(gate),
      backup_root_(backup_root),
      idle_(std::make_unique<IdleStreams>(stream_idle_ms)),
      later_(std::make_unique<Later>()) {}

LedgerService::~LedgerService() = default;

void LedgerService::Count(const pb::AppendRequest& request, const pb::AppendResponse& response) {
  stats_.request_receipts.Observe(request.receipts_size());
  std::map<std::pair<std::string, std::string>, uint64_t> tally;
  for (int i = 0; i < request.receipts_size() && i < response.results_size(); ++i) {
    const pb::AppendResult& r = response.results(i);
    std::string result = r.code() != 0
                             ? absl::AsciiStrToLower(absl::StatusCodeToString(static_cast<absl::StatusCode>(r.code())))
                             : (r.duplicate() ? "duplicate" : "ok");
    ++tally[{KindName(request.receipts(i)), result}];
    if (result == "ok" && Denied(request.receipts(i))) {
      stats_.denied.With({request.receipts(i).team(), KindName(request.receipts(i))})->Add();
    }
  }
  for (const auto& [labels, n] : tally) stats_.appends.With({labels.first, labels.second})->Add(n);
}

void LedgerService::Count(const pb::AppendRequest& request, const absl::Status& refused) {
  pb::AppendResponse all;
  FillAllFailed(request.receipts_size(), refused, &all);
  Count(request, all);
}

grpc::ServerUnaryReactor* LedgerService::Append(grpc::CallbackServerContext* ctx, const pb::AppendRequest* request,
                                                pb::AppendResponse* response) {
  int64_t hold_us = 0;
  auto caller = gate_->Admit(*ctx, std::max(1, request->receipts_size()), &hold_us);
  if (!caller.ok()) {
    Count(*request, caller.status());
    return FinishLater(ctx, caller.status(), hold_us, later_.get());
  }
  if (auto s = caller->CheckRole(Action::kAppend); !s.ok()) {
    Count(*request, s);
    return Finish(ctx, s);
  }
  auto* reactor = ctx->DefaultReactor();
  // gRPC keeps `request` alive until Finish; the caller's permit is held
  // until then too.
  auto screened = std::make_shared<Screened>(Screen(*caller, *request));
  if (screened->allowed.empty()) {
    FillResults(*screened, {}, response);
    Count(*request, *response);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  auto held = std::make_shared<auth::Caller>(*std::move(caller));
  absl::Status s =
      log_->Append(held->identity, screened->allowed,
                   [this, reactor, request, response, screened, held](const std::vector<sequencer::Outcome>& out) {
                     FillResults(*screened, out, response);
                     Count(*request, *response);
                     reactor->Finish(grpc::Status::OK);
                   });
  if (!s.ok()) {
    Count(*request, s);
    reactor->Finish(ToGrpc(s));
  }
  return reactor;
}

namespace {

// A stream refused before it starts, answered after `hold_us`.
template <typename Base>
class Refused final : public Base {
 public:
  explicit Refused(const absl::Status& s, int64_t hold_us = 0, Later* later = nullptr) {
    if (hold_us > 0) {
      later->Run(hold_us, [this, s] { this->Finish(ToGrpc(s)); });
    } else {
      this->Finish(ToGrpc(s));
    }
  }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerBidiReactor<pb::AppendRequest, pb::AppendResponse>* LedgerService::AppendStream(
    grpc::CallbackServerContext* ctx) {
  using Base = grpc::ServerBidiReactor<pb::AppendRequest, pb::AppendResponse>;
  int64_t hold_us = 0;
  auto caller = gate_->Admit(*ctx, 1, &hold_us);
  if (!caller.ok()) return new Refused<Base>(caller.status(), hold_us, later_.get());
  if (auto s = caller->CheckRole(Action::kAppend); !s.ok()) return new Refused<Base>(s);
  return NewAppendStream(this, log_, gate_, *std::move(caller), ctx, idle_.get(), later_.get());
}

grpc::ServerUnaryReactor* LedgerService::GetCheckpoint(grpc::CallbackServerContext* ctx,
                                                       const pb::GetCheckpointRequest* request,
                                                       pb::Checkpoint* response) {
  if (auto caller = gate_->Admit(*ctx); !caller.ok()) return Finish(ctx, caller.status());
  auto cp = log_->Checkpoint(request->tree_size());
  if (cp.ok()) {
    response->set_tree_size(cp->size);
    response->set_root_hash(AsString(cp->root));
    response->set_note(cp->note);
    response->set_time_note(cp->time_note);
    response->set_signed_at_us(cp->signed_at_us);
    std::string cosigned = cp->note;
    for (const Cosignature& c : cosignatures_ ? cosignatures_(cp->note) : std::vector<Cosignature>{}) {
      pb::Cosignature* out = response->add_cosignatures();
      out->set_witness(c.witness);
      out->set_time(c.time);
      out->set_line(c.line);
      cosigned += c.line;
    }
    response->set_cosigned_note(cosigned);
    std::string time_cosigned = cp->time_note;
    if (map_cosignatures_ && !cp->time_note.empty()) {
      for (const Cosignature& c : map_cosignatures_(cp->time_note)) {
        pb::Cosignature* out = response->add_map_cosignatures();
        out->set_witness(c.witness);
        out->set_time(c.time);
        out->set_line(c.line);
        time_cosigned += c.line;
      }
    }
    if (time_stamp_ && !cp->time_note.empty()) time_cosigned += time_stamp_(cp->time_note);
    response->set_cosigned_time_note(time_cosigned);
  }
  return Finish(ctx, cp.status());
}

grpc::ServerUnaryReactor* LedgerService::GetVerifierKey(grpc::CallbackServerContext* ctx,
                                                        const pb::GetVerifierKeyRequest*, pb::VerifierKey* response) {
  if (auto caller = gate_->Admit(*ctx); !caller.ok()) return Finish(ctx, caller.status());
  response->set_vkey(log_->verifier_key());
  response->set_origin(log_->origin());
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* LedgerService::GetReplication(grpc::CallbackServerContext* ctx,
                                                        const pb::GetReplicationRequest*, pb::Replication* response) {
  if (auto caller = gate_->Admit(*ctx); !caller.ok()) return Finish(ctx, caller.status());
  if (replication_) {
    replication_(response);
  } else {
    response->set_replicated(false);
    response->set_role("single");
    response->set_applied_size(log_->head().size);
    response->set_shard_size(log_->head().size);
  }
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* LedgerService::GetInclusionProof(grpc::CallbackServerContext* ctx,
                                                           const pb::GetInclusionProofRequest* request,
                                                           pb::InclusionProof* response) {
  auto caller = gate_->Admit(*ctx);
  if (!caller.ok()) return Finish(ctx, caller.status());
  if (auto s = caller->CheckRole(Action::kReadEntries); !s.ok()) return Finish(ctx, s);
  uint64_t seq = request->seq();
  switch (request->entry_case()) {
    case pb::GetInclusionProofRequest::kSeq:
      break;
    case pb::GetInclusionProofRequest::kReceiptId: {
      // Receipt ids are the team's own: the right on the team is checked
      // before the lookup, so nothing says whether another team has an id.
      if (request->team().empty()) {
        return Finish(ctx,
                      absl::InvalidArgumentError("team: required with receipt_id (receipt ids are unique per team)"));
      }
      if (auto s = caller->Check(Action::kReadEntries, request->team()); !s.ok()) return Finish(ctx, s);
      auto found = log_->SeqOf(request->team(), request->receipt_id());
      if (!found.ok()) return Finish(ctx, found.status());
      seq = *found;
      break;
    }
    case pb::GetInclusionProofRequest::ENTRY_NOT_SET:
      return Finish(ctx, absl::InvalidArgumentError("entry: set seq or receipt_id"));
  }
  if (!caller->CoversAllTeams(Action::kReadEntries) && seq < log_->head().size) {
    absl::Status allowed;
    absl::Status read = log_->ScanEntries(seq, seq + 1, [&](uint64_t, std::string_view leaf) {
      auto team = receipt::TeamOf(leaf);
      if (!team.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", team.status().message()));
      allowed = caller->CheckEntry(Action::kReadEntries, *team, seq);
      return absl::OkStatus();
    });
    if (!read.ok()) return Finish(ctx, read);
    if (!allowed.ok()) return Finish(ctx, allowed);
  }
  stats_.proofs.With({"inclusion"})->Add();
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

grpc::ServerUnaryReactor* LedgerService::GetRunProof(grpc::CallbackServerContext* ctx,
                                                     const pb::GetRunProofRequest* request, pb::RunProof* response) {
  auto caller = gate_->Admit(*ctx);
  if (!caller.ok()) return Finish(ctx, caller.status());
  if (request->team().empty()) return Finish(ctx, absl::InvalidArgumentError("team: required"));
  if (request->run_id().empty()) return Finish(ctx, absl::InvalidArgumentError("run_id: required"));
  // The right on the team first: nothing says whether another team has a run.
  if (auto s = caller->Check(Action::kReadEntries, request->team()); !s.ok()) return Finish(ctx, s);
  stats_.proofs.With({"run"})->Add();
  auto proof = log_->ProveRun(request->team(), request->run_id());
  if (!proof.ok()) return Finish(ctx, proof.status());
  if (request->tree_size() != 0 && request->tree_size() != proof->checkpoint.size) {
    return Finish(ctx, absl::FailedPreconditionError(absl::StrCat(
                           "tree_size: run-head proofs are served at the latest checkpoint (size ",
                           proof->checkpoint.size, "); for size ", request->tree_size(),
                           ", replay the log: ledgerctl prove-run --data DIR --size ", request->tree_size())));
  }
  response->set_tree_size(proof->checkpoint.size);
  response->set_proof(runmap::EncodeProof({proof->key, proof->path}));
  response->set_checkpoint(proof->checkpoint.note);
  response->set_time_note(proof->checkpoint.time_note);
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* LedgerService::GetConsistencyProof(grpc::CallbackServerContext* ctx,
                                                             const pb::GetConsistencyProofRequest* request,
                                                             pb::ConsistencyProof* response) {
  if (auto caller = gate_->Admit(*ctx); !caller.ok()) return Finish(ctx, caller.status());
  stats_.proofs.With({"consistency"})->Add();
  auto proof = log_->ProveConsistency(request->from_size(), request->to_size());
  if (proof.ok()) {
    response->set_from_size(proof->from_size);
    response->set_to_size(proof->to_size);
    for (const auto& h : proof->hashes) response->add_hashes(AsString(h));
  }
  return Finish(ctx, proof.status());
}

grpc::ServerUnaryReactor* LedgerService::Backup(grpc::CallbackServerContext* ctx, const pb::BackupRequest* request,
                                                pb::BackupResponse* response) {
  auto caller = gate_->Admit(*ctx);
  if (!caller.ok()) return Finish(ctx, caller.status());
  if (auto s = caller->Check(Action::kAdminister, ""); !s.ok()) return Finish(ctx, s);
  if (backup_root_ == nullptr) {
    return Finish(ctx, absl::FailedPreconditionError("dir: backups are off: start ledgerd with --backup-root DIR"));
  }
  auto dir = backup_root_->Create(request->dir());
  if (!dir.ok()) return Finish(ctx, dir.status());
  // Flushing and linking files takes a while: not on gRPC's thread.
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  std::thread([this, reactor, response, dir = *std::move(dir)] {
    auto info = log_->Backup(dir.handle());
    if (info.ok()) {
      response->set_dir(dir.path());
      response->set_tree_size(info->tree_size);
      response->set_checkpoint(info->checkpoint);
      reactor->Finish(grpc::Status::OK);
      return;
    }
    // Errors name the directory as the operator does.
    reactor->Finish(ToGrpc(absl::Status(info.status().code(),
                                        absl::StrReplaceAll(info.status().message(), {{dir.handle(), dir.path()}}))));
  }).detach();
  return reactor;
}

grpc::ServerWriteReactor<pb::Entry>* LedgerService::GetEntries(grpc::CallbackServerContext* ctx,
                                                               const pb::GetEntriesRequest* request) {
  using Base = grpc::ServerWriteReactor<pb::Entry>;
  auto caller = gate_->Admit(*ctx);
  if (!caller.ok()) return new Refused<Base>(caller.status());
  if (auto s = caller->CheckRole(Action::kReadEntries); !s.ok()) return new Refused<Base>(s);
  uint64_t size = log_->head().size;
  if (request->seqs_size() > 0) {
    auto ranges = RangesOf(*request, size);
    if (!ranges.ok()) return new Refused<Base>(ranges.status());
    return new EntriesReactor(log_, gate_, *std::move(caller), *std::move(ranges));
  }
  if (request->from_seq() > request->to_seq()) {
    return new Refused<Base>(absl::InvalidArgumentError(
        absl::StrCat("from_seq: ", request->from_seq(), " is larger than to_seq ", request->to_seq())));
  }
  if (request->to_seq() > size) {
    return new Refused<Base>(
        absl::OutOfRangeError(absl::StrCat("to_seq: ", request->to_seq(), " is beyond the log's size ", size)));
  }
  return new EntriesReactor(log_, gate_, *std::move(caller), {{request->from_seq(), request->to_seq()}});
}

}  // namespace ledger::service
