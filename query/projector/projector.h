// The step projector: CONTRACT §4 as a function of the log. For each entry
// it updates the step the entry belongs to (state, anomalies, calls, costs,
// the seqs it was derived from), the run's summary and the indexes queries
// use, and, when the entry changes the step's state, start, completion,
// unknown declaration or anomalies, writes a StepChange for watchers.
//
// How entries decide a step's state (a step is team, run_id, step_id,
// attempt):
//   agent_start deny -> denied; allow -> pending, due at logged_at_us +
//     timeout_ms (the ledger adds its grace). A second start for the same
//     step is flagged duplicate_start and changes nothing else.
//   agent_exec -> finds its start by start_receipt_id within its team:
//     none: orphan_completion on the exec's own step, which takes the exec's
//       status if it has no start; another step's: mismatched_completion on
//       that step, which is not completed; a denied start:
//       completion_after_deny; a step already completed:
//       duplicate_completion (same status) or conflicting_completion (the
//       first stays); a step declared unknown: late_completion, recorded,
//       and the step stays unknown; otherwise succeeded or failed.
//   step_unknown -> a pending step whose start it names becomes unknown.
//   model_call, tool_call -> counted on their step if it is in the log,
//     else on the run only ("unattached"); found by their trace id, if they
//     carry one, whether or not their step is in the log.
// Charged cost = actual (exec + calls), or for failed and unknown steps
// max(actual, cost_reserved_micros).
//
// Thread-safe: stateless; one Apply per Txn at a time.
#ifndef QUERY_PROJECTOR_PROJECTOR_H_
#define QUERY_PROJECTOR_PROJECTOR_H_

#include <string>

#include "google/protobuf/message_lite.h"
#include "ledger/format/projection/projection.h"
#include "nlohmann/json.hpp"
#include "query.pb.h"

namespace ledger::query {

namespace pb = evidence::ledger::v1;

class StepProjector final : public projection::Projector {
 public:
  absl::Status Apply(absl::Span<const projection::Entry> entries, projection::Txn& txn) override;
  // Format 3: calls that carry a trace id have a trace row ('C', keys.h);
  // format 2 had none. Format 2: pending steps have a state row ('S') like
  // every other state; format 1 listed them by their deadline rows only.
  uint64_t Format() const override { return 3; }
  // From format 1: the state rows from the deadline rows. From 1 or 2: the
  // trace rows from the log's call entries.
  absl::StatusOr<uint64_t> Upgrade(uint64_t from, projection::Txn& txn, const Scan& scan,
                                   const Replay& replay) override;
  // An entry's step change and call trace row; a whole run's run, steps and
  // every index row naming them (forget.cc).
  absl::Status Forget(absl::Span<const projection::Entry> entries,
                      absl::Span<const std::pair<std::string, std::string>> whole_runs, const Scan& scan,
                      projection::Txn& txn) override;
};

// Protobuf bytes with deterministic serialization: what projections store,
// so that a rebuild reproduces them byte for byte.
std::string Serialize(const google::protobuf::MessageLite& m);

// The JSON name of a state, status or anomaly ("pending", "timed_out",
// "late_completion").
std::string StateName(pb::StepState s);
std::string StatusName(pb::ExecStatus s);
std::string AnomalyName(pb::Anomaly a);

// A step and a run as JSON objects for people and scripts: the contract's
// names, absent parts omitted, keys sorted (so `dump()` is deterministic).
nlohmann::json StepJson(const pb::Step& s);
nlohmann::json RunJson(const pb::Run& r);

// The same bytes as StepJson(s).dump() and RunJson(r).dump(), written
// straight to `out`: outcomes.json has one per step, and building a JSON
// tree for each costs several times the writing. `s` and `r` hold UTF-8
// (they come from canonical leaves).
void AppendStepJson(const pb::Step& s, std::string* out);
void AppendRunJson(const pb::Run& r, std::string* out);

}  // namespace ledger::query

#endif  // QUERY_PROJECTOR_PROJECTOR_H_
