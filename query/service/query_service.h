// The gRPC QueryService: step outcomes and run summaries for dashboards,
// read from the projections through a view of the log (LogView: the latest
// applied state). Handlers decode, read, and map statuses.
//
// Pagination: newest first by first_at_us; a page token is the last index
// row returned, so pages continue strictly below it and steps appended
// meanwhile (always newer) neither repeat nor shift later pages. Calls by
// trace id come oldest first, by seq: pages continue strictly above the
// token, and calls appended meanwhile come on the last page.
//
// Thread-safe: gRPC calls handlers concurrently; reads only.
#ifndef QUERY_SERVICE_QUERY_SERVICE_H_
#define QUERY_SERVICE_QUERY_SERVICE_H_

#include <functional>

#include "ledger/rpc/auth/gate.h"
#include "ledger/storage/log/log.h"
#include "query.grpc.pb.h"

namespace ledger::query {

namespace pb = evidence::ledger::v1;

class QueryService final : public pb::QueryService::Service {
 public:
  // `log` and `gate` MUST outlive the service; `log` MUST keep
  // projections. Every call needs a caller allowed to query its team.
  // `clock` (microseconds since the epoch; the system's when empty) is
  // what GetTeamSummary finds deadlines passed by: the sweeper's.
  using Clock = std::function<int64_t()>;
  QueryService(const log::Log* log, auth::Gate* gate, Clock clock = nullptr)
      : log_(log), gate_(gate), clock_(std::move(clock)) {}

  grpc::Status GetStep(grpc::ServerContext* ctx, const pb::GetStepRequest* request, pb::Step* response) override;
  grpc::Status ListSteps(grpc::ServerContext* ctx, const pb::ListStepsRequest* request,
                         pb::ListStepsResponse* response) override;
  grpc::Status GetRun(grpc::ServerContext* ctx, const pb::GetRunRequest* request, pb::Run* response) override;
  grpc::Status ListRuns(grpc::ServerContext* ctx, const pb::ListRunsRequest* request,
                        pb::ListRunsResponse* response) override;
  grpc::Status ListTeams(grpc::ServerContext* ctx, const pb::ListTeamsRequest* request,
                         pb::ListTeamsResponse* response) override;
  grpc::Status GetTeamSummary(grpc::ServerContext* ctx, const pb::GetTeamSummaryRequest* request,
                              pb::TeamSummary* response) override;
  grpc::Status ListCalls(grpc::ServerContext* ctx, const pb::ListCallsRequest* request,
                         pb::ListCallsResponse* response) override;
  grpc::Status WatchSteps(grpc::ServerContext* ctx, const pb::WatchStepsRequest* request,
                          grpc::ServerWriter<pb::StepChange>* writer) override;

 private:
  // GetTeamSummary's history, when the request asks for it.
  grpc::Status History(const log::LogView& view, const pb::GetTeamSummaryRequest& request, int64_t now_us,
                       pb::TeamSummary* response) const;

  const log::Log* const log_;
  auth::Gate* const gate_;
  const Clock clock_;
};

}  // namespace ledger::query

#endif  // QUERY_SERVICE_QUERY_SERVICE_H_
