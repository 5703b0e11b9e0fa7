// The dashboard's searches (dashboard.h): a receipt id leads to the step
// or run that holds it; a trace id lists the steps and the calls that carry
// it, or leads to the one page they are all on.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "ops/dashboard.h"
#include "ops/internal/dashboard_page.h"

namespace ledger::ops {

namespace pb = evidence::ledger::v1;

namespace {

// Where a call found by its trace id is shown (`href`: its step's page
// when the step is in the log, else its run's page, which lists the run's
// calls without a step), and its run and step as links there (HTML).
struct Place {
  std::string href, run, step;
};

Place PlaceOf(const std::string& team, const pb::CallRef& call) {
  const std::string run = absl::StrCat("/teams/", page::Seg(team), "/runs/", page::Seg(call.run_id()));
  Place p;
  p.href = call.step_in_log() ? absl::StrCat(run, "/steps/", page::Seg(call.step_id()), "?attempt=", call.attempt())
                              : run + "#calls";
  p.run = absl::StrCat("<a href=\"", page::E(call.step_in_log() ? run : p.href), "\">", page::E(call.run_id()), "</a>");
  if (call.step_in_log()) {
    p.step = absl::StrCat("<a href=\"", page::E(p.href), "\">", page::E(call.step_id()), "</a>");
  } else if (call.step_id().empty()) {
    p.step = "(no step named)";
  } else {
    p.step = absl::StrCat(page::E(call.step_id()), " (no step in the log)");
  }
  return p;
}

// The calls found, grouped by where they are shown (in the order of their
// first call), each group a table of their receipts (`entries`, as
// `calls`); or, without `entries` (a caller who may not read them), one
// table of their seqs and places.
std::string CallsByPlace(const std::string& team, const pb::ListCallsResponse& calls,
                         const std::vector<pb::Entry>* entries) {
  if (entries == nullptr) {
    std::string out =
        "<p class=\"muted\">Their receipts: your role does not include reading this team's entries (auditor)."
        "</p><table><caption>Calls that carry this trace id, in log order</caption><thead><tr><th "
        "scope=\"col\">seq</th><th scope=\"col\">run</th><th scope=\"col\">step</th></tr></thead><tbody>";
    for (int i = 0; i < calls.calls_size(); ++i) {
      const Place p = PlaceOf(team, calls.calls(i));
      absl::StrAppend(&out, "<tr><td>", calls.calls(i).seq(), "</td><td>", p.run, "</td><td>", p.step, "</td></tr>");
    }
    return out + "</tbody></table>";
  }
  std::vector<std::pair<Place, std::vector<int>>> groups;
  for (int i = 0; i < calls.calls_size(); ++i) {
    Place p = PlaceOf(team, calls.calls(i));
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first.href == p.href; });
    if (it == groups.end()) it = groups.insert(groups.end(), {std::move(p), {}});
    it->second.push_back(i);
  }
  std::string out;
  for (const auto& [place, members] : groups) {
    absl::StrAppend(&out, "<h3 class=\"place\">", place.run, " / ", place.step, "</h3>",
                    page::CallsTableHead("Its calls that carry this trace id, in log order"));
    // GetEntries answers each seq asked, in order.
    for (int i : members) {
      if (static_cast<size_t>(i) < entries->size()) out += page::ReceiptRow((*entries)[i]);
    }
    out += "</tbody></table>";
  }
  return out;
}

}  // namespace

http::HttpResponse Dashboard::FindReceipt(const http::HttpRequest& request, const std::string& team,
                                          const std::string& receipt_id) {
  if (absl::Status a = Allowed(request.identity, auth::Action::kReadEntries, team); !a.ok()) {
    return page::Failed(grpc::Status(
        grpc::StatusCode::PERMISSION_DENIED,
        absl::StrCat("receipt: finding a receipt needs the right to read the team's entries (", a.message(), ")")));
  }
  pb::GetInclusionProofRequest preq;
  preq.set_team(team);
  preq.set_receipt_id(receipt_id);
  pb::InclusionProof proof;
  auto pctx = Context(request);
  grpc::Status s = ledger_->GetInclusionProof(pctx.get(), preq, &proof);
  if (!s.ok()) return page::Failed(s);
  pb::GetEntriesRequest ereq;
  ereq.add_seqs(proof.seq());
  auto ectx = Context(request);
  auto reader = ledger_->GetEntries(ectx.get(), ereq);
  pb::Entry entry;
  reader->Read(&entry);
  s = reader->Finish();
  if (!s.ok()) return page::Failed(s);
  nlohmann::json leaf = nlohmann::json::parse(entry.leaf(), nullptr, false);
  if (leaf.is_discarded() || !leaf.contains("receipt") || !leaf["receipt"].is_object()) {
    return page::Failed(grpc::Status(grpc::StatusCode::DATA_LOSS, "receipt: the entry is not a receipt"));
  }
  const nlohmann::json& rc = leaf["receipt"];
  std::string run = rc.value("run_id", ""), step = rc.value("step_id", "");
  http::HttpResponse r = http::Text(303, "");
  r.headers["Location"] = absl::StrCat("/teams/", page::Seg(team), "/runs/", page::Seg(run));
  // A call whose step is not in the log (an OpenTelemetry span, a call
  // before its step's start) is listed on its run's page, not on a step
  // page that does not exist.
  if (!step.empty()) {
    pb::GetStepRequest sreq;
    sreq.set_team(team);
    sreq.set_run_id(run);
    sreq.set_step_id(step);
    sreq.set_attempt(rc.value("attempt", int64_t{1}));
    pb::Step found;
    auto sctx = Context(request);
    grpc::Status got = query_->GetStep(sctx.get(), sreq, &found);
    if (got.ok()) {
      absl::StrAppend(&r.headers["Location"], "/steps/", page::Seg(step), "?attempt=", sreq.attempt());
      return r;
    }
    if (got.error_code() != grpc::StatusCode::NOT_FOUND) return page::Failed(got);
  }
  absl::StrAppend(&r.headers["Location"], "#calls");
  return r;
}

http::HttpResponse Dashboard::Trace(const http::HttpRequest& request, const pb::StepFilter& filter) {
  const std::string& team = filter.team();
  const std::string& trace = filter.trace_id();
  pb::ListStepsResponse steps;
  if (grpc::Status s = ListSteps(request, filter, &steps); !s.ok()) return page::Failed(s);
  pb::ListCallsRequest creq;
  creq.set_team(team);
  creq.set_trace_id(trace);
  creq.set_page_size(kListPageSize);
  creq.set_page_token(page::Param(request, "calls_after"));
  pb::ListCallsResponse calls;
  auto cctx = Context(request);
  if (grpc::Status s = query_->ListCalls(cctx.get(), creq, &calls); !s.ok()) return page::Failed(s);
  // Everything found on one page (a step and its calls, a run's spans):
  // that page.
  const bool paged = !page::Param(request, "after").empty() || !page::Param(request, "calls_after").empty() ||
                     !steps.next_page_token().empty() || !calls.next_page_token().empty();
  std::set<std::string> places;
  for (const pb::Step& st : steps.steps()) places.insert(page::StepHref(st));
  for (const pb::CallRef& c : calls.calls()) places.insert(PlaceOf(team, c).href);
  if (!paged && places.size() == 1) {
    http::HttpResponse r = http::Text(303, "");
    r.headers["Location"] = *places.begin();
    return r;
  }
  std::vector<pb::Step> shown(steps.steps().begin(), steps.steps().end());
  std::string body = absl::StrCat(page::Crumbs(team), "<h1>Trace ", page::E(trace), " in ", page::E(team), "</h1>");
  if (!trace_url_.empty()) {
    absl::StrAppend(&body, "<p><a href=\"", page::TraceHref(trace_url_, trace),
                    "\" rel=\"noreferrer\">The trace in the tracing UI</a></p>");
  }
  body += page::FilterForm(request, team);
  body += shown.empty()
              ? "<p class=\"muted\">No step carries this trace id.</p>"
              : page::StepsTable(shown, /*team=*/false, /*run=*/true, "Steps whose trace id it is, newest first");
  body += page::NextLink(request, steps.next_page_token(), shown.size());
  body += "<h2 id=\"calls\">Calls</h2>";
  if (calls.calls().empty()) {
    body += "<p class=\"muted\">No call carries this trace id.</p>";
  } else if (!Allowed(request.identity, auth::Action::kReadEntries, team).ok()) {
    body += CallsByPlace(team, calls, nullptr);
  } else {
    std::vector<uint64_t> seqs;
    for (const pb::CallRef& c : calls.calls()) seqs.push_back(c.seq());
    std::vector<pb::Entry> entries;
    if (grpc::Status s = ReadEntries(request, seqs, &entries); !s.ok()) return page::Failed(s);
    body += CallsByPlace(team, calls, &entries);
  }
  body += page::NextLink(request, calls.next_page_token(), static_cast<size_t>(calls.calls_size()), "calls_after");
  return page::Html(200, team, body);
}

}  // namespace ledger::ops
