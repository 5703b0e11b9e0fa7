#include "ledger/rpc/server/rpc_log.h"

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "grpc/support/log.h"
#include "util/jsonlog/jsonlog.h"
#include "util/sync/mutex.h"

namespace ledger::server {
namespace {

// At most kPerSecond lines of failures a second, counting what it drops.
class Budget {
 public:
  static constexpr int kPerSecond = 20;
  // True when a line may be written; *suppressed is how many were dropped
  // since the last one written.
  bool Take(int64_t* suppressed) {
    sync::MutexLock lock(&mu_);
    auto now = std::chrono::steady_clock::now();
    if (now - window_ >= std::chrono::seconds(1)) {
      window_ = now;
      used_ = 0;
    }
    if (used_ >= kPerSecond) {
      ++dropped_;
      return false;
    }
    ++used_;
    *suppressed = dropped_;
    dropped_ = 0;
    return true;
  }

 private:
  sync::Mutex mu_;
  std::chrono::steady_clock::time_point window_ ABSL_GUARDED_BY(mu_){};
  int used_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

class RpcLog final : public grpc::experimental::Interceptor {
 public:
  RpcLog(grpc::experimental::ServerRpcInfo* info, auth::Gate* gate, Budget* budget, RpcStats* stats)
      : info_(info), gate_(gate), budget_(budget), stats_(stats), started_(std::chrono::steady_clock::now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using Hook = grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(Hook::POST_RECV_INITIAL_METADATA)) {
      std::string given;
      auto* md = methods->GetRecvInitialMetadata();
      if (md != nullptr) {
        auto it = md->find("x-request-id");
        if (it != md->end()) given.assign(it->second.data(), it->second.size());
      }
      request_id_ = jsonlog::RequestId(given);
    }
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_INITIAL_METADATA)) {
      if (request_id_.empty()) request_id_ = jsonlog::NewRequestId();
      methods->GetSendInitialMetadata()->emplace("x-request-id", request_id_);
    }
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS) && !done_) {
      done_ = true;
      Done(methods->GetSendStatus());
    }
    methods->Proceed();
  }

 private:
  void Done(const grpc::Status& status) {
    std::string method = info_->method() ? info_->method() : "?";
    std::string code =
        absl::AsciiStrToLower(absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())));
    auto took = std::chrono::steady_clock::now() - started_;
    stats_->seconds.With({method})->Observe(std::chrono::duration<double>(took).count());
    stats_->calls.With({method, code})->Add();
    bool audited = method.find("/Export") != std::string::npos || method.find("/Backup") != std::string::npos;
    if (status.ok() && !audited) return;
    // A client that hung up or gave up is not the server's failure (a
    // deadline the server missed is: DEADLINE_EXCEEDED stays a warning).
    bool cancelled = status.error_code() == grpc::StatusCode::CANCELLED;
    int64_t suppressed = 0;
    if (!status.ok() && !budget_->Take(&suppressed)) return;
    if (request_id_.empty()) request_id_ = jsonlog::NewRequestId();
    int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
    jsonlog::Line line = status.ok() ? jsonlog::Info("rpc_done")
                         : cancelled ? jsonlog::Info("rpc_cancelled")
                                     : jsonlog::Warn("rpc_failed");
    line.Str("method", method).Str("code", code).Str("request_id", request_id_);
    if (info_->server_context() != nullptr) {
      line.Str("identity", gate_->IdentityOf(*info_->server_context()));
      if (std::string via = gate_->ViaOf(*info_->server_context()); !via.empty()) line.Str("via", via);
    }
    line.Int("ms", ms);
    if (!status.ok()) line.Msg(status.error_message());
    if (suppressed > 0) line.Int("suppressed_before", suppressed);
    line.Emit();
  }

  grpc::experimental::ServerRpcInfo* const info_;
  auth::Gate* const gate_;
  Budget* const budget_;
  RpcStats* const stats_;
  const std::chrono::steady_clock::time_point started_;
  std::string request_id_;
  bool done_ = false;
};

class Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  Factory(auth::Gate* gate, RpcStats* stats) : gate_(gate), stats_(stats) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new RpcLog(info, gate_, &budget_, stats_);
  }

 private:
  auth::Gate* const gate_;
  RpcStats* const stats_;
  Budget budget_;
};

void GrpcLine(gpr_log_func_args* args) {
  std::string_view file = args->file != nullptr ? args->file : "";
  if (size_t slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  std::string_view message = args->message != nullptr ? args->message : "";
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.remove_suffix(1);
  jsonlog::Line line = args->severity == GPR_LOG_SEVERITY_ERROR ? jsonlog::Warn("grpc") : jsonlog::Info("grpc");
  line.Msg(message).Str("source", absl::StrCat(std::string(file), ":", args->line)).Emit();
}

}  // namespace

void LogGrpcThroughJson() { gpr_set_log_function(GrpcLine); }

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewRpcLogFactory(auth::Gate* gate,
                                                                                        RpcStats* stats) {
  return std::make_unique<Factory>(gate, stats);
}

}  // namespace ledger::server
