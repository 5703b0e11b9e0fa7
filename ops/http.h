// A small HTTP/1.1 server for operators' endpoints (/metrics, /healthz,
// /readyz, the dashboard): GET and HEAD only, one request per connection
// (Connection: close), a thread per connection up to a cap. Requests are
// at most 16 KiB of headers and must arrive within 10 s.
//
// Thread-safe: the handler is called from several threads at once.
#ifndef OPS_HTTP_H_
#define OPS_HTTP_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "export/pack/pack.h"

namespace ledger::ops {

struct HttpRequest {
  std::string method;
  std::string path;                          // decoded, without the query
  std::string raw_path;                      // as sent (split it before decoding segments)
  std::map<std::string, std::string> query;  // decoded
  std::map<std::string, std::string> headers;  // names in lower case
  std::string peer;                          // "ip:port"
  // With TLS: the identity of the verified client certificate (first URI
  // SAN, else DNS SAN, else CN; auth/identity.h). Empty in plain text.
  std::string identity;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // When set, the body is this file's contents (streamed), then it is removed.
  std::string file_to_send_and_remove;
  std::map<std::string, std::string> headers;
};

// A plain-text response.
HttpResponse Text(int status, std::string body);

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// HTTPS with client certificates: PEM contents. Clients MUST present a
// certificate that chains to client_ca_pem.
struct HttpTls {
  std::string cert_pem;
  std::string key_pem;
  std::string client_ca_pem;
};

class HttpServer {
 public:
  // Listens on HOST:PORT (port 0 picks one), with TLS when `tls` is given.
  // INVALID_ARGUMENT for a bad address or unusable TLS material,
  // UNAVAILABLE when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& listen, HttpHandler handler,
                                                           int max_connections = 32,
                                                           const HttpTls* tls = nullptr);
  // Stops accepting and waits for open connections to finish.
  ~HttpServer();

  const std::string& address() const { return address_; }

 private:
  HttpServer() = default;
  void Accept();
  void Serve(int fd, std::string peer);

  HttpHandler handler_;
  std::shared_ptr<void> tls_;  // an SSL_CTX, when serving TLS
  int listen_fd_ = -1;
  int max_connections_ = 32;
  std::string address_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> open_{0};
  std::thread acceptor_;
};

// "%41" and "+" decoded; INVALID_ARGUMENT for a bad escape.
absl::StatusOr<std::string> UrlDecode(std::string_view s);
// HTML text and attribute escaping: the report's (export/pack).
using pack::HtmlEscape;

}  // namespace ledger::ops

#endif  // OPS_HTTP_H_
