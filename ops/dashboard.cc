#include "ops/dashboard.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "ledger/hash/hash.h"
#include "nlohmann/json.hpp"
#include "ops/timeline.h"

namespace ledger::ops {
namespace {

namespace pb = evidence::ledger::v1;

constexpr char kStyle[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1f1f1f;background:#fff}a{color:#0645ad}"
    "a:focus,button:focus,input:focus,select:focus{outline:3px solid #1a5fb4;outline-offset:1px}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:.3em .6em;text-align:left}"
    "th{background:#ececec}td a,td.t{white-space:nowrap}caption{text-align:left;font-weight:bold;padding:.3em 0}"
    ".unknown{background:#ffd6d6;font-weight:bold}.unknown td:first-child::before"
    "{content:'\\26A0  '}.denied{background:#fff1c9}.failed{background:#ffe7d1}.succeeded{background:#e7f7e7}"
    ".anomaly{color:#a00}.muted{color:#595959}a.button{display:inline-block;padding:.4em .8em;border:1px solid #246;"
    "border-radius:4px;text-decoration:none;background:#eef4fb}code{font-size:12px}"
    "form.filters{display:flex;flex-wrap:wrap;gap:.5em 1em;align-items:flex-end;margin:1em 0}"
    "form.filters label{display:flex;flex-direction:column;font-size:13px}nav.pages{margin:.5em 0}"
    "dl.facts{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dl.facts dt{font-weight:bold}"
    "dl.facts dd{margin:0}"
    ".timeline{margin:1em 0;max-width:60em}.timeline figcaption{font-weight:bold;margin-bottom:.3em}"
    ".tl-row{display:flex;align-items:center;height:1.6em}"
    ".tl-label{flex:0 0 10em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;padding-right:.5em}"
    ".tl-track{position:relative;flex:1 1 auto;height:1.1em;background:#f3f3f3;border-left:1px solid #888}"
    ".tl-axis .tl-track{background:none;border-left:0;height:1.4em}"
    ".tl-tick{position:absolute;top:0;font-size:12px;color:#3d3d3d;white-space:nowrap}"
    ".tl-bar{position:absolute;top:.15em;height:.8em;min-width:3px;border:1px solid #333;box-sizing:border-box}"
    ".tl-bar.succeeded{background:#3a8a3a}.tl-bar.failed{background:#d9822b}.tl-bar.unknown{background:#c62828}"
    ".tl-bar.pending{background:#9a9a9a}.tl-mark{position:absolute;top:.1em;width:.8em;height:.8em;"
    "transform:translateX(-50%) rotate(45deg);background:#b35900;border:1px solid #333}";

std::string E(std::string_view s) { return HtmlEscape(s); }

// A path segment or query value, percent-encoded.
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

std::string Time(int64_t us) { return IsoTime(us); }

std::string Lower(std::string_view name, std::string_view prefix) {
  std::string s(name.substr(name.rfind(prefix, 0) == 0 ? prefix.size() : 0));
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string StateName(pb::StepState s) { return Lower(pb::StepState_Name(s), "STEP_STATE_"); }
std::string AnomalyName(int a) { return Lower(pb::Anomaly_Name(static_cast<pb::Anomaly>(a)), "ANOMALY_"); }

// `raw_path` (as the request sent it) with the query `params` (empty values
// left out), escaped for an href.
std::string Href(const std::string& raw_path, const std::map<std::string, std::string>& params) {
  std::string out = E(raw_path);
  char sep = '?';
  for (const auto& [k, v] : params) {
    if (v.empty()) continue;
    absl::StrAppend(&out, sep == '?' ? "?" : "&amp;", k, "=", Seg(v));
    sep = '&';
  }
  return out;
}

std::string Param(const HttpRequest& request, const std::string& name) {
  auto it = request.query.find(name);
  return it == request.query.end() ? "" : it->second;
}

// ?refresh=N: seconds in [5, 3600], 0 when absent.
absl::StatusOr<int> RefreshOf(const HttpRequest& request) {
  std::string v = Param(request, "refresh");
  if (v.empty() || v == "0") return 0;
  if (v.size() > 4 || v.find_first_not_of("0123456789") != std::string::npos || std::stoi(v) < 5 ||
      std::stoi(v) > 3600) {
    return absl::InvalidArgumentError("refresh: seconds between 5 and 3600 (0 or absent: off)");
  }
  return std::stoi(v);
}

// The links that turn auto-refresh off or on, keeping the page's other parameters.
std::string RefreshLinks(const HttpRequest& request, int refresh) {
  std::map<std::string, std::string> params = request.query;
  std::string out = "<p class=\"muted\">Auto-refresh: ";
  for (int n : {0, 10, 60}) {
    params["refresh"] = n == 0 ? "" : std::to_string(n);
    std::string label = n == 0 ? "off" : absl::StrCat("every ", n, " s");
    if (n == refresh) {
      absl::StrAppend(&out, "<strong aria-current=\"true\">", label, "</strong> ");
    } else {
      absl::StrAppend(&out, "<a href=\"", Href(request.raw_path, params), "\">", label, "</a> ");
    }
  }
  return out + "</p>";
}

HttpResponse Html(int status, const std::string& title, const std::string& body, int refresh = 0) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/html; charset=utf-8";
  r.headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'";
  r.body = absl::StrCat("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">",
                        refresh > 0 ? absl::StrCat("<meta http-equiv=\"refresh\" content=\"", refresh, "\">") : "",
                        "<title>", E(title), " · evidence ledger</title><style>", kStyle, "</style></head><body><main>",
                        body, "</main></body></html>\n");
  return r;
}

HttpResponse Failed(const grpc::Status& s) {
  int status = 503;
  switch (s.error_code()) {
    case grpc::StatusCode::NOT_FOUND:
      status = 404;
      break;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      status = 403;
      break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      status = 429;
      break;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      status = 400;
      break;
    default:
      break;
  }
  HttpResponse r =
      Html(status, "error",
           absl::StrCat("<h1>", status, "</h1><p>", E(s.error_message()), "</p><p><a href=\"/\">teams</a></p>"));
  r.refusal = s.error_message();
  return r;
}

HttpResponse BadRequest(const absl::Status& s) {
  return Failed(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(s.message())));
}

std::string Crumbs(const std::string& team, const std::string& run = "") {
  std::string out = "<nav aria-label=\"breadcrumbs\"><p class=\"muted\"><a href=\"/\">teams</a>";
  if (!team.empty()) absl::StrAppend(&out, " / <a href=\"/teams/", Seg(team), "\">", E(team), "</a>");
  if (!run.empty()) {
    absl::StrAppend(&out, " / <a href=\"/teams/", Seg(team), "/runs/", Seg(run), "\">", E(run), "</a>");
  }
  return out + "</p></nav>";
}

std::string Calls(const pb::CallTotals& c) {
  return absl::StrCat(c.model_calls_allowed(), " / ", c.model_calls_denied(), "</td><td>", c.tool_calls_allowed(),
                      " / ", c.tool_calls_denied(), "</td><td>", c.input_tokens(), " / ", c.output_tokens(),
                      "</td><td>", c.cost_micros());
}

std::string StepHref(const pb::Step& st) {
  return absl::StrCat("/teams/", Seg(st.team()), "/runs/", Seg(st.run_id()), "/steps/", Seg(st.step_id()),
                      "?attempt=", st.attempt());
}

// When the step ended (completion, unknown declaration), or 0.
int64_t EndOf(const pb::Step& st) {
  return st.has_completion() ? st.completed_at_us() : st.has_unknown() ? st.unknown_at_us() : 0;
}

// A table of steps; `team` and `run` columns on request.
std::string StepsTable(const std::vector<pb::Step>& steps, bool team, bool run, const std::string& caption) {
  std::string out = absl::StrCat("<table class=\"steps\"><caption>", E(caption), "</caption><thead><tr>",
                                 team ? "<th scope=\"col\">team</th>" : "", run ? "<th scope=\"col\">run</th>" : "",
                                 "<th scope=\"col\">step</th><th scope=\"col\">attempt</th><th scope=\"col\">state"
                                 "</th><th scope=\"col\">anomalies</th><th scope=\"col\">started (UTC)</th><th "
                                 "scope=\"col\">duration</th><th scope=\"col\">model calls allowed / denied</th><th "
                                 "scope=\"col\">tool calls allowed / denied</th><th scope=\"col\">tokens in / out"
                                 "</th><th scope=\"col\">call cost (µ)</th><th scope=\"col\">charged (µ)</th></tr>"
                                 "</thead><tbody>");
  for (const pb::Step& st : steps) {
    std::string state = StateName(st.state());
    std::string anomalies;
    for (int a : st.anomalies()) absl::StrAppend(&anomalies, anomalies.empty() ? "" : ", ", AnomalyName(a));
    int64_t begin = st.has_start() ? st.started_at_us() : st.first_at_us();
    int64_t end = EndOf(st);
    absl::StrAppend(&out, "<tr class=\"", state, "\">");
    if (team) absl::StrAppend(&out, "<td><a href=\"/teams/", Seg(st.team()), "\">", E(st.team()), "</a></td>");
    if (run) {
      absl::StrAppend(&out, "<td><a href=\"/teams/", Seg(st.team()), "/runs/", Seg(st.run_id()), "\">", E(st.run_id()),
                      "</a></td>");
    }
    absl::StrAppend(&out, "<td><a href=\"", StepHref(st), "\">", E(st.step_id()), "</a></td><td>", st.attempt(),
                    "</td><td>", state == "unknown" ? "UNKNOWN" : state, "</td><td class=\"anomaly\">", E(anomalies),
                    "</td><td class=\"t\">", Time(st.first_at_us()), "</td><td class=\"t\">",
                    end > 0 ? Duration(end - begin) : "", "</td><td>", Calls(st.calls()), "</td><td>",
                    st.charged_cost_micros(), "</td></tr>");
  }
  return out + "</tbody></table>";
}

// "next page" for a list read with page tokens.
std::string NextLink(const HttpRequest& request, const std::string& token, size_t shown) {
  std::map<std::string, std::string> params = request.query;
  bool first = params.erase("after") == 0;
  std::string out = absl::StrCat("<nav class=\"pages\" aria-label=\"pages\"><p class=\"muted\">", shown, " shown");
  if (!first) absl::StrAppend(&out, " · <a href=\"", Href(request.raw_path, params), "\">first page</a>");
  if (!token.empty()) {
    params["after"] = token;
    absl::StrAppend(&out, " · <a rel=\"next\" href=\"", Href(request.raw_path, params), "\">next page</a>");
  }
  return out + "</p></nav>";
}

// "page N of M" for a list paged by number.
std::string NumberedLinks(const HttpRequest& request, int64_t page, bool more) {
  std::map<std::string, std::string> params = request.query;
  std::string out = absl::StrCat("<nav class=\"pages\" aria-label=\"pages\"><p class=\"muted\">page ", page);
  if (page > 1) {
    params["page"] = std::to_string(page - 1);
    absl::StrAppend(&out, " · <a rel=\"prev\" href=\"", Href(request.raw_path, params), "\">previous page</a>");
  }
  if (more) {
    params["page"] = std::to_string(page + 1);
    absl::StrAppend(&out, " · <a rel=\"next\" href=\"", Href(request.raw_path, params), "\">next page</a>");
  }
  return out + "</p></nav>";
}

absl::StatusOr<int64_t> PageOf(const HttpRequest& request) {
  std::string v = Param(request, "page");
  if (v.empty()) return 1;
  if (v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos || std::stoll(v) < 1) {
    return absl::InvalidArgumentError("page: a number from 1");
  }
  return std::stoll(v);
}

// ?from / ?to: a UTC time, "2026-01-01T12:00" (as a datetime-local field
// sends it), with seconds, a trailing Z, or a date alone; 0 when absent.
absl::StatusOr<int64_t> TimeParam(const HttpRequest& request, const std::string& name) {
  std::string v = Param(request, name);
  if (v.empty()) return 0;
  std::string t = v;
  if (!t.empty() && (t.back() == 'Z' || t.back() == 'z')) t.pop_back();
  for (const char* format : {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d"}) {
    absl::Time parsed;
    std::string err;
    if (absl::ParseTime(format, t, absl::UTCTimeZone(), &parsed, &err) && parsed >= absl::UnixEpoch()) {
      return absl::ToUnixMicros(parsed);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(name, ": a UTC time like 2026-01-01T12:00 or 2026-01-01T12:00:00Z"));
}

// The filter form of a team's page, filled in with the request's values.
std::string FilterForm(const HttpRequest& request, const std::string& team) {
  auto input = [&](const char* name, const char* label, const char* type, const char* hint) {
    return absl::StrCat("<label>", label, " <input type=\"", type, "\" name=\"", name, "\" value=\"",
                        E(Param(request, name)), "\"", *hint ? absl::StrCat(" placeholder=\"", hint, "\"") : "",
                        "></label>");
  };
  auto select = [&](const char* name, const char* label, const std::vector<std::string>& options) {
    std::string out = absl::StrCat("<label>", label, " <select name=\"", name, "\"><option value=\"\">any</option>");
    for (const std::string& o : options) {
      absl::StrAppend(&out, "<option", Param(request, name) == o ? " selected" : "", ">", o, "</option>");
    }
    return out + "</select></label>";
  };
  std::vector<std::string> states, anomalies;
  for (int s = 1; pb::StepState_IsValid(s); ++s) states.push_back(StateName(static_cast<pb::StepState>(s)));
  for (int a = 1; pb::Anomaly_IsValid(a); ++a) anomalies.push_back(AnomalyName(a));
  return absl::StrCat(
      "<form class=\"filters\" action=\"/teams/", Seg(team), "\" method=\"get\" role=\"search\">",
      select("state", "State", states), select("anomaly", "Anomaly", anomalies),
      input("from", "From (UTC)", "text", "2026-01-01T00:00"), input("to", "To (UTC)", "text", "2026-01-02T00:00"),
      input("run", "Run id", "text", ""), input("receipt", "Receipt id", "text", ""),
      input("trace", "Trace id", "text", ""),
      Param(request, "refresh").empty()
          ? ""
          : absl::StrCat("<input type=\"hidden\" name=\"refresh\" value=\"", E(Param(request, "refresh")), "\">"),
      "<button>Search</button> <a href=\"/teams/", Seg(team), "\">clear</a></form>");
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
  auto refresh = RefreshOf(request);
  if (!refresh.ok()) return BadRequest(refresh.status());
  HttpResponse r = Route(request);
  // Auto-refresh for the pages people watch: a meta refresh, no script.
  if (r.status == 200 && r.content_type.rfind("text/html", 0) == 0) {
    if (*refresh > 0) {
      r.body.replace(r.body.find("<title>"), 0,
                     absl::StrCat("<meta http-equiv=\"refresh\" content=\"", *refresh, "\">"));
    }
    r.body.replace(r.body.find("<main>") + 6, 0, RefreshLinks(request, *refresh));
  }
  return r;
}

HttpResponse Dashboard::Route(const HttpRequest& request) {
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
  if (parts[0] == "unknown" && n == 1) return Unknown(request);
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
  if (n == 2) return Team(request, parts[1]);
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
  auto page = PageOf(request);
  if (!page.ok()) return BadRequest(page.status());
  // The teams the caller may query: the service lists no others.
  pb::ListTeamsResponse listed;
  auto tctx = Context(request);
  grpc::Status listed_status = query_->ListTeams(tctx.get(), pb::ListTeamsRequest(), &listed);
  if (!listed_status.ok()) return Failed(listed_status);
  const auto& teams = listed.teams();
  std::string body =
      "<h1>Evidence ledger</h1><form action=\"/\" method=\"get\" role=\"search\"><label>Team <input "
      "name=\"team\"></label> <button>Show runs</button></form>";
  if (teams.size() > 1) {
    body += "<p><a href=\"/unknown\">Steps in state unknown now, in every team you may see</a></p>";
  }
  body += "<h2>Teams</h2><ul>";
  int64_t first = (*page - 1) * kListPageSize;
  for (int64_t i = first; i < teams.size() && i < first + kListPageSize; ++i) {
    const std::string& t = teams[static_cast<int>(i)];
    absl::StrAppend(&body, "<li><a href=\"/teams/", Seg(t), "\">", E(t), "</a></li>");
  }
  if (teams.empty()) body += "<li class=\"muted\">no runs yet</li>";
  body += "</ul>";
  if (teams.size() > kListPageSize || *page > 1) {
    body += NumberedLinks(request, *page, first + kListPageSize < teams.size());
  }
  auto head = Context(request);
  pb::Checkpoint cp;
  if (ledger_->GetCheckpoint(head.get(), pb::GetCheckpointRequest(), &cp).ok()) {
    absl::StrAppend(&body, "<p class=\"muted\">Latest checkpoint: ", cp.tree_size(), " entries, root <code>",
                    hash::Hex(cp.root_hash()), "</code></p>");
  }
  return Html(200, "teams", body);
}

HttpResponse Dashboard::Unknown(const HttpRequest& request) {
  auto page = PageOf(request);
  if (!page.ok()) return BadRequest(page.status());
  if (*page > 20) return BadRequest(absl::InvalidArgumentError("page: at most 20 (narrow by team)"));
  pb::ListTeamsResponse listed;
  auto tctx = Context(request);
  grpc::Status s = query_->ListTeams(tctx.get(), pb::ListTeamsRequest(), &listed);
  if (!s.ok()) return Failed(s);
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
    if (!s.ok()) return Failed(s);
    if (!resp.next_page_token().empty()) more = true;
    for (pb::Step& st : *resp.mutable_steps()) steps.push_back(std::move(st));
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const pb::Step& a, const pb::Step& b) { return a.first_at_us() > b.first_at_us(); });
  size_t first = static_cast<size_t>((*page - 1) * kListPageSize);
  more = more || steps.size() > first + kListPageSize;
  std::vector<pb::Step> shown(steps.begin() + static_cast<long>(std::min(first, steps.size())),
                              steps.begin() + static_cast<long>(std::min(first + kListPageSize, steps.size())));
  std::string body = absl::StrCat(Crumbs(""),
                                  "<h1>Unknown now</h1><p>Steps with no completion by their deadline, "
                                  "in the ",
                                  listed.teams_size(),
                                  " team(s) you may see, newest first. Never "
                                  "counted as success.</p>");
  body += shown.empty() ? "<p class=\"muted\">No step is in state unknown.</p>"
                        : StepsTable(shown, /*team=*/true, /*run=*/true, "Steps in state unknown");
  body += NumberedLinks(request, *page, more);
  return Html(200, "unknown now", body);
}

grpc::Status Dashboard::TeamExists(const HttpRequest& request, const std::string& team) {
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

HttpResponse Dashboard::Team(const HttpRequest& request, const std::string& team) {
  if (grpc::Status s = TeamExists(request, team); !s.ok()) return Failed(s);
  if (std::string receipt = Param(request, "receipt"); !receipt.empty()) return FindReceipt(request, team, receipt);
  if (std::string run = Param(request, "run"); !run.empty()) {
    pb::GetRunRequest rreq;
    rreq.set_team(team);
    rreq.set_run_id(run);
    pb::Run found;
    auto ctx = Context(request);
    if (grpc::Status s = query_->GetRun(ctx.get(), rreq, &found); !s.ok()) return Failed(s);
    HttpResponse r = Text(303, "");
    r.headers["Location"] = absl::StrCat("/teams/", Seg(team), "/runs/", Seg(run));
    return r;
  }
  auto from = TimeParam(request, "from");
  if (!from.ok()) return BadRequest(from.status());
  auto to = TimeParam(request, "to");
  if (!to.ok()) return BadRequest(to.status());
  if (*to != 0 && *to <= *from) return BadRequest(absl::InvalidArgumentError("to: must be after from"));
  std::string state = Param(request, "state"), anomaly = Param(request, "anomaly"), trace = Param(request, "trace");
  if (state.empty() && anomaly.empty() && trace.empty()) return Runs(request, team, *from, *to);
  pb::StepFilter filter;
  filter.set_team(team);
  filter.set_from_us(*from);
  filter.set_to_us(*to);
  filter.set_trace_id(trace);
  if (!state.empty()) {
    pb::StepState v;
    if (!pb::StepState_Parse("STEP_STATE_" + absl::AsciiStrToUpper(state), &v) || v == pb::STEP_STATE_UNSPECIFIED) {
      return BadRequest(absl::InvalidArgumentError("state: one of pending, succeeded, failed, denied, unknown"));
    }
    filter.add_states(v);
  }
  if (!anomaly.empty()) {
    pb::Anomaly v;
    if (!pb::Anomaly_Parse("ANOMALY_" + absl::AsciiStrToUpper(anomaly), &v) || v == pb::ANOMALY_UNSPECIFIED) {
      return BadRequest(absl::InvalidArgumentError("anomaly: not an anomaly's name (see the form's list)"));
    }
    filter.add_anomalies(v);
  }
  return Steps(request, filter);
}

HttpResponse Dashboard::Steps(const HttpRequest& request, const pb::StepFilter& filter) {
  const std::string& team = filter.team();
  pb::ListStepsRequest req;
  *req.mutable_filter() = filter;
  req.set_page_size(kListPageSize);
  req.set_page_token(Param(request, "after"));
  pb::ListStepsResponse resp;
  auto ctx = Context(request);
  grpc::Status s = query_->ListSteps(ctx.get(), req, &resp);
  if (!s.ok()) return Failed(s);
  std::vector<pb::Step> steps(resp.steps().begin(), resp.steps().end());
  std::string body = absl::StrCat(Crumbs(team), "<h1>Steps of ", E(team), "</h1>", FilterForm(request, team));
  body += steps.empty() ? "<p class=\"muted\">No step matches on this page.</p>"
                        : StepsTable(steps, /*team=*/false, /*run=*/true, "Steps that match, newest first");
  body += NextLink(request, resp.next_page_token(), steps.size());
  return Html(200, team, body);
}

HttpResponse Dashboard::FindReceipt(const HttpRequest& request, const std::string& team,
                                    const std::string& receipt_id) {
  if (absl::Status a = Allowed(request.identity, auth::Action::kReadEntries, team); !a.ok()) {
    return Failed(grpc::Status(
        grpc::StatusCode::PERMISSION_DENIED,
        absl::StrCat("receipt: finding a receipt needs the right to read the team's entries (", a.message(), ")")));
  }
  pb::GetInclusionProofRequest preq;
  preq.set_team(team);
  preq.set_receipt_id(receipt_id);
  pb::InclusionProof proof;
  auto pctx = Context(request);
  grpc::Status s = ledger_->GetInclusionProof(pctx.get(), preq, &proof);
  if (!s.ok()) return Failed(s);
  pb::GetEntriesRequest ereq;
  ereq.add_seqs(proof.seq());
  auto ectx = Context(request);
  auto reader = ledger_->GetEntries(ectx.get(), ereq);
  pb::Entry entry;
  reader->Read(&entry);
  s = reader->Finish();
  if (!s.ok()) return Failed(s);
  nlohmann::json leaf = nlohmann::json::parse(entry.leaf(), nullptr, false);
  if (leaf.is_discarded() || !leaf.contains("receipt") || !leaf["receipt"].is_object()) {
    return Failed(grpc::Status(grpc::StatusCode::DATA_LOSS, "receipt: the entry is not a receipt"));
  }
  const nlohmann::json& rc = leaf["receipt"];
  std::string run = rc.value("run_id", ""), step = rc.value("step_id", "");
  HttpResponse r = Text(303, "");
  r.headers["Location"] = absl::StrCat("/teams/", Seg(team), "/runs/", Seg(run));
  if (!step.empty()) {
    absl::StrAppend(&r.headers["Location"], "/steps/", Seg(step), "?attempt=", rc.value("attempt", int64_t{1}));
  }
  return r;
}

HttpResponse Dashboard::Runs(const HttpRequest& request, const std::string& team, int64_t from_us, int64_t to_us) {
  pb::ListRunsRequest req;
  req.set_team(team);
  req.set_from_us(from_us);
  req.set_to_us(to_us);
  req.set_page_size(kListPageSize);
  req.set_page_token(Param(request, "after"));
  pb::ListRunsResponse resp;
  auto ctx = Context(request);
  grpc::Status s = query_->ListRuns(ctx.get(), req, &resp);
  if (!s.ok()) return Failed(s);
  std::string body = absl::StrCat(
      Crumbs(team), "<h1>Runs of ", E(team), "</h1>", FilterForm(request, team),
      "<table class=\"runs\"><caption>Runs, newest first</caption><thead><tr><th scope=\"col\">run</th><th "
      "scope=\"col\">workflow</th><th scope=\"col\">first entry (UTC)</th><th scope=\"col\">steps</th><th "
      "scope=\"col\">succeeded</th><th scope=\"col\">failed</th><th scope=\"col\">denied</th><th scope=\"col\">"
      "pending</th><th scope=\"col\">unknown</th><th scope=\"col\">anomalies</th></tr></thead><tbody>");
  for (const pb::Run& r : resp.runs()) {
    absl::StrAppend(&body, "<tr", r.steps_unknown() > 0 ? " class=\"unknown\"" : "", "><td><a href=\"/teams/",
                    Seg(team), "/runs/", Seg(r.run_id()), "\">", E(r.run_id()), "</a></td><td>", E(r.workflow()),
                    "</td><td class=\"t\">", Time(r.first_at_us()), "</td><td>",
                    r.steps_succeeded() + r.steps_failed() + r.steps_denied() + r.steps_pending() + r.steps_unknown(),
                    "</td><td>", r.steps_succeeded(), "</td><td>", r.steps_failed(), "</td><td>", r.steps_denied(),
                    "</td><td>", r.steps_pending(), "</td><td>", r.steps_unknown(), "</td><td>", r.anomalies(),
                    "</td></tr>");
  }
  body += "</tbody></table>";
  if (resp.runs().empty()) body += "<p class=\"muted\">No runs.</p>";
  body += NextLink(request, resp.next_page_token(), static_cast<size_t>(resp.runs_size()));
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
  std::string body = absl::StrCat(Crumbs(team, run), "<h1>Run ", E(run), "</h1><p>", E(r.workflow()), " · entries ",
                                  r.first_seq(), "–", r.last_seq(), " · ", r.entries(), " entries · ",
                                  Time(r.first_at_us()), " to ", Time(r.last_at_us()), "</p>");
  if (r.steps_unknown() > 0) {
    absl::StrAppend(&body, "<p class=\"unknown\">", r.steps_unknown(),
                    " step(s) UNKNOWN: no completion was reported by the deadline. Never counted as success.</p>");
  }
  absl::StrAppend(&body, "<p><a class=\"button\" href=\"/teams/", Seg(team), "/runs/", Seg(run),
                  "/pack.tar.gz\" download>Download the evidence pack</a> <span class=\"muted\">verify it offline: "
                  "<code>ledgerctl verify PACK --vkey FILE</code></span></p>");
  pb::ListStepsRequest sreq;
  sreq.mutable_filter()->set_team(team);
  sreq.mutable_filter()->set_run_id(run);
  sreq.set_page_size(kStepPageSize);
  sreq.set_page_token(Param(request, "after"));
  pb::ListStepsResponse listed;
  auto sctx = Context(request);
  s = query_->ListSteps(sctx.get(), sreq, &listed);
  if (!s.ok()) return Failed(s);
  std::vector<pb::Step> steps(listed.steps().begin(), listed.steps().end());
  absl::StrAppend(&body, "<h2>Steps</h2>", StepTimeline(steps, StepHref),
                  StepsTable(steps, /*team=*/false, /*run=*/false, "Steps, newest first"),
                  NextLink(request, listed.next_page_token(), steps.size()));
  absl::StrAppend(&body,
                  "<h2>Totals</h2><table><caption>Calls of every step of the run</caption><thead><tr><th "
                  "scope=\"col\">model calls allowed / denied</th><th scope=\"col\">tool calls allowed / "
                  "denied</th><th scope=\"col\">tokens in / out</th><th scope=\"col\">call cost (µ)</th></tr>"
                  "</thead><tbody><tr><td>",
                  Calls(r.calls()), "</td></tr></tbody></table><p>Actual cost ", r.actual_cost_micros(), " µ, charged ",
                  r.charged_cost_micros(),
                  " µ: a failed or unknown step is charged at least the cost reserved at its start.</p>");
  return Html(200, run, body);
}

namespace {

// The facts of a step, for its page.
std::string StepFacts(const pb::Step& st) {
  std::string out = "<dl class=\"facts\">";
  auto fact = [&](const std::string& name, const std::string& value) {
    if (!value.empty()) absl::StrAppend(&out, "<dt>", name, "</dt><dd>", value, "</dd>");
  };
  fact("workflow", E(st.workflow()));
  fact("agent", E(st.agent()));
  fact("trace id", st.trace_id().empty() ? "" : absl::StrCat("<code>", E(st.trace_id()), "</code>"));
  if (st.has_start()) {
    fact("decision", st.decision() == pb::DECISION_DENY ? "<strong>deny</strong>" : "allow");
    fact("reason", E(st.reason()));
    fact("started (UTC)", Time(st.started_at_us()));
    if (st.decision() != pb::DECISION_DENY) {
      fact("timeout", Duration(st.timeout_ms() * 1000));
      fact("deadline (UTC)", Time(st.timeout_at_us()));
    }
  }
  if (st.has_completion()) {
    fact("completed (UTC)", Time(st.completed_at_us()));
    fact("status", Lower(pb::ExecStatus_Name(st.exec_status()), "EXEC_STATUS_"));
    fact("exit code", absl::StrCat(st.exit_code()));
    fact("duration reported", Duration(st.duration_ms() * 1000));
  }
  if (st.has_unknown()) fact("declared unknown (UTC)", Time(st.unknown_at_us()));
  fact("cost reserved / actual / charged (µ)",
       absl::StrCat(st.cost_reserved_micros(), " / ", st.actual_cost_micros(), " / ", st.charged_cost_micros()));
  return out + "</dl>";
}

// One receipt as a row of the step's calls table.
std::string ReceiptRow(const pb::Entry& entry) {
  nlohmann::json leaf = nlohmann::json::parse(entry.leaf(), nullptr, false);
  if (leaf.is_discarded() || !leaf.contains("receipt") || !leaf["receipt"].is_object()) return "";
  const nlohmann::json& rc = leaf["receipt"];
  auto str = [&](const char* k) { return rc.contains(k) && rc[k].is_string() ? rc[k].get<std::string>() : ""; };
  auto num = [&](const char* k) {
    return rc.contains(k) && rc[k].is_number_integer() ? std::to_string(rc[k].get<int64_t>()) : "";
  };
  std::string kind = str("kind");
  std::string decision = str("decision");
  std::string outcome = decision.empty() ? str("status") : decision;
  std::string who = kind == "model_call" ? str("model") : kind == "tool_call" ? str("tool") : "";
  std::string where = kind == "model_call" ? str("route") : kind == "tool_call" ? str("target") : "";
  std::string tokens = kind == "model_call" ? absl::StrCat(num("input_tokens"), " / ", num("output_tokens")) : "";
  bool denied = decision == "deny";
  std::string cls = kind == "step_unknown" ? " class=\"unknown\"" : denied ? " class=\"denied\"" : "";
  return absl::StrCat("<tr", cls, "><td>", entry.seq(), "</td><td class=\"t\">",
                      Time(leaf.value("logged_at_us", int64_t{0})), "</td><td>", E(kind), "</td><td>", E(who),
                      "</td><td>", E(where), "</td><td>", denied ? "<strong>DENY</strong>" : E(outcome), "</td><td>",
                      E(str("reason")), "</td><td>", tokens, "</td><td>", num("cost_micros"), "</td><td>",
                      E(str("receipt_id")), "</td><td>", E(leaf.value("emitter", "")), "</td><td><a href=\"/proofs/",
                      entry.seq(), "\">inclusion proof</a> (<a href=\"/proofs/", entry.seq(),
                      "?format=tlog-proof\">tlog-proof</a>)</td></tr>");
}

}  // namespace

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
  std::string body =
      absl::StrCat(Crumbs(team, run), "<h1>Step ", E(step), " <span class=\"muted\">attempt ", st.attempt(),
                   "</span></h1><p class=\"", state,
                   "\">State: ", state == "unknown" ? "UNKNOWN (no completion by the deadline)" : state, "</p>");
  if (!st.anomalies().empty()) {
    body += "<p class=\"anomaly\">Anomalies: ";
    for (int a : st.anomalies()) absl::StrAppend(&body, E(AnomalyName(a)), " ");
    body += "</p>";
  }
  body += StepFacts(st);
  if (!receipts) {
    body +=
        "<p class=\"muted\">Receipts and proofs: your role does not include reading this team's entries "
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
  std::string link = absl::StrCat("/teams/", Seg(team), "/runs/", Seg(run), "/steps/", Seg(step),
                                  "?attempt=", st.attempt(), "&amp;page=");
  std::string nav = absl::StrCat(
      "<nav class=\"pages\" aria-label=\"pages\"><p class=\"muted\">Receipts ", total == 0 ? 0 : first + 1, "–", last,
      " of ", total, page > 1 ? absl::StrCat(" · <a href=\"", link, page - 1, "\">previous</a>") : "",
      page < pages ? absl::StrCat(" · <a href=\"", link, page + 1, "\">next</a>") : "", "</p></nav>");
  absl::StrAppend(&body, "<h2>Receipts and calls</h2>", nav,
                  "<table class=\"calls\"><caption>The step's receipts in log order; denied calls stand out"
                  "</caption><thead><tr><th scope=\"col\">seq</th><th scope=\"col\">logged (UTC)</th><th "
                  "scope=\"col\">kind</th><th scope=\"col\">model / tool</th><th scope=\"col\">route / target</th>"
                  "<th scope=\"col\">decision / status</th><th scope=\"col\">reason</th><th scope=\"col\">tokens in /"
                  " out</th><th scope=\"col\">cost (µ)</th><th scope=\"col\">receipt id</th><th scope=\"col\">"
                  "emitter</th><th scope=\"col\">proof</th></tr></thead><tbody>");
  for (const pb::Entry& entry : entries) body += ReceiptRow(entry);
  absl::StrAppend(&body, "</tbody></table>", pages > 1 ? nav : "");
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
  if (Param(request, "format") == "tlog-proof") {
    // As `ledgerctl prove --format tlog-proof` prints it (c2sp.org/tlog-proof@v1):
    // the path in base64, then the checkpoint with its cosignatures.
    pb::GetCheckpointRequest creq;
    creq.set_tree_size(proof.tree_size());
    pb::Checkpoint cp;
    auto cctx = Context(request);
    s = ledger_->GetCheckpoint(cctx.get(), creq, &cp);
    if (!s.ok()) return Failed(s);
    std::string out = absl::StrCat("c2sp.org/tlog-proof@v1\nindex ", proof.seq(), "\n");
    for (const std::string& h : proof.hashes()) absl::StrAppend(&out, hash::Base64(h), "\n");
    return Text(200, absl::StrCat(out, "\n", cp.cosigned_note().empty() ? cp.note() : cp.cosigned_note()));
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
  HttpResponse r = Text(200, j.dump(2) + "\n");
  r.content_type = "application/json";
  return r;
}

}  // namespace ledger::ops
