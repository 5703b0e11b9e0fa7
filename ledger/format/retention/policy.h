// The retention policy (CONTRACT section 9, "The policy"): one rule a line,
// `default KEEP` or `team T KEEP`, KEEP `forever` or 1h to 36500d.
//
//   policy = *(line LF) [line]      ; the last line's LF may be absent
//   line   = "" / "#" *any / "default" SP keep / "team" SP team SP keep
//   keep   = "forever" / count ("d" / "h")  ; count decimal, no leading 0
//
// Thread-safe: an immutable value once parsed.
#ifndef LEDGER_FORMAT_RETENTION_POLICY_H_
#define LEDGER_FORMAT_RETENTION_POLICY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"

namespace ledger::retention {

struct Rule {
  std::string team;               // "" for the default rule
  std::optional<int64_t> keep_s;  // nullopt: forever
  int line = 0;                   // where the file states it (1-based)
};

class Policy {
 public:
  // INVALID_ARGUMENT "retention policy line N: <the rule broken>".
  static absl::StatusOr<Policy> Parse(std::string_view text);

  // The rules in the file's order.
  const std::vector<Rule>& rules() const { return rules_; }
  // The rule that covers `team`: its own, else the default; nullptr for
  // the ledger's team and for a team with neither (kept for good).
  const Rule* RuleFor(std::string_view team) const;
  // SHA-256 of the file's bytes.
  const hash::Hash& sha256() const { return sha256_; }
  // The file's bytes, as parsed.
  const std::string& text() const { return text_; }
  // The rules, one a line, as `ledgerctl retention-check` prints them.
  std::string Describe() const;

 private:
  std::vector<Rule> rules_;
  hash::Hash sha256_{};
  std::string text_;
};

}  // namespace ledger::retention

#endif  // LEDGER_FORMAT_RETENTION_POLICY_H_
