// absl::Status to grpc::Status, for the services' handlers.
//
// Thread-safe: a pure function.
#ifndef LEDGER_RPC_SERVER_STATUS_H_
#define LEDGER_RPC_SERVER_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace ledger::server {

// Code and message unchanged (absl's and gRPC's codes are the same numbers).
inline grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

}  // namespace ledger::server

#endif  // LEDGER_RPC_SERVER_STATUS_H_
