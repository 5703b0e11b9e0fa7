// The dashboard: read-only HTML pages for people, on the HTTP port.
//
//   /                                     teams, each with its steps counted by
//                                         state (GetTeamSummary) and its last
//                                         activity; the latest checkpoint's
//                                         age and cosigning witnesses; a form
//                                         to name a team
//   /unknown                              the steps in state unknown now, in every
//                                         team the caller may query (newest first)
//   /teams/T                              runs of team T, newest first; with
//                                         ?state, ?anomaly or ?trace: its steps
//                                         that match; ?from and ?to (UTC) bound
//                                         either; ?trace alone: also the calls
//                                         that carry it (an index, not a scan
//                                         of the log), or a redirect to the one
//                                         step or run page showing all it
//                                         found; ?run and ?receipt lead to the
//                                         run or to the step that holds the
//                                         receipt; 404 for a team with no runs
//   /teams/T/runs/R                       a run: totals, a timeline of its steps,
//                                         its steps with states and anomalies
//                                         (unknown ones stand out), the evidence
//                                         pack's download link
//   /teams/T/runs/R/steps/S?attempt=N     a step: its times, costs and decision,
//     [&kind=K][&decision=D]
//                                         and its receipts (the calls: model or
//                                         tool, target, tokens, cost, decision and
//                                         reason; denials stand out), each with a
//                                         link to its inclusion proof
//   /teams/T/runs/R/pack.tar.gz           the run's evidence pack (CONTRACT section 7);
//                                         ledgerd serves it from a pool of its own
//                                         (http::HttpOptions::slow_suffixes)
//   /proofs/N                             entry N and its inclusion proof, as JSON
//
//   A step page shows kStepPageSize receipts, ?page=N (from 1) the others,
//   with one read of the ledger for the page whatever the step's size. Every
//   other list shows kListPageSize rows a page, with a link to the next
//   (?after=TOKEN, the query service's page token; ?page=N for teams and
//   /unknown). Any page takes ?refresh=N (5..3600 seconds): the browser
//   reloads it every N seconds (a meta refresh, no script).
//
// Pages are read through the ledger's own gRPC API (its in-process channel:
// the same validation), as the HTTP caller: with TLS every call carries the
// caller's identity (auth::kActingForMetadata): its client certificate's,
// or the user a trusted proxy named (ops/caller.h), with the proxy in
// auth::kViaMetadata; so the caller's own policy rule, rate and concurrency
// limits apply and the RPC log names the caller, under the page's request
// id. The policy is also looked at first, for a clear refusal and to leave
// out what the caller may not see: queries for runs and steps, read-entries
// for receipts and proofs, export for packs; the home page of a caller that
// may read no team says so (403), where an empty list would read as an
// empty ledger. A caller whose certificate names no identity gets nothing.
// In plain-text mode every caller is "local", admin, as on the gRPC port.
// Pages need no script and load nothing from elsewhere.
//
// Thread-safe.
#ifndef OPS_DASHBOARD_H_
#define OPS_DASHBOARD_H_

#include <memory>
#include <string>
#include <vector>

#include "export.grpc.pb.h"
#include "export/exporter/staging.h"
#include "ledger/rpc/auth/gate.h"
#include "ledger/storage/log/log.h"
#include "ledger_service.grpc.pb.h"
#include "query.grpc.pb.h"
#include "util/http/http.h"

namespace ledger::ops {

inline constexpr int kStepPageSize = 100;
inline constexpr int kListPageSize = 50;
// A step's receipts filtered by kind or decision: among its first this many.
inline constexpr int64_t kMaxFilteredReceipts = 10000;
// A run page's timeline ticks the calls among its steps' first this many
// entries.
inline constexpr size_t kMaxTimelineCalls = 5000;
// GetEntries by seqs takes at most this many a call.
inline constexpr size_t kEntriesPerRead = 1000;
// A run's calls without a step are listed when it spans at most this many
// entries of the log.
inline constexpr uint64_t kMaxRunScan = 10000;

class Dashboard {
 public:
  // `channel` reaches the ledger's gRPC API with the right to read
  // everything; `log` (for the list of teams), `gate` (for the policy) and
  // `staging` (where pack downloads are held while they are sent, within
  // its quota) MUST outlive the dashboard. `trace_url`, when not empty, is
  // a URL with "{trace_id}" in it: a step's trace id links there.
  Dashboard(std::shared_ptr<grpc::Channel> channel, const log::Log* log, auth::Gate* gate, exporter::Staging* staging,
            std::string trace_url = "");

  // A response for a dashboard path, or nullptr-like status 404 for others.
  http::HttpResponse Handle(const http::HttpRequest& request);

 private:
  // OK when the caller may do `action` on `team`; PERMISSION_DENIED else.
  absl::Status Allowed(const std::string& identity, auth::Action action, const std::string& team) const;

  // A context for a call made for `request`'s caller.
  std::unique_ptr<grpc::ClientContext> Context(const http::HttpRequest& request) const;

  http::HttpResponse Route(const http::HttpRequest& request);
  http::HttpResponse Teams(const http::HttpRequest& request);
  http::HttpResponse Unknown(const http::HttpRequest& request);
  http::HttpResponse Team(const http::HttpRequest& request, const std::string& team);
  // The entries `seqs` (ascending, each once) read as the caller, in calls
  // of at most kEntriesPerRead.
  grpc::Status ReadEntries(const http::HttpRequest& request, const std::vector<uint64_t>& seqs,
                           std::vector<evidence::ledger::v1::Entry>* out);
  // A run's calls that name no step in the log, with their receipts when
  // the caller may read them and the run spans at most kMaxRunScan entries
  // (all its steps on this page, `steps`); "" when it has none.
  std::string UnattachedCalls(const http::HttpRequest& request, const evidence::ledger::v1::Run& run,
                              const std::vector<evidence::ledger::v1::Step>& steps, bool more_steps);
  // A team's last 14 days as charts (GetTeamSummary's history), or "".
  std::string History(const http::HttpRequest& request, const std::string& team);
  http::HttpResponse Runs(const http::HttpRequest& request, const std::string& team, int64_t from_us, int64_t to_us);
  // A page of kListPageSize steps that match `filter`, after the request's
  // ?after token.
  grpc::Status ListSteps(const http::HttpRequest& request, const evidence::ledger::v1::StepFilter& filter,
                         evidence::ledger::v1::ListStepsResponse* out);
  http::HttpResponse Steps(const http::HttpRequest& request, const evidence::ledger::v1::StepFilter& filter);
  http::HttpResponse FindReceipt(const http::HttpRequest& request, const std::string& team,
                                 const std::string& receipt_id);
  // The steps (`filter`: a team and a trace id) and the calls that carry
  // the trace id; a 303 to the one page that shows them all when there is
  // one (a step's, a run's for calls without a step in the log).
  http::HttpResponse Trace(const http::HttpRequest& request, const evidence::ledger::v1::StepFilter& filter);
  // NOT_FOUND when `team` has no runs (or the caller may not query it).
  grpc::Status TeamExists(const http::HttpRequest& request, const std::string& team);
  http::HttpResponse Run(const http::HttpRequest& request, const std::string& team, const std::string& run);
  http::HttpResponse Step(const http::HttpRequest& request, const std::string& team, const std::string& run,
                          const std::string& step, int64_t attempt, int64_t page, bool receipts);
  http::HttpResponse Pack(const http::HttpRequest& request, const std::string& team, const std::string& run);
  http::HttpResponse Proof(const http::HttpRequest& request, uint64_t seq);

  const std::string trace_url_;
  const log::Log* const log_;
  auth::Gate* const gate_;
  exporter::Staging* const staging_;
  std::unique_ptr<evidence::ledger::v1::LedgerService::Stub> ledger_;
  std::unique_ptr<evidence::ledger::v1::QueryService::Stub> query_;
  std::unique_ptr<evidence::ledger::v1::ExportService::Stub> exports_;
};

}  // namespace ledger::ops

#endif  // OPS_DASHBOARD_H_
