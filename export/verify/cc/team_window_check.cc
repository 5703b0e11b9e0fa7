// The checks of team-window.json (CONTRACT section 7, "Closed team
// windows"), in the contract's order: presence, form, the bounds, the head,
// then the walk down the team chain from the top.
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "export/pack/team_window.h"
#include "export/verify/cc/internal/file_checks.h"
#include "export/verify/cc/internal/strict_json.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/runmap/proof_json.h"

namespace ledger::verify {
namespace {

// A bound's entry, checked: of the scope's team, in the tree, included.
struct BoundEntry {
  uint64_t seq = 0;
  hash::Hash leaf_hash{};
  receipt::Entry entry;
};

std::string CheckBound(const char* name, const pack::Bound& b, const manifest::Manifest& m, const note::Checkpoint& cp,
                       BoundEntry* out) {
  auto entry = receipt::ParseLeaf(b.leaf);
  if (!entry.ok()) return absl::StrCat(name, ": ", entry.status().message());
  if (entry->seq != b.seq) return absl::StrCat(name, ".seq: ", b.seq, ", but the leaf's seq is ", entry->seq);
  if (b.seq >= cp.size)
    return absl::StrCat(name, ": seq ", b.seq, " is not in the checkpoint's tree of size ", cp.size);
  if (entry->receipt.team() != m.scope.team) return absl::StrCat(name, ": entry ", b.seq, " is of another team");
  out->seq = b.seq;
  out->leaf_hash = hash::LeafHash(b.leaf);
  if (auto s = merkle::VerifyInclusion(b.seq, cp.size, out->leaf_hash, b.inclusion, cp.root); !s.ok()) {
    return absl::StrCat(name, ": the inclusion proof of seq ", b.seq, " does not verify: ", s.message());
  }
  out->entry = *std::move(entry);
  return "";
}

// A link of the walk: `seq` (with `team_prev`) down to the entry of X just
// below it (`below`, none at the bottom). What fails, or "".
std::string Link(uint64_t seq, std::optional<uint64_t> team_prev, std::optional<uint64_t> below) {
  if (!team_prev.has_value()) {
    if (!below.has_value()) return "";
    return absl::StrCat("entry ", seq,
                        " has no team_prev, so it is its team's first entry, but the pack holds the "
                        "team's entry ",
                        *below, " below it");
  }
  if (below == team_prev) return "";
  return absl::StrCat("entry ", seq, " follows the team's entry ", *team_prev,
                      " (team_prev), which the pack does not hold");
}

std::string CheckHead(const runmap::KeyedPath& head, const manifest::Manifest& m, const StreamCheck& stream,
                      const std::optional<BoundEntry>& before, const Result& r) {
  const std::string& team = m.scope.team;
  auto key = runmap::TeamKey(team);
  if (!key.ok()) return absl::StrCat("head: ", key.status().message());
  if (head.key != *key) {
    return absl::StrCat("head: key ", hash::Hex(head.key), " is not the team key of ", team, " (", hash::Hex(*key),
                        ")");
  }
  auto leads_to = runmap::ProofRoot(head);
  if (!leads_to.ok()) return absl::StrCat("head: ", leads_to.status().message());
  if (*leads_to != *r.team_map_root) {
    return absl::StrCat("head: the proof leads to map root ", hash::Hex(*leads_to), ", the checkpoint-time note signs ",
                        hash::Hex(*r.team_map_root));
  }
  const uint64_t n = m.tree_size;
  const uint64_t held = stream.entries() + (before ? 1 : 0);
  if (!head.path.found.has_value()) {
    if (held == 0) return "";
    return absl::StrCat("head: the map shows no entry of team ", team, " up to tree size ", n, ", the pack holds ",
                        held);
  }
  const runmap::Head& h = head.path.found->head;
  std::optional<uint64_t> top_seq = stream.last_seq();
  hash::Hash top_hash = stream.last_leaf_hash();
  if (!top_seq && before) {
    top_seq = before->seq;
    top_hash = before->leaf_hash;
  }
  if (top_seq != h.last_seq || top_hash != h.last_leaf_hash) {
    return absl::StrCat("head: the team's last entry up to tree size ", n, " is seq ", h.last_seq, " with leaf hash ",
                        hash::Hex(h.last_leaf_hash), ", the pack's last is ",
                        top_seq ? absl::StrCat("seq ", *top_seq, " with leaf hash ", hash::Hex(top_hash)) : "none");
  }
  return "";
}

// The walk down from the top of X (step 4). Sets r->team_window.
std::string Walk(const manifest::Manifest& m, const StreamCheck& stream, const std::optional<BoundEntry>& before,
                 const std::optional<BoundEntry>& after, Result* r) {
  const TeamChainFacts& t = stream.team_chain();
  const uint64_t k = stream.entries();
  const std::string window =
      absl::StrCat("team ", m.scope.team, " logged in [", m.scope.from_us, ", ", m.scope.to_us, ")");
  const std::string up_to = absl::StrCat(" up to seq ", m.tree_size - 1);
  const std::string not_proven =
      "not proven complete: the team's entries around the window are version 1 leaves, written before the ledger "
      "kept team chains.";
  auto proven = [&] {
    r->team_window = absl::StrCat("complete: every entry of ", window, up_to, " (team chain, ", k, " entries).");
    return std::string();
  };
  std::optional<uint64_t> before_seq;
  if (before) before_seq = before->seq;
  if (after) {
    if (after->entry.version == 1) {
      r->team_window = not_proven;
      return "";
    }
    std::optional<uint64_t> below = k > 0 ? std::optional<uint64_t>(t.last_seq) : before_seq;
    if (auto f = Link(after->seq, after->entry.team_prev, below); !f.empty()) return f;
    if (k == 0) return proven();
  } else if (k == 0) {
    return proven();  // the head is `before`'s, or the team has no entry
  } else if (t.last_version == 1) {
    r->team_window = not_proven;
    return "";
  }
  if (t.top_break) return Link(t.top_break->seq, t.top_break->team_prev, t.top_break->below);
  if (t.top_v1) {
    r->team_window = absl::StrCat("complete after seq ", *t.top_v1, ": every entry of ", window, " after seq ",
                                  *t.top_v1, up_to, " (team chain); the window's entries up to seq ", *t.top_v1,
                                  " are version 1 leaves, written before the ledger kept team chains: that none of "
                                  "them was left out is not proven.");
    return "";
  }
  if (auto f = Link(t.first_seq, t.first_team_prev, before_seq); !f.empty()) return f;
  return proven();
}

}  // namespace

std::string CheckTeamWindow(const manifest::Manifest& m, const note::Checkpoint& cp, const std::string* file,
                            const StreamCheck& stream, Result* r) {
  const bool applies = m.scope.is_team_window() && r->team_map_root.has_value();
  if (!applies) return file == nullptr ? "" : "only a team window carries a team chain proof";
  if (file == nullptr) {
    return "missing: a team window whose checkpoint-time note signs a team-head map root carries its team chain "
           "proof";
  }
  if (auto twice = DuplicateKey(*file)) return absl::StrCat("key ", *twice, " twice");
  auto w = pack::ParseTeamWindow(*file);
  if (!w.ok()) return std::string(w.status().message());
  std::optional<BoundEntry> before, after;
  if (w->before) {
    if (auto f = CheckBound("before", *w->before, m, cp, &before.emplace()); !f.empty()) return f;
    if (before->entry.logged_at_us >= m.scope.from_us) {
      return absl::StrCat("before: entry ", before->seq, " was logged at ", before->entry.logged_at_us,
                          ", not before the window's from_us ", m.scope.from_us);
    }
    if (stream.entries() > 0 && before->seq >= stream.team_chain().first_seq) {
      return absl::StrCat("before: seq ", before->seq, " is not below the pack's first entry, seq ",
                          stream.team_chain().first_seq);
    }
  }
  if (w->after) {
    if (auto f = CheckBound("after", *w->after, m, cp, &after.emplace()); !f.empty()) return f;
    if (after->entry.logged_at_us < m.scope.to_us) {
      return absl::StrCat("after: entry ", after->seq, " was logged at ", after->entry.logged_at_us,
                          ", inside the window, which ends at ", m.scope.to_us);
    }
    std::optional<uint64_t> top = stream.last_seq();
    if (!top && before) top = before->seq;
    if (top && after->seq <= *top) {
      return absl::StrCat("after: seq ", after->seq, " is not above the pack's last entry, seq ", *top);
    }
  }
  if (w->head) {
    if (auto f = CheckHead(*w->head, m, stream, before, *r); !f.empty()) return f;
  }
  return Walk(m, stream, before, after, r);
}

}  // namespace ledger::verify
