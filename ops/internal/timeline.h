// A run's step timeline for the dashboard: one row per step, in the order
// the steps began, a bar from the step's start to its end on a shared time
// axis (UTC). Labels sit in a column of their own, so they never cover a
// bar; a denied step, which never ran, is a mark at its decision, not a bar.
//
//   end of a step = its completion, else its unknown declaration, else (still
//   pending) its deadline; a step with no start begins at its first entry.
//
// Thread-safe: a pure function.
#ifndef OPS_INTERNAL_TIMELINE_H_
#define OPS_INTERNAL_TIMELINE_H_

#include <functional>
#include <string>
#include <vector>

#include "query.pb.h"

namespace ledger::ops {

// A call of a step, as its timeline shows it: a tick inside the step's bar.
struct TimelineCall {
  int64_t at_us = 0;  // logged_at_us
  std::string what;   // "model_call demo-claude: allow"
  bool denied = false;
};

// The HTML of the timeline of `steps` as a waterfall, in the order given
// (the table's beside it), each label linking to `step_href(step)`: a bar
// from the step's start to its completion or unknown declaration (a
// denied step a mark), a line at its deadline when that falls inside the
// axis (always for a pending or unknown step), and a tick for each of its
// calls, from `calls_of(step)`; "" when there are no steps. Positions are
// percentages of the axis, in inline styles (the dashboard's CSP allows
// inline styles, no scripts).
std::string StepTimeline(
    const std::vector<evidence::ledger::v1::Step>& steps,
    const std::function<std::string(const evidence::ledger::v1::Step&)>& step_href,
    const std::function<std::vector<TimelineCall>(const evidence::ledger::v1::Step&)>& calls_of = nullptr);

// "2026-01-01T12:00:05Z": microseconds since the epoch, in UTC.
std::string IsoTime(int64_t us);

// "950 ms", "12.5 s", "3 min 20 s", "2 h 5 min".
std::string Duration(int64_t us);

}  // namespace ledger::ops

#endif  // OPS_INTERNAL_TIMELINE_H_
