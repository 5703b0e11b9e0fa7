#include "query/projector/keys.h"

#include "absl/status/status.h"
#include "ledger/format/projection/keys.h"

namespace ledger::query {

using projection::AppendKeyPart;
using projection::TakeKeyPart;

std::string U64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (56 - 8 * i));
  return out;
}

uint64_t ReadU64(std::string_view bytes) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | static_cast<uint8_t>(bytes[i]);
  return v;
}

std::string EncodeStepKey(const StepKey& k) {
  std::string out;
  AppendKeyPart(&out, k.team);
  AppendKeyPart(&out, k.run_id);
  AppendKeyPart(&out, k.step_id);
  out += U64(static_cast<uint64_t>(k.attempt));
  return out;
}

absl::StatusOr<StepKey> DecodeStepKey(std::string_view key) {
  StepKey k;
  if (!TakeKeyPart(&key, &k.team) || !TakeKeyPart(&key, &k.run_id) || !TakeKeyPart(&key, &k.step_id) ||
      key.size() != 8) {
    return absl::DataLossError("projection: malformed step key");
  }
  k.attempt = static_cast<int64_t>(ReadU64(key));
  return k;
}

std::string EncodeRunKey(std::string_view team, std::string_view run_id) {
  std::string out;
  AppendKeyPart(&out, team);
  AppendKeyPart(&out, run_id);
  return out;
}

std::string TeamTimePrefix(std::string_view team) {
  std::string out = "T";
  AppendKeyPart(&out, team);
  return out;
}

std::string TeamTimeRow(std::string_view team, uint64_t first_at_us, std::string_view step_key) {
  return TeamTimePrefix(team) + U64(first_at_us) + std::string(step_key);
}

std::string RunTimePrefix(std::string_view run_key) { return "R" + std::string(run_key); }

std::string RunTimeRow(std::string_view run_key, uint64_t first_at_us, std::string_view step_key) {
  return RunTimePrefix(run_key) + U64(first_at_us) + std::string(step_key);
}

std::string StatePrefix(std::string_view team, int state) {
  std::string out = "S";
  AppendKeyPart(&out, team);
  out.push_back(static_cast<char>(state));
  return out;
}

std::string StateRow(std::string_view team, int state, uint64_t first_at_us, std::string_view step_key) {
  return StatePrefix(team, state) + U64(first_at_us) + std::string(step_key);
}

std::string RunsPrefix(std::string_view team) {
  std::string out = "U";
  AppendKeyPart(&out, team);
  return out;
}

std::string RunsRow(std::string_view team, uint64_t first_at_us, std::string_view run_key) {
  return RunsPrefix(team) + U64(first_at_us) + std::string(run_key);
}

std::string DeadlineRow(uint64_t timeout_at_us, uint64_t start_seq) {
  return kDeadlinePrefix + U64(timeout_at_us) + U64(start_seq);
}

std::string StartRow(std::string_view team, std::string_view receipt_id) {
  std::string out = "A";
  AppendKeyPart(&out, team);
  out.append(receipt_id);
  return out;
}

std::string CallTracePrefix(std::string_view team, std::string_view trace_id) {
  std::string out = "C";
  AppendKeyPart(&out, team);
  AppendKeyPart(&out, trace_id);
  return out;
}

std::string CallTraceRow(std::string_view team, std::string_view trace_id, uint64_t seq) {
  return CallTracePrefix(team, trace_id) + U64(seq);
}

std::string_view StepKeyOfRow(std::string_view row, size_t prefix_size) { return row.substr(prefix_size + 8); }

}  // namespace ledger::query
