#include "ops/internal/dashboard_page.h"

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "ops/internal/timeline.h"
#include "util/html/html.h"
#include "util/text/money.h"
#include "util/text/terminal.h"

namespace ledger::ops::page {

namespace {

constexpr char kStyle[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1f1f1f;background:#fff}a{color:#0645ad}"
    "a:focus,button:focus,input:focus,select:focus{outline:3px solid #1a5fb4;outline-offset:1px}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:.3em .45em;text-align:left}"
    "th{background:#ececec}td a,td.t{white-space:nowrap}caption{text-align:left;font-weight:bold;padding:.3em 0}"
    ".unknown{background:#ffd6d6;font-weight:bold}.unknown td:first-child::before"
    "{content:'\\26A0  "
    "'}.denied,.anomalous{background:#fff1c9}.failed{background:#ffe7d1}.succeeded{background:#e7f7e7}"
    ".anomaly{color:#a00}.muted{color:#595959}a.button{display:inline-block;padding:.4em .8em;border:1px solid #246;"
    "border-radius:4px;text-decoration:none;background:#eef4fb}code{font-size:12px}"
    "form.filters{display:flex;flex-wrap:wrap;gap:.5em 1em;align-items:flex-end;margin:1em 0}"
    "form.filters label{display:flex;flex-direction:column;font-size:13px}nav.pages{margin:.5em 0}"
    "dl.facts{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dl.facts dt{font-weight:bold}"
    "dl.facts dd{margin:0}td.id{overflow-wrap:anywhere;min-width:8em}"
    ".timeline{margin:1em 0;max-width:60em}.timeline figcaption{font-weight:bold;margin-bottom:.3em}"
    ".tl-row{display:flex;align-items:center;height:1.6em}"
    ".tl-label{flex:0 0 10em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;padding-right:.5em}"
    ".tl-track{position:relative;flex:1 1 auto;height:1.1em;background:#f3f3f3;border-left:1px solid #888}"
    ".tl-axis .tl-track{background:none;border-left:0;height:1.4em}"
    ".tl-tick{position:absolute;top:0;font-size:12px;color:#3d3d3d;white-space:nowrap}"
    ".tl-bar{position:absolute;top:.15em;height:.8em;min-width:3px;border:1px solid #333;box-sizing:border-box}"
    ".tl-bar.succeeded{background:#3a8a3a}.tl-bar.failed{background:#d9822b}.tl-bar.unknown{background:#c62828}"
    ".tl-bar.pending{background:#9a9a9a}.tl-mark{position:absolute;top:.1em;width:.8em;height:.8em;"
    "transform:translateX(-50%) rotate(45deg);background:#b35900;border:1px solid #333}"
    ".charts{display:flex;flex-wrap:wrap;gap:1em}figure.chart{margin:0}figure.chart figcaption{font-weight:bold}"
    ".tl-deadline{position:absolute;top:-.1em;height:1.3em;width:0;border-left:2px dashed #7a0000}"
    ".tl-call{position:absolute;top:.3em;height:.5em;width:2px;background:#fff;transform:translateX(-50%)}"
    ".tl-call.denied{background:#b00000;width:4px;height:.9em;top:.1em}";

}  // namespace

// Control and bidi characters shown as escapes (util/text), so that a
// value cannot reorder what the page shows; then HTML-escaped.
std::string E(std::string_view s) { return html::HtmlEscape(text::TerminalEscape(s)); }

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

std::string Ago(int64_t now_us, int64_t us) {
  if (us <= 0) return "never";
  const std::string when = us > now_us ? "just now" : absl::StrCat(Duration(now_us - us), " ago");
  return absl::StrCat("<time datetime=\"", IsoTime(us), "\" title=\"", IsoTime(us), "\">", when, "</time>");
}

namespace {

std::string Lower(std::string_view name, std::string_view prefix) {
  std::string s(name.substr(name.rfind(prefix, 0) == 0 ? prefix.size() : 0));
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string StateName(pb::StepState s) { return Lower(pb::StepState_Name(s), "STEP_STATE_"); }
std::string AnomalyName(int a) { return Lower(pb::Anomaly_Name(static_cast<pb::Anomaly>(a)), "ANOMALY_"); }

namespace {

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

}  // namespace

std::string Param(const http::HttpRequest& request, const std::string& name) {
  auto it = request.query.find(name);
  return it == request.query.end() ? "" : it->second;
}

// ?refresh=N: seconds in [5, 3600], 0 when absent.
absl::StatusOr<int> RefreshOf(const http::HttpRequest& request) {
  std::string v = Param(request, "refresh");
  if (v.empty() || v == "0") return 0;
  if (v.size() > 4 || v.find_first_not_of("0123456789") != std::string::npos || std::stoi(v) < 5 ||
      std::stoi(v) > 3600) {
    return absl::InvalidArgumentError("refresh: seconds between 5 and 3600 (0 or absent: off)");
  }
  return std::stoi(v);
}

// The links that turn auto-refresh off or on, keeping the page's other parameters.
std::string RefreshLinks(const http::HttpRequest& request, int refresh) {
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

http::HttpResponse Html(int status, const std::string& title, const std::string& body, int refresh) {
  http::HttpResponse r;
  r.status = status;
  r.content_type = "text/html; charset=utf-8";
  r.headers["Content-Security-Policy"] =
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'";
  r.body = absl::StrCat("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">",
                        refresh > 0 ? absl::StrCat("<meta http-equiv=\"refresh\" content=\"", refresh, "\">") : "",
                        "<title>", E(title), " · evidence ledger</title><style>", kStyle, "</style></head><body><main>",
                        body, "</main></body></html>\n");
  return r;
}

http::HttpResponse Failed(const grpc::Status& s) {
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
  http::HttpResponse r =
      Html(status, "error",
           absl::StrCat("<h1>", status, "</h1><p>", E(s.error_message()), "</p><p><a href=\"/\">teams</a></p>"));
  r.refusal = s.error_message();
  return r;
}

http::HttpResponse BadRequest(const absl::Status& s) {
  return Failed(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(s.message())));
}

std::string Crumbs(const std::string& team, const std::string& run) {
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
                      "</td><td>", text::Dollars(c.cost_micros()));
}

std::string StepHref(const pb::Step& st) {
  return absl::StrCat("/teams/", Seg(st.team()), "/runs/", Seg(st.run_id()), "/steps/", Seg(st.step_id()),
                      "?attempt=", st.attempt());
}

namespace {

// When the step ended (completion, unknown declaration), or 0.
int64_t EndOf(const pb::Step& st) {
  return st.has_completion() ? st.completed_at_us() : st.has_unknown() ? st.unknown_at_us() : 0;
}

}  // namespace

// A table of steps; `team` and `run` columns on request.
std::string StepsTable(const std::vector<pb::Step>& steps, bool team, bool run, const std::string& caption) {
  std::string out = absl::StrCat("<table class=\"steps\"><caption>", E(caption), "</caption><thead><tr>",
                                 team ? "<th scope=\"col\">team</th>" : "", run ? "<th scope=\"col\">run</th>" : "",
                                 "<th scope=\"col\">step</th><th scope=\"col\">attempt</th><th scope=\"col\">state"
                                 "</th><th scope=\"col\">anomalies</th><th scope=\"col\">started (UTC)</th><th "
                                 "scope=\"col\">duration</th><th scope=\"col\">model calls allowed / denied</th><th "
                                 "scope=\"col\">tool calls allowed / denied</th><th scope=\"col\">tokens in / out"
                                 "</th><th scope=\"col\">call cost</th><th scope=\"col\">charged</th></tr>"
                                 "</thead><tbody>");
  const int64_t now_us = absl::ToUnixMicros(absl::Now());
  for (const pb::Step& st : steps) {
    std::string state = StateName(st.state());
    std::string anomalies;
    for (int a : st.anomalies()) absl::StrAppend(&anomalies, anomalies.empty() ? "" : ", ", AnomalyName(a));
    int64_t begin = st.has_start() ? st.started_at_us() : st.first_at_us();
    int64_t end = EndOf(st);
    // A completion whose start is not in the log proves no success: it
    // never shows as one.
    const bool orphan =
        std::find(st.anomalies().begin(), st.anomalies().end(), pb::ANOMALY_ORPHAN_COMPLETION) != st.anomalies().end();
    std::string shown = state == "unknown" ? "UNKNOWN" : state;
    if (orphan) shown = absl::StrCat(state, " (no start in the log)");
    if (st.state() == pb::STEP_STATE_PENDING && st.timeout_at_us() > 0) {
      shown = st.timeout_at_us() > now_us
                  ? absl::StrCat("pending, deadline in ", Duration(st.timeout_at_us() - now_us))
                  : absl::StrCat("pending, deadline passed ", Duration(now_us - st.timeout_at_us()), " ago");
    }
    absl::StrAppend(&out, "<tr class=\"", orphan ? "anomalous" : state, "\">");
    if (team) absl::StrAppend(&out, "<td><a href=\"/teams/", Seg(st.team()), "\">", E(st.team()), "</a></td>");
    if (run) {
      absl::StrAppend(&out, "<td><a href=\"/teams/", Seg(st.team()), "/runs/", Seg(st.run_id()), "\">", E(st.run_id()),
                      "</a></td>");
    }
    absl::StrAppend(&out, "<td><a href=\"", StepHref(st), "\">", E(st.step_id()), "</a></td><td>", st.attempt(),
                    "</td><td>", E(shown), "</td><td class=\"anomaly\">", E(anomalies), "</td><td class=\"t\">",
                    Time(st.first_at_us()), "</td><td class=\"t\">", end > 0 ? Duration(end - begin) : "", "</td><td>",
                    Calls(st.calls()), "</td><td>", text::Dollars(st.charged_cost_micros()), "</td></tr>");
  }
  return out + "</tbody></table>";
}

// "next page" for a list read with page tokens.
std::string NextLink(const http::HttpRequest& request, const std::string& token, size_t shown,
                     const std::string& param) {
  std::map<std::string, std::string> params = request.query;
  bool first = params.erase(param) == 0;
  std::string out = absl::StrCat("<nav class=\"pages\" aria-label=\"pages\"><p class=\"muted\">", shown, " shown");
  if (!first) absl::StrAppend(&out, " · <a href=\"", Href(request.raw_path, params), "\">first page</a>");
  if (!token.empty()) {
    params[param] = token;
    absl::StrAppend(&out, " · <a rel=\"next\" href=\"", Href(request.raw_path, params), "\">next page</a>");
  }
  return out + "</p></nav>";
}

// "page N of M" for a list paged by number.
std::string NumberedLinks(const http::HttpRequest& request, int64_t page, bool more) {
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

absl::StatusOr<int64_t> PageOf(const http::HttpRequest& request) {
  std::string v = Param(request, "page");
  if (v.empty()) return 1;
  if (v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos || std::stoll(v) < 1) {
    return absl::InvalidArgumentError("page: a number from 1");
  }
  return std::stoll(v);
}

// ?from / ?to: a UTC time, "2026-01-01T12:00" (as a datetime-local field
// sends it), with seconds, a trailing Z, or a date alone; 0 when absent.
absl::StatusOr<int64_t> TimeParam(const http::HttpRequest& request, const std::string& name) {
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

absl::StatusOr<std::string> TraceParam(const http::HttpRequest& request) {
  std::string v = Param(request, "trace");
  if (v.empty()) return "";
  const std::string rule = "trace: a trace id is 32 hex digits, not all zero (W3C trace context); ";
  const size_t first = v.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return absl::InvalidArgumentError(rule + "this one is empty");
  v = v.substr(first, v.find_last_not_of(" \t\r\n") + 1 - first);
  if (v.size() != 32) return absl::InvalidArgumentError(absl::StrCat(rule, "this one has ", v.size(), " characters"));
  for (size_t i = 0; i < v.size(); ++i) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(v[i]))) {
      return absl::InvalidArgumentError(
          absl::StrCat(rule, std::string(1, v[i]), " (character ", i + 1, ") is not a hex digit"));
    }
  }
  if (v == std::string(32, '0')) return absl::InvalidArgumentError(rule + "this one is all zero");
  return absl::AsciiStrToLower(v);
}

// The filter form of a team's page, filled in with the request's values.
std::string FilterForm(const http::HttpRequest& request, const std::string& team) {
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

std::string TimePresets(const http::HttpRequest& request, const std::string& team, int64_t now_us) {
  std::string kept;
  for (const char* name : {"state", "anomaly", "trace", "refresh"}) {
    if (std::string v = Param(request, name); !v.empty()) absl::StrAppend(&kept, "&amp;", name, "=", Seg(v));
  }
  std::string out = "<p class=\"presets\">Last: ";
  struct Preset {
    const char* label;
    int64_t seconds;
  };
  for (Preset p : {Preset{"hour", 3600}, Preset{"day", 86400}, Preset{"week", 7 * 86400}}) {
    const std::string from =
        absl::FormatTime("%Y-%m-%dT%H:%M", absl::FromUnixMicros(now_us - p.seconds * 1000000), absl::UTCTimeZone());
    absl::StrAppend(&out, p.seconds == 3600 ? "" : " · ", "<a href=\"/teams/", Seg(team), "?from=", from, kept, "\">",
                    p.label, "</a>");
  }
  return out + "</p>";
}

// The facts of a step, for its page.
std::string TraceHref(const std::string& trace_url, const std::string& trace_id) {
  std::string href = trace_url;
  href.replace(href.find("{trace_id}"), 10, Seg(trace_id));
  return E(href);
}

std::string StepFacts(const pb::Step& st, const std::string& trace_url) {
  std::string out = "<dl class=\"facts\">";
  auto fact = [&](const std::string& name, const std::string& value) {
    if (!value.empty()) absl::StrAppend(&out, "<dt>", name, "</dt><dd>", value, "</dd>");
  };
  fact("workflow", E(st.workflow()));
  fact("agent", E(st.agent()));
  std::string trace = st.trace_id().empty() ? "" : absl::StrCat("<code>", E(st.trace_id()), "</code>");
  if (!trace.empty() && !trace_url.empty()) {
    trace = absl::StrCat("<a href=\"", TraceHref(trace_url, st.trace_id()), "\" rel=\"noreferrer\">", trace, "</a>");
  }
  fact("trace id", trace);
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
  fact("cost reserved / actual / charged",
       absl::StrCat(text::Dollars(st.cost_reserved_micros()), " / ", text::Dollars(st.actual_cost_micros()), " / ",
                    text::Dollars(st.charged_cost_micros())));
  return out + "</dl>";
}

namespace {

// One SVG bar chart: a bar (or two stacked series) a bucket, a label under
// the first, middle and last; each bar's values in its <title>.
struct Series {
  const char* name;
  const char* color;
  std::function<int64_t(const pb::TeamBucket&)> value;
  std::function<std::string(int64_t)> shown;
};

std::string BarChart(const pb::TeamSummary& summary, const std::string& title, const std::vector<Series>& series) {
  const auto& buckets = summary.history();
  constexpr int kWidth = 560, kHeight = 140, kTop = 10, kBottom = 24;
  int64_t max = 0;
  for (const pb::TeamBucket& b : buckets) {
    int64_t sum = 0;
    for (const Series& s : series) sum += s.value(b);
    max = std::max(max, sum);
  }
  const double slot = buckets.empty() ? kWidth : static_cast<double>(kWidth) / buckets.size();
  const double scale = max == 0 ? 0 : static_cast<double>(kHeight - kTop - kBottom) / static_cast<double>(max);
  std::string legend;
  for (const Series& s : series) {
    absl::StrAppend(&legend, legend.empty() ? "" : ", ", s.name);
  }
  std::string out = absl::StrCat("<figure class=\"chart\"><figcaption>", E(title), "</figcaption><svg class=\"chart\" ",
                                 "role=\"img\" aria-label=\"", E(title), "\" width=\"", kWidth, "\" height=\"", kHeight,
                                 "\" viewBox=\"0 0 ", kWidth, " ", kHeight, "\">");
  absl::StrAppend(&out, "<line x1=\"0\" y1=\"", kHeight - kBottom, "\" x2=\"", kWidth, "\" y2=\"", kHeight - kBottom,
                  "\" stroke=\"#595959\"/>");
  for (int i = 0; i < buckets.size(); ++i) {
    const pb::TeamBucket& b = buckets[i];
    const std::string day = IsoTime(b.from_us()).substr(0, 10);
    std::string tip = day;
    for (const Series& s : series) absl::StrAppend(&tip, ", ", s.name, " ", s.shown(s.value(b)));
    absl::StrAppend(&out, "<g class=\"bucket\" data-day=\"", day, "\"");
    for (const Series& s : series) absl::StrAppend(&out, " data-", s.name, "=\"", s.value(b), "\"");
    absl::StrAppend(&out, "><title>", E(tip), "</title>");
    double y = kHeight - kBottom;
    for (const Series& s : series) {
      const double h = static_cast<double>(s.value(b)) * scale;
      if (h <= 0) continue;
      y -= h;
      absl::StrAppend(&out, "<rect x=\"", absl::StrFormat("%.1f", i * slot + slot * 0.15), "\" y=\"",
                      absl::StrFormat("%.1f", y), "\" width=\"", absl::StrFormat("%.1f", slot * 0.7), "\" height=\"",
                      absl::StrFormat("%.1f", h), "\" fill=\"", s.color, "\"/>");
    }
    if (i == 0 || i == buckets.size() - 1 || i == buckets.size() / 2) {
      absl::StrAppend(&out, "<text x=\"", absl::StrFormat("%.1f", i * slot + slot / 2), "\" y=\"", kHeight - 6,
                      "\" font-size=\"11\" text-anchor=\"",
                      i == 0                    ? "start"
                      : i == buckets.size() - 1 ? "end"
                                                : "middle",
                      "\" fill=\"#3d3d3d\">", day.substr(5), "</text>");
    }
    out += "</g>";
  }
  absl::StrAppend(&out, "<text x=\"", kWidth, "\" y=\"", kTop,
                  "\" font-size=\"11\" text-anchor=\"end\" "
                  "fill=\"#3d3d3d\">max ",
                  E(series.size() == 1 ? series[0].shown(max) : absl::StrCat(max)), "</text></svg></figure>");
  return out;
}

}  // namespace

std::string HistoryCharts(const pb::TeamSummary& summary) {
  if (summary.history().empty()) return "";
  auto count = [](int64_t n) { return absl::StrCat(n); };
  return absl::StrCat(
      "<div class=\"charts\">",
      BarChart(summary, "Unknown (red) and failed (orange) steps, by the day they began (UTC)",
               {Series{"unknown", "#c62828", [](const pb::TeamBucket& b) { return b.steps_unknown(); }, count},
                Series{"failed", "#d9822b", [](const pb::TeamBucket& b) { return b.steps_failed(); }, count}}),
      BarChart(summary, "Cost charged, by the day its runs began (UTC)",
               {Series{"charged", "#1a5fb4", [](const pb::TeamBucket& b) { return b.charged_cost_micros(); },
                       [](int64_t micros) { return text::Dollars(micros); }}}),
      "</div>");
}

std::optional<Call> CallOf(const pb::Entry& entry) {
  nlohmann::json leaf = nlohmann::json::parse(entry.leaf(), nullptr, false);
  if (leaf.is_discarded() || !leaf.contains("receipt") || !leaf["receipt"].is_object()) return std::nullopt;
  const nlohmann::json& rc = leaf["receipt"];
  auto str = [&](const char* k) { return rc.contains(k) && rc[k].is_string() ? rc[k].get<std::string>() : ""; };
  const std::string kind = str("kind");
  if (kind != "model_call" && kind != "tool_call") return std::nullopt;
  Call c;
  c.team = str("team");
  c.run_id = str("run_id");
  c.step_id = str("step_id");
  c.attempt = rc.contains("attempt") && rc["attempt"].is_number_integer() ? rc["attempt"].get<int64_t>() : 1;
  c.shown.at_us = leaf.value("logged_at_us", int64_t{0});
  c.shown.denied = str("decision") == "deny";
  c.shown.what = absl::StrCat(kind, " ", kind == "model_call" ? str("model") : str("tool"), ": ", str("decision"));
  return c;
}

std::string CallsTableHead(std::string_view caption) {
  return absl::StrCat(
      "<table class=\"calls\"><caption>", E(caption),
      "</caption><thead><tr><th scope=\"col\">seq</th><th scope=\"col\">logged (UTC)</th><th "
      "scope=\"col\">kind</th><th scope=\"col\">model / tool</th><th scope=\"col\">route / target</th>"
      "<th scope=\"col\">decision / status</th><th scope=\"col\">reason</th><th scope=\"col\">tokens in /"
      " out</th><th scope=\"col\">cost</th><th scope=\"col\">receipt id</th><th scope=\"col\">"
      "emitter</th><th scope=\"col\">proof</th></tr></thead><tbody>");
}

bool ReceiptMatches(const pb::Entry& entry, const std::string& kind, const std::string& decision) {
  nlohmann::json leaf = nlohmann::json::parse(entry.leaf(), nullptr, false);
  if (leaf.is_discarded() || !leaf.contains("receipt") || !leaf["receipt"].is_object()) return false;
  const nlohmann::json& rc = leaf["receipt"];
  auto str = [&](const char* k) { return rc.contains(k) && rc[k].is_string() ? rc[k].get<std::string>() : ""; };
  return (kind.empty() || str("kind") == kind) && (decision.empty() || str("decision") == decision);
}

std::string ReceiptFilterForm(const http::HttpRequest& request, const std::string& team, const std::string& run,
                              const std::string& step, int64_t attempt, const std::vector<std::string>& kinds,
                              const std::vector<std::string>& decisions) {
  auto select = [&](const char* name, const char* label, const std::vector<std::string>& options) {
    std::string out = absl::StrCat("<label>", label, " <select name=\"", name, "\"><option value=\"\">any</option>");
    for (const std::string& o : options) {
      absl::StrAppend(&out, "<option", Param(request, name) == o ? " selected" : "", ">", o, "</option>");
    }
    return out + "</select></label>";
  };
  const std::string action = absl::StrCat("/teams/", Seg(team), "/runs/", Seg(run), "/steps/", Seg(step));
  return absl::StrCat("<form class=\"filters\" action=\"", action, "\" method=\"get\" role=\"search\">",
                      "<input type=\"hidden\" name=\"attempt\" value=\"", attempt, "\">", select("kind", "Kind", kinds),
                      select("decision", "Decision", decisions), "<button>Filter</button> <a href=\"", action,
                      "?attempt=", attempt, "\">clear</a></form>");
}

// One receipt as a row of the step's calls table.
std::string ReceiptRow(const pb::Entry& entry) {
  nlohmann::json leaf = nlohmann::json::parse(entry.leaf(), nullptr, false);
  if (!leaf.is_discarded() && leaf.contains("pruned")) {
    // CONTRACT section 9: the body went under the retention policy; its
    // leaf hash, and so its proof, stays.
    return absl::StrCat("<tr class=\"unknown\"><td>", entry.seq(),
                        "</td><td colspan=\"10\">pruned under the retention policy: only its leaf hash is kept</td>"
                        "<td><a href=\"/proofs/",
                        entry.seq(), "\">inclusion proof</a></td></tr>");
  }
  if (leaf.is_discarded() || !leaf.contains("receipt") || !leaf["receipt"].is_object()) return "";
  const nlohmann::json& rc = leaf["receipt"];
  auto str = [&](const char* k) { return rc.contains(k) && rc[k].is_string() ? rc[k].get<std::string>() : ""; };
  auto num = [&](const char* k) {
    return rc.contains(k) && rc[k].is_number_integer() ? std::to_string(rc[k].get<int64_t>()) : "";
  };
  auto money = [&](const char* k) {
    return rc.contains(k) && rc[k].is_number_integer() ? text::Dollars(rc[k].get<int64_t>()) : "";
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
                      E(str("reason")), "</td><td>", tokens, "</td><td>", money("cost_micros"),
                      "</td><td class=\"id\">", E(str("receipt_id")), "</td><td>", E(leaf.value("emitter", "")),
                      "</td><td><a href=\"/proofs/", entry.seq(), "\">inclusion proof</a> (<a href=\"/proofs/",
                      entry.seq(), "?format=tlog-proof\">tlog-proof</a>)</td></tr>");
}

}  // namespace ledger::ops::page
