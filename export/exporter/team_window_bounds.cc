#include "export/exporter/team_window_bounds.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ledger::exporter {
namespace {

absl::StatusOr<pack::Bound> BoundAt(const store::Store& store, uint64_t seq, ProveFn prove) {
  auto leaf = store.GetLeaf(seq);
  if (!leaf.ok()) return leaf.status();
  auto proof = prove(seq);
  if (!proof.ok()) return proof.status();
  return pack::Bound{seq, *std::move(leaf), *std::move(proof)};
}

}  // namespace

absl::StatusOr<pack::TeamWindow> TeamWindowBounds(const store::Store& store, const runmap::KeyedPath& team_head,
                                                  uint64_t hi, const WindowEntries& held, ProveFn prove) {
  pack::TeamWindow w;
  const std::optional<runmap::Leaf>& found = team_head.path.found;
  // The walk from the head down to the window: the lowest entry at or after
  // `hi` it reaches, and where that entry's team_prev leads.
  std::optional<uint64_t> after;
  receipt::TeamLink after_link;
  if (found.has_value() && found->head.last_seq >= hi) {
    absl::Status walked = store.WalkLeavesBack(
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
    auto bound = BoundAt(store, *after, prove);
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
    auto bound = BoundAt(store, *before, prove);
    if (!bound.ok()) return bound.status();
    w.before = *std::move(bound);
  }
  return w;
}

}  // namespace ledger::exporter
