// A small HTTP/1.1 server for operators' endpoints (/metrics, /healthz,
// /readyz, the dashboard): GET and HEAD, and POST with a body of at most
// HttpOptions::max_body_bytes when that is set (the witness's
// add-checkpoint, OTLP/HTTP), sent with a Content-Length, or chunked when
// HttpOptions::chunked_bodies; one request per connection (Connection: close).
//
// One thread runs an event loop (epoll, non-blocking sockets and OpenSSL)
// that accepts connections, completes TLS handshakes, reads requests and
// writes responses, files included; a few worker threads run the handler
// (one more the requests for quick_paths, and a pool of their own those for
// slow_suffixes).
// So a connection that is slow to speak costs a socket, not a thread, and:
//   - the TLS handshake and the request head (at most 16 KiB) must arrive
//     within one deadline from the accept (HttpOptions::request_deadline_ms),
//     however the bytes trickle in;
//   - at most max_per_peer connections are open from one peer address;
//     beyond, a new one is closed at once (in plain text after a 503);
//   - at most max_connections are open in all; beyond, the one that has
//     waited longest for its request is closed to make room (when every
//     connection is being answered, the new one is closed);
//   - a response that makes no progress for send_idle_ms is dropped.
// Refusals (401, 403, 429) are logged (event "http_refused": path, status,
// identity, via, peer, request id, the response's first line).
//
// Thread-safe: the handler is called from several threads at once.
#ifndef UTIL_HTTP_HTTP_H_
#define UTIL_HTTP_HTTP_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ledger::http {

struct HttpRequest {
  std::string method;
  std::string path;                          // decoded, without the query
  std::string raw_path;                      // as sent (split it before decoding segments)
  std::map<std::string, std::string> query;  // decoded
  std::string peer;                          // "ip:port"
  // Names in lower case; a header sent more than once has its values
  // joined with ", " (RFC 9110 section 5.3).
  std::map<std::string, std::string> headers;
  // With TLS: the identity of the verified client certificate (first URI
  // SAN, else DNS SAN, else CN; util/tls/identity.h), or whom
  // HttpOptions::identify made the request for. Empty in plain text.
  std::string identity;
  // When HttpOptions::identify made the request another's: the identity
  // of the certificate it came with (a trusted proxy's), for the logs.
  std::string via;
  // The client's X-Request-Id when usable (jsonlog::RequestId), else a
  // fresh one; the response carries it back as X-Request-Id.
  std::string request_id;
  // A POST's body (Content-Length bytes, or the chunks' data); empty otherwise.
  std::string body;
};

// A response body on disk: an open descriptor, read from offset 0 to its
// end when the response is sent, and closed when the response is done
// (sent, cut short, refused or its connection gone), whatever `hold` keeps
// (a staging quota's lease) released with it. The file SHOULD have no name
// (exporter::Staging::CreateUnlinked), so that no other request can open,
// truncate or replace it and nothing is left on disk after a crash.
class BodyFile {
 public:
  // Takes `fd`, open for reading.
  explicit BodyFile(int fd, std::shared_ptr<void> hold = nullptr) : fd_(fd), hold_(std::move(hold)) {}
  ~BodyFile();
  BodyFile(const BodyFile&) = delete;
  BodyFile& operator=(const BodyFile&) = delete;

  int fd() const { return fd_; }

 private:
  const int fd_;
  std::shared_ptr<void> hold_;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // When set, the body is this file's contents (streamed), not `body`.
  std::shared_ptr<BodyFile> file;
  // Sent after the server's own; a "Cache-Control" replaces its default "no-store".
  std::map<std::string, std::string> headers;
  // Why the request was refused, for the log line of a 403 or 429 (not
  // sent); when empty, the first line of a plain-text body.
  std::string refusal;
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

struct HttpOptions {
  int max_connections = 512;         // open at once, from all peers
  int max_per_peer = 16;             // open at once from one peer address
  int request_deadline_ms = 10'000;  // from the accept to a whole request head, TLS handshake included
  int send_idle_ms = 60'000;         // a response making no progress this long is dropped
  int workers = 4;                   // threads running the handler
  // Requests for these paths (e.g. probes and scrapes) run on a thread of
  // their own, so they never wait behind slow pages or pack downloads.
  std::vector<std::string> quick_paths;
  // Requests whose path (as sent, without the query) ends with one of
  // these (pack downloads: long and heavy) run on slow_workers threads of
  // their own, so that they never hold the threads that serve pages. At
  // most slow_per_identity of them are taken from one identity (the
  // client certificate's, else the peer address) at once, 429 beyond; at
  // most slow_queue wait or run in all, 503 beyond.
  std::vector<std::string> slow_suffixes;
  int slow_workers = 2;
  int slow_per_identity = 2;
  int slow_queue = 8;
  // POST is accepted, with a body of at most this many bytes (413 beyond:
  // before it is read when Content-Length says so, else once the chunks
  // pass it); 0: POST is refused with 405.
  size_t max_body_bytes = 0;
  // POST bodies may also come chunked (Transfer-Encoding: chunked), as
  // Node's http client sends a streamed body; false: 411 for them.
  bool chunked_bodies = false;
  // Bytes of request bodies still arriving that one peer address may have
  // held at once (the raw bytes read past the heads, and chunks decoded so
  // far, over all its connections); the request whose bytes pass it is
  // answered 429 and closed. 0: four times max_body_bytes.
  size_t max_body_bytes_per_peer = 0;
  // Called for each POST once its head is in, before its body is read, with
  // everything of the request but the body (method, paths, query, headers,
  // peer, identity): a response refuses the request with no byte of its
  // body read (an OTLP caller that may not append). Runs on the server's
  // loop thread: it MUST be quick and MUST NOT block.
  std::function<std::optional<HttpResponse>(const HttpRequest& head)> admit;
  // Called for each request once its head is in, before admit and before
  // its body is read, with everything of the request but the body: it MAY
  // set request.identity to whom the request is made for (a user that a
  // trusted proxy names) and request.via to the certificate's identity; the
  // handler, slow_per_identity and the logs then see those. A response
  // refuses the request. Runs on the server's loop thread: it MUST be quick
  // and MUST NOT block.
  std::function<std::optional<HttpResponse>(HttpRequest& head)> identify;
};

class EventLoop;

class HttpServer {
 public:
  // Listens on HOST:PORT (port 0 picks one), with TLS when `tls` is given.
  // INVALID_ARGUMENT for a bad address or unusable TLS material,
  // UNAVAILABLE when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& listen, HttpHandler handler,
                                                           const HttpOptions& options = {},
                                                           const HttpTls* tls = nullptr);
  // Stops accepting, closes every connection and waits for running
  // handlers to return; no handler runs after it.
  ~HttpServer();

  const std::string& address() const { return address_; }

  // New certificate, key and client CAs for handshakes from now on (open
  // connections keep theirs). INVALID_ARGUMENT for unusable material, which
  // changes nothing; FAILED_PRECONDITION for a server started without TLS.
  absl::Status ReloadTls(const HttpTls& tls);

 private:
  HttpServer() = default;

  std::unique_ptr<EventLoop> loop_;
  std::string address_;
};

// "%41" and "+" decoded; INVALID_ARGUMENT for a bad escape.
absl::StatusOr<std::string> UrlDecode(std::string_view s);

}  // namespace ledger::http

#endif  // UTIL_HTTP_HTTP_H_
