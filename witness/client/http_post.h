// A minimal blocking HTTP/1.1 client for the witness protocol: one POST per
// connection (Connection: close), over plain HTTP or HTTPS.
//
// Thread-safe: a free function.
#ifndef WITNESS_CLIENT_HTTP_POST_H_
#define WITNESS_CLIENT_HTTP_POST_H_

#include <string>

#include "absl/status/statusor.h"

namespace ledger::witnesses {

struct HttpReply {
  int status = 0;
  std::string content_type;
  std::string body;
};

// For https:// URLs: PEM contents. The server's certificate MUST chain to
// ca_pem and name the URL's host (DNS or IP SAN); with cert_pem and
// key_pem the client presents that certificate (witnesses that ask one).
struct TlsClient {
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
};

// POSTs `body` to `url` ("http://host:port/path" or "https://..."), within
// `timeout_ms` from connect to the last byte. INVALID_ARGUMENT for a URL of
// another form, or https without `tls` or with unusable PEM; UNAVAILABLE
// when the server cannot be reached, fails TLS verification or does not
// answer in time; DATA_LOSS for an answer that is not HTTP.
absl::StatusOr<HttpReply> HttpPost(const std::string& url, const std::string& body, int timeout_ms,
                                   const TlsClient* tls = nullptr);

}  // namespace ledger::witnesses

#endif  // WITNESS_CLIENT_HTTP_POST_H_
