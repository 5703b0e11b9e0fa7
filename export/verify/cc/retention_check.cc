// CheckRetention (internal/file_checks.h): a run pack across the retention
// line against the retention entry and the policy it carries (CONTRACT
// section 9, "A run pack across the line (format 9)").
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "export/pack/pack.h"
#include "export/verify/cc/internal/file_checks.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/retention/policy.h"

namespace ledger::verify {
namespace {

std::optional<FileFailure> Bad(const char* file, std::string message) {
  return FileFailure{file, -1, std::move(message)};
}

std::string RuleName(const std::string& team) { return team.empty() ? "default" : absl::StrCat("team ", team); }

}  // namespace

std::optional<FileFailure> CheckRetention(const manifest::Manifest& m, const std::string* entry,
                                          const std::string* policy, Result* r) {
  // 1. Both files in a pack of format 9, in no other.
  if (m.format != 9) {
    if (entry != nullptr) return Bad(pack::kRetention, "only a pack of format 9 carries a retention entry");
    if (policy != nullptr) return Bad(pack::kRetentionPolicy, "only a pack of format 9 carries a retention policy");
    return std::nullopt;
  }
  if (entry == nullptr) {
    return Bad(pack::kRetention,
               "missing: a format 9 pack carries the retention entry that pruned its run's first entries");
  }
  if (policy == nullptr) {
    return Bad(pack::kRetentionPolicy, "missing: a format 9 pack carries the policy its retention entry applied");
  }
  // 2. One leaf of a valid retention of the ledger's, in the tree, not
  // below its own line.
  if (entry->empty() || entry->back() != '\n' || entry->find('\n') != entry->size() - 1) {
    return Bad(pack::kRetention, "want one line ending in a newline");
  }
  const std::string_view line(entry->data(), entry->size() - 1);
  auto leaf = receipt::ParseLeaf(line);
  if (!leaf.ok()) return Bad(pack::kRetention, absl::StrCat("line 1: ", leaf.status().message()));
  const receipt::Receipt& rc = leaf->receipt;
  const receipt::Author author =
      leaf->emitter == receipt::kLedgerEmitter ? receipt::Author::kLedger : receipt::Author::kEmitter;
  if (auto valid = receipt::Canonicalize(rc, author); !valid.ok()) {
    return Bad(pack::kRetention, absl::StrCat("line 1: ", valid.status().message()));
  }
  if (!rc.has_retention())
    return Bad(pack::kRetention, absl::StrCat("line 1: kind ", std::string(receipt::KindName(rc)), ", want retention"));
  const auto& ret = rc.retention();
  const uint64_t below = static_cast<uint64_t>(ret.below_seq());
  if (leaf->seq >= m.tree_size) {
    return Bad(pack::kRetention,
               absl::StrCat("seq ", leaf->seq, " is not in the checkpoint's tree of size ", m.tree_size));
  }
  if (leaf->seq < below) {
    return Bad(pack::kRetention, absl::StrCat("seq ", leaf->seq, " is below its below_seq ", below,
                                              ": a pass's entry is appended after its line"));
  }
  // 3. The policy: its bytes, and a policy.
  const std::string sha = hash::Hex(hash::Sha256(*policy));
  if (sha != ret.policy_sha256()) {
    return Bad(pack::kRetentionPolicy,
               absl::StrCat("SHA-256 ", sha, ", the retention entry's policy_sha256 is ", ret.policy_sha256()));
  }
  auto parsed = retention::Policy::Parse(*policy);
  if (!parsed.ok()) return Bad(pack::kRetentionPolicy, std::string(parsed.status().message()));
  // 4. The policy's rule for the scope's team is the entry's.
  const std::string& team = m.scope.team;
  const retention::Rule* rule = parsed->RuleFor(team);
  if (rule == nullptr) {
    return Bad(pack::kRetentionPolicy, absl::StrCat("no rule covers team ", team, ": its entries are kept for good"));
  }
  if (!rule->keep_s.has_value()) {
    return Bad(pack::kRetentionPolicy,
               absl::StrCat("line ", rule->line, ": team ", team, "'s entries are kept forever"));
  }
  const std::string& stated = ret.rule_team();
  const std::optional<int64_t> keep = ret.has_keep_s() ? std::optional<int64_t>(ret.keep_s()) : std::nullopt;
  if (stated != rule->team || keep != rule->keep_s) {
    return Bad(pack::kRetention,
               absl::StrCat("the entry states rule ", RuleName(stated), " (keep_s ",
                            keep ? std::to_string(*keep) : std::string("none"), "), the policy's rule for team ", team,
                            " is ", RuleName(rule->team), " (line ", rule->line, ", keep_s ", *rule->keep_s, ")"));
  }
  // 5. The scope starts at the entry's line.
  if (m.scope.from_seq != below) {
    return Bad(pack::kManifest,
               absl::StrCat("scope.from_seq ", m.scope.from_seq, ", the retention entry's below_seq is ", below));
  }
  r->pruned_before = Result::PrunedBefore{
      below, 0, static_cast<uint64_t>(ret.pass()), leaf->seq, RuleName(stated), ret.cutoff_us(), ret.policy_sha256()};
  return std::nullopt;
}

}  // namespace ledger::verify
