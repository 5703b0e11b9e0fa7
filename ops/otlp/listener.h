// The OTLP/HTTP listener's requests (ledgerd --otlp-listen): POST
// /v1/traces with an OTLP/JSON or OTLP/protobuf body, gzip or not. The
// receipts of its model and tool call spans (spans.h) are appended with the
// ledger's own gRPC Append, on the server's in-process channel and made for
// the caller (auth::kActingForMetadata): the gate identifies, authorizes
// (the emitter role for each receipt's team) and rate-limits the caller, and
// the log validates (credential screening included) and sequences each
// receipt exactly as for an Append over the network.
//
// The caller is identified and authorized before its body is read (Admit,
// the HTTP server's admit hook): with TLS a certificate without an identity
// gets 401, and one whose policy rule grants no append right at all (to any
// team) 403; only then is the body read. A gzip body may inflate to at most
// max_inflate_ratio times its size and max_body_bytes in all (413 beyond),
// and one identity (else peer address) has at most max_inflated_per_peer
// inflated bytes in hand at once across its requests (429 beyond).
//
// Answers (OTLP/HTTP): 200 with an ExportTraceServiceResponse, whose
// partial_success counts and names the spans refused; 400 for a body that
// cannot be read (nothing is appended); 404 for another path; 405 for
// another method; 413 for a body over the limits (inflated included); 415
// for another Content-Type or Content-Encoding; 401, 403, 429 (with
// Retry-After) and 503 when the whole Append is refused. Every 4xx and 5xx
// of its own carries a google.rpc.Status. Refused spans are logged (event
// "otlp_spans_refused": identity, peer, request id, counts, the message).
//
// Thread-safe: Handle is called from several threads at once.
#ifndef OPS_OTLP_LISTENER_H_
#define OPS_OTLP_LISTENER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "grpcpp/channel.h"
#include "ledger/rpc/auth/gate.h"
#include "util/http/http.h"
#include "util/sync/mutex.h"

namespace ledger::otlp {

class Listener {
 public:
  struct Options {
    // TLS: each Append is made for the caller's certificate identity (a
    // caller without one is refused, 401); plain text: as the server
    // itself ("local").
    bool tls = false;
    size_t max_body_bytes = 4 << 20;          // inflated, for gzip bodies
    size_t max_inflate_ratio = 100;           // inflated bytes per byte sent
    size_t max_inflated_per_peer = 16 << 20;  // inflated bytes in hand at once
    int64_t deadline_ms = 30'000;             // of each Append
  };

  // `channel` is the gRPC server's in-process channel; `gate` (its policy,
  // read before a body is) MUST outlive the listener.
  Listener(std::shared_ptr<grpc::Channel> channel, const auth::Gate* gate, Options options);
  ~Listener();

  http::HttpResponse Handle(const http::HttpRequest& request) const;
  // The answers Handle gives from a request's head alone (404, 405, 415,
  // 401, 403); nullopt when its body should be read. For
  // http::HttpOptions::admit, so that a caller who may not append makes the
  // server hold none of its body.
  std::optional<http::HttpResponse> Admit(const http::HttpRequest& head) const;

 private:
  // `who`'s share of max_inflated_per_peer, while it inflates and decodes.
  class Budget;

  struct Stub;
  std::unique_ptr<Stub> stub_;
  const auth::Gate* const gate_;
  const Options options_;
  mutable sync::Mutex mu_;
  mutable std::map<std::string, size_t> inflating_ ABSL_GUARDED_BY(mu_);  // identity or peer -> bytes reserved
};

}  // namespace ledger::otlp

#endif  // OPS_OTLP_LISTENER_H_
