#include "ops/dashboard.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "ledger/format/hash/hash.h"
#include "ledger/rpc/server/status.h"
#include "nlohmann/json.hpp"
#include "ops/internal/dashboard_page.h"
#include "ops/internal/timeline.h"
#include "util/files/files.h"
#include "util/text/money.h"

namespace ledger::ops {

namespace pb = evidence::ledger::v1;

Dashboard::Dashboard(std::shared_ptr<grpc::Channel> channel, const log::Log* log, auth::Gate* gate,
                     exporter::Staging* staging, std::string trace_url)
    : trace_url_(std::move(trace_url)),
      log_(log),
      gate_(gate),
      staging_(staging),
      ledger_(pb::LedgerService::NewStub(channel)),
      query_(pb::QueryService::NewStub(channel)),
      exports_(pb::ExportService::NewStub(channel)) {}

std::unique_ptr<grpc::ClientContext> Dashboard::Context(const http::HttpRequest& request) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (gate_ != nullptr && gate_->tls()) {
    ctx->AddMetadata(std::string(auth::kActingForMetadata), request.identity);
    if (!request.via.empty()) ctx->AddMetadata(std::string(auth::kViaMetadata), request.via);
  }
  if (!request.request_id.empty()) ctx->AddMetadata("x-request-id", request.request_id);
  return ctx;
}

absl::Status Dashboard::Allowed(const std::string& identity, auth::Action action, const std::string& team) const {
  if (gate_ == nullptr || !gate_->tls()) return absl::OkStatus();
  return gate_->policy()->Check(identity.empty() ? "(no identity)" : identity, action, team);
}

http::HttpResponse Dashboard::Handle(const http::HttpRequest& request) {
  if (gate_ != nullptr && gate_->tls() && request.identity.empty()) {
    return page::Failed(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "client certificate: names no identity"));
  }
  auto refresh = page::RefreshOf(request);
  if (!refresh.ok()) return page::BadRequest(refresh.status());
  http::HttpResponse r = Route(request);
  // Auto-refresh for the pages people watch: a meta refresh, no script.
  if (r.status == 200 && r.content_type.rfind("text/html", 0) == 0) {
    if (*refresh > 0) {
      r.body.replace(r.body.find("<title>"), 0,
                     absl::StrCat("<meta http-equiv=\"refresh\" content=\"", *refresh, "\">"));
    }
    r.body.replace(r.body.find("<main>") + 6, 0, page::RefreshLinks(request, *refresh));
  }
  return r;
}

http::HttpResponse Dashboard::Route(const http::HttpRequest& request) {
  std::vector<std::string> parts;
  for (const std::string& raw : std::vector<std::string>(absl::StrSplit(request.raw_path, '/', absl::SkipEmpty()))) {
    auto decoded = http::UrlDecode(raw);
    if (!decoded.ok()) return http::Text(400, "bad escape in the path\n");
    parts.push_back(*decoded);
  }
  size_t n = parts.size();
  if (n == 0) {
    auto it = request.query.find("team");
    if (it != request.query.end() && !it->second.empty()) {
      http::HttpResponse r = http::Text(303, "");
      r.headers["Location"] = "/teams/" + page::Seg(it->second);
      return r;
    }
    return Teams(request);
  }
  if (parts[0] == "unknown" && n == 1) return Unknown(request);
  if (parts[0] == "proofs" && n == 2) {
    uint64_t seq = 0;
    if (parts[1].empty() || parts[1].size() > 19 || parts[1].find_first_not_of("0123456789") != std::string::npos) {
      return http::Text(400, "proofs: the seq is a number\n");
    }
    seq = std::stoull(parts[1]);
    return Proof(request, seq);
  }
  if (parts[0] != "teams" || n < 2) return http::Text(404, "not found\n");
  const std::string& team = parts[1];
  auth::Action action = n == 5 && parts[4] == "pack.tar.gz" ? auth::Action::kExport : auth::Action::kQuery;
  // A pack is built on a GET: a page of another site must not make the
  // caller's browser (and its client certificate) start exports.
  if (auto site = request.headers.find("sec-fetch-site"); action == auth::Action::kExport &&
                                                          site != request.headers.end() &&
                                                          site->second != "same-origin" && site->second != "none") {
    return page::Failed(grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                                     "pack downloads: only from the dashboard's own pages (this request came from "
                                     "another site: Sec-Fetch-Site: " +
                                         site->second + ")"));
  }
  if (absl::Status s = Allowed(request.identity, action, team); !s.ok()) {
    return page::Failed(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::string(s.message())));
  }
  if (n == 2) return Team(request, parts[1]);
  if (parts[2] != "runs" || n < 4) return http::Text(404, "not found\n");
  if (n == 4) return Run(request, parts[1], parts[3]);
  if (n == 5 && parts[4] == "pack.tar.gz") return Pack(request, parts[1], parts[3]);
  if (n == 6 && parts[4] == "steps") {
    int64_t attempt = 1;
    auto it = request.query.find("attempt");
    if (it != request.query.end()) {
      if (it->second.empty() || it->second.size() > 9 ||
          it->second.find_first_not_of("0123456789") != std::string::npos) {
        return http::Text(400, "attempt: a number\n");
      }
      attempt = std::stoll(it->second);
    }
    int64_t page = 1;
    if (auto p = request.query.find("page"); p != request.query.end()) {
      if (p->second.empty() || p->second.size() > 9 || p->second.find_first_not_of("0123456789") != std::string::npos ||
          std::stoll(p->second) < 1) {
        return http::Text(400, "page: a number from 1\n");
      }
      page = std::stoll(p->second);
    }
    bool receipts = Allowed(request.identity, auth::Action::kReadEntries, team).ok();
    return Step(request, parts[1], parts[3], parts[5], attempt, page, receipts);
  }
  return http::Text(404, "not found\n");
}

http::HttpResponse Dashboard::Teams(const http::HttpRequest& request) {
  auto page = page::PageOf(request);
  if (!page.ok()) return page::BadRequest(page.status());
  // An empty list would read as an empty ledger: say it is the caller's rule.
  if (gate_ != nullptr && gate_->tls()) {
    if (absl::Status s = gate_->policy()->CheckReadsSomeTeam(request.identity); !s.ok()) {
      return page::Failed(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::string(s.message())));
    }
  }
  // The teams the caller may query: the service lists no others.
  pb::ListTeamsResponse listed;
  auto tctx = Context(request);
  grpc::Status listed_status = query_->ListTeams(tctx.get(), pb::ListTeamsRequest(), &listed);
  if (!listed_status.ok()) return page::Failed(listed_status);
  const auto& teams = listed.teams();
  std::string body =
      "<h1>Evidence ledger</h1><form action=\"/\" method=\"get\" role=\"search\"><label>Team <input "
      "name=\"team\"></label> <button>Show runs</button></form>";
  if (teams.size() > 1) {
    body += "<p><a href=\"/unknown\">Steps in state unknown now, in every team you may see</a></p>";
  }
  const int64_t now_us = absl::ToUnixMicros(absl::Now());
  body += "<h2>Teams</h2>";
  int64_t first = (*page - 1) * kListPageSize;
  if (teams.empty()) {
    body += "<p class=\"muted\">no runs yet</p>";
  } else {
    body +=
        "<table class=\"teams\"><caption>Each team's steps now; overdue: pending past their deadline, to be "
        "declared unknown once the grace is over</caption><thead><tr><th scope=\"col\">team</th><th "
        "scope=\"col\">unknown</th><th scope=\"col\">failed</th><th scope=\"col\">pending</th><th "
        "scope=\"col\">overdue</th><th scope=\"col\">succeeded</th><th scope=\"col\">denied</th><th "
        "scope=\"col\">last activity</th></tr></thead><tbody>";
  }
  for (int64_t i = first; i < teams.size() && i < first + kListPageSize; ++i) {
    const std::string& t = teams[static_cast<int>(i)];
    pb::GetTeamSummaryRequest req;
    req.set_team(t);
    pb::TeamSummary sum;
    auto ctx = Context(request);
    if (grpc::Status s = query_->GetTeamSummary(ctx.get(), req, &sum); !s.ok()) return page::Failed(s);
    // A count links to the team's steps in that state.
    auto count = [&](int64_t n, const char* state) {
      if (n == 0) return std::string("0");
      return absl::StrCat("<a href=\"/teams/", page::Seg(t), "?state=", state, "\">", n, "</a>");
    };
    const char* cls = sum.steps_unknown() > 0   ? " class=\"unknown\""
                      : sum.steps_failed() > 0  ? " class=\"failed\""
                      : sum.steps_overdue() > 0 ? " class=\"denied\""
                                                : "";
    absl::StrAppend(&body, "<tr", cls, "><td><a href=\"/teams/", page::Seg(t), "\">", page::E(t), "</a></td><td>",
                    count(sum.steps_unknown(), "unknown"), "</td><td>", count(sum.steps_failed(), "failed"),
                    "</td><td>", count(sum.steps_pending(), "pending"), "</td><td>", sum.steps_overdue(), "</td><td>",
                    count(sum.steps_succeeded(), "succeeded"), "</td><td>", count(sum.steps_denied(), "denied"),
                    "</td><td class=\"t\">", page::Ago(now_us, sum.last_activity_us()), "</td></tr>");
  }
  if (!teams.empty()) body += "</tbody></table>";
  if (teams.size() > kListPageSize || *page > 1) {
    body += page::NumberedLinks(request, *page, first + kListPageSize < teams.size());
  }
  auto head = Context(request);
  pb::Checkpoint cp;
  if (ledger_->GetCheckpoint(head.get(), pb::GetCheckpointRequest(), &cp).ok()) {
    std::string witnesses;
    for (const pb::Cosignature& c : cp.cosignatures()) {
      absl::StrAppend(&witnesses, witnesses.empty() ? "" : ", ", page::E(c.witness()));
    }
    absl::StrAppend(&body, "<p class=\"checkpoint\">Latest checkpoint: ", cp.tree_size(), " entries, signed ",
                    cp.signed_at_us() > 0 ? page::Ago(now_us, cp.signed_at_us()) : "at a time it does not state", "; ",
                    witnesses.empty() ? "cosigned by no witness" : absl::StrCat("cosigned by ", witnesses),
                    ". Root <code>", hash::Hex(cp.root_hash()), "</code></p>");
  }
  return page::Html(200, "teams", body);
}

http::HttpResponse Dashboard::Unknown(const http::HttpRequest& request) {
  auto page = page::PageOf(request);
  if (!page.ok()) return page::BadRequest(page.status());
  if (*page > 20) return page::BadRequest(absl::InvalidArgumentError("page: at most 20 (narrow by team)"));
  pb::ListTeamsResponse listed;
  auto tctx = Context(request);
  grpc::Status s = query_->ListTeams(tctx.get(), pb::ListTeamsRequest(), &listed);
  if (!s.ok()) return page::Failed(s);
  // Each team's newest unknown steps, as many as this page needs, merged.
  const int64_t wanted = *page * kListPageSize;
  std::vector<pb::Step> steps;
  bool more = false;
  for (const std::string& team : listed.teams()) {
    pb::ListStepsRequest req;
    req.mutable_filter()->set_team(team);
    req.mutable_filter()->add_states(pb::STEP_STATE_UNKNOWN);
    req.set_page_size(static_cast<int32_t>(std::min<int64_t>(wanted + 1, 1000)));
    pb::ListStepsResponse resp;
    auto ctx = Context(request);
    s = query_->ListSteps(ctx.get(), req, &resp);
    if (!s.ok()) return page::Failed(s);
    if (!resp.next_page_token().empty()) more = true;
    for (pb::Step& st : *resp.mutable_steps()) steps.push_back(std::move(st));
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const pb::Step& a, const pb::Step& b) { return a.first_at_us() > b.first_at_us(); });
  size_t first = static_cast<size_t>((*page - 1) * kListPageSize);
  more = more || steps.size() > first + kListPageSize;
  std::vector<pb::Step> shown(steps.begin() + static_cast<long>(std::min(first, steps.size())),
                              steps.begin() + static_cast<long>(std::min(first + kListPageSize, steps.size())));
  std::string body = absl::StrCat(page::Crumbs(""),
                                  "<h1>Unknown now</h1><p>Steps with no completion by their deadline, "
                                  "in the ",
                                  listed.teams_size(),
                                  " team(s) you may see, newest first. Never "
                                  "counted as success.</p>");
  body += shown.empty() ? "<p class=\"muted\">No step is in state unknown.</p>"
                        : page::StepsTable(shown, /*team=*/true, /*run=*/true, "Steps in state unknown");
  body += page::NumberedLinks(request, *page, more);
  return page::Html(200, "unknown now", body);
}

grpc::Status Dashboard::TeamExists(const http::HttpRequest& request, const std::string& team) {
  pb::ListRunsRequest req;
  req.set_team(team);
  req.set_page_size(1);
  pb::ListRunsResponse resp;
  auto ctx = Context(request);
  grpc::Status s = query_->ListRuns(ctx.get(), req, &resp);
  if (!s.ok()) return s;
  if (resp.runs().empty()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("team: no runs in team ", team));
  }
  return grpc::Status::OK;
}

http::HttpResponse Dashboard::Team(const http::HttpRequest& request, const std::string& team) {
  if (grpc::Status s = TeamExists(request, team); !s.ok()) return page::Failed(s);
  if (std::string receipt = page::Param(request, "receipt"); !receipt.empty())
    return FindReceipt(request, team, receipt);
  if (std::string run = page::Param(request, "run"); !run.empty()) {
    pb::GetRunRequest rreq;
    rreq.set_team(team);
    rreq.set_run_id(run);
    pb::Run found;
    auto ctx = Context(request);
    if (grpc::Status s = query_->GetRun(ctx.get(), rreq, &found); !s.ok()) return page::Failed(s);
    http::HttpResponse r = http::Text(303, "");
    r.headers["Location"] = absl::StrCat("/teams/", page::Seg(team), "/runs/", page::Seg(run));
    return r;
  }
  auto from = page::TimeParam(request, "from");
  if (!from.ok()) return page::BadRequest(from.status());
  auto to = page::TimeParam(request, "to");
  if (!to.ok()) return page::BadRequest(to.status());
  if (*to != 0 && *to <= *from) return page::BadRequest(absl::InvalidArgumentError("to: must be after from"));
  auto trace = page::TraceParam(request);
  if (!trace.ok()) return page::BadRequest(trace.status());
  std::string state = page::Param(request, "state"), anomaly = page::Param(request, "anomaly");
  if (state.empty() && anomaly.empty() && trace->empty()) return Runs(request, team, *from, *to);
  pb::StepFilter filter;
  filter.set_team(team);
  filter.set_from_us(*from);
  filter.set_to_us(*to);
  filter.set_trace_id(*trace);
  if (!state.empty()) {
    pb::StepState v;
    if (!pb::StepState_Parse("STEP_STATE_" + absl::AsciiStrToUpper(state), &v) || v == pb::STEP_STATE_UNSPECIFIED) {
      return page::BadRequest(absl::InvalidArgumentError("state: one of pending, succeeded, failed, denied, unknown"));
    }
    filter.add_states(v);
  }
  if (!anomaly.empty()) {
    pb::Anomaly v;
    if (!pb::Anomaly_Parse("ANOMALY_" + absl::AsciiStrToUpper(anomaly), &v) || v == pb::ANOMALY_UNSPECIFIED) {
      return page::BadRequest(absl::InvalidArgumentError("anomaly: not an anomaly's name (see the form's list)"));
    }
    filter.add_anomalies(v);
  }
  // A trace id alone finds calls too; with other filters, steps only.
  if (!trace->empty() && state.empty() && anomaly.empty() && *from == 0 && *to == 0) return Trace(request, filter);
  return Steps(request, filter);
}

grpc::Status Dashboard::ListSteps(const http::HttpRequest& request, const pb::StepFilter& filter,
                                  pb::ListStepsResponse* out) {
  pb::ListStepsRequest req;
  *req.mutable_filter() = filter;
  req.set_page_size(kListPageSize);
  req.set_page_token(page::Param(request, "after"));
  auto ctx = Context(request);
  return query_->ListSteps(ctx.get(), req, out);
}

http::HttpResponse Dashboard::Steps(const http::HttpRequest& request, const pb::StepFilter& filter) {
  const std::string& team = filter.team();
  pb::ListStepsResponse resp;
  if (grpc::Status s = ListSteps(request, filter, &resp); !s.ok()) return page::Failed(s);
  std::vector<pb::Step> steps(resp.steps().begin(), resp.steps().end());
  std::string body =
      absl::StrCat(page::Crumbs(team), "<h1>Steps of ", page::E(team), "</h1>", page::FilterForm(request, team),
                   page::TimePresets(request, team, absl::ToUnixMicros(absl::Now())));
  body += steps.empty() ? "<p class=\"muted\">No step matches on this page.</p>"
                        : page::StepsTable(steps, /*team=*/false, /*run=*/true, "Steps that match, newest first");
  body += page::NextLink(request, resp.next_page_token(), steps.size());
  if (!filter.trace_id().empty()) {
    absl::StrAppend(&body, "<p class=\"muted\">Calls are found by a trace id alone: <a href=\"/teams/", page::Seg(team),
                    "?trace=", filter.trace_id(), "\">the steps and calls of this trace</a>.</p>");
  }
  return page::Html(200, team, body);
}

std::string Dashboard::History(const http::HttpRequest& request, const std::string& team) {
  // The last 14 days, a bucket a day, from midnight UTC.
  constexpr int64_t kDay = int64_t{86400} * 1000000;
  const int64_t today = absl::ToUnixMicros(absl::Now()) / kDay * kDay;
  pb::GetTeamSummaryRequest req;
  req.set_team(team);
  req.set_history_from_us(today - 13 * kDay);
  req.set_bucket_us(kDay);
  pb::TeamSummary sum;
  auto ctx = Context(request);
  if (!query_->GetTeamSummary(ctx.get(), req, &sum).ok()) return "";  // the runs below still show
  return page::HistoryCharts(sum);
}

http::HttpResponse Dashboard::Runs(const http::HttpRequest& request, const std::string& team, int64_t from_us,
                                   int64_t to_us) {
  pb::ListRunsRequest req;
  req.set_team(team);
  req.set_from_us(from_us);
  req.set_to_us(to_us);
  req.set_page_size(kListPageSize);
  req.set_page_token(page::Param(request, "after"));
  pb::ListRunsResponse resp;
  auto ctx = Context(request);
  grpc::Status s = query_->ListRuns(ctx.get(), req, &resp);
  if (!s.ok()) return page::Failed(s);
  std::string body = absl::StrCat(
      page::Crumbs(team), "<h1>Runs of ", page::E(team), "</h1>", page::FilterForm(request, team),
      page::TimePresets(request, team, absl::ToUnixMicros(absl::Now())), History(request, team),
      "<table class=\"runs\"><caption>Runs, newest first; a run with an unknown step in red, one with a failed "
      "step in orange</caption><thead><tr><th scope=\"col\">run</th><th scope=\"col\">workflow</th><th "
      "scope=\"col\">first entry (UTC)</th><th scope=\"col\">duration</th><th scope=\"col\">last "
      "activity</th><th scope=\"col\">succeeded</th><th scope=\"col\">failed</th><th scope=\"col\">denied</th>"
      "<th scope=\"col\">pending</th><th scope=\"col\">unknown</th><th scope=\"col\">anomalies</th><th "
      "scope=\"col\">charged</th></tr></thead><tbody>");
  const int64_t now_us = absl::ToUnixMicros(absl::Now());
  for (const pb::Run& r : resp.runs()) {
    const char* cls = r.steps_unknown() > 0 ? " class=\"unknown\"" : r.steps_failed() > 0 ? " class=\"failed\"" : "";
    absl::StrAppend(&body, "<tr", cls, "><td><a href=\"/teams/", page::Seg(team), "/runs/", page::Seg(r.run_id()),
                    "\">", page::E(r.run_id()), "</a></td><td>", page::E(r.workflow()), "</td><td class=\"t\">",
                    page::Time(r.first_at_us()), "</td><td class=\"t\">", Duration(r.last_at_us() - r.first_at_us()),
                    "</td><td class=\"t\">", page::Ago(now_us, r.last_at_us()), "</td><td>", r.steps_succeeded(),
                    "</td><td>", r.steps_failed(), "</td><td>", r.steps_denied(), "</td><td>", r.steps_pending(),
                    "</td><td>", r.steps_unknown(), "</td><td>", r.anomalies(), "</td><td>",
                    text::Dollars(r.charged_cost_micros()), "</td></tr>");
  }
  body += "</tbody></table>";
  if (resp.runs().empty()) body += "<p class=\"muted\">No runs.</p>";
  body += page::NextLink(request, resp.next_page_token(), static_cast<size_t>(resp.runs_size()));
  return page::Html(200, team, body);
}

http::HttpResponse Dashboard::Pack(const http::HttpRequest& request, const std::string& team, const std::string& run) {
  pb::ExportRequest req;
  req.mutable_run()->set_team(team);
  req.mutable_run()->set_run_id(run);
  // The pack is copied into a file of its own with no name, counted in the
  // staging quota until its download is done: another download can neither
  // open nor overwrite it.
  auto lease = std::make_shared<exporter::Staging::Lease>(staging_);
  auto fd = staging_->CreateUnlinked();
  if (!fd.ok()) return page::Failed(server::ToGrpc(fd.status()));
  auto file = std::make_shared<http::BodyFile>(*fd, lease);
  auto ctx = Context(request);
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
  auto reader = exports_->Export(ctx.get(), req);
  pb::ExportChunk chunk;
  uint64_t written = 0;
  absl::Status wrote;
  while (wrote.ok() && reader->Read(&chunk)) {
    wrote = files::WriteAll(file->fd(), chunk.data(), "the pack download");
    written += chunk.data().size();
    if (wrote.ok()) wrote = lease->Set(written);
  }
  if (!wrote.ok()) ctx->TryCancel();
  grpc::Status s = reader->Finish();
  if (!wrote.ok()) return page::Failed(server::ToGrpc(wrote));
  if (!s.ok()) return page::Failed(s);
  http::HttpResponse r;
  r.content_type = "application/gzip";
  r.file = std::move(file);
  r.headers["Content-Disposition"] =
      absl::StrCat("attachment; filename=\"", page::Seg(team), "-", page::Seg(run), ".tar.gz\"");
  return r;
}

http::HttpResponse Dashboard::Proof(const http::HttpRequest& request, uint64_t seq) {
  // The service checks the caller may read the entry's team.
  pb::GetEntriesRequest ereq;
  ereq.set_from_seq(seq);
  ereq.set_to_seq(seq + 1);
  auto ectx = Context(request);
  auto reader = ledger_->GetEntries(ectx.get(), ereq);
  pb::Entry entry;
  reader->Read(&entry);
  grpc::Status s = reader->Finish();
  if (!s.ok()) return page::Failed(s);
  pb::GetInclusionProofRequest req;
  req.set_seq(seq);
  pb::InclusionProof proof;
  auto ctx = Context(request);
  s = ledger_->GetInclusionProof(ctx.get(), req, &proof);
  if (!s.ok()) return page::Failed(s);
  if (page::Param(request, "format") == "tlog-proof") {
    // As `ledgerctl prove --format tlog-proof` prints it (c2sp.org/tlog-proof@v1):
    // the path in base64, then the checkpoint with its cosignatures.
    pb::GetCheckpointRequest creq;
    creq.set_tree_size(proof.tree_size());
    pb::Checkpoint cp;
    auto cctx = Context(request);
    s = ledger_->GetCheckpoint(cctx.get(), creq, &cp);
    if (!s.ok()) return page::Failed(s);
    std::string out = absl::StrCat("c2sp.org/tlog-proof@v1\nindex ", proof.seq(), "\n");
    for (const std::string& h : proof.hashes()) absl::StrAppend(&out, hash::Base64(h), "\n");
    return http::Text(200, absl::StrCat(out, "\n", cp.cosigned_note().empty() ? cp.note() : cp.cosigned_note()));
  }
  // As `ledgerctl prove` prints it, with the leaf and the checkpoint.
  nlohmann::json hashes = nlohmann::json::array();
  for (const std::string& h : proof.hashes()) hashes.push_back(hash::Hex(h));
  nlohmann::json j = {{"seq", proof.seq()},
                      {"leaf_hash", hash::Hex(proof.leaf_hash())},
                      {"tree_size", proof.tree_size()},
                      {"inclusion", hashes},
                      {"leaf", entry.leaf()},
                      {"checkpoint", proof.checkpoint()}};
  http::HttpResponse r = http::Text(200, j.dump(2) + "\n");
  r.content_type = "application/json";
  return r;
}

}  // namespace ledger::ops
