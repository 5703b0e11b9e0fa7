// A blocking HTTP/1.1 client over plain HTTP or HTTPS, on libcurl: the
// ledger posts checkpoints to witnesses and time notes to monitors and
// time-stamp requests to a TSA with it; a monitor reads a log's tiles with
// it. Answers are read whole (Content-Length, chunked, or the connection's
// end), up to a bound. Over HTTPS only the CA given is trusted (never the
// system's store), the server's certificate must name the URL's host (DNS
// or IP SAN), and no proxy is used whatever the environment says. Each
// thread keeps one libcurl handle, so connections and TLS sessions are
// reused where the server allows. SIGPIPE is blocked in the calling thread
// while a request runs.
//
// Thread-safe: free functions.
#ifndef UTIL_HTTP_CLIENT_H_
#define UTIL_HTTP_CLIENT_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ledger::http {

struct Reply {
  int status = 0;
  std::string content_type;
  std::string body;
};

// For https:// URLs: PEM contents. The server's certificate MUST chain to
// ca_pem and name the URL's host (DNS or IP SAN); with cert_pem and
// key_pem the client presents that certificate (servers that ask one).
struct TlsClient {
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
};

struct FetchOptions {
  int timeout_ms = 5000;                    // from connect to the last byte
  size_t max_answer = size_t{1} << 20;      // bytes, head and body
  const TlsClient* tls = nullptr;           // required for https://
  const char* peer = "server";              // how errors name the other end
  const char* content_type = "text/plain";  // of a POST's body
};

// Sends `method` (GET or POST; a POST carries `body` as `content_type`) to
// `url` ("http://host:port/path" or "https://..."). INVALID_ARGUMENT for a
// URL of another form, or https without `tls` or with unusable PEM;
// UNAVAILABLE when the server cannot be reached, fails TLS verification or
// does not answer in time; DATA_LOSS for an answer that is not HTTP or is
// above `max_answer`. Errors start with `peer` and the URL's authority.
absl::StatusOr<Reply> Fetch(std::string_view method, const std::string& url, const std::string& body,
                            const FetchOptions& options);

// A POST to a witness: Fetch("POST", ...) with errors naming "witness".
absl::StatusOr<Reply> HttpPost(const std::string& url, const std::string& body, int timeout_ms,
                               const TlsClient* tls = nullptr);

}  // namespace ledger::http

#endif  // UTIL_HTTP_CLIENT_H_
