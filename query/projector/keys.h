// Keys of the step and run projections (format 3, StepProjector::Format;
// DO NOT CHANGE without a new format and its upgrade: stored projections
// and page tokens depend on them). Strings are parts
// (str: prefixed with their length, ledger/format/projection/keys.h, whose shapes
// the store's memtable hints rely on), integers are big-endian u64, so rows
// sort by team, then time, and parse back.
//
//   step key    = str(team) str(run_id) str(step_id) u64(attempt)
//   run key     = str(team) str(run_id)
//   p_steps     step key -> Step (proto/query.proto)
//   p_runs      run key -> Run
//   p_changes   u64(seq) -> StepChange: the step as of entry seq
//   p_index     'T' str(team) u64(first_at_us) step key        -> ""
//               'R' run key u64(first_at_us) step key           -> ""
//               'S' str(team) u8(state) u64(first_at_us) step key -> ""
//                   (format 1 had none for pending steps, which only
//                   their 'D' row listed)
//               'U' str(team) u64(first_at_us) run key          -> ""
//               'D' u64(timeout_at_us) u64(start_seq)           -> step key
//               'A' str(team) receipt_id                        -> step key
//               'C' str(team) str(trace_id) u64(seq)            -> step key
//                   (a model_call or tool_call entry that carries a
//                   trace id, with the step key its receipt names,
//                   step_id "" when it names none, whether or not that
//                   step is in the log; format 2 had none)
//
// Thread-safe: pure functions.
#ifndef QUERY_PROJECTOR_KEYS_H_
#define QUERY_PROJECTOR_KEYS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ledger/format/projection/keys.h"

namespace ledger::query {

struct StepKey {
  std::string team;
  std::string run_id;
  std::string step_id;
  int64_t attempt = 1;
  bool operator==(const StepKey&) const = default;
};

std::string EncodeStepKey(const StepKey& k);
absl::StatusOr<StepKey> DecodeStepKey(std::string_view key);
std::string EncodeRunKey(std::string_view team, std::string_view run_id);

std::string U64(uint64_t v);
uint64_t ReadU64(std::string_view bytes);  // bytes.size() >= 8

// Index rows and prefixes, as in the grammar above.
std::string TeamTimeRow(std::string_view team, uint64_t first_at_us, std::string_view step_key);
std::string TeamTimePrefix(std::string_view team);
std::string RunTimeRow(std::string_view run_key, uint64_t first_at_us, std::string_view step_key);
std::string RunTimePrefix(std::string_view run_key);
std::string StateRow(std::string_view team, int state, uint64_t first_at_us, std::string_view step_key);
std::string StatePrefix(std::string_view team, int state);
std::string RunsRow(std::string_view team, uint64_t first_at_us, std::string_view run_key);
std::string RunsPrefix(std::string_view team);
std::string DeadlineRow(uint64_t timeout_at_us, uint64_t start_seq);
inline constexpr char kDeadlinePrefix[] = {projection::kDeadlineFamily, '\0'};
std::string StartRow(std::string_view team, std::string_view receipt_id);
std::string CallTraceRow(std::string_view team, std::string_view trace_id, uint64_t seq);
std::string CallTracePrefix(std::string_view team, std::string_view trace_id);

// The step key at the end of a 'T', 'R' or 'S' row whose prefix is
// `prefix_size` bytes long (the time follows the prefix).
std::string_view StepKeyOfRow(std::string_view row, size_t prefix_size);

}  // namespace ledger::query

#endif  // QUERY_PROJECTOR_KEYS_H_
