// The door of every RPC: who is calling (from the verified client
// certificate, or "local" in plain-text mode), whether the policy lets it
// do what it asks, and whether it is within its limits.
//
// Handlers call Admit first, then Check for each team the call touches.
// Calls that stay open (streams, watches) call Refresh before each message
// and check again, and Subscribe to hear of a new policy while idle: a
// caller that loses its right ends there with PERMISSION_DENIED.
//
// Thread-safe: the policy is swapped atomically (SetPolicy, on SIGHUP); a
// Caller keeps the policy it was admitted under until Refresh.
#ifndef LEDGER_RPC_AUTH_GATE_H_
#define LEDGER_RPC_AUTH_GATE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "grpcpp/server_context.h"
#include "ledger/rpc/auth/limiter.h"
#include "ledger/rpc/auth/policy.h"
#include "util/sync/mutex.h"

namespace ledger::auth {

// The ledger's own names have no kind ("uri:", "dns:", "cn:"), so no
// certificate's identity can be one of them (util/tls/identity.h).
// In plain-text mode every caller is this identity, with role admin.
inline constexpr std::string_view kLocalIdentity = "local";
// Calls on the server's in-process channel (grpc::Server::InProcessChannel)
// without kActingForMetadata are made as this identity, with role admin. With TLS the only port is a
// TLS port, so a call that did not come over TLS is one of these; no
// network peer can be.
inline constexpr std::string_view kInProcessIdentity = "in-process";
// Binary metadata by which a call on the in-process channel is made for
// someone: the dashboard's HTTPS caller, whose certificate the HTTP server
// verified. The call is then that identity's in every way (policy, limits,
// logs). Believed on the in-process channel only: a network peer that
// sends it stays itself.
inline constexpr std::string_view kActingForMetadata = "ledger-acting-for-bin";
// Binary metadata beside kActingForMetadata when a trusted proxy named that
// identity (proxy.h): the proxy's, for the logs alone. Believed on the
// in-process channel only, as kActingForMetadata is.
inline constexpr std::string_view kViaMetadata = "ledger-via-bin";

struct Caller {
  std::string identity;
  std::shared_ptr<const Policy> policy;  // nullptr: plain text, admin
  Limiter::Permit permit;                // one of the identity's open calls

  // OK, or PERMISSION_DENIED naming the identity, action and team.
  absl::Status Check(Action action, std::string_view team) const;
  // May do `action` on every team: no per-entry check needed.
  bool CoversAllTeams(Action action) const;
  // May do `action` on some team (the team comes later, e.g. per receipt).
  absl::Status CheckRole(Action action) const;
  // As Check, for entry `seq` of `team`, asked for by its seq: a refusal
  // names the seq but never the entry's team, so that a caller learns
  // nothing of whose entries it may not read.
  absl::Status CheckEntry(Action action, std::string_view team, uint64_t seq) const;
};

class Gate {
 public:
  struct Options {
    // Callers are identified by their client certificate and checked
    // against the policy; false: plain text, everyone is "local", admin.
    bool tls = false;
    Limiter::Options limits;
  };

  // `policy` MUST be set when options.tls.
  Gate(Options options, std::shared_ptr<const Policy> policy);

  // Replaces the policy, then runs the subscribers.
  void SetPolicy(std::shared_ptr<const Policy> policy);
  std::shared_ptr<const Policy> policy() const;

  // Moves an admitted caller to the policy in force now; callers without
  // a policy (plain text, in-process) stay as they are. The caller MUST
  // then be checked again.
  void Refresh(Caller* caller) const;

  // Runs `fn` after each SetPolicy, on the thread that called SetPolicy,
  // until Unsubscribe(id) returns; Unsubscribe waits for a run of `fn`
  // under way on another thread. `fn` MUST NOT block, and MAY Unsubscribe
  // itself. One SetPolicy runs the subscribers at a time.
  uint64_t Subscribe(std::function<void()> fn);
  void Unsubscribe(uint64_t id);

  // Identifies the caller, holds one of its concurrent calls and spends
  // `cost` of its rate. UNAUTHENTICATED without a usable client
  // certificate (one naming an identity that is valid UTF-8 without
  // control characters); RESOURCE_EXHAUSTED over a limit, with *hold_us (when
  // given) set to how long to wait before answering (Limiter).
  absl::StatusOr<Caller> Admit(const grpc::ServerContextBase& ctx, int64_t cost = 1, int64_t* hold_us = nullptr);
  // Spends more of an admitted caller's rate (each message of a stream).
  absl::Status Spend(const Caller& caller, int64_t cost, int64_t* hold_us = nullptr) {
    return limiter_.Spend(caller.identity, cost, hold_us);
  }

  bool tls() const { return options_.tls; }

  // The caller's identity for logs: "local" in plain text, the
  // certificate's identity, or "" when there is none.
  std::string IdentityOf(const grpc::ServerContextBase& ctx);
  // The trusted proxy an in-process call was made through (kViaMetadata),
  // for logs; "" for any other call.
  std::string ViaOf(const grpc::ServerContextBase& ctx) const;

 private:
  absl::StatusOr<std::string> Identify(const grpc::ServerContextBase& ctx);

  const Options options_;
  Limiter limiter_;
  mutable sync::Mutex mu_;
  std::shared_ptr<const Policy> policy_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string, std::less<>> identities_ ABSL_GUARDED_BY(mu_);  // PEM -> identity
  // Held through SetPolicy's run of the subscribers: one run at a time.
  sync::Mutex run_mu_ ABSL_ACQUIRED_BEFORE(subscribers_mu_);
  // Not held while a subscriber runs, so that it may Unsubscribe.
  sync::Mutex subscribers_mu_;
  sync::CondVar ran_;  // running_ went back to 0
  uint64_t next_subscriber_ ABSL_GUARDED_BY(subscribers_mu_) = 0;
  std::map<uint64_t, std::function<void()>> subscribers_ ABSL_GUARDED_BY(subscribers_mu_);
  uint64_t running_ ABSL_GUARDED_BY(subscribers_mu_) = 0;    // the subscriber running now, 0: none
  std::thread::id runner_ ABSL_GUARDED_BY(subscribers_mu_);  // the thread it runs on
};

}  // namespace ledger::auth

#endif  // LEDGER_RPC_AUTH_GATE_H_
