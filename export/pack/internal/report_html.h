// report.html's parts shared by the files that write its sections
// (report.cc, report_timeline.cc, report_trust.cc). Inside export_pack;
// not part of its interface.
#ifndef LEDGER_EXPORT_PACK_INTERNAL_REPORT_HTML_H_
#define LEDGER_EXPORT_PACK_INTERNAL_REPORT_HTML_H_

#include <climits>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "export/manifest/manifest.h"
#include "export/pack/report.h"
#include "query/projector/projector.h"

namespace ledger::pack::html {

using query::pb::Step;

// The steps the report shows and what is counted of all of them.
struct Shown {
  std::vector<Step> steps;
  int64_t total = 0, unknown = 0;
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;  // over the shown steps
  std::set<std::string> step_keys;         // row keys that name a step
  bool multi_run = false;
};

// The steps the report shows (the kMaxSteps earliest by start, then key,
// in that order) and what is counted of all of them, chosen in one pass
// over every step record in the order outcomes.json lists them: the
// report's own, or the one that writes outcomes.json (Outcomes::Write).
class StepChooser {
 public:
  static constexpr size_t kMaxSteps = 1000;

  // `entries` MUST outlive this object.
  explicit StepChooser(const ReportEntries& entries) : entries_(entries) {}
  void Add(const Step& s);
  Shown Finish() &&;

 private:
  const ReportEntries& entries_;
  Shown shown_;
  std::string run_;  // of the last step added
  // The earliest steps so far, by (start, key): at most kMaxSteps.
  std::map<std::pair<int64_t, std::string>, Step> first_;
};

// `s` escaped for HTML text and attribute values.
std::string E(std::string_view s);
// When the step started (its start, or its first receipt without one).
int64_t StepStart(const Step& s);
// The step's end: its unknown declaration, its completion, or (pending, or
// denied at its start) none: -1.
int64_t StepEnd(const Step& s);
// The step's state as the report names it.
std::string StateOf(const Step& s);
// A row of a facts table; nothing when `html` is empty.
void Fact(const std::string& name, const std::string& html, std::string* h);

// The timeline of the shown steps (report_timeline.cc).
void Timeline(const Shown& shown, std::string* h);
// "Why to trust this page": the checkpoint, the commands that verify the
// pack, what to check by hand, and what the pack proves complete
// (report_trust.cc); in format 7, the keys and what vouches for the time,
// from the entries kept and `time_note` (the checkpoint-time file).
void Trust(const manifest::Manifest& m, const std::string& checkpoint_note, const std::string& time_note,
           const ReportEntries& entries, std::string* h);

}  // namespace ledger::pack::html

#endif  // LEDGER_EXPORT_PACK_INTERNAL_REPORT_HTML_H_
