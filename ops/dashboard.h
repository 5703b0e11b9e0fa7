// The dashboard: read-only HTML pages for people, on the HTTP port.
//
//   /                                     teams (and a form to name one)
//   /teams/T                              runs of team T, newest first
//   /teams/T/runs/R                       a run: totals, its steps with states and
//                                         anomalies (unknown ones stand out), the
//                                         evidence pack's download link
//   /teams/T/runs/R/steps/S?attempt=N     a step and its receipts, each with a link
//                                         to its inclusion proof
//   /teams/T/runs/R/pack.tar.gz           the run's evidence pack (CONTRACT section 7)
//   /proofs/N                             entry N and its inclusion proof, as JSON
//
// Every page is read through the ledger's own gRPC API, as its caller: the
// same access rules, the same validation. Pages need no script and load
// nothing from elsewhere.
//
// Thread-safe.
#ifndef OPS_DASHBOARD_H_
#define OPS_DASHBOARD_H_

#include <memory>
#include <string>

#include "export.grpc.pb.h"
#include "ledger/log/log.h"
#include "ledger_service.grpc.pb.h"
#include "ops/http.h"
#include "query.grpc.pb.h"

namespace ledger::ops {

class Dashboard {
 public:
  // `channel` reaches the ledger's gRPC API; `log` (for the list of teams)
  // MUST outlive the dashboard.
  Dashboard(std::shared_ptr<grpc::Channel> channel, const log::Log* log);

  // A response for a dashboard path, or nullptr-like status 404 for others.
  HttpResponse Handle(const HttpRequest& request);

 private:
  HttpResponse Teams();
  HttpResponse Runs(const std::string& team);
  HttpResponse Run(const std::string& team, const std::string& run);
  HttpResponse Step(const std::string& team, const std::string& run, const std::string& step, int64_t attempt);
  HttpResponse Pack(const std::string& team, const std::string& run);
  HttpResponse Proof(uint64_t seq);

  const log::Log* const log_;
  std::unique_ptr<evidence::ledger::v1::LedgerService::Stub> ledger_;
  std::unique_ptr<evidence::ledger::v1::QueryService::Stub> query_;
  std::unique_ptr<evidence::ledger::v1::ExportService::Stub> exports_;
};

}  // namespace ledger::ops

#endif  // OPS_DASHBOARD_H_
