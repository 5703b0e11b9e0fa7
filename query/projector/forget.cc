// Retention (CONTRACT section 9): what the step projector's records keep
// of pruned entries, deleted. Records keyed by one entry (its step change,
// a call's trace row) go with the entry; a run's records (its run, its
// steps and every index row that names them) go once all of its entries
// are pruned. A run with entries above the line keeps them: they are what
// the ledger derived while the bodies were there.
#include "proto/query.pb.h"
#include "query/projector/keys.h"
#include "query/projector/projector.h"

namespace ledger::query {

using projection::Table;

absl::Status StepProjector::Forget(absl::Span<const projection::Entry> entries,
                                   absl::Span<const std::pair<std::string, std::string>> whole_runs, const Scan& scan,
                                   projection::Txn& txn) {
  for (const projection::Entry& e : entries) {
    txn.DeleteUnread(Table::kChanges, U64(e.seq));
    const receipt::Receipt* r = e.receipt;
    if (r == nullptr || e.erased) continue;
    const std::string& trace = r->trace_id();
    if (!trace.empty() && (r->has_model_call() || r->has_tool_call())) {
      txn.DeleteUnread(Table::kIndex, CallTraceRow(r->team(), trace, e.seq));
    }
  }
  for (const auto& whole : whole_runs) {
    const std::string& team = whole.first;
    const std::string run_key = EncodeRunKey(team, whole.second);
    absl::Status bad;
    absl::Status read = scan(Table::kSteps, run_key, [&](std::string_view key, std::string_view value) {
      pb::Step step;
      if (!step.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
        bad = absl::DataLossError("projection: a step record does not parse");
        return false;
      }
      const auto first_at = static_cast<uint64_t>(step.first_at_us());
      txn.Delete(Table::kSteps, key);
      txn.DeleteUnread(Table::kIndex, TeamTimeRow(team, first_at, key));
      txn.DeleteUnread(Table::kIndex, RunTimeRow(run_key, first_at, key));
      txn.DeleteUnread(Table::kIndex, StateRow(team, step.state(), first_at, key));
      txn.DeleteUnread(Table::kIndex, DeadlineRow(static_cast<uint64_t>(step.timeout_at_us()), step.start_seq()));
      if (!step.start_receipt_id().empty()) txn.Delete(Table::kIndex, StartRow(team, step.start_receipt_id()));
      return true;
    });
    if (!read.ok()) return read;
    if (!bad.ok()) return bad;
    auto run = txn.Get(Table::kRuns, run_key);
    if (!run.ok()) return run.status();
    if (run->has_value()) {
      pb::Run parsed;
      if (!parsed.ParseFromString(**run)) return absl::DataLossError("projection: a run record does not parse");
      txn.DeleteUnread(Table::kIndex, RunsRow(team, static_cast<uint64_t>(parsed.first_at_us()), run_key));
      txn.Delete(Table::kRuns, run_key);
    }
  }
  return absl::OkStatus();
}

}  // namespace ledger::query
