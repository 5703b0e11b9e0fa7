// The gRPC face of the log: thin adapters that decode a request, call
// ledger/log, and map the result and status. Built on gRPC's callback API so
// that no thread waits while an append is being made durable.
//
// Thread-safe: gRPC calls the handlers from its own threads; the log is
// thread-safe.
#ifndef LEDGER_SERVICE_SERVICE_H_
#define LEDGER_SERVICE_SERVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "auth/gate.h"
#include "ledger/backup/backup_root.h"
#include "ledger/log/log.h"
#include "ledger/service/tls.h"
#include "ledger_service.grpc.pb.h"

namespace ledger::service {

namespace pb = evidence::ledger::v1;

// At most this many bytes in one request: 1,000 receipts of 4 KiB.
inline constexpr int kMaxRequestBytes = 4 * 1024 * 1024 + 64 * 1024;

class IdleStreams;
class Later;

// Every handler admits its caller through the gate first: appends need the
// emitter role for each receipt's team (a receipt of another team is
// refused alone, PERMISSION_DENIED, while the rest are appended); entries
// and inclusion proofs need the auditor role for the entry's team; backups
// need admin; checkpoints, the verifier key and consistency proofs need an
// authenticated caller only. An entry's emitter is the caller's identity.
// Appends over a limit are refused late (auth::Limiter's hold).
class LedgerService final : public pb::LedgerService::CallbackService {
 public:
  // `log` and `gate` MUST outlive the service. An append stream that
  // receives nothing for `stream_idle_ms` is cancelled (0: never). Backups
  // go under `backup_root` (which MUST outlive the service); without one
  // they are refused, FAILED_PRECONDITION.
  LedgerService(log::Log* log, auth::Gate* gate, int64_t stream_idle_ms = 0,
                const backup::BackupRoot* backup_root = nullptr);
  ~LedgerService() override;

  grpc::ServerUnaryReactor* Append(grpc::CallbackServerContext* ctx,
                                   const pb::AppendRequest* request,
                                   pb::AppendResponse* response) override;
  grpc::ServerBidiReactor<pb::AppendRequest, pb::AppendResponse>* AppendStream(
      grpc::CallbackServerContext* ctx) override;
  grpc::ServerUnaryReactor* GetCheckpoint(grpc::CallbackServerContext* ctx,
                                          const pb::GetCheckpointRequest* request,
                                          pb::Checkpoint* response) override;
  grpc::ServerUnaryReactor* GetVerifierKey(grpc::CallbackServerContext* ctx,
                                           const pb::GetVerifierKeyRequest* request,
                                           pb::VerifierKey* response) override;
  grpc::ServerUnaryReactor* GetInclusionProof(grpc::CallbackServerContext* ctx,
                                              const pb::GetInclusionProofRequest* request,
                                              pb::InclusionProof* response) override;
  grpc::ServerUnaryReactor* GetRunProof(grpc::CallbackServerContext* ctx, const pb::GetRunProofRequest* request,
                                        pb::RunProof* response) override;
  grpc::ServerUnaryReactor* GetConsistencyProof(grpc::CallbackServerContext* ctx,
                                                const pb::GetConsistencyProofRequest* request,
                                                pb::ConsistencyProof* response) override;
  grpc::ServerWriteReactor<pb::Entry>* GetEntries(grpc::CallbackServerContext* ctx,
                                                  const pb::GetEntriesRequest* request) override;
  grpc::ServerUnaryReactor* Backup(grpc::CallbackServerContext* ctx, const pb::BackupRequest* request,
                                   pb::BackupResponse* response) override;

  struct Stats {
    // Receipts by kind (agent_start, ...) and result ("ok", "duplicate",
    // or the refusal's status code, e.g. "invalid_argument").
    stats::CounterFamily appends;
    stats::Histogram request_receipts{stats::Histogram::Decades(1000)};  // receipts per request
    stats::CounterFamily proofs;  // by type: inclusion, consistency
  };
  const Stats& stats() const { return stats_; }

  // Counts a request's receipts into stats(): by their results, or all
  // with `refused` when the whole request was.
  void Count(const pb::AppendRequest& request, const pb::AppendResponse& response);
  void Count(const pb::AppendRequest& request, const absl::Status& refused);

 private:

  log::Log* const log_;
  auth::Gate* const gate_;
  const backup::BackupRoot* const backup_root_;
  std::unique_ptr<IdleStreams> idle_;
  std::unique_ptr<Later> later_;
  Stats stats_;
};

struct ServerOptions {
  // TLS: PEM contents. With a certificate and key the port speaks TLS only,
  // and with client_ca_pem it requires and verifies client certificates.
  std::string cert_pem;
  std::string key_pem;
  std::string client_ca_pem;
  int max_message_bytes = kMaxRequestBytes;
  int max_streams_per_connection = 100;
  int64_t stream_idle_ms = 300'000;
  const backup::BackupRoot* backup_root = nullptr;  // null: backups refused
};

// A running server: the ledger service, gRPC health checking and server
// reflection on one listening address.
class Server {
 public:
  // `listen` is HOST:PORT; port 0 picks a free port. `log`, `gate` and
  // `extra` services MUST outlive the server. UNAVAILABLE when the address
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Start(log::Log* log, auth::Gate* gate,
                                                       const std::string& listen,
                                                       std::vector<grpc::Service*> extra = {},
                                                       const ServerOptions& options = {});
  ~Server();

  int port() const { return port_; }
  const LedgerService& service() const { return *service_; }
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

  std::unique_ptr<LedgerService> service_;
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

}  // namespace ledger::service

#endif  // LEDGER_SERVICE_SERVICE_H_
