// The process's gRPC server: the services it is given, gRPC health
// checking and server reflection on one listening address, TLS (with
// client certificates) when configured, every call through the RPC log
// (ledger/rpc/server/rpc_log.h); and the plain-text health-only server for probes.
//
// Thread-safe: gRPC runs the services on its own threads.
#ifndef LEDGER_RPC_SERVER_SERVER_H_
#define LEDGER_RPC_SERVER_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "ledger/rpc/auth/gate.h"
#include "ledger/rpc/server/rpc_log.h"
#include "ledger/rpc/server/tls.h"

namespace ledger::server {

// At most this many bytes in one request: 1,000 receipts of 4 KiB.
inline constexpr int kMaxRequestBytes = 4 * 1024 * 1024 + 64 * 1024;

struct ServerOptions {
  // TLS: PEM contents. With a certificate and key the port speaks TLS only,
  // and with client_ca_pem it requires and verifies client certificates.
  std::string cert_pem;
  std::string key_pem;
  std::string client_ca_pem;
  int max_message_bytes = kMaxRequestBytes;
  int max_streams_per_connection = 100;
  int64_t stream_idle_ms = 300'000;
};

// A running server: `services`, gRPC health checking and server reflection
// on one listening address.
class Server {
 public:
  // `listen` is HOST:PORT; port 0 picks a free port. `gate` (the callers'
  // identities for the RPC log) and `services` MUST outlive the server.
  // UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Start(auth::Gate* gate, const std::string& listen,
                                                       const std::vector<grpc::Service*>& services,
                                                       const ServerOptions& options = {});
  ~Server();

  int port() const { return port_; }
  // Every call to this server, by method and code, with its duration.
  const RpcStats& rpc_stats() const { return rpc_stats_; }
  // A channel to this server inside the process: its calls act as
  // auth::kInProcessIdentity (admin). For the dashboard, which checks its
  // own callers.
  std::shared_ptr<grpc::Channel> InProcessChannel();
  // HOST:PORT with the real port.
  const std::string& address() const { return address_; }

  // New TLS credentials for the handshakes from now on (ServerTls::Replace);
  // FAILED_PRECONDITION when the server speaks plain text.
  absl::Status ReloadTls(TlsPem pem);

  // Stops accepting calls and waits for running ones (up to the deadline).
  void Shutdown();

 private:
  Server() = default;

  RpcStats rpc_stats_;
  std::unique_ptr<ServerTls> tls_;  // before server_: gRPC fetches from it until the server is gone
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string address_;
};

// A plain-text server with only gRPC's health service (grpc.health.v1), for
// probes that cannot speak TLS (Kubernetes' gRPC probes): it reveals
// nothing but SERVING or NOT_SERVING.
class HealthServer {
 public:
  static absl::StatusOr<std::unique_ptr<HealthServer>> Start(const std::string& listen);
  ~HealthServer();
  void SetServing(bool serving);
  const std::string& address() const { return address_; }

 private:
  HealthServer() = default;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace ledger::server

#endif  // LEDGER_RPC_SERVER_SERVER_H_
