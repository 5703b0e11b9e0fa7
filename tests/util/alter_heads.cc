// alter_heads: what a key-holding operator with the store in hand can do to
// a stopped ledger's maps, so that the ledger signs forged run-head and
// team-head roots from its next checkpoint on (the monitor's tests):
//
//   alter_heads DATA_DIR run-back TEAM RUN   the run's head moved back to
//                                            its entry before the last
//                                            (its tail dropped, and the
//                                            run index's row of it, which
//                                            exports read)
//   alter_heads DATA_DIR team-back TEAM      the team's head moved back
//                                            likewise (a window closed early)
//   alter_heads DATA_DIR team-drop TEAM      the team's row removed (the team
//                                            claimed absent)
//
// The rows are rewritten and the stored maps forgotten, so that the ledger
// rebuilds them from the rows when it opens. Prints "head SEQ" (the forged
// head's entry) or "head none".
#include <cstdlib>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/storage/store/testing.h"
#include "ledger/storage/storedmap/storedmap.h"

namespace {

using ledger::store::RunHead;
using ledger::store::Store;

int Fail(const std::string& why) {
  std::cerr << "alter_heads: " << why << "\n";
  return 1;
}

// The head before `head`: the entry that `head`'s entry names as its
// run's (or team's) previous one.
absl::StatusOr<RunHead> Back(const Store& store, const RunHead& head, bool team) {
  auto leaf = store.GetLeaf(head.last_seq);
  if (!leaf.ok()) return leaf.status();
  auto entry = ledger::receipt::ParseLeaf(*leaf);
  if (!entry.ok()) return entry.status();
  std::optional<uint64_t> prev = team ? entry->team_prev : entry->run_prev;
  if (!prev.has_value()) return absl::FailedPreconditionError("it has one entry only");
  auto before = store.GetLeaf(*prev);
  if (!before.ok()) return before.status();
  return RunHead{head.count - 1, *prev, ledger::hash::LeafHash(*before)};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return Fail("usage: alter_heads DATA_DIR run-back TEAM RUN | team-back TEAM | team-drop TEAM");
  const std::string what = argv[2];
  auto store = Store::Open(absl::StrCat(argv[1], "/db"));
  if (!store.ok()) return Fail(std::string(store.status().message()));
  ledger::store::Batch batch = (*store)->NewBatch();
  using ledger::storedmap::StoredMap;
  StoredMap::Id forget;
  if (what == "run-back" && argc == 5) {
    auto head = (*store)->GetRunHead(argv[3], argv[4]);
    if (!head.ok() || !head->has_value()) return Fail("no such run");
    auto back = Back(**store, **head, false);
    if (!back.ok()) return Fail(std::string(back.status().message()));
    batch.PutRunHead(argv[3], argv[4], *back);
    ledger::store::Testing::DeleteRunSeq(batch, argv[3], argv[4], (*head)->last_seq);
    std::cout << "head " << back->last_seq << "\n";
    forget = StoredMap::Id::kRuns;
  } else if (what == "team-back" && argc == 4) {
    auto head = (*store)->GetTeamHead(argv[3]);
    if (!head.ok() || !head->has_value()) return Fail("no such team");
    auto back = Back(**store, **head, true);
    if (!back.ok()) return Fail(std::string(back.status().message()));
    batch.PutTeamHead(argv[3], *back);
    std::cout << "head " << back->last_seq << "\n";
    forget = StoredMap::Id::kTeams;
  } else if (what == "team-drop" && argc == 4) {
    ledger::store::Testing::DeleteTeamHead(batch, argv[3]);
    std::cout << "head none\n";
    forget = StoredMap::Id::kTeams;
  } else {
    return Fail("usage: alter_heads DATA_DIR run-back TEAM RUN | team-back TEAM | team-drop TEAM");
  }
  if (auto s = (*store)->Commit(batch); !s.ok()) return Fail(std::string(s.message()));
  if (auto s = StoredMap::Forget(**store, forget); !s.ok()) return Fail(std::string(s.message()));
  return 0;
}
