#include "ledger/format/receipt/redaction.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace ledger::receipt {
Receipt Redaction(const Entry& erased, const hash::Hash& leaf_hash, std::string_view reason,
                  std::string_view requested_by, std::string_view approved_by, int64_t now_us) {
  Receipt r;
  r.set_receipt_id(absl::StrCat(std::string(kRedactionIdPrefix), erased.seq));
  r.set_team(std::string(kLedgerTeam));
  r.set_run_id(std::string(kRedactionsRun));
  r.set_attempt(1);
  r.set_occurred_at_us(now_us);
  auto* b = r.mutable_redaction();
  b->set_entry_seq(static_cast<int64_t>(erased.seq));
  b->set_entry_leaf_hash(hash::Hex(leaf_hash));
  b->set_entry_v(erased.version);
  b->set_entry_prev(hash::Hex(erased.prev));
  b->set_entry_logged_at_us(erased.logged_at_us);
  if (erased.run_prev) b->set_entry_run_prev(static_cast<int64_t>(*erased.run_prev));
  if (erased.team_prev) b->set_entry_team_prev(static_cast<int64_t>(*erased.team_prev));
  const Receipt& e = erased.receipt;
  b->set_entry_kind(std::string(KindName(e)));
  b->set_entry_team(e.team());
  b->set_entry_run_id(e.run_id());
  b->set_entry_receipt_id(e.receipt_id());
  b->set_entry_step_id(e.step_id());
  b->set_entry_attempt(e.has_attempt() ? e.attempt() : 1);
  if (e.has_agent_exec()) b->set_entry_start_receipt_id(e.agent_exec().start_receipt_id());
  b->set_reason(std::string(reason));
  b->set_requested_by(std::string(requested_by));
  b->set_approved_by(std::string(approved_by));
  return r;
}

Entry SkeletonOf(const Receipt& r) {
  const auto& b = r.redaction();
  Entry e;
  e.erased = true;
  e.seq = static_cast<uint64_t>(b.entry_seq());
  if (auto prev = hash::ParseHex(b.entry_prev()); prev.ok()) e.prev = *prev;
  if (b.has_entry_run_prev()) e.run_prev = static_cast<uint64_t>(b.entry_run_prev());
  if (b.has_entry_team_prev()) e.team_prev = static_cast<uint64_t>(b.entry_team_prev());
  e.version = static_cast<int>(b.entry_v());
  e.logged_at_us = b.entry_logged_at_us();
  Receipt& s = e.receipt;
  s.set_team(b.entry_team());
  s.set_run_id(b.entry_run_id());
  s.set_receipt_id(b.entry_receipt_id());
  s.set_step_id(b.entry_step_id());
  s.set_attempt(b.entry_attempt());
  const std::string& kind = b.entry_kind();
  if (kind == "agent_start") {
    s.mutable_agent_start();
  } else if (kind == "agent_exec") {
    s.mutable_agent_exec()->set_start_receipt_id(b.entry_start_receipt_id());
  } else if (kind == "model_call") {
    s.mutable_model_call();
  } else if (kind == "tool_call") {
    s.mutable_tool_call();
  }
  return e;
}

hash::Hash ErasedLeafHash(const Receipt& r) {
  auto h = hash::ParseHex(r.redaction().entry_leaf_hash());
  return h.ok() ? *h : hash::Hash{};
}

namespace {

// The line of `skeleton` (SkeletonOf's form), erased leaf hash `leaf_hash`,
// redacted by `by`: keys in byte order, as canonical JSON.
std::string Line(uint64_t by, const hash::Hash& leaf_hash, const Entry& e) {
  nlohmann::json receipt = nlohmann::json::object();
  const Receipt& r = e.receipt;
  receipt["attempt"] = r.attempt();
  receipt["kind"] = std::string(KindName(r));
  receipt["receipt_id"] = r.receipt_id();
  receipt["run_id"] = r.run_id();
  if (r.has_agent_exec()) receipt["start_receipt_id"] = r.agent_exec().start_receipt_id();
  if (!r.step_id().empty()) receipt["step_id"] = r.step_id();
  receipt["team"] = r.team();
  nlohmann::json inner = nlohmann::json::object();
  inner["by"] = by;
  inner["leaf_hash"] = hash::Hex(leaf_hash);
  inner["logged_at_us"] = e.logged_at_us;
  inner["prev"] = hash::Hex(e.prev);
  inner["receipt"] = std::move(receipt);
  if (e.run_prev) inner["run_prev"] = *e.run_prev;
  inner["seq"] = e.seq;
  if (e.team_prev) inner["team_prev"] = *e.team_prev;
  inner["v"] = e.version;
  nlohmann::json line = nlohmann::json::object();
  line["redacted"] = std::move(inner);
  return line.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::strict);
}

absl::Status NotRedacted(std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("not a redacted line: ", std::string(why)));
}

}  // namespace

std::string RedactedLine(uint64_t by, const Receipt& r) { return Line(by, ErasedLeafHash(r), SkeletonOf(r)); }

std::string EncodeRedacted(const Redacted& r) { return Line(r.by, r.leaf_hash, r.skeleton); }

absl::StatusOr<Redacted> ParseRedacted(std::string_view line) {
  if (!LooksRedacted(line)) return NotRedacted("it does not begin {\"redacted\":");
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.size() != 1) return NotRedacted("not one JSON object");
  const nlohmann::json& in = j["redacted"];
  if (!in.is_object()) return NotRedacted("redacted: want an object");
  auto uint = [&](const nlohmann::json& o, const char* k) -> std::optional<uint64_t> {
    auto it = o.find(k);
    if (it == o.end() || !it->is_number_unsigned()) return std::nullopt;
    return it->get<uint64_t>();
  };
  auto str = [&](const nlohmann::json& o, const char* k) -> std::string {
    auto it = o.find(k);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  Redacted out;
  out.skeleton.erased = true;
  auto by = uint(in, "by");
  auto seq = uint(in, "seq");
  auto logged = uint(in, "logged_at_us");
  auto v = uint(in, "v");
  if (!by || !seq || !logged || !v) return NotRedacted("by, seq, logged_at_us and v: want integers");
  if (!hash::ParseHexTo(str(in, "leaf_hash"), &out.leaf_hash)) return NotRedacted("leaf_hash: want 64 hex digits");
  Entry& e = out.skeleton;
  if (!hash::ParseHexTo(str(in, "prev"), &e.prev)) return NotRedacted("prev: want 64 hex digits");
  out.by = *by;
  e.seq = *seq;
  e.logged_at_us = static_cast<int64_t>(*logged);
  e.version = static_cast<int>(*v);
  if (in.contains("run_prev")) {
    if (!uint(in, "run_prev")) return NotRedacted("run_prev: want an integer");
    e.run_prev = *uint(in, "run_prev");
  }
  if (in.contains("team_prev")) {
    if (!uint(in, "team_prev")) return NotRedacted("team_prev: want an integer");
    e.team_prev = *uint(in, "team_prev");
  }
  auto rit = in.find("receipt");
  if (rit == in.end() || !rit->is_object()) return NotRedacted("receipt: want an object");
  Receipt& r = e.receipt;
  r.set_team(str(*rit, "team"));
  r.set_run_id(str(*rit, "run_id"));
  r.set_receipt_id(str(*rit, "receipt_id"));
  r.set_step_id(str(*rit, "step_id"));
  auto attempt = uint(*rit, "attempt");
  r.set_attempt(attempt ? static_cast<int64_t>(*attempt) : 0);
  const std::string kind = str(*rit, "kind");
  if (kind == "agent_start") {
    r.mutable_agent_start();
  } else if (kind == "agent_exec") {
    r.mutable_agent_exec()->set_start_receipt_id(str(*rit, "start_receipt_id"));
  } else if (kind == "model_call") {
    r.mutable_model_call();
  } else if (kind == "tool_call") {
    r.mutable_tool_call();
  } else {
    return NotRedacted("receipt.kind: want agent_start, agent_exec, model_call or tool_call");
  }
  // Exactly the line: every key known, canonical, nothing else.
  if (Line(out.by, out.leaf_hash, e) != line) return NotRedacted("not its canonical form, or a key not of the line");
  return out;
}

bool LooksRedacted(std::string_view line) { return line.starts_with("{\"redacted\":"); }

absl::StatusOr<Entry> ParseStored(std::string_view line) {
  if (!LooksRedacted(line)) return ParseLeaf(line);
  auto redacted = ParseRedacted(line);
  if (!redacted.ok()) return redacted.status();
  return std::move(redacted->skeleton);
}

}  // namespace ledger::receipt
