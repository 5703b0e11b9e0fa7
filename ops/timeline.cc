#include "ops/internal/timeline.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/html/html.h"
#include "util/http/http.h"

namespace ledger::ops {
namespace {

namespace pb = evidence::ledger::v1;

struct Span {
  const pb::Step* step;
  int64_t from, to;
  bool mark;  // denied: no duration
};

Span SpanOf(const pb::Step& s) {
  int64_t from = s.has_start() ? s.started_at_us() : s.first_at_us();
  if (s.state() == pb::STEP_STATE_DENIED) return {&s, from, from, true};
  int64_t to = s.has_completion() ? s.completed_at_us()
               : s.has_unknown()  ? s.unknown_at_us()
                                  : std::max(s.timeout_at_us(), from);
  return {&s, from, std::max(to, from), false};
}

std::string Percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f%%", std::clamp(v, 0.0, 100.0));
  return buf;
}

std::string State(pb::StepState s) {
  std::string n = pb::StepState_Name(s);
  return absl::AsciiStrToLower(n.substr(n.rfind('_') + 1));
}

}  // namespace

std::string IsoTime(int64_t us) {
  if (us <= 0) return "";
  std::time_t secs = static_cast<std::time_t>(us / 1'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Duration(int64_t us) {
  if (us < 1'000'000) return absl::StrCat(us / 1000, " ms");
  if (us < 60'000'000) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(us) / 1e6);
    return buf;
  }
  int64_t s = us / 1'000'000;
  if (s < 3600) return absl::StrCat(s / 60, " min ", s % 60, " s");
  return absl::StrCat(s / 3600, " h ", (s % 3600) / 60, " min");
}

std::string StepTimeline(const std::vector<pb::Step>& steps,
                         const std::function<std::string(const pb::Step&)>& step_href,
                         const std::function<std::vector<TimelineCall>(const pb::Step&)>& calls_of) {
  if (steps.empty()) return "";
  std::vector<Span> spans;
  for (const pb::Step& s : steps) spans.push_back(SpanOf(s));
  // The axis: every step's span, and the deadline of those still waiting
  // for a completion or declared unknown.
  int64_t lo = spans.front().from, hi = lo;
  for (const Span& s : spans) {
    lo = std::min(lo, s.from);
    hi = std::max(hi, s.to);
    const pb::StepState state = s.step->state();
    if ((state == pb::STEP_STATE_PENDING || state == pb::STEP_STATE_UNKNOWN) && s.step->timeout_at_us() > 0) {
      hi = std::max(hi, s.step->timeout_at_us());
    }
  }
  const double width = static_cast<double>(std::max<int64_t>(hi - lo, 1));
  auto at = [&](int64_t t) { return 100.0 * static_cast<double>(t - lo) / width; };
  std::string out = absl::StrCat(
      "<figure class=\"timeline\" aria-labelledby=\"timeline-caption\"><figcaption id=\"timeline-caption\">Step "
      "timeline, in the table's order: each step's bar, its calls as ticks (denied in red), its deadline a line (UTC; "
      "from ",
      IsoTime(lo), " to ", IsoTime(hi), ", ", Duration(hi - lo), ")</figcaption>");
  // The axis: five ticks, labels anchored inside the track.
  out += "<div class=\"tl-row tl-axis\" aria-hidden=\"true\"><span class=\"tl-label\"></span><span class=\"tl-track\">";
  for (int i = 0; i <= 4; ++i) {
    int64_t t = lo + (hi - lo) * i / 4;
    std::string iso = IsoTime(t);
    std::string label = iso.size() > 11 ? iso.substr(11, 8) : iso;  // HH:MM:SS
    if (hi - lo < 10'000'000) absl::StrAppend(&label, ".", absl::StrFormat("%03d", (t / 1000) % 1000));
    absl::StrAppend(&out, "<span class=\"tl-tick\" style=\"left:", Percent(i * 25.0),
                    i == 4 ? ";transform:translateX(-100%)" : (i > 0 ? ";transform:translateX(-50%)" : ""), "\">",
                    label, "</span>");
  }
  out += "</span></div>";
  for (const Span& s : spans) {
    const pb::Step& st = *s.step;
    std::string state = State(st.state());
    std::string name = absl::StrCat(st.step_id(), st.attempt() > 1 ? absl::StrCat(" #", st.attempt()) : "");
    std::string what = s.mark ? absl::StrCat(name, ": denied at ", IsoTime(s.from))
                              : absl::StrCat(name, ": ", state, ", ", IsoTime(s.from), " to ", IsoTime(s.to), " (",
                                             Duration(s.to - s.from), ")");
    absl::StrAppend(&out, "<div class=\"tl-row\"><a class=\"tl-label\" href=\"", step_href(st), "\">",
                    html::HtmlEscape(name), "</a><span class=\"tl-track\">");
    if (s.mark) {
      absl::StrAppend(&out, "<span class=\"tl-mark ", state, "\" role=\"img\" aria-label=\"", html::HtmlEscape(what),
                      "\" title=\"", html::HtmlEscape(what), "\" style=\"left:", Percent(at(s.from)), "\"></span>");
    } else {
      absl::StrAppend(&out, "<span class=\"tl-bar ", state, "\" role=\"img\" aria-label=\"", html::HtmlEscape(what),
                      "\" title=\"", html::HtmlEscape(what), "\" style=\"left:", Percent(at(s.from)),
                      ";width:", Percent(at(s.to) - at(s.from)), "\"></span>");
    }
    const int64_t deadline = st.timeout_at_us();
    if (!s.mark && deadline > 0 && deadline >= lo && deadline <= hi) {
      std::string due = absl::StrCat(name, ": deadline ", IsoTime(deadline));
      absl::StrAppend(&out, "<span class=\"tl-deadline\" role=\"img\" aria-label=\"", html::HtmlEscape(due),
                      "\" title=\"", html::HtmlEscape(due), "\" style=\"left:", Percent(at(deadline)), "\"></span>");
    }
    if (calls_of) {
      for (const TimelineCall& c : calls_of(st)) {
        std::string what = absl::StrCat(name, ": ", c.what, " at ", IsoTime(c.at_us));
        absl::StrAppend(&out, "<span class=\"tl-call", c.denied ? " denied" : "", "\" role=\"img\" aria-label=\"",
                        html::HtmlEscape(what), "\" title=\"", html::HtmlEscape(what),
                        "\" style=\"left:", Percent(at(c.at_us)), "\"></span>");
      }
    }
    out += "</span></div>";
  }
  return out + "</figure>";
}

}  // namespace ledger::ops
