#include "export/exporter/pruned.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "ledger/format/receipt/entry.h"

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

absl::StatusOr<std::optional<RunFrom>> RunAcrossLine(const log::LogView& view, std::string_view team,
                                                     std::string_view run_id) {
  auto c = Cover(view, team);
  if (!c.ok()) return c.status();
  if (c->rule == nullptr || c->rule->below_seq == 0) return std::nullopt;
  size_t at = static_cast<size_t>(c->rule - c->pass.rules.data());
  if (at >= c->pass.seqs.size() || c->pass.seqs[at] >= view.size()) return std::nullopt;  // not in this tree yet
  RunFrom out;
  out.from_seq = c->rule->below_seq;
  out.retention_seq = c->pass.seqs[at];
  // The run's first indexed entry at or above the line, and where it links.
  std::optional<uint64_t> first;
  absl::Status scanned = view.ScanRunSeqs(team, run_id, [&](uint64_t seq) {
    if (seq < out.from_seq) return absl::OkStatus();
    first = seq;
    return absl::CancelledError();
  });
  if (!scanned.ok() && !first.has_value()) return scanned;
  if (!first.has_value()) return std::nullopt;  // no entry kept
  auto leaf = view.GetLeaf(*first);
  if (!leaf.ok()) return leaf.status();
  auto run_prev = receipt::RunPrevOf(*leaf);
  if (!run_prev.ok()) return absl::DataLossError(absl::StrCat("entry ", *first, ": ", run_prev.status().message()));
  if (!run_prev->has_value() || **run_prev >= out.from_seq) return std::nullopt;
  out.pruned_seq = **run_prev;
  auto entry = view.GetLeaf(out.retention_seq);
  if (!entry.ok()) return entry.status();
  out.retention_leaf = *std::move(entry);
  auto policy = view.RetentionPolicy(c->pass.policy_sha256);
  if (absl::IsNotFound(policy.status())) return std::nullopt;  // a pass that kept no policy bytes
  if (!policy.ok()) return policy.status();
  out.policy_text = *std::move(policy);
  return out;
}

absl::Status RunPruned(const log::LogView& view, std::string_view team, std::string_view run_id, uint64_t seq,
                       bool ask_for_9) {
  auto c = Cover(view, team);
  if (!c.ok()) return c.status();
  std::string how = c->rule == nullptr ? absl::StrCat("pass ", c->pass.pass)
                                       : absl::StrCat("pass ", c->pass.pass, ", rule ", RuleName(*c->rule),
                                                      ": entries below seq ", c->rule->below_seq);
  // A run whose every entry is below the line keeps nothing to export.
  std::string why;
  if (ask_for_9) {
    why = ": ask for format 9";
  } else if (c->rule != nullptr) {
    std::optional<uint64_t> kept;
    absl::Status scanned = view.ScanRunSeqs(team, run_id, [&](uint64_t s) {
      if (s < c->rule->below_seq) return absl::OkStatus();
      kept = s;
      return absl::CancelledError();
    });
    if (!scanned.ok() && !kept.has_value() && !absl::IsCancelled(scanned)) return scanned;
    if (!kept.has_value()) why = ", and no entry of it is kept";
  }
  return absl::FailedPreconditionError(absl::StrCat("export: run ", std::string(run_id), " of team ", std::string(team),
                                                    ": entry ", seq, " was pruned under the retention policy (", how,
                                                    "): its pack would not hold the whole run", why));
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
