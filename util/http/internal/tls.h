// The HTTP server's TLS (util/http/http.cc): a server context that verifies
// client certificates, and the identity a verified peer's certificate names.
// Internal to util/http.
#ifndef UTIL_HTTP_INTERNAL_TLS_H_
#define UTIL_HTTP_INTERNAL_TLS_H_

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "util/http/http.h"

namespace ledger::http::tls {

// TLS 1.2 or later, the certificate and key of `tls`, and clients required
// to present a certificate that chains to its client CAs. INVALID_ARGUMENT
// for unusable material.
absl::StatusOr<std::shared_ptr<SSL_CTX>> NewTlsContext(const HttpTls& tls);

// The identity of the peer's verified certificate, or "".
std::string PeerIdentity(SSL* ssl);

}  // namespace ledger::http::tls

#endif  // UTIL_HTTP_INTERNAL_TLS_H_
