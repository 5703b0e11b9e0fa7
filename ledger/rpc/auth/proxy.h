// Who a request on the HTTP port is made for when a trusted proxy may name
// its user (the policy's "trusted_proxies", policy.h).
//
// A reverse proxy authenticates a person (oauth2-proxy, or nginx's
// auth_request in front of an identity provider) and connects with its own
// client certificate, naming the person in its user header:
//
//   user-identity = "user:" header-value    ; the value passes UserFault:
//                                           ; 1 to 254 bytes of UTF-8, no
//                                           ; space, comma or control character
//
// The request is then that user's in every way: its rule in the policy,
// its rate and concurrency, the logs (which name the proxy beside it).
// Nobody else may name a user: a request that carries a user header (the
// policy's, or one that proxies commonly send, kCommonUserHeaders) and
// does not come from a trusted proxy is refused, never served as its
// sender while the header is ignored; so is one in plain text, where there
// is no policy and every caller is "local".
//
// Thread-safe: pure functions.
#ifndef LEDGER_RPC_AUTH_PROXY_H_
#define LEDGER_RPC_AUTH_PROXY_H_

#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ledger/rpc/auth/policy.h"

namespace ledger::auth {

// Headers by which proxies commonly name their user (oauth2-proxy's,
// nginx's and Apache's), refused from anyone but a trusted proxy whatever
// the policy names.
inline constexpr std::string_view kCommonUserHeaders[] = {
    "X-Forwarded-User",    "X-Forwarded-Email",    "X-Forwarded-Preferred-Username",
    "X-Auth-Request-User", "X-Auth-Request-Email", "X-Auth-Request-Preferred-Username",
    "Remote-User",         "X-Remote-User",
};

struct Acting {
  std::string identity;  // whom the request is made for
  std::string via;       // the trusted proxy that named it; "" when none did
};

// Whom a request is made for. `certificate` is the identity of its client
// certificate ("" in plain text), `policy` the policy in force (nullptr in
// plain text), `headers` the request's, names in lower case.
//   - From a trusted proxy that names a user: "user:" + the header's value,
//     via the proxy; INVALID_ARGUMENT naming the header and UserFault's
//     reason for a value that cannot be one, PERMISSION_DENIED "identity
//     'user:x' may read no team" for a user the policy has no rule for.
//   - From a trusted proxy that names none: UNAUTHENTICATED "the proxy sent
//     no user: ..." unless it may act as itself ("without_user": "proxy"),
//     then the proxy.
//   - From anyone else: PERMISSION_DENIED naming the header and the caller
//     when it carries a user header; else the certificate's identity.
absl::StatusOr<Acting> ActingIdentity(const Policy* policy, std::string_view certificate,
                                      const std::map<std::string, std::string>& headers);

}  // namespace ledger::auth

#endif  // LEDGER_RPC_AUTH_PROXY_H_
