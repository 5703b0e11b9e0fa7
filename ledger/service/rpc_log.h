// A gRPC server interceptor for the log of RPCs: every call gets a request
// id (the client's "x-request-id" metadata when it sent a usable one, else
// a fresh one), returned to the client as "x-request-id" initial metadata.
// A call that ends with an error is logged (event "rpc_failed": method,
// code, request id, caller identity, message), and so is every export and
// backup (event "rpc_done"). Refusal lines are limited to 20 a second; the
// next line says how many were suppressed. No receipt content is logged.
//
// Thread-safe.
#ifndef LEDGER_SERVICE_RPC_LOG_H_
#define LEDGER_SERVICE_RPC_LOG_H_

#include <memory>

#include "auth/gate.h"
#include "grpcpp/support/server_interceptor.h"

namespace ledger::service {

// `gate` (for callers' identities) MUST outlive the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewRpcLogFactory(auth::Gate* gate);

}  // namespace ledger::service

#endif  // LEDGER_SERVICE_RPC_LOG_H_
