#include "ledger/log/run_heads.h"

#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/hash/hash.h"
#include "ledger/receipt/entry.h"

namespace ledger::log {
namespace {

// Calls fn(team, run_id, leaf hash, seq) for each entry of [0, size).
template <typename F>
absl::Status ForEachEntry(const store::Store& store, uint64_t size, F fn,
                          const std::function<void(uint64_t)>& progress) {
  return store.ScanLeaves(0, size, [&](uint64_t seq, std::string_view leaf) -> absl::Status {
    auto entry = receipt::ParseLeaf(leaf);
    if (!entry.ok()) {
      return absl::DataLossError(absl::StrCat("entry ", seq, ": ", entry.status().message()));
    }
    fn(entry->receipt.team(), entry->receipt.run_id(), hash::LeafHash(leaf), seq);
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
  return rewritten;
}

}  // namespace

absl::StatusOr<runmap::RunMap> LoadRunMap(const store::Store& store) {
  runmap::RunMap map;
  auto s = store.ScanRunHeads([&](std::string_view team, std::string_view run_id,
                                  const store::RunHead& head) -> absl::Status {
    if (head.count == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "runs: the row of ", std::string(team), "/", std::string(run_id), " is of format 1 (MigrateRunHeads first)"));
    }
    auto key = runmap::RunKey(team, run_id);
    if (!key.ok()) return absl::DataLossError(absl::StrCat("runs: ", key.status().message()));
    auto set = map.Set(*key, {head.count, head.last_seq, head.last_leaf_hash});
    if (!set.ok()) {
      return absl::DataLossError(absl::StrCat("runs: the row of ", std::string(team), "/", std::string(run_id), ": ",
                                              std::string(set.message())));
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return map;
}

absl::StatusOr<runmap::RunMap> ReplayRunMap(const store::Store& store, uint64_t size,
                                            const std::function<void(uint64_t done)>& progress) {
  absl::flat_hash_map<runmap::Key, runmap::Head> heads;
  auto replayed = ForEachEntry(
      store, size,
      [&](const std::string& team, const std::string& run_id, const hash::Hash& leaf_hash, uint64_t seq) {
        runmap::Head& h = heads[runmap::RunKeyOf(team, run_id)];
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

absl::StatusOr<runmap::RunMap> LoadTeamMap(const store::Store& store) {
  runmap::RunMap map;
  auto s = store.ScanTeamHeads([&](std::string_view team, const store::RunHead& head) -> absl::Status {
    auto key = runmap::TeamKey(team);
    if (!key.ok()) return absl::DataLossError(absl::StrCat("teams: ", key.status().message()));
    auto set = map.Set(*key, {head.count, head.last_seq, head.last_leaf_hash});
    if (!set.ok()) {
      return absl::DataLossError(absl::StrCat("teams: the row of ", std::string(team), ": ", set.message()));
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return map;
}

absl::StatusOr<runmap::RunMap> ReplayTeamMap(const store::Store& store, uint64_t size) {
  auto heads = ReplayTeamHeads(store, size);
  if (!heads.ok()) return heads.status();
  runmap::RunMap map;
  for (const auto& [team, head] : *heads) {
    if (auto s = map.Set(runmap::TeamKeyOf(team), {head.count, head.last_seq, head.last_leaf_hash}); !s.ok()) return s;
  }
  return map;
}

}  // namespace ledger::log
