#include "ops/dashboard.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpcpp/grpcpp.h"
#include "ledger/hash/hash.h"
#include "nlohmann/json.hpp"

namespace ledger::ops {
namespace {

namespace pb = evidence::ledger::v1;

constexpr char kStyle[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}"
    "th{background:#f3f3f3}.unknown{background:#ffd6d6;font-weight:bold}.unknown td:first-child::before"
    "{content:'\\26A0  '}.denied{background:#fff1c9}.failed{background:#ffe7d1}.succeeded{background:#e7f7e7}"
    ".anomaly{color:#a00}.muted{color:#777}a.button{display:inline-block;padding:.4em .8em;border:1px solid #246;"
    "border-radius:4px;text-decoration:none;background:#eef4fb}code{font-size:12px}";

std::string E(std::string_view s) { return HtmlEscape(s); }

// A path segment, percent-encoded.
std::string Seg(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string Time(int64_t us) {
  if (us <= 0) return "";
  std::time_t secs = static_cast<std::time_t>(us / 1'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

std::string Lower(std::string_view name, std::string_view prefix) {
  std::string s(name.substr(name.rfind(prefix, 0) == 0 ? prefix.size() : 0));
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string StateName(pb::StepState s) { return Lower(pb::StepState_Name(s), "STEP_STATE_"); }
std::string AnomalyName(int a) { return Lower(pb::Anomaly_Name(static_cast<pb::Anomaly>(a)), "ANOMALY_"); }

HttpResponse Html(int status, const std::string& title, const std::string& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/html; charset=utf-8";
  r.headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'";
  r.body = absl::StrCat("<!doctype html><html><head><meta charset=\"utf-8\"><title>", E(title),
                        " · evidence ledger</title><style>", kStyle, "</style></head><body>", body,
                        "</body></html>\n");
  return r;
}

HttpResponse Failed(const grpc::Status& s) {
  int status = 503;
  switch (s.error_code()) {
    case grpc::StatusCode::NOT_FOUND: status = 404; break;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED: status = 403; break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: status = 429; break;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE: status = 400; break;
    default: break;
  }
  HttpResponse r = Html(status, "error", absl::StrCat("<h1>", status, "</h1><p>", E(s.error_message()),
                                                      "</p><p><a href=\"/\">teams</a></p>"));
  r.refusal = s.error_message();
  return r;
}

std::string Crumbs(const std::string& team, const std::string& run = "") {
  std::string out = "<p class=\"muted\"><a href=\"/\">teams</a>";
  if (!team.empty()) absl::StrAppend(&out, " / <a href=\"/teams/", Seg(team), "\">", E(team), "</a>");
  if (!run.empty()) {
    absl::StrAppend(&out, " / <a href=\"/teams/", Seg(team), "/runs/", Seg(run), "\">", E(run), "</a>");
  }
  return out + "</p>";
}

std::string Calls(const pb::CallTotals& c) {
  return absl::StrCat(c.model_calls_allowed(), " / ", c.model_calls_denied(), "</td><td>", c.tool_calls_allowed(),
                      " / ", c.tool_calls_denied(), "</td><td>", c.input_tokens(), " / ", c.output_tokens(),
                      "</td><td>", c.cost_micros());
}

}  // namespace

Dashboard::Dashboard(std::shared_ptr<grpc::Channel> channel, const log::Log* log, auth::Gate* gate)
    : log_(log),
      gate_(gate),
      ledger_(pb::LedgerService::NewStub(channel)),
      query_(pb::QueryService::NewStub(channel)),
      exports_(pb::ExportService::NewStub(channel)) {}

std::unique_ptr<grpc::ClientContext> Dashboard::Context(const HttpRequest& request) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (gate_ != nullptr && gate_->tls()) ctx->AddMetadata(std::string(auth::kActingForMetadata), request.identity);
  if (!request.request_id.empty()) ctx->AddMetadata("x-request-id", request.request_id);
  return ctx;
}

absl::Status Dashboard::Allowed(const std::string& identity, auth::Action action, const std::string& team) const {
  if (gate_ == nullptr || !gate_->tls()) return absl::OkStatus();
  return gate_->policy()->Check(identity.empty() ? "(no identity)" : identity, action, team);
}

HttpResponse Dashboard::Handle(const HttpRequest& request) {
  if (gate_ != nullptr && gate_->tls() && request.identity.empty()) {
    return Failed(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "client certificate: names no identity"));
  }
  std::vector<std::string> parts;
  for (const std::string& raw : std::vector<std::string>(absl::StrSplit(request.raw_path, '/', absl::SkipEmpty()))) {
    auto decoded = UrlDecode(raw);
    if (!decoded.ok()) return Text(400, "bad escape in the path\n");
    parts.push_back(*decoded);
  }
  size_t n = parts.size();
  if (n == 0) {
    auto it = request.query.find("team");
    if (it != request.query.end() && !it->second.empty()) {
      HttpResponse r = Text(303, "");
      r.headers["Location"] = "/teams/" + Seg(it->second);
      return r;
    }
    return Teams(request);
  }
  if (parts[0] == "proofs" && n == 2) {
    uint64_t seq = 0;
    if (parts[1].empty() || parts[1].size() > 19 || parts[1].find_first_not_of("0123456789") != std::string::npos) {
      return Text(400, "proofs: the seq is a number\n");
    }
    seq = std::stoull(parts[1]);
    return Proof(request, seq);
  }
  if (parts[0] != "teams" || n < 2) return Text(404, "not found\n");
  const std::string& team = parts[1];
  auth::Action action = n == 5 && parts[4] == "pack.tar.gz" ? auth::Action::kExport : auth::Action::kQuery;
  if (absl::Status s = Allowed(request.identity, action, team); !s.ok()) {
    return Failed(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::string(s.message())));
  }
  if (n == 2) return Runs(request, parts[1]);
  if (parts[2] != "runs" || n < 4) return Text(404, "not found\n");
  if (n == 4) return Run(request, parts[1], parts[3]);
  if (n == 5 && parts[4] == "pack.tar.gz") return Pack(request, parts[1], parts[3]);
  if (n == 6 && parts[4] == "steps") {
    int64_t attempt = 1;
    auto it = request.query.find("attempt");
    if (it != request.query.end()) {
      if (it->second.empty() || it->second.size() > 9 ||
          it->second.find_first_not_of("0123456789") != std::string::npos) {
        return Text(400, "attempt: a number\n");
      }
      attempt = std::stoll(it->second);
    }
    int64_t page = 1;
    if (auto p = request.query.find("page"); p != request.query.end()) {
      if (p->second.empty() || p->second.size() > 9 || p->second.find_first_not_of("0123456789") != std::string::npos ||
          std::stoll(p->second) < 1) {
        return Text(400, "page: a number from 1\n");
      }
      page = std::stoll(p->second);
    }
    bool receipts = Allowed(request.identity, auth::Action::kReadEntries, team).ok();
    return Step(request, parts[1], parts[3], parts[5], attempt, page, receipts);
  }
  return Text(404, "not found\n");
}

HttpResponse Dashboard::Teams(const HttpRequest& request) {
  // The teams the caller may query: the service lists no others.
  pb::ListTeamsResponse listed;
  auto tctx = Context(request);
  grpc::Status listed_status = query_->ListTeams(tctx.get(), pb::ListTeamsRequest(), &listed);
  if (!listed_status.ok()) return Failed(listed_status);
  const auto& teams = listed.teams();
  std::string body = "<h1>Evidence ledger</h1><form action=\"/\" method=\"get\"><label>Team <input name=\"team\">"
                     "</label> <button>Show runs</button></form><h2>Teams</h2><ul>";
  for (const std::string& t : teams) absl::StrAppend(&body, "<li><a href=\"/teams/", Seg(t), "\">", E(t), "</a></li>");
  if (teams.empty()) body += "<li class=\"muted\">no runs yet</li>";
  auto head = Context(request);
  pb::Checkpoint cp;
  if (ledger_->GetCheckpoint(head.get(), pb::GetCheckpointRequest(), &cp).ok()) {
    absl::StrAppend(&body, "</ul><p class=\"muted\">Latest checkpoint: ", cp.tree_size(), " entries, root <code>",
                    hash::Hex(cp.root_hash()), "</code></p>");
  } else {
    body += "</ul>";
  }
  return Html(200, "teams", body);
}

HttpResponse Dashboard::Runs(const HttpRequest& request, const std::string& team) {
  pb::ListRunsRequest req;
  req.set_team(team);
  req.set_page_size(200);
  pb::ListRunsResponse resp;
  auto ctx = Context(request);
  grpc::Status s = query_->ListRuns(ctx.get(), req, &resp);
  if (!s.ok()) return Failed(s);
  std::string body = absl::StrCat(Crumbs(team), "<h1>Runs of ", E(team), "</h1><table><tr><th>run</th><th>workflow"
                                  "</th><th>first entry</th><th>steps</th><th>succeeded</th><th>failed</th><th>denied"
                                  "</th><th>pending</th><th>unknown</th><th>anomalies</th></tr>");
  for (const pb::Run& r : resp.runs()) {
    absl::StrAppend(&body, "<tr", r.steps_unknown() > 0 ? " class=\"unknown\"" : "", "><td><a href=\"/teams/",
                    Seg(team), "/runs/", Seg(r.run_id()), "\">", E(r.run_id()), "</a></td><td>", E(r.workflow()),
                    "</td><td>", Time(r.first_at_us()), "</td><td>",
                    r.steps_succeeded() + r.steps_failed() + r.steps_denied() + r.steps_pending() + r.steps_unknown(),
                    "</td><td>", r.steps_succeeded(), "</td><td>", r.steps_failed(), "</td><td>", r.steps_denied(),
                    "</td><td>", r.steps_pending(), "</td><td>", r.steps_unknown(), "</td><td>", r.anomalies(),
                    "</td></tr>");
  }
  body += "</table>";
  if (resp.runs().empty()) body += "<p class=\"muted\">No runs.</p>";
  return Html(200, team, body);
}

HttpResponse Dashboard::Run(const HttpRequest& request, const std::string& team, const std::string& run) {
  pb::GetRunRequest rreq;
  rreq.set_team(team);
  rreq.set_run_id(run);
  pb::Run r;
  auto ctx = Context(request);
  grpc::Status s = query_->GetRun(ctx.get(), rreq, &r);
  if (!s.ok()) return Failed(s);
  std::string body = absl::StrCat(
      Crumbs(team, run), "<h1>Run ", E(run), "</h1><p>", E(r.workflow()), " · entries ", r.first_seq(), "–",
      r.last_seq(), " · ", r.entries(), " entries · ", Time(r.first_at_us()), " to ", Time(r.last_at_us()), "</p>");
  if (r.steps_unknown() > 0) {
    absl::StrAppend(&body, "<p class=\"unknown\">", r.steps_unknown(),
                    " step(s) UNKNOWN: no completion was reported by the deadline. Never counted as success.</p>");
  }
  absl::StrAppend(&body, "<p><a class=\"button\" href=\"/teams/", Seg(team), "/runs/", Seg(run),
                  "/pack.tar.gz\" download>Download the evidence pack</a> <span class=\"muted\">verify it offline: "
                  "<code>ledgerctl verify PACK --vkey FILE</code></span></p>");
  absl::StrAppend(&body, "<h2>Steps</h2><table><tr><th>step</th><th>attempt</th><th>state</th><th>anomalies</th><th>"
                         "started</th><th>model calls allowed / denied</th><th>tool calls allowed / denied</th><th>"
                         "tokens in / out</th><th>call cost (µ)</th></tr>");
  pb::ListStepsRequest sreq;
  sreq.mutable_filter()->set_team(team);
  sreq.mutable_filter()->set_run_id(run);
  sreq.set_page_size(1000);
  pb::ListStepsResponse steps;
  auto sctx = Context(request);
  s = query_->ListSteps(sctx.get(), sreq, &steps);
  if (!s.ok()) return Failed(s);
  for (const pb::Step& st : steps.steps()) {
    std::string state = StateName(st.state());
    std::string anomalies;
    for (int a : st.anomalies()) absl::StrAppend(&anomalies, anomalies.empty() ? "" : ", ", AnomalyName(a));
    absl::StrAppend(&body, "<tr class=\"", state, "\"><td><a href=\"/teams/", Seg(team), "/runs/", Seg(run),
                    "/steps/", Seg(st.step_id()), "?attempt=", st.attempt(), "\">", E(st.step_id()), "</a></td><td>",
                    st.attempt(), "</td><td>", state == "unknown" ? "UNKNOWN" : state, "</td><td class=\"anomaly\">",
                    E(anomalies), "</td><td>", Time(st.first_at_us()), "</td><td>", Calls(st.calls()), "</td></tr>");
  }
  body += "</table>";
  if (!steps.next_page_token().empty()) {
    absl::StrAppend(&body, "<p class=\"muted\">The newest ", steps.steps_size(),
                    " steps are shown; the run has more (<code>ledgerctl steps --team ", E(team), " --run ", E(run),
                    " --limit N</code>). The totals below cover them all.</p>");
  }
  absl::StrAppend(&body, "<h2>Totals</h2><table><tr><th>model calls allowed / denied</th><th>tool calls "
                         "allowed / denied</th><th>tokens in / out</th><th>call cost (µ)</th></tr><tr><td>",
                  Calls(r.calls()), "</td></tr></table><p>Actual cost ", r.actual_cost_micros(), " µ, charged ",
                  r.charged_cost_micros(), " µ.</p>");
  return Html(200, run, body);
}

HttpResponse Dashboard::Step(const HttpRequest& request, const std::string& team, const std::string& run,
                             const std::string& step, int64_t attempt, int64_t page, bool receipts) {
  pb::GetStepRequest req;
  req.set_team(team);
  req.set_run_id(run);
  req.set_step_id(step);
  req.set_attempt(attempt);
  pb::Step st;
  auto ctx = Context(request);
  grpc::Status s = query_->GetStep(ctx.get(), req, &st);
  if (!s.ok()) return Failed(s);
  std::string state = StateName(st.state());
  std::string body = absl::StrCat(Crumbs(team, run), "<h1>Step ", E(step), " <span class=\"muted\">attempt ",
                                  st.attempt(), "</span></h1><p class=\"", state, "\">State: ",
                                  state == "unknown" ? "UNKNOWN (no completion by the deadline)" : state, "</p>");
  if (!st.anomalies().empty()) {
    body += "<p class=\"anomaly\">Anomalies: ";
    for (int a : st.anomalies()) absl::StrAppend(&body, E(AnomalyName(a)), " ");
    body += "</p>";
  }
  if (!receipts) {
    body += "<p class=\"muted\">Receipts and proofs: your role does not include reading this team's entries "
            "(auditor).</p>";
    return Html(200, step, body);
  }
  // One page of receipts, read in one call.
  int64_t total = st.seqs_size();
  int64_t pages = std::max<int64_t>(1, (total + kStepPageSize - 1) / kStepPageSize);
  if (page > pages) {
    return Text(404, absl::StrCat("page: beyond the last page (", pages, ")\n"));
  }
  int64_t first = (page - 1) * kStepPageSize, last = std::min(total, first + kStepPageSize);
  pb::GetEntriesRequest ereq;
  for (int64_t i = first; i < last; ++i) ereq.add_seqs(st.seqs(static_cast<int>(i)));
  std::vector<pb::Entry> entries;
  if (ereq.seqs_size() > 0) {
    auto ectx = Context(request);
    auto reader = ledger_->GetEntries(ectx.get(), ereq);
    for (pb::Entry entry; reader->Read(&entry);) entries.push_back(std::move(entry));
    grpc::Status es = reader->Finish();
    if (!es.ok()) return Failed(es);
  }
  std::string link = absl::StrCat("/teams/", Seg(team), "/runs/", Seg(run), "/steps/", Seg(step), "?attempt=",
                                  st.attempt(), "&amp;page=");
  std::string nav = absl::StrCat("<p class=\"muted\">Receipts ", total == 0 ? 0 : first + 1, "–", last, " of ",
                                 total, page > 1 ? absl::StrCat(" · <a href=\"", link, page - 1, "\">previous</a>") : "",
                                 page < pages ? absl::StrCat(" · <a href=\"", link, page + 1, "\">next</a>") : "",
                                 "</p>");
  absl::StrAppend(&body, "<h2>Receipts</h2>", nav, "<table><tr><th>seq</th><th>kind</th><th>receipt id</th><th>"
                  "emitter</th><th>decision / status</th><th>logged</th><th>proof</th></tr>");
  for (const pb::Entry& entry : entries) {
    nlohmann::json leaf = nlohmann::json::parse(entry.leaf(), nullptr, false);
    if (leaf.is_discarded()) continue;
    const nlohmann::json& rc = leaf["receipt"];
    std::string outcome = rc.value("decision", rc.value("status", ""));
    absl::StrAppend(&body, "<tr", rc.value("kind", "") == "step_unknown" ? " class=\"unknown\"" : "", "><td>",
                    entry.seq(), "</td><td>", E(rc.value("kind", "")), "</td><td>", E(rc.value("receipt_id", "")),
                    "</td><td>", E(leaf.value("emitter", "")), "</td><td>", E(outcome), "</td><td>",
                    Time(leaf.value("logged_at_us", int64_t{0})), "</td><td><a href=\"/proofs/", entry.seq(),
                    "\">inclusion proof</a></td></tr>");
  }
  absl::StrAppend(&body, "</table>", pages > 1 ? nav : "");
  return Html(200, step, body);
}

HttpResponse Dashboard::Pack(const HttpRequest& request, const std::string& team, const std::string& run) {
  pb::ExportRequest req;
  req.mutable_run()->set_team(team);
  req.mutable_run()->set_run_id(run);
  std::string path = absl::StrCat(std::filesystem::temp_directory_path().string(), "/ledger-dashboard-pack-",
                                  ::getpid(), "-", reinterpret_cast<uintptr_t>(&req), ".tar.gz");
  auto ctx = Context(request);
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
  auto reader = exports_->Export(ctx.get(), req);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  pb::ExportChunk chunk;
  while (reader->Read(&chunk)) out.write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
  out.close();
  grpc::Status s = reader->Finish();
  if (!s.ok() || !out) {
    std::filesystem::remove(path);
    return Failed(s.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "pack: cannot write a temporary file") : s);
  }
  HttpResponse r;
  r.content_type = "application/gzip";
  r.file_to_send_and_remove = path;
  r.headers["Content-Disposition"] = absl::StrCat("attachment; filename=\"", Seg(team), "-", Seg(run), ".tar.gz\"");
  return r;
}

HttpResponse Dashboard::Proof(const HttpRequest& request, uint64_t seq) {
  // The service checks the caller may read the entry's team.
  pb::GetEntriesRequest ereq;
  ereq.set_from_seq(seq);
  ereq.set_to_seq(seq + 1);
  auto ectx = Context(request);
  auto reader = ledger_->GetEntries(ectx.get(), ereq);
  pb::Entry entry;
  reader->Read(&entry);
  grpc::Status s = reader->Finish();
  if (!s.ok()) return Failed(s);
  pb::GetInclusionProofRequest req;
  req.set_seq(seq);
  pb::InclusionProof proof;
  auto ctx = Context(request);
  s = ledger_->GetInclusionProof(ctx.get(), req, &proof);
  if (!s.ok()) return Failed(s);
  // As `ledgerctl prove` prints it, with the leaf and the checkpoint.
  nlohmann::json hashes = nlohmann::json::array();
  for (const std::string& h : proof.hashes()) hashes.push_back(hash::Hex(h));
  nlohmann::json j = {{"seq", proof.seq()},
                      {"leaf_hash", hash::Hex(proof.leaf_hash())},
                      {"tree_size", proof.tree_size()},
                      {"inclusion", hashes},
                      {"leaf", entry.leaf()},
                      {"checkpoint", proof.checkpoint()}};
  HttpResponse r = Text(200, j.dump(2) + "\n");
  r.content_type = "application/json";
  return r;
}

}  // namespace ledger::ops
