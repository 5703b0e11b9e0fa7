// The identity a client certificate names, typed by where it was found:
//
//   identity = "uri:" first-URI-SAN    (e.g. "uri:spiffe://cluster/ns/team-a/sa/gateway")
//            / "dns:" first-DNS-SAN    (when there is no URI SAN)
//            / "cn:"  subject-CN       (when there is no SAN of either kind)
//
// The kind is part of the identity, so a rule written for one kind never
// matches another (a CN spelled like a URI is not that URI), and no
// certificate can take one of the untyped names the ledger uses for itself
// ("ledger", "local", "in-process"). The name after the kind is valid UTF-8
// without control characters (IdentityFault).
//
// Thread-safe: pure functions.
#ifndef UTIL_TLS_IDENTITY_H_
#define UTIL_TLS_IDENTITY_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ledger::tls {

// `pem` holds one X.509 certificate (the peer's, already verified by TLS).
// UNAUTHENTICATED when it cannot be parsed, names no identity, or its
// identity fails IdentityFault (the message names the SAN or CN and why).
absl::StatusOr<std::string> IdentityOfCertificate(std::string_view pem);

// Why `name` cannot be (part of) an identity: "is not valid UTF-8", "holds
// a control character (U+001B)" (C0, DEL, C1, and the bidirectional
// controls that reorder displayed text: U+061C, U+200E-U+200F,
// U+202A-U+202E, U+2066-U+2069), or "" when it can.
std::string IdentityFault(std::string_view name);

}  // namespace ledger::tls

#endif  // UTIL_TLS_IDENTITY_H_
