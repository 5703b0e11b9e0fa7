#include "export/exporter/team_window_bounds.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "export/exporter/pruned.h"
#include "ledger/format/retention/pruned.h"

namespace ledger::exporter {
namespace {

absl::StatusOr<pack::Bound> BoundAt(const log::LogView& view, std::string_view team, uint64_t seq, ProveFn prove) {
  auto leaf = view.GetLeaf(seq);
  if (!leaf.ok()) return leaf.status();
  if (retention::LooksPruned(*leaf)) return WindowBoundPruned(view, team, seq);
  auto proof = prove(seq);
  if (!proof.ok()) return proof.status();
  return pack::Bound{seq, *std::move(leaf), *std::move(proof)};
}

}  // namespace

absl::StatusOr<pack::TeamWindow> TeamWindowBounds(const log::LogView& view, std::string_view team_name,
                                                  const runmap::KeyedPath& team_head, uint64_t hi,
                                                  const WindowEntries& held, ProveFn prove, uint64_t look_ahead) {
  pack::TeamWindow w;
  const std::optional<runmap::Leaf>& found = team_head.path.found;
  // The walk from the head down to the window: the lowest entry at or after
  // `hi` it reaches, and where that entry's team_prev leads.
  std::optional<uint64_t> after;
  receipt::TeamLink after_link;
  // A busy team's next entry is close after the window: look there first,
  // so that an old window does not walk the chain of all that came since.
  if (found.has_value() && found->head.last_seq >= hi) {
    const uint64_t end = std::min(found->head.last_seq + 1, hi + look_ahead);
    absl::Status scanned = view.ScanLeaves(hi, end, [&](uint64_t at, std::string_view leaf) -> absl::Status {
      if (retention::LooksPruned(leaf)) return absl::OkStatus();  // another team's (CheckWindowStart)
      auto team = receipt::TeamOf(leaf);
      if (!team.ok()) return absl::DataLossError(absl::StrCat("entry ", at, ": ", team.status().message()));
      if (*team != team_name) return absl::OkStatus();
      auto link = receipt::TeamLinkOf(leaf);
      if (!link.ok()) return absl::DataLossError(absl::StrCat("entry ", at, ": ", link.status().message()));
      after = at;
      after_link = *link;
      return absl::CancelledError();  // found: the first at or after hi
    });
    if (!scanned.ok() && !absl::IsCancelled(scanned)) return scanned;
  }
  if (!after.has_value() && found.has_value() && found->head.last_seq >= hi) {
    absl::Status walked = view.WalkLeavesBack(
        found->head.last_seq, [&](uint64_t at, std::string_view leaf) -> absl::StatusOr<std::optional<uint64_t>> {
          auto link = receipt::TeamLinkOf(leaf);
          if (!link.ok()) return absl::DataLossError(absl::StrCat("entry ", at, ": ", link.status().message()));
          after = at;
          after_link = *link;
          if (link->version == 1 || !link->team_prev.has_value() || *link->team_prev < hi) return std::nullopt;
          if (*link->team_prev >= at) {
            return absl::DataLossError(absl::StrCat("entry ", at, ": team_prev does not go back"));
          }
          return link->team_prev;
        });
    if (!walked.ok()) return walked;
  }
  if (after.has_value()) {
    auto bound = BoundAt(view, team_name, *after, prove);
    if (!bound.ok()) return bound.status();
    w.after = *std::move(bound);
  } else {
    w.head = team_head;
  }
  std::optional<uint64_t> before;
  if (held.count > 0) {
    if (held.first_link.version == 2) before = held.first_link.team_prev;
  } else if (after.has_value()) {
    if (after_link.version == 2) before = after_link.team_prev;
  } else if (found.has_value()) {
    before = found->head.last_seq;  // the team's last entry is before the window
  }
  if (before.has_value()) {
    auto bound = BoundAt(view, team_name, *before, prove);
    if (!bound.ok()) return bound.status();
    w.before = *std::move(bound);
  }
  return w;
}

}  // namespace ledger::exporter
