// The identity a client certificate names: its first URI SAN (e.g.
// "spiffe://cluster/ns/team-a/sa/gateway"), else its first DNS SAN, else
// its subject CN.
//
// Thread-safe: a pure function.
#ifndef AUTH_IDENTITY_H_
#define AUTH_IDENTITY_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ledger::auth {

// `pem` holds one X.509 certificate (the peer's, already verified by TLS).
// UNAUTHENTICATED when it cannot be parsed or names no identity.
absl::StatusOr<std::string> IdentityOfCertificate(std::string_view pem);

}  // namespace ledger::auth

#endif  // AUTH_IDENTITY_H_
