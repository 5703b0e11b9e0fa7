// The log's reads and proofs (log.h): checkpoints and views of the tree at
// them, inclusion and consistency proofs, entries by seq or by receipt id,
// and paths in the run-head and team-head maps at the latest checkpoint.
#include "absl/strings/str_cat.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/store/store.h"
#include "ledger/storage/storedmap/storedmap.h"

namespace ledger::log {

absl::StatusOr<SignedCheckpoint> Log::Checkpoint(uint64_t size) const {
  {
    sync::MutexLock lock(&mu_);
    if (has_latest_ && (size == 0 || size == latest_.size)) return latest_;
    if (size == 0) return absl::NotFoundError("checkpoint: none signed yet");
  }
  return StoredCheckpoint(size);
}

LogView Log::View() const {
  sync::MutexLock lock(&mu_);
  return LogView(*store_, has_latest_ ? latest_ : SignedCheckpoint{});
}

absl::StatusOr<LogView> Log::ViewAt(uint64_t size) const {
  {
    sync::MutexLock lock(&mu_);
    if (has_latest_ && size == latest_.size) return LogView(*store_, latest_);
  }
  auto cp = StoredCheckpoint(size);
  if (!cp.ok()) return cp.status();
  return LogView(*store_, *std::move(cp));
}

absl::StatusOr<SignedCheckpoint> Log::StoredCheckpoint(uint64_t size) const {
  auto note_text = store_->GetCheckpoint(size);
  if (absl::IsNotFound(note_text.status())) {
    return absl::NotFoundError(absl::StrCat("tree_size: no checkpoint of size ", size, " was signed"));
  }
  if (!note_text.ok()) return note_text.status();
  auto text = OpenNote(*note_text, size);
  if (!text.ok()) {
    return absl::DataLossError(
        absl::StrCat("checkpoint of size ", size, " does not verify: ", text.status().message()));
  }
  auto cp = note::ParseCheckpoint(*text);
  if (!cp.ok()) return absl::DataLossError(cp.status().message());
  SignedCheckpoint out{size, cp->root, *note_text, {}, 0, std::nullopt, std::nullopt, 0};
  if (auto time = ReadCheckpointTime(size); time.ok()) {
    out.time_note = time->note;
    out.signed_at_us = time->time_us;
    out.run_map_root = time->runs;
    out.team_map_root = time->teams;
    out.time_version = time->version;
  } else if (!absl::IsNotFound(time.status())) {
    return time.status();
  }
  return out;
}

absl::StatusOr<uint64_t> Log::ResolveSize(uint64_t tree_size) const {
  if (tree_size == 0) {
    auto cp = Checkpoint(0);
    if (!cp.ok()) return cp.status();
    return cp->size;
  }
  uint64_t size = head().size;
  if (tree_size > size) {
    return absl::OutOfRangeError(absl::StrCat("tree_size: ", tree_size, " is beyond the log's size ", size));
  }
  return tree_size;
}

absl::StatusOr<Inclusion> Log::ProveInclusion(uint64_t seq, uint64_t tree_size) const {
  auto size = ResolveSize(tree_size);
  if (!size.ok()) return size.status();
  if (seq >= *size) {
    return absl::OutOfRangeError(absl::StrCat("seq: ", seq, " is not in the tree of size ", *size));
  }
  auto node = [&](int level, uint64_t index) { return store_->GetNode(level, index); };
  Inclusion out;
  out.seq = seq;
  out.tree_size = *size;
  auto leaf = store_->GetNode(0, seq);
  if (!leaf.ok()) return leaf.status();
  out.leaf_hash = *leaf;
  auto path = merkle::InclusionProof(seq, *size, node);
  if (!path.ok()) return path.status();
  out.path = *std::move(path);
  if (auto cp = Checkpoint(*size); cp.ok()) out.checkpoint = cp->note;
  return out;
}

absl::StatusOr<uint64_t> Log::SeqOf(std::string_view team, std::string_view receipt_id) const {
  store::IdSpace space =
      receipt_id.starts_with(receipt::kLedgerIdPrefix) ? store::IdSpace::kLedger : store::IdSpace::kEmitter;
  auto ref = store_->FindReceipt({space, team, receipt_id});
  if (!ref.ok()) return ref.status();
  if (!ref->has_value() || (*ref)->seq >= head().size) {
    return absl::NotFoundError(absl::StrCat("receipt_id: '", std::string(receipt_id), "' of team '", std::string(team),
                                            "' is not in the log"));
  }
  return (*ref)->seq;
}

absl::StatusOr<Consistency> Log::ProveConsistency(uint64_t from, uint64_t to) const {
  auto size = ResolveSize(to);
  if (!size.ok()) return size.status();
  if (from > *size) {
    return absl::OutOfRangeError(absl::StrCat("from_size: ", from, " is larger than to_size ", *size));
  }
  auto hashes =
      merkle::ConsistencyProof(from, *size, [&](int level, uint64_t index) { return store_->GetNode(level, index); });
  if (!hashes.ok()) return hashes.status();
  return Consistency{from, *size, *std::move(hashes)};
}

absl::Status Log::ScanEntries(uint64_t from, uint64_t to,
                              absl::FunctionRef<absl::Status(uint64_t, std::string_view)> fn) const {
  uint64_t size = head().size;
  if (from > to) {
    return absl::InvalidArgumentError(absl::StrCat("from_seq: ", from, " is larger than to_seq ", to));
  }
  if (to > size) {
    return absl::OutOfRangeError(absl::StrCat("to_seq: ", to, " is beyond the log's size ", size));
  }
  return store_->ScanLeaves(from, to, fn);
}

absl::StatusOr<RunProof> Log::ProveRun(std::string_view team, std::string_view run_id) const {
  auto key = runmap::RunKey(team, run_id, runmap::KeyVersion::kV2);
  if (!key.ok()) return key.status();
  if (!options_.run_map) {
    return absl::FailedPreconditionError("run-head map: this ledger runs without it (--run-map=false)");
  }
  sync::MutexLock map_lock(&map_mu_);
  // The path of a key of a team with no entry ends at another team's run
  // (CONTRACT section 6a, "What a proof reveals"): the team-head map's
  // absence proof says what such a proof would.
  auto team_head = team_map_->Get(runmap::TeamKeyOf(team));
  if (!team_head.ok()) return team_head.status();
  if (!team_head->has_value()) {
    return absl::FailedPreconditionError(absl::StrCat("run ", std::string(team), "/", std::string(run_id), ": team ",
                                                      std::string(team), " has no entry up to tree size ", map_size_,
                                                      " (a team window of ", std::string(team), " proves it)"));
  }
  return ProveKey(*key, *map_, "run-head map");
}

absl::StatusOr<RunProof> Log::ProveTeam(std::string_view team) const {
  auto key = runmap::TeamKey(team);
  if (!key.ok()) return key.status();
  if (!options_.run_map) {
    return absl::FailedPreconditionError("team-head map: this ledger runs without it (--run-map=false)");
  }
  sync::MutexLock map_lock(&map_mu_);
  return ProveKey(*key, *team_map_, "team-head map");
}

absl::StatusOr<RunProof> Log::ProveMapKey(bool teams, const runmap::Key& key) const {
  if (!options_.run_map) {
    return absl::FailedPreconditionError("maps: this ledger runs without them (--run-map=false)");
  }
  sync::MutexLock map_lock(&map_mu_);
  return teams ? ProveKey(key, *team_map_, "team-head map") : ProveKey(key, *map_, "run-head map");
}

absl::StatusOr<RunProof> Log::ProveKey(const runmap::Key& key, const storedmap::StoredMap& map,
                                       std::string_view map_name) const {
  RunProof proof;
  {
    sync::MutexLock lock(&mu_);
    if (!has_latest_ || !latest_.team_map_root.has_value() || latest_.size != map_size_) {
      return absl::UnavailableError(
          absl::StrCat(std::string(map_name),
                       ": the latest checkpoint is not signed with the map yet; retry after the next checkpoint"));
    }
    proof.checkpoint = latest_;
  }
  proof.key = key;
  auto path = map.Prove(key);
  if (!path.ok()) return path.status();
  proof.path = *std::move(path);
  return proof;
}

}  // namespace ledger::log
