#include "ledger/format/receipt/redaction.h"

#include "absl/strings/str_cat.h"
#include "ledger/format/receipt/internal/rules.h"
#include "nlohmann/json.hpp"

namespace ledger::receipt {
absl::Status CheckErasureReason(std::string_view reason) {
  using rules::CheckPrintable;
  using rules::Invalid;
  if (reason.empty()) return Invalid("reason", "required, why the entry is erased, 1-1024 bytes");
  if (reason.size() > 1024) return Invalid("reason", "at most 1024 bytes");
  return CheckPrintable("reason", reason);
}

// A redaction's fields (CONTRACT section 8): the erased entry's skeleton,
// the reason and the two admins. Whether the skeleton is the erased leaf's
// is the ledger's to know when it writes one.
absl::Status rules::CheckRedaction(const Receipt& r) {
  using rules::Broken;
  using rules::CheckLength;
  using rules::CheckPrintable;
  using rules::Invalid;
  using rules::IsLowerHex;
  using rules::IsReceiptId;
  using rules::kReceiptIdRule;
  const auto& b = r.redaction();
  if (!b.has_entry_seq() || b.entry_seq() < 0) return Invalid("entry_seq", "required, the erased entry's seq");
  const std::string id = absl::StrCat(std::string(kRedactionIdPrefix), b.entry_seq());
  if (r.receipt_id() != id) return Invalid("receipt_id", absl::StrCat("a redaction's is '", id, "'"));
  if (r.team() != kLedgerTeam)
    return Invalid("team", absl::StrCat("a redaction's is '", std::string(kLedgerTeam), "'"));
  if (r.run_id() != kRedactionsRun) {
    return Invalid("run_id", absl::StrCat("a redaction's is '", std::string(kRedactionsRun), "'"));
  }
  if (!r.step_id().empty()) return Invalid("step_id", "a redaction has none");
  if (!IsLowerHex(b.entry_leaf_hash(), 64)) return Invalid("entry_leaf_hash", "must be 64 lowercase hex digits");
  if (!b.has_entry_v() || (b.entry_v() != 1 && b.entry_v() != 2)) return Invalid("entry_v", "required, 1 or 2");
  if (!IsLowerHex(b.entry_prev(), 64)) return Invalid("entry_prev", "must be 64 lowercase hex digits");
  if (!b.has_entry_logged_at_us() || b.entry_logged_at_us() <= 0) {
    return Invalid("entry_logged_at_us", "required, > 0");
  }
  if (b.has_entry_run_prev() && (b.entry_run_prev() < 0 || b.entry_run_prev() >= b.entry_seq())) {
    return Invalid("entry_run_prev", "must be below entry_seq");
  }
  if (b.has_entry_team_prev() &&
      (b.entry_v() != 2 || b.entry_team_prev() < 0 || b.entry_team_prev() >= b.entry_seq())) {
    return Invalid("entry_team_prev", "only with entry_v 2, below entry_seq");
  }
  const std::string_view kind = b.entry_kind();
  if (kind != "agent_start" && kind != "agent_exec" && kind != "model_call" && kind != "tool_call") {
    return Invalid("entry_kind",
                   "one of agent_start, agent_exec, model_call, tool_call (entries the ledger wrote are "
                   "never erased)");
  }
  if (auto s = CheckTeam("entry_team", b.entry_team()); !s.ok()) return s;
  if (!IsReceiptId(b.entry_receipt_id())) return Broken("entry_receipt_id", b.entry_receipt_id(), kReceiptIdRule);
  if (b.entry_run_id().empty()) return Invalid("entry_run_id", "required, at most 128 bytes");
  if (auto s = CheckLength("entry_run_id", b.entry_run_id(), 128); !s.ok()) return s;
  if (auto s = CheckPrintable("entry_run_id", b.entry_run_id()); !s.ok()) return s;
  if ((kind == "agent_start" || kind == "agent_exec") && b.entry_step_id().empty()) {
    return Invalid("entry_step_id", absl::StrCat("required for ", std::string(kind)));
  }
  if (auto s = CheckLength("entry_step_id", b.entry_step_id(), 128); !s.ok()) return s;
  if (auto s = CheckPrintable("entry_step_id", b.entry_step_id()); !s.ok()) return s;
  if (!b.has_entry_attempt() || b.entry_attempt() < 1) return Invalid("entry_attempt", "required, >= 1");
  if (kind == "agent_exec") {
    if (!IsReceiptId(b.entry_start_receipt_id())) {
      return Broken("entry_start_receipt_id", b.entry_start_receipt_id(), kReceiptIdRule);
    }
  } else if (!b.entry_start_receipt_id().empty()) {
    return Invalid("entry_start_receipt_id", "only for an agent_exec");
  }
  if (auto s = CheckErasureReason(b.reason()); !s.ok()) return s;
  for (const auto& [field, who] : {std::pair<const char*, const std::string*>{"requested_by", &b.requested_by()},
                                   {"approved_by", &b.approved_by()}}) {
    if (who->empty()) return Invalid(field, "required, an admin's identity");
    if (auto s = CheckLength(field, *who, 1024); !s.ok()) return s;
    if (auto s = CheckPrintable(field, *who); !s.ok()) return s;
    // Typed as an entry's emitter is (CONTRACT section 2): never the ledger.
    const bool typed = who->starts_with("uri:") || who->starts_with("dns:") || who->starts_with("cn:");
    if (!typed && *who != "local" && *who != "in-process") {
      return Invalid(field, "an identity typed as an emitter is (uri:, dns:, cn:, or local, in-process)");
    }
  }
  if (b.approved_by() == b.requested_by()) {
    return Invalid("approved_by", "must be another admin than requested_by");
  }
  return absl::OkStatus();
}

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
  if (*v != 1 && *v != 2) return NotRedacted("v: want 1 or 2");
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
    // As a redaction's entry_team_prev (CheckRedaction), and as a leaf's
    // tail is read (SeqOf): a leaf of version 1 has no team_prev.
    if (e.version != 2) return NotRedacted("team_prev: only with v 2");
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
