// The LedgerService's erasure (CONTRACT section 8): one admin asks, a
// different admin approves with the same call, and the log carries it out.
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/rpc/server/status.h"
#include "ledger/rpc/service/service.h"
#include "util/jsonlog/jsonlog.h"

namespace ledger::service {

using server::ToGrpc;
namespace {

constexpr auto kApprovalWindow = std::chrono::hours(1);

grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* ctx, const absl::Status& s) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpc(s));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* LedgerService::Erase(grpc::CallbackServerContext* ctx, const pb::EraseRequest* request,
                                               pb::EraseResponse* response) {
  auto caller = gate_->Admit(*ctx);
  if (!caller.ok()) return Reply(ctx, caller.status());
  if (auto s = caller->Check(auth::Action::kAdminister, ""); !s.ok()) return Reply(ctx, s);
  if (auto s = receipt::CheckErasureReason(request->reason()); !s.ok()) return Reply(ctx, s);
  const std::pair<uint64_t, std::string> key{request->seq(), request->reason()};
  const auto now = std::chrono::steady_clock::now();
  std::string requested_by;
  {
    sync::MutexLock lock(&erase_mu_);
    std::erase_if(asked_, [&](const auto& a) { return now - a.second.at > kApprovalWindow; });
    auto it = asked_.find(key);
    if (it == asked_.end()) {
      asked_.emplace(key, Asked{caller->identity, now});
      jsonlog::Warn("erasure_asked")
          .Msg(absl::StrCat("entry ", request->seq(), " is to be erased once another admin approves"))
          .Int("seq", static_cast<int64_t>(request->seq()))
          .Str("reason", request->reason())
          .Str("by", caller->identity)
          .Emit();
      response->set_pending(true);
      response->set_requested_by(caller->identity);
      return Reply(ctx, absl::OkStatus());
    }
    if (it->second.by == caller->identity) {
      return Reply(ctx,
                   absl::PermissionDeniedError(absl::StrCat("erase: the second approver must be another admin than ",
                                                            caller->identity, ", who asked")));
    }
    requested_by = it->second.by;
    asked_.erase(it);
  }
  // The erasure waits for a checkpoint and compacts the store: not on
  // gRPC's thread.
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  std::thread([this, reactor, response, seq = request->seq(), reason = request->reason(), requested_by,
               approved_by = caller->identity] {
    auto erased = log_->Erase({.seq = seq, .reason = reason, .requested_by = requested_by, .approved_by = approved_by});
    jsonlog::Warn(erased.ok() ? "erased" : "erasure_failed")
        .Msg(erased.ok() ? absl::StrCat("the body of entry ", seq, " is erased; redaction entry ", erased->by)
                         : std::string(erased.status().message()))
        .Int("seq", static_cast<int64_t>(seq))
        .Str("reason", reason)
        .Str("requested_by", requested_by)
        .Str("approved_by", approved_by)
        .Emit();
    if (!erased.ok()) {
      reactor->Finish(ToGrpc(erased.status()));
      return;
    }
    response->set_requested_by(requested_by);
    response->set_redaction_seq(erased->by);
    reactor->Finish(grpc::Status::OK);
  }).detach();
  return reactor;
}

}  // namespace ledger::service
