// The LedgerService's key rotation (CONTRACT section 5d): RotateKey, which
// moves the log to a new key, and GetKeyHistory, the rotations with their
// inclusion proofs for an auditor holding an older key.
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/rpc/server/status.h"
#include "ledger/rpc/service/service.h"
#include "nlohmann/json.hpp"
#include "util/jsonlog/jsonlog.h"

namespace ledger::service {

using server::ToGrpc;
namespace {

grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* ctx, const absl::Status& s) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpc(s));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* LedgerService::RotateKey(grpc::CallbackServerContext* ctx,
                                                   const pb::RotateKeyRequest* request,
                                                   pb::RotateKeyResponse* response) {
  auto caller = gate_->Admit(*ctx);
  if (!caller.ok()) return Answer(ctx, caller.status());
  if (auto s = caller->Check(auth::Action::kAdminister, ""); !s.ok()) return Answer(ctx, s);
  if (!rotation_keys_.open) {
    return Answer(ctx, absl::FailedPreconditionError("rotate-key: this ledger cannot open keys for a rotation"));
  }
  // A token may take a while to open, and the rotation waits for the appends
  // under way: not on gRPC's thread.
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  std::thread([this, reactor, response, spec = request->new_key(), transition = request->transition_sizes(),
               who = caller->identity] {
    auto next = rotation_keys_.open(spec);
    if (!next.ok()) {
      reactor->Finish(
          ToGrpc(absl::Status(next.status().code(), absl::StrCat("new_key: ", std::string(next.status().message())))));
      return;
    }
    log::Log::RotateOptions options;
    options.transition_sizes = transition;
    auto rotated = log_->RotateKey(*std::move(next), options);
    if (!rotated.ok()) {
      reactor->Finish(ToGrpc(rotated.status()));
      return;
    }
    absl::Status kept = rotation_keys_.committed ? rotation_keys_.committed(spec) : absl::OkStatus();
    // The first checkpoint past the rotation, signed by the new key.
    absl::Status signed_now = log_->SignCheckpoint();
    jsonlog::Warn("key_rotated")
        .Msg(absl::StrCat("the log's key is now ", rotated->new_key, " from size ", rotated->seq + 1))
        .Int("seq", static_cast<int64_t>(rotated->seq))
        .Str("old_key", rotated->old_key)
        .Str("new_key", rotated->new_key)
        .Str("by", who)
        .Str("key_file", kept.ok() ? "ok" : std::string(kept.message()))
        .Str("checkpoint", signed_now.ok() ? "signed" : std::string(signed_now.message()))
        .Emit();
    response->set_seq(rotated->seq);
    response->set_old_key(rotated->old_key);
    response->set_new_key(rotated->new_key);
    response->set_note(rotated->note);
    reactor->Finish(kept.ok() ? grpc::Status::OK
                              : ToGrpc(absl::DataLossError(absl::StrCat(
                                    "rotate-key: the rotation is in the log, but the new key file could not replace "
                                    "the old one (ledgerd takes it at its next start): ",
                                    std::string(kept.message())))));
  }).detach();
  return reactor;
}

grpc::ServerUnaryReactor* LedgerService::GetKeyHistory(grpc::CallbackServerContext* ctx,
                                                       const pb::GetKeyHistoryRequest*, pb::KeyHistory* response) {
  if (auto caller = gate_->Admit(*ctx); !caller.ok()) return Answer(ctx, caller.status());
  auto cp = log_->Checkpoint(0);
  if (!cp.ok()) return Answer(ctx, cp.status());
  nlohmann::json rotations = nlohmann::json::array();
  for (const log::Log::Rotation& r : log_->Rotations()) {
    if (r.seq >= cp->size) break;  // not in the checkpoint yet
    std::string leaf;
    absl::Status read = log_->ScanEntries(r.seq, r.seq + 1, [&](uint64_t, std::string_view bytes) {
      leaf = std::string(bytes);
      return absl::OkStatus();
    });
    if (!read.ok()) return Answer(ctx, read);
    auto proof = log_->ProveInclusion(r.seq, cp->size);
    if (!proof.ok()) return Answer(ctx, proof.status());
    nlohmann::json path = nlohmann::json::array();
    for (const auto& h : proof->path) path.push_back(hash::Hex(h));
    rotations.push_back({{"inclusion", path}, {"leaf", leaf}, {"seq", r.seq}});
  }
  nlohmann::json history = {{"checkpoint", cp->note}, {"rotations", rotations}};
  response->set_json(history.dump() + "\n");
  return Answer(ctx, absl::OkStatus());
}

}  // namespace ledger::service
