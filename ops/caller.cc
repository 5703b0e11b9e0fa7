#include "ops/caller.h"

#include "absl/strings/str_cat.h"
#include "ledger/rpc/auth/proxy.h"

namespace ledger::ops {

std::optional<http::HttpResponse> IdentifyCaller(const auth::Gate& gate, http::HttpRequest& request) {
  std::shared_ptr<const auth::Policy> policy = gate.tls() ? gate.policy() : nullptr;
  auto acting = auth::ActingIdentity(policy.get(), request.identity, request.headers);
  if (acting.ok()) {
    request.identity = std::move(acting->identity);
    request.via = std::move(acting->via);
    return std::nullopt;
  }
  int status = acting.status().code() == absl::StatusCode::kUnauthenticated   ? 401
               : acting.status().code() == absl::StatusCode::kInvalidArgument ? 400
                                                                              : 403;
  return http::Text(status, absl::StrCat(acting.status().message(), "\n"));
}

}  // namespace ledger::ops
