// Which key a ledger's map states otherwise than the monitor's replay
// (CONTRACT section 5c, "When the roots differ"): a descent from the root
// along the subtrees whose hashes differ, asking the ledger one key's path
// per level (section 6a, "Proofs of any key over HTTP").
//
// Thread-compatible: pure but for `ours`' node cache.
#ifndef MONITOR_SERVER_LOCATE_H_
#define MONITOR_SERVER_LOCATE_H_

#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "ledger/format/runmap/proof_json.h"
#include "ledger/format/runmap/runmap.h"

namespace ledger::monitor {

// The ledger's path of a key (its proof, key included).
using AskPath = absl::FunctionRef<absl::StatusOr<runmap::KeyedPath>(const runmap::Key&)>;

struct Located {
  runmap::Key key{};
  runmap::KeyedPath proof;                    // the ledger's path of `key`, verified
  std::optional<runmap::Head> ledger_head;    // nullopt: the ledger's map has none
  std::optional<runmap::Head> replayed_head;  // nullopt: the replay's has none
  int proofs_asked = 0;
};

// A key whose head (or absence) in the ledger's map of signed root `root`
// is not its head in `ours`, with the ledger's proof of it. NOT_FOUND when
// `root` is ours' root; FAILED_PRECONDITION naming the key when a path the
// ledger gives does not lead to `root` or is of another key, or when both
// maps hold the same heads in other shapes; errors of `ask` as they are.
absl::StatusOr<Located> LocateDifference(runmap::RunMap& ours, const runmap::Hash& root, AskPath ask);

}  // namespace ledger::monitor

#endif  // MONITOR_SERVER_LOCATE_H_
