#include "ledger/format/receipt/retention.h"

#include "absl/strings/str_cat.h"
#include "ledger/format/receipt/internal/rules.h"

namespace ledger::receipt {
namespace {

constexpr int64_t kMinKeepS = 3600;
constexpr int64_t kMaxKeepS = int64_t{36500} * 86400;

}  // namespace

std::string RetentionId(uint64_t pass, std::string_view team) {
  return team.empty() ? absl::StrCat(std::string(kRetentionIdPrefix), pass, ".default")
                      : absl::StrCat(std::string(kRetentionIdPrefix), pass, ".team.", std::string(team));
}

// A retention's fields (CONTRACT section 9, "The `retention` entry"), in
// the order the section lists its refusals.
absl::Status rules::CheckRetention(const Receipt& r) {
  const auto& b = r.retention();
  if (!b.has_pass() || b.pass() < 1) return Invalid("pass", "required, >= 1");
  if (!b.rule_team().empty()) {
    if (auto s = CheckTeam("rule_team", b.rule_team()); !s.ok()) return s;
    if (b.rule_team() == kLedgerTeam) return Invalid("rule_team", "the ledger's own entries are never pruned");
  }
  const std::string id = RetentionId(static_cast<uint64_t>(b.pass()), b.rule_team());
  if (r.receipt_id() != id) return Invalid("receipt_id", absl::StrCat("a retention's is '", id, "'"));
  if (r.team() != kLedgerTeam)
    return Invalid("team", absl::StrCat("a retention's is '", std::string(kLedgerTeam), "'"));
  if (r.run_id() != kRetentionRun) {
    return Invalid("run_id", absl::StrCat("a retention's is '", std::string(kRetentionRun), "'"));
  }
  if (!r.step_id().empty()) return Invalid("step_id", "a retention has none");
  if (r.has_attempt() && r.attempt() != 1) return Invalid("attempt", "a retention's is 1");
  if (!b.has_keep_s()) {
    // A rule that keeps its entries for good: no cutoff, nothing below its line.
    if (b.has_cutoff_us()) return Invalid("cutoff_us", "only with keep_s");
    if (!b.has_below_seq() || b.below_seq() != 0) return Invalid("below_seq", "required, 0 without keep_s");
  } else {
    if (b.keep_s() < kMinKeepS || b.keep_s() > kMaxKeepS) {
      return Invalid("keep_s", "3600 to 3153600000 (1h to 36500d), or absent for a rule that keeps for good");
    }
    if (!b.has_cutoff_us() || b.cutoff_us() != r.occurred_at_us() - b.keep_s() * 1000000) {
      return Invalid("cutoff_us", "required, occurred_at_us - keep_s * 1000000");
    }
    if (!b.has_below_seq() || b.below_seq() < 0) return Invalid("below_seq", "required, >= 0");
  }
  if (!IsLowerHex(b.policy_sha256(), 64)) return Invalid("policy_sha256", "must be 64 lowercase hex digits");
  return absl::OkStatus();
}

Receipt Retention(uint64_t pass, const RetentionRule& rule, const hash::Hash& policy_sha256, int64_t now_us) {
  Receipt r;
  r.set_receipt_id(RetentionId(pass, rule.team));
  r.set_team(std::string(kLedgerTeam));
  r.set_run_id(std::string(kRetentionRun));
  r.set_attempt(1);
  r.set_occurred_at_us(now_us);
  auto* b = r.mutable_retention();
  b->set_pass(static_cast<int64_t>(pass));
  b->set_rule_team(rule.team);
  if (rule.keep_s > 0) {
    b->set_keep_s(rule.keep_s);
    b->set_cutoff_us(rule.cutoff_us);
  }
  b->set_below_seq(static_cast<int64_t>(rule.below_seq));
  b->set_policy_sha256(hash::Hex(policy_sha256));
  return r;
}

RetentionRule RuleOf(const Receipt& r) {
  const auto& b = r.retention();
  return RetentionRule{b.rule_team(), b.keep_s(), b.cutoff_us(), static_cast<uint64_t>(b.below_seq())};
}

}  // namespace ledger::receipt
