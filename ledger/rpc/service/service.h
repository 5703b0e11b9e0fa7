// The gRPC face of the log: thin adapters that decode a request, call
// ledger/storage/log, and map the result and status. Built on gRPC's callback API so
// that no thread waits while an append is being made durable.
//
// Thread-safe: gRPC calls the handlers from its own threads; the log is
// thread-safe.
#ifndef LEDGER_RPC_SERVICE_SERVICE_H_
#define LEDGER_RPC_SERVICE_SERVICE_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger/rpc/auth/gate.h"
#include "ledger/storage/backup/backup_root.h"
#include "ledger/storage/log/log.h"
#include "ledger_service.grpc.pb.h"
#include "util/sync/mutex.h"

namespace ledger::server {
class IdleStreams;
class Later;
}  // namespace ledger::server

namespace ledger::service {

namespace pb = evidence::ledger::v1;

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

  grpc::ServerUnaryReactor* Append(grpc::CallbackServerContext* ctx, const pb::AppendRequest* request,
                                   pb::AppendResponse* response) override;
  grpc::ServerBidiReactor<pb::AppendRequest, pb::AppendResponse>* AppendStream(
      grpc::CallbackServerContext* ctx) override;
  grpc::ServerUnaryReactor* GetCheckpoint(grpc::CallbackServerContext* ctx, const pb::GetCheckpointRequest* request,
                                          pb::Checkpoint* response) override;
  grpc::ServerUnaryReactor* GetVerifierKey(grpc::CallbackServerContext* ctx, const pb::GetVerifierKeyRequest* request,
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
  grpc::ServerUnaryReactor* GetReplication(grpc::CallbackServerContext* ctx, const pb::GetReplicationRequest* request,
                                           pb::Replication* response) override;
  // Key rotation (keys.cc): admin only, and only with SetRotationKeys.
  grpc::ServerUnaryReactor* RotateKey(grpc::CallbackServerContext* ctx, const pb::RotateKeyRequest* request,
                                      pb::RotateKeyResponse* response) override;
  grpc::ServerUnaryReactor* GetKeyHistory(grpc::CallbackServerContext* ctx, const pb::GetKeyHistoryRequest* request,
                                          pb::KeyHistory* response) override;
  // Erasure (erase.cc): two admins, the second approving the first's ask.
  grpc::ServerUnaryReactor* Erase(grpc::CallbackServerContext* ctx, const pb::EraseRequest* request,
                                  pb::EraseResponse* response) override;

  struct Stats {
    // Receipts by kind (agent_start, ...) and result ("ok", "duplicate",
    // or the refusal's status code, e.g. "invalid_argument").
    stats::CounterFamily appends;
    stats::Histogram request_receipts{stats::Histogram::Decades(1000)};  // receipts per request
    stats::CounterFamily proofs;                                         // by type: inclusion, consistency
    // Receipts appended (not duplicates) whose decision is deny, by team and
    // kind (agent_start, model_call, tool_call).
    stats::CounterFamily denied;
  };
  // The witnesses' cosignatures held for a checkpoint note (witness/client),
  // for GetCheckpoint. MUST be set before the service serves, if at all.
  struct Cosignature {
    std::string witness;
    uint64_t time = 0;
    std::string line;
  };
  using CosignaturesFn = std::function<std::vector<Cosignature>(std::string_view note)>;
  void SetCosignatures(CosignaturesFn fn) { cosignatures_ = std::move(fn); }
  // The monitors' map cosignatures held for a checkpoint-time note
  // (monitor/client), likewise.
  void SetMapCosignatures(CosignaturesFn fn) { map_cosignatures_ = std::move(fn); }
  // A TSA's time-stamp line held for a checkpoint-time note (tsa/client;
  // "" when none), appended after the monitors' lines; likewise.
  using TimeStampFn = std::function<std::string(std::string_view time_note)>;
  void SetTimeStamp(TimeStampFn fn) { time_stamp_ = std::move(fn); }
  // Fills GetReplication's answer on a node of a replicated shard
  // (ledger/storage/replication). MUST be set before the service serves, if at all.
  using ReplicationFn = std::function<void(pb::Replication*)>;
  void SetReplication(ReplicationFn fn) { replication_ = std::move(fn); }

  // How RotateKey gets the new key (ledger/keys, as ledgerd names keys):
  // `open` opens or makes the key of a request's new_key; `committed` is
  // called with it once the rotation is in the log (the data directory's
  // key file is replaced then). MUST be set before the service serves, if
  // at all; without it RotateKey is FAILED_PRECONDITION.
  struct RotationKeys {
    std::function<absl::StatusOr<note::Signer>(const std::string& spec)> open;
    std::function<absl::Status(const std::string& spec)> committed;
  };
  void SetRotationKeys(RotationKeys keys) { rotation_keys_ = std::move(keys); }

  const Stats& stats() const { return stats_; }

  // Counts a request's receipts into stats(): by their results, or all
  // with `refused` when the whole request was.
  void Count(const pb::AppendRequest& request, const pb::AppendResponse& response);
  void Count(const pb::AppendRequest& request, const absl::Status& refused);

 private:
  log::Log* const log_;
  auth::Gate* const gate_;
  const backup::BackupRoot* const backup_root_;
  std::unique_ptr<server::IdleStreams> idle_;
  std::unique_ptr<server::Later> later_;
  Stats stats_;
  CosignaturesFn cosignatures_;
  CosignaturesFn map_cosignatures_;
  TimeStampFn time_stamp_;
  ReplicationFn replication_;
  RotationKeys rotation_keys_;
  // Erasures asked for and not yet approved, by (seq, reason): who asked
  // and when (an hour's wait at most).
  struct Asked {
    std::string by;
    std::chrono::steady_clock::time_point at;
  };
  sync::Mutex erase_mu_;
  std::map<std::pair<uint64_t, std::string>, Asked> asked_ ABSL_GUARDED_BY(erase_mu_);
};

}  // namespace ledger::service

#endif  // LEDGER_RPC_SERVICE_SERVICE_H_
