// report.html's timeline: inline SVG, no script, no external asset.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "export/pack/internal/report_html.h"
#include "export/pack/report.h"

namespace ledger::pack::html {
namespace {

// The timeline: inline SVG, no script, no external asset. A label column on
// the left (clipped, and cut to fit), the plot, and a margin on the right
// for the state word; an axis of UTC ticks on top.
constexpr int kLabel = 220, kPlot = 700, kRight = 90, kAxis = 28, kRow = 18;
constexpr size_t kLabelChars = 28;  // 12px monospace: 28 fit in kLabel - 8

// At most kLabelChars code points, the last one an ellipsis when cut.
std::string FitLabel(std::string_view s) {
  size_t points = 0, cut = std::string_view::npos;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xc0) == 0x80) continue;
    if (++points == kLabelChars) cut = i;
  }
  if (points <= kLabelChars) return std::string(s);
  return std::string(s.substr(0, cut)) + "\xe2\x80\xa6";
}

// The tick spacing: the smallest of these with at most 6 ticks over `span`.
int64_t TickStep(int64_t span) {
  static constexpr int64_t kMs = 1000, kS = 1000 * kMs, kMin = 60 * kS, kH = 60 * kMin, kD = 24 * kH;
  static constexpr int64_t kSteps[] = {
      kMs,    2 * kMs, 5 * kMs, 10 * kMs, 20 * kMs, 50 * kMs, 100 * kMs, 200 * kMs, 500 * kMs, kS,        2 * kS,
      5 * kS, 10 * kS, 15 * kS, 30 * kS,  kMin,     2 * kMin, 5 * kMin,  10 * kMin, 15 * kMin, 30 * kMin, kH,
      2 * kH, 3 * kH,  6 * kH,  12 * kH,  kD,       2 * kD,   7 * kD,    30 * kD,   365 * kD};
  for (int64_t step : kSteps) {
    if (span / step <= 6) return step;
  }
  return span / 6 + 1;
}

std::string TickLabel(int64_t us, int64_t step) {
  const char* format = step < 1'000'000 ? "%H:%M:%E3SZ" : step < int64_t{86'400'000'000} ? "%H:%M:%SZ" : "%Y-%m-%d";
  return absl::FormatTime(format, absl::FromUnixMicros(us), absl::UTCTimeZone());
}

struct Plot {
  int64_t t0, t1;
  int x(int64_t t) const {
    double span = static_cast<double>(std::max<int64_t>(1, t1 - t0));
    return kLabel + static_cast<int>(static_cast<double>(t - t0) * kPlot / span);
  }
};

void TimelineAxis(const Plot& p, int height, std::string* h) {
  int64_t step = TickStep(p.t1 - p.t0);
  int64_t first = p.t0 % step == 0 ? p.t0 : (p.t0 / step + 1) * step;
  for (int64_t t = first; t <= p.t1; t += step) {
    int x = p.x(t);
    absl::StrAppend(h, "<line class=\"tick\" x1=\"", x, "\" y1=\"", kAxis - 6, "\" x2=\"", x, "\" y2=\"", height - 4,
                    "\" stroke=\"#cccccc\"/><text class=\"tick\" x=\"", x, "\" y=\"14\" text-anchor=\"middle\">",
                    TickLabel(t, step), "</text>\n");
  }
}

const char* Fill(const std::string& state) {
  return state == "succeeded" ? "#3b7d1f"
         : state == "failed"  ? "#b36b00"
         : state == "unknown" ? "#c00000"
         : state == "denied"  ? "#555555"
                              : "#3f6fc0";
}

// One step's row: its label, then a bar from its start to its end (a
// pending one open to the latest time shown), or, denied at its start, a
// diamond; then its state in words.
void TimelineRow(const Step& s, const Plot& p, bool multi_run, int row, std::string* h) {
  std::string state = StateOf(s);
  std::string name = multi_run ? absl::StrCat(s.run_id(), "/", s.step_id()) : s.step_id();
  if (s.attempt() != 1) absl::StrAppend(&name, " #", s.attempt());
  int y = kAxis + row * kRow;
  int64_t start = StepStart(s), end = StepEnd(s);
  absl::StrAppend(h, "<svg x=\"0\" y=\"", y, "\" width=\"", kLabel - 8, "\" height=\"", kRow,
                  "\" overflow=\"hidden\"><text class=\"label\" x=\"4\" y=\"13\">", E(FitLabel(name)), "</text></svg>");
  std::string title = absl::StrCat(E(name), ": ", state == "unknown" ? "UNKNOWN" : state, ", from ", UtcTime(start));
  int x0 = p.x(start), right;
  if (state == "denied") {
    absl::StrAppend(h, "<polygon class=\"step denied\" points=\"", x0, ",", y + 2, " ", x0 + 6, ",", y + 8, " ", x0,
                    ",", y + 14, " ", x0 - 6, ",", y + 8, "\" fill=\"", Fill(state), "\"><title>", title,
                    "</title></polygon>");
    right = x0 + 6;
  } else {
    int w = std::max(3, p.x(end < 0 ? p.t1 : end) - x0);
    if (end >= 0) absl::StrAppend(&title, " to ", UtcTime(end), " (", Duration(end - start), ")");
    absl::StrAppend(h, "<rect class=\"step ", E(state), "\" x=\"", x0, "\" y=\"", y + 3, "\" width=\"", w,
                    "\" height=\"12\" fill=\"", Fill(state), "\"", end < 0 ? " fill-opacity=\"0.45\"" : "", "><title>",
                    title, "</title></rect>");
    right = x0 + w;
  }
  absl::StrAppend(h, "<text class=\"state\" x=\"", right + 4, "\" y=\"", y + 13, "\" fill=\"", Fill(state), "\">",
                  state == "unknown" ? "UNKNOWN" : state, "</text>\n");
}

}  // namespace

void Timeline(const Shown& shown, std::string* h) {
  if (shown.steps.empty()) return;
  Plot p{shown.t0, shown.t1};
  int height = kAxis + static_cast<int>(shown.steps.size()) * kRow + 6;
  int width = kLabel + kPlot + kRight;
  absl::StrAppend(h, "<h2>Timeline</h2>\n<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 ",
                  width, " ", height, "\" width=\"", width, "\" height=\"", height,
                  "\" role=\"img\" aria-label=\"step timeline, UTC\">\n");
  TimelineAxis(p, height, h);
  int row = 0;
  for (const Step& s : shown.steps) TimelineRow(s, p, shown.multi_run, row++, h);
  absl::StrAppend(h, "</svg>\n<p>Steps in the order they started, from ", UtcTime(shown.t0), " to ", UtcTime(shown.t1),
                  " (UTC, the ledger's clock). Green: succeeded; orange: failed; red: unknown (no completion "
                  "by its deadline, drawn to its declaration); grey diamond: denied at its start; pale blue: "
                  "pending, still open at the checkpoint.</p>\n");
}

}  // namespace ledger::pack::html
