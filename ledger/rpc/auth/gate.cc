#include "ledger/rpc/auth/gate.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/security/auth_context.h"
#include "util/tls/identity.h"

namespace ledger::auth {

absl::Status Caller::Check(Action action, std::string_view team) const {
  if (policy == nullptr) return absl::OkStatus();
  return policy->Check(identity, action, team);
}

bool Caller::CoversAllTeams(Action action) const {
  return policy == nullptr || policy->CoversAllTeams(identity, action);
}

absl::Status Caller::CheckRole(Action action) const {
  if (policy == nullptr) return absl::OkStatus();
  const Rule* r = policy->Find(identity);
  if (r == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat("identity '", identity, "' has no rule in the policy"));
  }
  if (!r->Permits(action)) {
    return absl::PermissionDeniedError(absl::StrCat("identity '", identity, "' may not ",
                                                    std::string(ActionName(action)), " (its roles do not allow it)"));
  }
  return absl::OkStatus();
}

absl::Status Caller::CheckEntry(Action action, std::string_view team, uint64_t seq) const {
  if (absl::Status s = CheckRole(action); !s.ok())
    return absl::PermissionDeniedError(absl::StrCat("entry ", seq, ": ", s.message()));
  if (Check(action, team).ok()) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("entry ", seq, ": identity '", identity, "' may not ",
                                                  std::string(ActionName(action)), " for the team of this entry"));
}

Gate::Gate(Options options, std::shared_ptr<const Policy> policy)
    : options_(options), limiter_(options.limits), policy_(std::move(policy)) {}

void Gate::SetPolicy(std::shared_ptr<const Policy> policy) {
  {
    sync::MutexLock lock(&mu_);
    policy_ = std::move(policy);
  }
  sync::MutexLock run(&run_mu_);
  std::vector<uint64_t> ids;
  {
    sync::MutexLock lock(&subscribers_mu_);
    for (const auto& [id, fn] : subscribers_) ids.push_back(id);
  }
  for (uint64_t id : ids) {
    std::function<void()> fn;  // a copy: fn may Unsubscribe itself
    {
      sync::MutexLock lock(&subscribers_mu_);
      auto it = subscribers_.find(id);
      if (it == subscribers_.end()) continue;  // gone meanwhile
      fn = it->second;
      running_ = id;
      runner_ = std::this_thread::get_id();
    }
    fn();
    fn = nullptr;  // the copy, and what it captured, is gone before Unsubscribe(id) returns
    sync::MutexLock lock(&subscribers_mu_);
    running_ = 0;
    ran_.SignalAll();
  }
}

void Gate::Refresh(Caller* caller) const {
  if (caller->policy == nullptr) return;
  caller->policy = policy();
}

uint64_t Gate::Subscribe(std::function<void()> fn) {
  sync::MutexLock lock(&subscribers_mu_);
  uint64_t id = ++next_subscriber_;
  subscribers_.emplace(id, std::move(fn));
  return id;
}

void Gate::Unsubscribe(uint64_t id) {
  sync::MutexLock lock(&subscribers_mu_);
  subscribers_.erase(id);
  // A run of `id` on this thread is the caller itself.
  while (running_ == id && runner_ != std::this_thread::get_id()) ran_.Wait(&subscribers_mu_);
}

std::shared_ptr<const Policy> Gate::policy() const {
  sync::MutexLock lock(&mu_);
  return policy_;
}

namespace {

// With TLS the server listens on a TLS port only, so a call that did not
// come over TLS came over the in-process channel.
bool InProcess(const grpc::ServerContextBase& ctx) {
  std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  std::vector<grpc::string_ref> type =
      auth ? auth->FindPropertyValues("transport_security_type") : std::vector<grpc::string_ref>{};
  return type.empty() || std::string_view(type.front().data(), type.front().size()) != "ssl";
}

const grpc::string_ref* Metadata(const grpc::ServerContextBase& ctx, std::string_view key) {
  const auto& md = ctx.client_metadata();
  auto it = md.find(grpc::string_ref(key.data(), key.size()));
  return it == md.end() ? nullptr : &it->second;
}

// The identity an in-process call is made for (kActingForMetadata), or
// nullptr when it is made for the server itself.
const grpc::string_ref* ActingFor(const grpc::ServerContextBase& ctx) { return Metadata(ctx, kActingForMetadata); }

}  // namespace

absl::StatusOr<std::string> Gate::Identify(const grpc::ServerContextBase& ctx) {
  if (!options_.tls) return std::string(kLocalIdentity);
  if (InProcess(ctx)) {
    const grpc::string_ref* acting_for = ActingFor(ctx);
    if (acting_for == nullptr) return std::string(kInProcessIdentity);
    if (acting_for->empty()) return absl::UnauthenticatedError("acting for: an empty identity");
    return std::string(acting_for->data(), acting_for->size());
  }
  std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  std::vector<grpc::string_ref> pems =
      auth ? auth->FindPropertyValues("x509_pem_cert") : std::vector<grpc::string_ref>{};
  if (pems.empty()) return absl::UnauthenticatedError("no client certificate");
  std::string_view pem(pems.front().data(), pems.front().size());
  {
    sync::MutexLock lock(&mu_);
    auto it = identities_.find(pem);
    if (it != identities_.end()) return it->second;
  }
  auto id = tls::IdentityOfCertificate(pem);
  if (!id.ok()) return id.status();
  sync::MutexLock lock(&mu_);
  if (identities_.size() >= 4096) identities_.clear();
  identities_.emplace(std::string(pem), *id);
  return id;
}

std::string Gate::IdentityOf(const grpc::ServerContextBase& ctx) {
  auto id = Identify(ctx);
  return id.ok() ? *id : "";
}

std::string Gate::ViaOf(const grpc::ServerContextBase& ctx) const {
  if (!options_.tls || !InProcess(ctx)) return "";
  const grpc::string_ref* via = Metadata(ctx, kViaMetadata);
  return via == nullptr ? "" : std::string(via->data(), via->size());
}

absl::StatusOr<Caller> Gate::Admit(const grpc::ServerContextBase& ctx, int64_t cost, int64_t* hold_us) {
  auto identity = Identify(ctx);
  if (!identity.ok()) return identity.status();
  Caller caller;
  caller.identity = *std::move(identity);
  if (options_.tls && !(InProcess(ctx) && ActingFor(ctx) == nullptr)) caller.policy = policy();
  auto permit = limiter_.Enter(caller.identity, hold_us);
  if (!permit.ok()) return permit.status();
  caller.permit = *std::move(permit);
  if (auto s = limiter_.Spend(caller.identity, cost, hold_us); !s.ok()) return s;
  return caller;
}

}  // namespace ledger::auth
