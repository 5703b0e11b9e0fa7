#include "ledger/format/retention/policy.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ledger::retention {
namespace {

constexpr int64_t kMaxDays = 36500;
constexpr std::string_view kLedgerTeam = "ledger";  // kLedgerTeam

// A team (CONTRACT section 3): 1-63 bytes of [a-z0-9-].
bool IsTeam(std::string_view t) {
  if (t.empty() || t.size() > 63) return false;
  for (char c : t) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

absl::Status LineError(int line, std::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("retention policy line ", line, ": ", std::string(rule)));
}

// KEEP in seconds (nullopt: forever), or why not.
absl::StatusOr<std::optional<int64_t>> ParseKeep(std::string_view keep) {
  if (keep == "forever") return std::optional<int64_t>();
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("keep '", std::string(keep), "': want forever, or 1h to 36500d as a decimal count and d or h"));
  };
  if (keep.size() < 2) return bad();
  const char unit = keep.back();
  std::string_view count = keep.substr(0, keep.size() - 1);
  if ((unit != 'd' && unit != 'h') || count.empty() || count.size() > 9 || count[0] == '0') return bad();
  for (char c : count) {
    if (c < '0' || c > '9') return bad();
  }
  int64_t n = 0;
  if (!absl::SimpleAtoi(absl::string_view(count.data(), count.size()), &n)) return bad();
  const int64_t s = unit == 'd' ? n * 86400 : n * 3600;
  if (s > kMaxDays * 86400) return bad();
  return std::optional<int64_t>(s);
}

}  // namespace

absl::StatusOr<Policy> Policy::Parse(std::string_view text) {
  Policy p;
  p.sha256_ = hash::Sha256(text);
  p.text_ = std::string(text);
  int number = 0;
  std::optional<int> default_line;
  std::vector<std::string> lines = absl::StrSplit(absl::string_view(text.data(), text.size()), '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (const std::string& line : lines) {
    ++number;
    if (line.empty() || line.starts_with("#")) continue;
    std::vector<std::string> words = absl::StrSplit(line, ' ');
    Rule rule;
    rule.line = number;
    std::string keep;
    if (words.size() == 2 && words[0] == "default") {
      if (default_line) {
        return LineError(number, absl::StrCat("a second default rule (the first is on line ", *default_line, ")"));
      }
      keep = words[1];
    } else if (words.size() == 3 && words[0] == "team") {
      rule.team = words[1];
      if (!IsTeam(rule.team)) {
        return LineError(number, absl::StrCat("team '", rule.team, "': want 1-63 bytes of [a-z0-9-]"));
      }
      if (rule.team == kLedgerTeam) {
        return LineError(number, "team 'ledger': the ledger's own entries are never pruned");
      }
      for (const Rule& r : p.rules_) {
        if (r.team == rule.team) {
          return LineError(number, absl::StrCat("team '", rule.team,
                                                "': a second rule for the team (the first is on line ", r.line, ")"));
        }
      }
      keep = words[2];
    } else {
      return LineError(number, "want 'default KEEP' or 'team T KEEP'");
    }
    auto keep_s = ParseKeep(keep);
    if (!keep_s.ok()) return LineError(number, std::string(keep_s.status().message()));
    rule.keep_s = *keep_s;
    if (rule.team.empty()) default_line = number;
    p.rules_.push_back(std::move(rule));
  }
  return p;
}

const Rule* Policy::RuleFor(std::string_view team) const {
  if (team == kLedgerTeam) return nullptr;
  const Rule* fallback = nullptr;
  for (const Rule& r : rules_) {
    if (r.team == team) return &r;
    if (r.team.empty()) fallback = &r;
  }
  return fallback;
}

std::string Policy::Describe() const {
  std::string out;
  bool has_default = false;
  for (const Rule& r : rules_) {
    has_default = has_default || r.team.empty();
    absl::StrAppend(&out, r.team.empty() ? "default" : "team " + r.team, ": ",
                    r.keep_s ? absl::StrCat("kept ", *r.keep_s, " s (", *r.keep_s / 3600, " h)") : "kept for good",
                    " (line ", r.line, ")\n");
  }
  if (!has_default) absl::StrAppend(&out, "other teams: kept for good (no default rule)\n");
  absl::StrAppend(&out, "team ledger: kept for good (the ledger's own entries are never pruned)\n");
  return out;
}

}  // namespace ledger::retention
