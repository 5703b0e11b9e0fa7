#include "ledger/storage/log/run_heads.h"

#include <map>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/redaction.h"
#include "ledger/storage/store/store.h"
#include "ledger/storage/storedmap/storedmap.h"

namespace ledger::log {
namespace {

// Calls fn(team, run_id, leaf hash, seq) for each entry of [0, size).
template <typename F>
absl::Status ForEachEntry(const store::Store& store, uint64_t size, F fn,
                          const std::function<void(uint64_t)>& progress) {
  return store.ScanLeaves(0, size, [&](uint64_t seq, std::string_view leaf) -> absl::Status {
    auto entry = receipt::ParseStored(leaf);
    if (!entry.ok()) {
      return absl::DataLossError(absl::StrCat("entry ", seq, ": ", entry.status().message()));
    }
    // An erased entry's leaf hash is the one its redacted line states.
    fn(entry->receipt.team(), entry->receipt.run_id(),
       entry->erased ? receipt::ParseRedacted(leaf)->leaf_hash : hash::LeafHash(leaf), seq);
    if (progress && (seq + 1) % 100'000 == 0) progress(seq + 1);
    return absl::OkStatus();
  });
}

// Replays the log into run heads; with `check_rows`, every row must name its
// run's last entry (and a row of format 2, its whole head). Writes them all.
absl::StatusOr<uint64_t> RewriteRunHeads(store::Store& store, bool check_rows);

}  // namespace

absl::StatusOr<uint64_t> MigrateRunHeads(store::Store& store) {
  bool legacy = false;
  auto scanned = store.ScanRunHeads([&](std::string_view, std::string_view, const store::RunHead& head) {
    legacy = legacy || head.count == 0;
    return absl::OkStatus();
  });
  if (!scanned.ok()) return scanned;
  if (!legacy) return 0;
  return RewriteRunHeads(store, /*check_rows=*/true);
}

absl::StatusOr<uint64_t> RebuildRunHeads(store::Store& store) { return RewriteRunHeads(store, false); }

namespace {

absl::StatusOr<uint64_t> RewriteRunHeads(store::Store& store, bool check_rows) {
  auto state = store.ReadState();
  if (!state.ok()) return state.status();
  // (team, run_id) -> head, from the entries.
  std::map<std::pair<std::string, std::string>, store::RunHead> heads;
  auto replayed = ForEachEntry(
      store, state->size,
      [&](const std::string& team, const std::string& run_id, const hash::Hash& leaf_hash, uint64_t seq) {
        store::RunHead& h = heads[{team, run_id}];
        h = {h.count + 1, seq, leaf_hash};
      },
      nullptr);
  if (!replayed.ok()) return replayed;
  // Every row must name the last entry the replay found for its run.
  absl::Status checked =
      !check_rows
          ? absl::OkStatus()
          : store.ScanRunHeads([&](std::string_view team, std::string_view run_id,
                                   const store::RunHead& row) -> absl::Status {
              auto it = heads.find({std::string(team), std::string(run_id)});
              if (it == heads.end() || it->second.last_seq != row.last_seq || (row.count != 0 && row != it->second)) {
                return absl::DataLossError(absl::StrCat("runs: the row of ", std::string(team), "/",
                                                        std::string(run_id),
                                                        " does not name the run's last entry in the log"));
              }
              return absl::OkStatus();
            });
  if (!checked.ok()) return checked;
  constexpr size_t kRowsPerBatch = 10'000;
  uint64_t rewritten = 0;
  store::Batch batch = store.NewBatch();
  size_t in_batch = 0;
  for (const auto& [run, head] : heads) {
    batch.PutRunHead(run.first, run.second, head);
    ++rewritten;
    if (++in_batch == kRowsPerBatch) {
      if (auto s = store.Commit(batch); !s.ok()) return s;
      batch = store.NewBatch();
      in_batch = 0;
    }
  }
  if (in_batch > 0) {
    if (auto s = store.Commit(batch); !s.ok()) return s;
  }
  // The stored map is rebuilt from the rows at the next open.
  if (auto s = storedmap::StoredMap::Forget(store, storedmap::StoredMap::Id::kRuns); !s.ok()) return s;
  if (auto s = storedmap::StoredMap::Forget(store, storedmap::StoredMap::Id::kRunsV1); !s.ok()) return s;
  return rewritten;
}

}  // namespace

absl::StatusOr<runmap::RunMap> ReplayRunMap(const store::Store& store, uint64_t size, runmap::KeyVersion keys,
                                            const std::function<void(uint64_t done)>& progress) {
  absl::flat_hash_map<runmap::Key, runmap::Head> heads;
  auto replayed = ForEachEntry(
      store, size,
      [&](const std::string& team, const std::string& run_id, const hash::Hash& leaf_hash, uint64_t seq) {
        runmap::Head& h = heads[runmap::RunKeyOf(team, run_id, keys)];
        h = {h.count + 1, seq, leaf_hash};
      },
      progress);
  if (!replayed.ok()) return replayed;
  runmap::RunMap map;
  for (const auto& [key, head] : heads) {
    if (auto s = map.Set(key, head); !s.ok()) return s;
  }
  return map;
}

}  // namespace ledger::log

namespace ledger::log {
namespace {

// The heads of the teams of entries [0, size), from the entries.
absl::StatusOr<std::map<std::string, store::RunHead>> ReplayTeamHeads(const store::Store& store, uint64_t size) {
  std::map<std::string, store::RunHead> heads;
  auto replayed = ForEachEntry(
      store, size,
      [&](const std::string& team, const std::string&, const hash::Hash& leaf_hash, uint64_t seq) {
        store::RunHead& h = heads[team];
        h = {h.count + 1, seq, leaf_hash};
      },
      nullptr);
  if (!replayed.ok()) return replayed;
  return heads;
}

absl::StatusOr<uint64_t> WriteTeamHeads(store::Store& store) {
  auto state = store.ReadState();
  if (!state.ok()) return state.status();
  auto heads = ReplayTeamHeads(store, state->size);
  if (!heads.ok()) return heads.status();
  store::Batch batch = store.NewBatch();
  for (const auto& [team, head] : *heads) batch.PutTeamHead(team, head);
  if (auto s = store.Commit(batch); !s.ok()) return s;
  if (auto s = storedmap::StoredMap::Forget(store, storedmap::StoredMap::Id::kTeams); !s.ok()) return s;
  return heads->size();
}

}  // namespace

absl::StatusOr<uint64_t> FillTeamHeads(store::Store& store) {
  bool any = false;
  auto scanned = store.ScanTeamHeads([&](std::string_view, const store::RunHead&) {
    any = true;
    return absl::CancelledError();  // one row is enough
  });
  if (!scanned.ok() && !absl::IsCancelled(scanned)) return scanned;
  if (any) return 0;
  return WriteTeamHeads(store);
}

absl::StatusOr<uint64_t> RebuildTeamHeads(store::Store& store) { return WriteTeamHeads(store); }

absl::StatusOr<runmap::RunMap> ReplayTeamMap(const store::Store& store, uint64_t size) {
  auto heads = ReplayTeamHeads(store, size);
  if (!heads.ok()) return heads.status();
  runmap::RunMap map;
  for (const auto& [team, head] : *heads) {
    if (auto s = map.Set(runmap::TeamKeyOf(team), {head.count, head.last_seq, head.last_leaf_hash}); !s.ok()) return s;
  }
  return map;
}

absl::Status CatchUpStoredMaps(store::Store& store, uint64_t size) {
  using storedmap::StoredMap;
  StoredMap runs(&store, StoredMap::Id::kRuns), teams(&store, StoredMap::Id::kTeams);
  // The map under run keys v1, kept by versions that signed notes of
  // version 2 and 3: no proof is served from it again (its rows go, also
  // those a rebuild cut short left).
  if (auto s = StoredMap::Forget(store, StoredMap::Id::kRunsV1); !s.ok()) return s;
  auto run_size = runs.Size();
  if (!run_size.ok()) return run_size.status();
  auto team_size = teams.Size();
  if (!team_size.ok()) return team_size.status();
  // A map never written (a store of an earlier version), or ahead of the
  // log: from every row.
  bool rebuild_runs = !run_size->has_value() || **run_size > size;
  bool rebuild_teams = !team_size->has_value() || **team_size > size;
  if (rebuild_runs) {
    auto s = runs.Rebuild(size, [&](StoredMap::Put put) {
      return store.ScanRunHeads(
          [&](std::string_view team, std::string_view run_id, const store::RunHead& head) -> absl::Status {
            auto key = runmap::RunKey(team, run_id, runmap::KeyVersion::kV2);
            if (!key.ok()) return absl::DataLossError(absl::StrCat("runs: ", key.status().message()));
            if (head.count == 0) {
              return absl::FailedPreconditionError(absl::StrCat("runs: the row of ", std::string(team), "/",
                                                                std::string(run_id),
                                                                " is of format 1 (MigrateRunHeads first)"));
            }
            return put(*key, {head.count, head.last_seq, head.last_leaf_hash});
          });
    });
    if (!s.ok()) return s;
  }
  if (rebuild_teams) {
    auto s = teams.Rebuild(size, [&](StoredMap::Put put) {
      return store.ScanTeamHeads([&](std::string_view team, const store::RunHead& head) -> absl::Status {
        auto key = runmap::TeamKey(team);
        if (!key.ok()) return absl::DataLossError(absl::StrCat("teams: ", key.status().message()));
        return put(*key, {head.count, head.last_seq, head.last_leaf_hash});
      });
    });
    if (!s.ok()) return s;
  }
  // Otherwise from the rows of the runs and teams the entries since the
  // map's size touched (the rows stand at `size`).
  const uint64_t from_runs = rebuild_runs ? size : **run_size, from_teams = rebuild_teams ? size : **team_size;
  const uint64_t from = std::min(from_runs, from_teams);
  if (from == size) return absl::OkStatus();
  absl::flat_hash_set<std::pair<std::string, std::string>> touched_runs;
  absl::flat_hash_set<std::string> touched_teams;
  auto scanned = store.ScanLeaves(from, size, [&](uint64_t seq, std::string_view leaf) -> absl::Status {
    auto entry = receipt::ParseStored(leaf);
    if (!entry.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", entry.status().message()));
    if (seq >= from_runs) touched_runs.emplace(entry->receipt.team(), entry->receipt.run_id());
    if (seq >= from_teams) touched_teams.insert(entry->receipt.team());
    return absl::OkStatus();
  });
  if (!scanned.ok()) return scanned;
  auto missing = [](std::string_view what) {
    return absl::DataLossError(absl::StrCat(std::string(what), ": an entry's row is missing"));
  };
  std::vector<runmap::Leaf> leaves;
  for (const auto& [team, run_id] : touched_runs) {
    auto head = store.GetRunHead(team, run_id);
    if (!head.ok()) return head.status();
    if (!head->has_value()) return missing("runs");
    leaves.push_back({runmap::RunKeyOf(team, run_id, runmap::KeyVersion::kV2),
                      {(*head)->count, (*head)->last_seq, (*head)->last_leaf_hash}});
  }
  if (from_runs < size) {
    if (auto s = runs.Apply(size, leaves); !s.ok()) return s;
  }
  leaves.clear();
  for (const std::string& team : touched_teams) {
    auto head = store.GetTeamHead(team);
    if (!head.ok()) return head.status();
    if (!head->has_value()) return missing("teams");
    leaves.push_back({runmap::TeamKeyOf(team), {(*head)->count, (*head)->last_seq, (*head)->last_leaf_hash}});
  }
  if (from_teams < size) {
    if (auto s = teams.Apply(size, leaves); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace ledger::log
