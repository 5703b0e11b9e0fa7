// team-window.json: what a team window of format 4 carries to prove it
// holds every entry of its team (CONTRACT section 7, "Closed team
// windows"):
//
//   {"before":BOUND,"after":BOUND,"head":PROOF}     (absent keys omitted)
//   BOUND = {"seq":S,"leaf":"<the leaf's bytes as a JSON string>","inclusion":["<hex>",...]}
//   PROOF = a team-head map proof (ledger/format/runmap/proof_json.h)
//
// `before` is the team's last entry before the window, `after` its first
// entry after it, `head` (when there is no `after`) the team's head at the
// pack's tree size. EncodeTeamWindow writes it compact, keys in the order
// above, escaping only '"' and '\' in a leaf (a leaf holds no control
// character); ParseTeamWindow accepts any spacing and key order, and no
// other key.
//
// Thread-safe: pure functions.
#ifndef EXPORT_PACK_TEAM_WINDOW_H_
#define EXPORT_PACK_TEAM_WINDOW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/runmap/proof_json.h"

namespace ledger::pack {

inline constexpr char kTeamWindow[] = "team-window.json";

// An entry of the team beside the window, with its inclusion proof at the
// pack's tree size.
struct Bound {
  uint64_t seq = 0;
  std::string leaf;
  std::vector<hash::Hash> inclusion;
};

struct TeamWindow {
  std::optional<Bound> before;
  std::optional<Bound> after;
  std::optional<runmap::KeyedPath> head;
};

// The file's content, with its final newline.
std::string EncodeTeamWindow(const TeamWindow& w);

// INVALID_ARGUMENT naming the field and the rule ("before.seq: want a JSON
// integer"; "want exactly one of after and head"). Checks the form only.
absl::StatusOr<TeamWindow> ParseTeamWindow(std::string_view text);

}  // namespace ledger::pack

#endif  // EXPORT_PACK_TEAM_WINDOW_H_
