#include "export/exporter/pruned.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace ledger::exporter {
namespace {

std::string RuleName(const receipt::RetentionRule& r) {
  return r.team.empty() ? std::string("default") : absl::StrCat("team ", r.team);
}

// The latest pass and the rule of it that covers `team` (nullptr: none).
struct Covered {
  log::RetentionPass pass;
  const receipt::RetentionRule* rule = nullptr;
};
absl::StatusOr<Covered> Cover(const log::LogView& view, std::string_view team) {
  auto pass = view.Retention();
  if (!pass.ok()) return pass.status();
  Covered c{*std::move(pass), nullptr};
  c.rule = log::CoveringRule(c.pass.rules, team);
  return c;
}

absl::Status WindowRefusal(std::string_view team, const log::RetentionPass& pass, const receipt::RetentionRule& rule) {
  return absl::FailedPreconditionError(absl::StrCat("export: team ", std::string(team), ": its entries below seq ",
                                                    rule.below_seq, " were pruned under the retention policy (pass ",
                                                    pass.pass, ", rule ", RuleName(rule), ", cutoff ", rule.cutoff_us,
                                                    "): a window must start after the cutoff ", rule.cutoff_us));
}

}  // namespace

absl::Status RunPruned(const log::LogView& view, std::string_view team, std::string_view run_id, uint64_t seq) {
  auto c = Cover(view, team);
  if (!c.ok()) return c.status();
  std::string how = c->rule == nullptr ? absl::StrCat("pass ", c->pass.pass)
                                       : absl::StrCat("pass ", c->pass.pass, ", rule ", RuleName(*c->rule),
                                                      ": entries below seq ", c->rule->below_seq);
  return absl::FailedPreconditionError(absl::StrCat("export: run ", std::string(run_id), " of team ", std::string(team),
                                                    ": entry ", seq, " was pruned under the retention policy (", how,
                                                    "): its pack would not hold the whole run"));
}

absl::Status SeqPruned(const log::LogView& view, uint64_t seq) {
  auto pass = view.Retention();
  if (!pass.ok()) return pass.status();
  uint64_t line = 0;
  for (const auto& r : pass->rules) line = std::max(line, r.below_seq);
  return absl::FailedPreconditionError(absl::StrCat(
      "export: seq ", seq, " was pruned under the retention policy (pass ", pass->pass, "): ask for seqs from ", line));
}

absl::Status CheckWindowStart(const log::LogView& view, std::string_view team, int64_t from_us) {
  auto c = Cover(view, team);
  if (!c.ok()) return c.status();
  if (c->rule == nullptr || c->rule->below_seq == 0 || from_us > c->rule->cutoff_us) return absl::OkStatus();
  return WindowRefusal(team, c->pass, *c->rule);
}

absl::Status WindowBoundPruned(const log::LogView& view, std::string_view team, uint64_t bound) {
  auto c = Cover(view, team);
  if (!c.ok()) return c.status();
  if (c->rule == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("export: team ", std::string(team), ": its entry ", bound, ", the window's bound, was pruned"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "export: team ", std::string(team), ": its entry ", bound,
      ", the window's bound before it, was pruned under the retention policy (pass ", c->pass.pass, ", rule ",
      RuleName(*c->rule), ", cutoff ", c->rule->cutoff_us,
      "): a window's bound is shown by its leaf, so a window must start after the team's first entry kept"));
}

}  // namespace ledger::exporter
