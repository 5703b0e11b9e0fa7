// What the pass that writes outcomes.json (Outcomes::Write) notes of the
// step records for the readers that come after it, so that they do not
// read the spilled records again, each once more: the report's steps
// (WriteReport), the first step pending past its deadline
// (FirstOverdueStep) and the steps unsettled (UnsettledSteps). Each part
// is bounded; a part that would pass its bound is left out, and its
// reader reads the records itself. Inside export_pack; not part of its
// interface.
#ifndef LEDGER_EXPORT_PACK_INTERNAL_STEP_NOTES_H_
#define LEDGER_EXPORT_PACK_INTERNAL_STEP_NOTES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "export/pack/internal/report_html.h"
#include "export/pack/pack.h"

namespace ledger::pack {

struct StepNotes {
  static constexpr size_t kMaxPending = size_t{1} << 12;
  static constexpr size_t kMaxUnsettled = size_t{1} << 16;

  // A pending step with a start, and when it times out.
  struct Pending {
    std::string team, run_id, step_id;
    int64_t attempt = 0;
    int64_t timeout_at_us = 0;
  };

  std::optional<html::Shown> shown;
  // In outcomes.json's order, each pending step with a start that times
  // out before every one listed before it: the first step whose
  // timeout_at_us + grace is before a time is among them, for any grace
  // under which no timeout_at_us + grace overflows (checked against the
  // least and the greatest of all of them).
  std::optional<std::vector<Pending>> pending;
  int64_t least_timeout_at_us = INT64_MAX, greatest_timeout_at_us = INT64_MIN;
  // UnsettledSteps' answer.
  std::optional<std::vector<std::string>> unsettled;
};

}  // namespace ledger::pack

#endif  // LEDGER_EXPORT_PACK_INTERNAL_STEP_NOTES_H_
