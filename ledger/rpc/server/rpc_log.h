// A gRPC server interceptor for the log of RPCs: every call gets a request
// id (the client's "x-request-id" metadata when it sent a usable one, else
// a fresh one), returned to the client as "x-request-id" initial metadata.
// A call that ends with an error is logged (event "rpc_failed": method,
// code, request id, caller identity, "via" the trusted proxy that named it
// when one did, message), and so is every export and backup (event
// "rpc_done"). A call the client cancelled is not the
// server's failure: it is logged at info (event "rpc_cancelled"), not as a
// warning. Refusal lines are limited to 20 a second; the next line says how
// many were suppressed. No receipt content is logged. Every call is counted
// in RpcStats by method and code, with its duration.
//
// Thread-safe.
#ifndef LEDGER_RPC_SERVER_RPC_LOG_H_
#define LEDGER_RPC_SERVER_RPC_LOG_H_

#include <memory>

#include "grpcpp/support/server_interceptor.h"
#include "ledger/rpc/auth/gate.h"
#include "util/stats/stats.h"

namespace ledger::server {

struct RpcStats {
  // Seconds from a call's arrival to its status (a stream's whole life), by
  // method ("/evidence.ledger.v1.LedgerService/Append").
  stats::HistogramFamily seconds{
      {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
  // Calls by method and code ("ok", "invalid_argument", ...).
  stats::CounterFamily calls;
};

// Routes gRPC's own log lines (handshake failures, for example) into the
// JSON log: event "grpc", level warn for gRPC's errors and info otherwise,
// with the source file and line. Call once, before gRPC starts.
void LogGrpcThroughJson();

// `gate` (for callers' identities) and `stats` MUST outlive the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewRpcLogFactory(auth::Gate* gate,
                                                                                        RpcStats* stats);

}  // namespace ledger::server

#endif  // LEDGER_RPC_SERVER_RPC_LOG_H_
