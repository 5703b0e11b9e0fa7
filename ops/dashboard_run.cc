// The dashboard's run and step pages (dashboard.h): a run with its
// timeline, steps and calls without a step; a step with its receipts.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "ops/dashboard.h"
#include "ops/internal/dashboard_page.h"
#include "ops/internal/timeline.h"
#include "util/text/money.h"

namespace ledger::ops {

namespace pb = evidence::ledger::v1;

grpc::Status Dashboard::ReadEntries(const http::HttpRequest& request, const std::vector<uint64_t>& seqs,
                                    std::vector<pb::Entry>* out) {
  for (size_t at = 0; at < seqs.size(); at += kEntriesPerRead) {
    pb::GetEntriesRequest ereq;
    for (size_t i = at; i < std::min(seqs.size(), at + kEntriesPerRead); ++i) ereq.add_seqs(seqs[i]);
    auto ctx = Context(request);
    auto reader = ledger_->GetEntries(ctx.get(), ereq);
    for (pb::Entry entry; reader->Read(&entry);) out->push_back(std::move(entry));
    if (grpc::Status s = reader->Finish(); !s.ok()) return s;
  }
  return grpc::Status::OK;
}

std::string Dashboard::UnattachedCalls(const http::HttpRequest& request, const pb::Run& run,
                                       const std::vector<pb::Step>& steps, bool more_steps) {
  const pb::CallTotals& u = run.unattached_calls();
  const int64_t n = u.model_calls_allowed() + u.model_calls_denied() + u.tool_calls_allowed() + u.tool_calls_denied();
  if (n == 0) return "";
  std::string out = absl::StrCat("<h2 id=\"calls\">Calls without a step</h2><p>", n,
                                 " call(s) of this run name no step in the log (OpenTelemetry spans, or calls "
                                 "before their step's start): counted in the totals, charged to the run.</p>");
  if (!Allowed(request.identity, auth::Action::kReadEntries, run.team()).ok()) {
    return out +
           "<p class=\"muted\">Their receipts: your role does not include reading this team's entries "
           "(auditor).</p>";
  }
  const uint64_t span = run.last_seq() - run.first_seq() + 1;
  if (more_steps || span > kMaxRunScan) {
    return absl::StrCat(out, "<p class=\"muted\">The run spans ", span,
                        " entries of the log: too many to list its calls here; its evidence pack holds them.</p>");
  }
  // The run's entries lie between its first and last: the run's calls
  // whose step is not among its steps are found in that range of the log
  // (the latest checkpoint's), then read as the caller, as a step's are.
  std::set<std::pair<std::string, int64_t>> known;
  for (const pb::Step& st : steps) known.insert({st.step_id(), st.attempt()});
  const log::LogView view = log_->View();
  std::vector<uint64_t> seqs;
  absl::Status scanned = view.ScanLeaves(run.first_seq(), std::min<uint64_t>(run.last_seq() + 1, view.size()),
                                         [&](uint64_t seq, std::string_view leaf) {
                                           pb::Entry entry;
                                           entry.set_leaf(std::string(leaf));
                                           std::optional<page::Call> call = page::CallOf(entry);
                                           if (call && call->team == run.team() && call->run_id == run.run_id() &&
                                               !known.count({call->step_id, call->attempt})) {
                                             seqs.push_back(seq);
                                           }
                                           return absl::OkStatus();
                                         });
  if (!scanned.ok()) return absl::StrCat(out, "<p class=\"muted\">", page::E(std::string(scanned.message())), "</p>");
  std::vector<pb::Entry> entries;
  if (grpc::Status s = ReadEntries(request, seqs, &entries); !s.ok()) {
    return absl::StrCat(out, "<p class=\"muted\">Their receipts could not be read: ", page::E(s.error_message()),
                        "</p>");
  }
  std::string rows;
  for (const pb::Entry& entry : entries) rows += page::ReceiptRow(entry);
  return absl::StrCat(out, page::CallsTableHead("The run's calls that name no step in the log, in log order"), rows,
                      "</tbody></table>");
}

http::HttpResponse Dashboard::Run(const http::HttpRequest& request, const std::string& team, const std::string& run) {
  pb::GetRunRequest rreq;
  rreq.set_team(team);
  rreq.set_run_id(run);
  pb::Run r;
  auto ctx = Context(request);
  grpc::Status s = query_->GetRun(ctx.get(), rreq, &r);
  if (!s.ok()) return page::Failed(s);
  std::string body = absl::StrCat(page::Crumbs(team, run), "<h1>Run ", page::E(run), "</h1><p>", page::E(r.workflow()),
                                  " · entries ", r.first_seq(), "–", r.last_seq(), " · ", r.entries(), " entries · ",
                                  page::Time(r.first_at_us()), " to ", page::Time(r.last_at_us()), "</p>");
  if (r.steps_unknown() > 0) {
    absl::StrAppend(&body, "<p class=\"unknown\">", r.steps_unknown(),
                    " step(s) UNKNOWN: no completion was reported by the deadline. Never counted as success.</p>");
  }
  absl::StrAppend(&body, "<p><a class=\"button\" href=\"/teams/", page::Seg(team), "/runs/", page::Seg(run),
                  "/pack.tar.gz\" download>Download the evidence pack</a> <span class=\"muted\">verify it offline: "
                  "<code>ledgerctl verify PACK --vkey FILE</code></span></p>");
  pb::ListStepsRequest sreq;
  sreq.mutable_filter()->set_team(team);
  sreq.mutable_filter()->set_run_id(run);
  sreq.set_page_size(kStepPageSize);
  sreq.set_page_token(page::Param(request, "after"));
  pb::ListStepsResponse listed;
  auto sctx = Context(request);
  s = query_->ListSteps(sctx.get(), sreq, &listed);
  if (!s.ok()) return page::Failed(s);
  std::vector<pb::Step> steps(listed.steps().begin(), listed.steps().end());
  // The calls of the steps shown, for the timeline's ticks: read with the
  // receipts (auditors), at most kMaxTimelineCalls entries.
  std::map<std::pair<std::string, int64_t>, std::vector<TimelineCall>> calls;
  if (Allowed(request.identity, auth::Action::kReadEntries, team).ok()) {
    std::set<uint64_t> unique;  // GetEntries wants them ascending, each once
    for (const pb::Step& st : steps) unique.insert(st.seqs().begin(), st.seqs().end());
    std::vector<uint64_t> seqs(unique.begin(), unique.end());
    if (seqs.size() > kMaxTimelineCalls) seqs.resize(kMaxTimelineCalls);
    std::vector<pb::Entry> entries;
    if (grpc::Status es = ReadEntries(request, seqs, &entries); !es.ok()) return page::Failed(es);
    for (const pb::Entry& entry : entries) {
      std::optional<page::Call> call = page::CallOf(entry);
      if (call) calls[{call->step_id, call->attempt}].push_back(std::move(call->shown));
    }
  }
  auto calls_of = [&](const pb::Step& st) {
    auto found = calls.find({st.step_id(), st.attempt()});
    return found == calls.end() ? std::vector<TimelineCall>() : found->second;
  };
  absl::StrAppend(&body, "<h2>Steps</h2>", StepTimeline(steps, page::StepHref, calls_of),
                  page::StepsTable(steps, /*team=*/false, /*run=*/false, "Steps, newest first"),
                  page::NextLink(request, listed.next_page_token(), steps.size()));
  body += UnattachedCalls(request, r, steps, !listed.next_page_token().empty());
  absl::StrAppend(&body,
                  "<h2>Totals</h2><table><caption>Calls of every step of the run</caption><thead><tr><th "
                  "scope=\"col\">model calls allowed / denied</th><th scope=\"col\">tool calls allowed / "
                  "denied</th><th scope=\"col\">tokens in / out</th><th scope=\"col\">call cost</th></tr>"
                  "</thead><tbody><tr><td>",
                  page::Calls(r.calls()), "</td></tr></tbody></table><p>Actual cost ",
                  text::Dollars(r.actual_cost_micros()), ", charged ", text::Dollars(r.charged_cost_micros()),
                  ": a failed or unknown step is charged at least the cost reserved at its start.</p>");
  return page::Html(200, run, body);
}

http::HttpResponse Dashboard::Step(const http::HttpRequest& request, const std::string& team, const std::string& run,
                                   const std::string& step, int64_t attempt, int64_t page, bool receipts) {
  pb::GetStepRequest req;
  req.set_team(team);
  req.set_run_id(run);
  req.set_step_id(step);
  req.set_attempt(attempt);
  pb::Step st;
  auto ctx = Context(request);
  grpc::Status s = query_->GetStep(ctx.get(), req, &st);
  if (!s.ok()) return page::Failed(s);
  std::string state = page::StateName(st.state());
  std::string body =
      absl::StrCat(page::Crumbs(team, run), "<h1>Step ", page::E(step), " <span class=\"muted\">attempt ", st.attempt(),
                   "</span></h1><p class=\"", state,
                   "\">State: ", state == "unknown" ? "UNKNOWN (no completion by the deadline)" : state, "</p>");
  if (!st.anomalies().empty()) {
    body += "<p class=\"anomaly\">Anomalies: ";
    for (int a : st.anomalies()) absl::StrAppend(&body, page::E(page::AnomalyName(a)), " ");
    body += "</p>";
  }
  body += page::StepFacts(st, trace_url_);
  if (!receipts) {
    body +=
        "<p class=\"muted\">Receipts and proofs: your role does not include reading this team's entries "
        "(auditor).</p>";
    return page::Html(200, step, body);
  }
  // The receipts' filters: a kind, a decision.
  const std::string kind = page::Param(request, "kind"), decision = page::Param(request, "decision");
  static const std::vector<std::string> kKinds = {"agent_start", "agent_exec", "model_call", "tool_call",
                                                  "step_unknown"};
  static const std::vector<std::string> kDecisions = {"allow", "deny"};
  if (!kind.empty() && std::find(kKinds.begin(), kKinds.end(), kind) == kKinds.end()) {
    return page::BadRequest(absl::InvalidArgumentError(absl::StrCat("kind: one of ", absl::StrJoin(kKinds, ", "))));
  }
  if (!decision.empty() && std::find(kDecisions.begin(), kDecisions.end(), decision) == kDecisions.end()) {
    return page::BadRequest(absl::InvalidArgumentError("decision: allow or deny"));
  }
  const bool filtered = !kind.empty() || !decision.empty();
  // Unfiltered, one page of receipts read in one call; filtered, the
  // step's first kMaxFilteredReceipts read and those that match paged.
  auto read = [&](int64_t from, int64_t to, std::vector<pb::Entry>* out) -> grpc::Status {
    std::vector<uint64_t> seqs(st.seqs().begin() + from, st.seqs().begin() + to);
    std::vector<pb::Entry> read;
    if (grpc::Status s = ReadEntries(request, seqs, &read); !s.ok()) return s;
    for (pb::Entry& entry : read) {
      if (!filtered || page::ReceiptMatches(entry, kind, decision)) out->push_back(std::move(entry));
    }
    return grpc::Status::OK;
  };
  std::vector<pb::Entry> entries;
  int64_t total = st.seqs_size();
  const bool cut = filtered && total > kMaxFilteredReceipts;
  if (filtered) {
    if (grpc::Status es = read(0, std::min<int64_t>(total, kMaxFilteredReceipts), &entries); !es.ok()) {
      return page::Failed(es);
    }
    total = static_cast<int64_t>(entries.size());
  }
  int64_t pages = std::max<int64_t>(1, (total + kStepPageSize - 1) / kStepPageSize);
  if (page > pages) {
    return http::Text(404, absl::StrCat("page: beyond the last page (", pages, ")\n"));
  }
  int64_t first = (page - 1) * kStepPageSize, last = std::min(total, first + kStepPageSize);
  if (filtered) {
    entries = std::vector<pb::Entry>(entries.begin() + first, entries.begin() + last);
  } else if (grpc::Status es = read(first, last, &entries); !es.ok()) {
    return page::Failed(es);
  }
  std::string link = absl::StrCat("/teams/", page::Seg(team), "/runs/", page::Seg(run), "/steps/", page::Seg(step),
                                  "?attempt=", st.attempt(), kind.empty() ? "" : "&amp;kind=", kind,
                                  decision.empty() ? "" : "&amp;decision=", decision, "&amp;page=");
  std::string nav =
      absl::StrCat("<nav class=\"pages\" aria-label=\"pages\"><p class=\"muted\">Receipts ", total == 0 ? 0 : first + 1,
                   "–", last, " of ", total, filtered ? " that match" : "",
                   cut ? absl::StrCat(" (among the step's first ", kMaxFilteredReceipts, ")") : "",
                   page > 1 ? absl::StrCat(" · <a href=\"", link, page - 1, "\">previous</a>") : "",
                   page < pages ? absl::StrCat(" · <a href=\"", link, page + 1, "\">next</a>") : "", "</p></nav>");
  absl::StrAppend(&body, "<h2>Receipts and calls</h2>",
                  page::ReceiptFilterForm(request, team, run, step, st.attempt(), kKinds, kDecisions), nav,
                  page::CallsTableHead("The step's receipts in log order; denied calls stand out"));
  for (const pb::Entry& entry : entries) body += page::ReceiptRow(entry);
  absl::StrAppend(&body, "</tbody></table>", pages > 1 ? nav : "");
  return page::Html(200, step, body);
}

}  // namespace ledger::ops
