// The gRPC ExportService: builds the pack in a temporary file and streams
// it in 64 KiB chunks, so memory does not grow with the pack.
//
// Thread-safe: gRPC calls it concurrently; each call has its own file.
#ifndef EXPORT_EXPORTER_EXPORT_SERVICE_H_
#define EXPORT_EXPORTER_EXPORT_SERVICE_H_

#include "export.grpc.pb.h"
#include "export/exporter/exporter.h"
#include "export/exporter/staging.h"
#include "ledger/rpc/auth/gate.h"
#include "ledger/storage/log/log.h"
#include "util/stats/stats.h"

namespace ledger::exporter {

class ExportService final : public evidence::ledger::v1::ExportService::Service {
 public:
  // `log`, `gate` and `staging` MUST outlive the service. Exports need the
  // auditor role for the scope's team; a seq range, for the team of every
  // entry in it. Packs are staged in `staging`, within its quota; without
  // it, in the system's temporary directory. `unknown_grace_ms` MUST be
  // the sweeper's grace (ledgerd --unknown-grace-ms); packs state it. A
  // scope with no entry is NOT_FOUND unless the request sets allow_empty
  // (EmptyScope): the check is here, not in a client, so that every caller
  // (ledgerctl, the dashboard's downloads, any gRPC client) is told before
  // a pack is staged or sent.
  ExportService(const log::Log* log, auth::Gate* gate, Staging* staging = nullptr,
                uint64_t unknown_grace_ms = kDefaultUnknownGraceMs)
      : log_(log), gate_(gate), staging_(staging), unknown_grace_ms_(unknown_grace_ms) {}

  // The packs' checkpoints carry what `cosign` gives (ExportPack). MUST be
  // set before the service serves, if at all.
  void SetCosign(CosignFn cosign) { cosign_ = std::move(cosign); }
  // The packs' checkpoint-time notes carry what `map_cosign` gives
  // (ExportPack), likewise.
  void SetMapCosign(CosignFn map_cosign) { map_cosign_ = std::move(map_cosign); }
  // Then what `more` gives of that (a TSA's time-stamp line), likewise.
  void ThenMapCosign(CosignFn more) {
    if (!map_cosign_) {
      map_cosign_ = std::move(more);
      return;
    }
    map_cosign_ = [first = std::move(map_cosign_), more = std::move(more)](const std::string& note) {
      auto lines = first(note);
      return lines.ok() ? more(*lines) : lines;
    };
  }

  grpc::Status Export(grpc::ServerContext* ctx, const evidence::ledger::v1::ExportRequest* request,
                      grpc::ServerWriter<evidence::ledger::v1::ExportChunk>* writer) override;

  // Exports by scope (run, team, seqs) and result ("ok" or the status code).
  const stats::CounterFamily& exports() const { return exports_; }

 private:
  grpc::Status Build(grpc::ServerContext* ctx, const evidence::ledger::v1::ExportRequest* request,
                     grpc::ServerWriter<evidence::ledger::v1::ExportChunk>* writer);
  absl::Status CheckScope(const auth::Caller& caller, const Scope& scope) const;

  const log::Log* const log_;
  auth::Gate* const gate_;
  Staging* const staging_;
  const uint64_t unknown_grace_ms_;
  CosignFn cosign_;
  CosignFn map_cosign_;
  stats::CounterFamily exports_;
};

}  // namespace ledger::exporter

#endif  // EXPORT_EXPORTER_EXPORT_SERVICE_H_
