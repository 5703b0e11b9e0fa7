// What report.html lists of each entry (pack::WriteReport, report.cc): the
// rows of the entries in scope, grouped by the step their receipt names,
// recomputed from the entries by the exporter and the verifier alike, so
// the report stays a function of the manifest, the entries and the
// checkpoint.
//
// Memory is bounded: the first kMaxRows entries in seq order are kept as
// rows; the rest are counted (a step's entries all stay in outcomes.json's
// `seqs`). Thread-compatible: one thread at a time.
#ifndef EXPORT_PACK_REPORT_H_
#define EXPORT_PACK_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/format/receipt/entry.h"

namespace ledger::pack {

// One entry as the report shows it. Strings are the receipt's, unescaped:
// every one of them is the emitter's and MUST be escaped before display.
struct ReportRow {
  uint64_t seq = 0;
  int64_t logged_at_us = 0;
  std::string emitter;
  std::string kind;      // agent_start, agent_exec, model_call, tool_call, step_unknown, leader_epoch, key_rotation
  std::string name;      // model_call: provider/model; tool_call: the tool
  std::string target;    // model_call: the route; tool_call: the target
  std::string decision;  // allow, deny, or empty
  std::string reason;
  std::string detail;  // agent_exec: status, exit code, duration; step_unknown: deadline
  int64_t input_tokens = -1, output_tokens = -1, cost_micros = -1;  // -1: not given
};

class ReportEntries {
 public:
  static constexpr size_t kMaxRows = 10'000;

  // `entry` MUST be the next entry in scope, in seq order.
  void Add(const receipt::Entry& entry);

  // The rows kept, by step key (query/projector/keys.h) of the step each
  // entry's receipt names, ascending seq within a step.
  const std::map<std::string, std::vector<ReportRow>>& rows() const { return rows_; }
  // Entries given, and those kept as rows.
  uint64_t seen() const { return seen_; }
  uint64_t kept() const { return kept_; }

 private:
  // The row's kind and what it says of an entry's receipt.
  static void Describe(const evidence::ledger::v1::Receipt& r, ReportRow* row);
  std::map<std::string, std::vector<ReportRow>> rows_;
  uint64_t seen_ = 0, kept_ = 0;
};

// A ledger time (µs since the epoch) in UTC, ISO 8601 with milliseconds and
// the zone written: 2026-01-01T00:00:00.000Z.
std::string UtcTime(int64_t us);

// A duration for people: "840 ms", "12.345 s", "3 min 04.500 s", "2 h 05 min 00.000 s".
std::string Duration(int64_t us);

}  // namespace ledger::pack

#endif  // EXPORT_PACK_REPORT_H_
