// Whom a request on the HTTP port is made for: its client certificate's
// identity, or the user a trusted proxy names (ledger/rpc/auth/proxy.h).
//
// Thread-safe.
#ifndef OPS_CALLER_H_
#define OPS_CALLER_H_

#include <optional>

#include "ledger/rpc/auth/gate.h"
#include "util/http/http.h"

namespace ledger::ops {

// An http::HttpOptions::identify for the HTTP port: sets request.identity
// and request.via as auth::ActingIdentity says, under the policy in force
// (none in plain text), or refuses the request in plain text with its
// message: 401 (a trusted proxy named no user), 400 (a user's name that
// cannot be one), 403 (a user header from anyone but a trusted proxy, a
// user the policy does not name). Quick: no I/O.
std::optional<http::HttpResponse> IdentifyCaller(const auth::Gate& gate, http::HttpRequest& request);

}  // namespace ledger::ops

#endif  // OPS_CALLER_H_
