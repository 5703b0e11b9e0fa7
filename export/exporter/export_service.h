// The gRPC ExportService: builds the pack in a temporary file and streams
// it in 64 KiB chunks, so memory does not grow with the pack.
//
// Thread-safe: gRPC calls it concurrently; each call has its own file.
#ifndef EXPORT_EXPORTER_EXPORT_SERVICE_H_
#define EXPORT_EXPORTER_EXPORT_SERVICE_H_

#include "export.grpc.pb.h"
#include "ledger/log/log.h"

namespace ledger::exporter {

class ExportService final : public evidence::ledger::v1::ExportService::Service {
 public:
  // `log` MUST outlive the service.
  explicit ExportService(const log::Log* log) : log_(log) {}

  grpc::Status Export(grpc::ServerContext* ctx, const evidence::ledger::v1::ExportRequest* request,
                      grpc::ServerWriter<evidence::ledger::v1::ExportChunk>* writer) override;

 private:
  const log::Log* const log_;
};

}  // namespace ledger::exporter

#endif  // EXPORT_EXPORTER_EXPORT_SERVICE_H_
