// The OTLP/HTTP listener's requests (ledgerd --otlp-listen): POST
// /v1/traces with an OTLP/JSON or OTLP/protobuf body, gzip or not. The
// receipts of its model and tool call spans (spans.h) are appended with the
// ledger's own gRPC Append, on the server's in-process channel and made for
// the caller (auth::kActingForMetadata): the gate identifies, authorizes
// (the emitter role for each receipt's team) and rate-limits the caller, and
// the log validates (credential screening included) and sequences each
// receipt exactly as for an Append over the network.
//
// Answers (OTLP/HTTP): 200 with an ExportTraceServiceResponse, whose
// partial_success counts and names the spans refused; 400 for a body that
// cannot be read (nothing is appended); 404 for another path; 405 for
// another method; 413 for a body over the limit (inflated included); 415
// for another Content-Type or Content-Encoding; 401, 403, 429 (with
// Retry-After) and 503 when the whole Append is refused. Every 4xx and 5xx
// of its own carries a google.rpc.Status. Refused spans are logged (event
// "otlp_spans_refused": identity, peer, request id, counts, the message).
//
// Thread-safe: Handle is called from several threads at once.
#ifndef INGEST_OTLP_LISTENER_H_
#define INGEST_OTLP_LISTENER_H_

#include <memory>

#include "grpcpp/channel.h"
#include "ops/http.h"

namespace ledger::otlp {

class Listener {
 public:
  struct Options {
    // TLS: each Append is made for the caller's certificate identity (a
    // caller without one is refused, 401); plain text: as the server
    // itself ("local").
    bool tls = false;
    size_t max_body_bytes = 4 << 20;  // inflated, for gzip bodies
    int64_t deadline_ms = 30'000;     // of each Append
  };

  // `channel` is the gRPC server's in-process channel.
  Listener(std::shared_ptr<grpc::Channel> channel, Options options);
  ~Listener();

  ops::HttpResponse Handle(const ops::HttpRequest& request) const;

 private:
  struct Stub;
  std::unique_ptr<Stub> stub_;
  const Options options_;
};

}  // namespace ledger::otlp

#endif  // INGEST_OTLP_LISTENER_H_
