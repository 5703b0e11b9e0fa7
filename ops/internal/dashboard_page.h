// The dashboard's page parts: the page around a body, error pages, links
// that keep the request's parameters, query parameters read with their
// rules, and the tables and forms several pages share. What these parts
// put on a page from a request or a record they escape (E, Seg); a page
// that adds more escapes it with them.
#ifndef LEDGER_OPS_INTERNAL_DASHBOARD_PAGE_H_
#define LEDGER_OPS_INTERNAL_DASHBOARD_PAGE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "ledger_service.grpc.pb.h"
#include "ops/internal/timeline.h"
#include "query.grpc.pb.h"
#include "util/http/message.h"

namespace ledger::ops::page {

namespace pb = evidence::ledger::v1;

// `s` escaped for HTML text and attribute values, its control and bidi
// characters shown as escapes (util/text/terminal.h).
std::string E(std::string_view s);
// A time in microseconds since the epoch, in UTC (ISO 8601).
std::string Time(int64_t us);
// How long before `now_us` the time `us` was, as a <time> element holding
// the UTC time ("12.5 s ago", "3 min 20 s ago"); "never" for 0.
std::string Ago(int64_t now_us, int64_t us);
// A step state or anomaly as the pages name it: "succeeded", "late_completion".
std::string StateName(pb::StepState s);
std::string AnomalyName(int a);
// The path of a step's page.
std::string StepHref(const pb::Step& st);

// A path segment or query value, percent-encoded.
std::string Seg(std::string_view s);

// The query parameter `name` as sent, "" when absent.
std::string Param(const http::HttpRequest& request, const std::string& name);

// ?refresh=N: seconds in [5, 3600], 0 when absent.
absl::StatusOr<int> RefreshOf(const http::HttpRequest& request);

// The links that turn auto-refresh off or on, keeping the page's other parameters.
std::string RefreshLinks(const http::HttpRequest& request, int refresh = 0);

// A whole page around `body` (HTML, escaped by its maker): the title, the
// style sheet, a CSP that allows no script, and a refresh every `refresh`
// seconds when above 0.
http::HttpResponse Html(int status, const std::string& title, const std::string& body, int refresh = 0);

// The error page of a failed call, with the HTTP status of its code (404,
// 403, 429, 400, else 503) and its message.
http::HttpResponse Failed(const grpc::Status& s);

// A 400 page naming what was wrong with the request.
http::HttpResponse BadRequest(const absl::Status& s);

// The links back: teams, the team, the run.
std::string Crumbs(const std::string& team, const std::string& run = "");

// Call totals as four table cells, the first opened and the last closed by
// the caller: model calls and tool calls (allowed / denied), tokens (in /
// out), cost in micro-units.
std::string Calls(const pb::CallTotals& c);

// A table of steps; `team` and `run` columns on request.
std::string StepsTable(const std::vector<pb::Step>& steps, bool team, bool run, const std::string& caption);

// "next page" for a list read with page tokens, the token in the query
// parameter `param` (the request's others kept).
std::string NextLink(const http::HttpRequest& request, const std::string& token, size_t shown,
                     const std::string& param = "after");

// "page N of M" for a list paged by number.
std::string NumberedLinks(const http::HttpRequest& request, int64_t page, bool more);

// ?page=N: a number from 1; 1 when absent.
absl::StatusOr<int64_t> PageOf(const http::HttpRequest& request);

// ?from / ?to: a UTC time, "2026-01-01T12:00" (as a datetime-local field
// sends it), with seconds, a trailing Z, or a date alone; 0 when absent.
absl::StatusOr<int64_t> TimeParam(const http::HttpRequest& request, const std::string& name);

// ?trace: a trace id, 32 hex digits (either case; returned in lower case),
// not all zero, with the blanks around it dropped; "" when absent or
// empty (the filter form sends it so). INVALID_ARGUMENT naming the field,
// the rule and what is wrong with this one.
absl::StatusOr<std::string> TraceParam(const http::HttpRequest& request);

// The filter form of a team's page, filled in with the request's values.
std::string FilterForm(const http::HttpRequest& request, const std::string& team);
// Links to the team's page over the last hour, day and week (UTC, from
// `now_us`), keeping the request's other filters.
std::string TimePresets(const http::HttpRequest& request, const std::string& team, int64_t now_us);

// The facts of a step, for its page.
// A team's history as two SVG bar charts: its unknown and failed steps,
// and the cost charged for its runs, by the day (UTC) they began (the
// buckets of `summary.history()`, a day each).
std::string HistoryCharts(const pb::TeamSummary& summary);
// A model or tool call's entry, for a run's timeline: its step and how it
// is shown; nullopt for any other entry.
struct Call {
  std::string team, run_id;
  std::string step_id;
  int64_t attempt = 1;
  TimelineCall shown;
};
std::optional<Call> CallOf(const pb::Entry& entry);
// The head of a table of receipts (ReceiptRow's), with its caption, up to
// its <tbody>.
std::string CallsTableHead(std::string_view caption);
// Whether a receipt's entry is of `kind` and `decision` (each "" for any).
bool ReceiptMatches(const pb::Entry& entry, const std::string& kind, const std::string& decision);
// The form that filters a step's receipts by kind and decision.
std::string ReceiptFilterForm(const http::HttpRequest& request, const std::string& team, const std::string& run,
                              const std::string& step, int64_t attempt, const std::vector<std::string>& kinds,
                              const std::vector<std::string>& decisions);
// Where `trace_id` is in the tracing UI: `trace_url` (a URL with
// "{trace_id}", as ledgerd's --trace-url checks) with it, escaped for an href.
std::string TraceHref(const std::string& trace_url, const std::string& trace_id);
// `trace_url` ("" or a URL with "{trace_id}"): where its trace id links.
std::string StepFacts(const pb::Step& st, const std::string& trace_url);

// One receipt as a row of the step's calls table.
std::string ReceiptRow(const pb::Entry& entry);

}  // namespace ledger::ops::page

#endif  // LEDGER_OPS_INTERNAL_DASHBOARD_PAGE_H_
