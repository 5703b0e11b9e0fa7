#include "ledger/storage/log/log.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/storage/log/run_heads.h"
#include "ledger/storage/store/store.h"
#include "util/files/files.h"

namespace ledger::log {
absl::StatusOr<std::unique_ptr<Log>> Log::Open(Options options, note::Signer signer) {
  if (signer.name() != options.origin) {
    return absl::FailedPreconditionError(
        absl::StrCat("signing key: named '", signer.name(), "' but the origin is '", options.origin, "'"));
  }
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("data directory ", options.data_dir, ": ", ec.message()));
  }
  ::chmod(options.data_dir.c_str(), 0700);
  auto store = store::Store::Open(options.data_dir + "/db", options.faults, options.store_memory_bytes);
  if (!store.ok()) return store.status();
  auto state = (*store)->ReadState();
  if (!state.ok()) return state.status();

  std::unique_ptr<Log> log(new Log(std::move(options), std::move(signer), *std::move(store)));
  if (absl::Status keys = log->LoadKeys(); !keys.ok()) {
    if (!absl::IsDataLoss(keys)) return keys;
    log->integrity_ = keys;
  }
  if (log->integrity_.ok()) log->integrity_ = log->CheckIntegrity(*state);
  if (absl::IsFailedPrecondition(log->integrity_)) return log->integrity_;
  if (log->integrity_.ok()) {
    if (auto s = log->CheckGuard(*state); !s.ok()) return s;
  }
  if (log->integrity_.ok()) {
    auto migrated = MigrateLegacyReceipts(*log->store_);
    if (migrated.ok()) {
      log->migrated_receipts_ = *migrated;
    } else {
      log->integrity_ = migrated.status();
    }
  }
  if (log->integrity_.ok()) {
    auto migrated = MigrateRunHeads(*log->store_);
    if (migrated.ok()) {
      log->migrated_run_heads_ = *migrated;
    } else {
      log->integrity_ = migrated.status();
    }
  }
  if (log->integrity_.ok()) {
    auto filled = FillTeamHeads(*log->store_);
    if (filled.ok()) {
      log->filled_team_heads_ = *filled;
    } else {
      log->integrity_ = filled.status();
    }
  }
  if (log->integrity_.ok() && log->options_.run_map) {
    log->integrity_ = CatchUpStoredMaps(*log->store_, state->size);
    sync::MutexLock lock(&log->map_mu_);
    log->map_ = std::make_unique<storedmap::StoredMap>(log->store_.get(), storedmap::StoredMap::Id::kRuns);
    log->team_map_ = std::make_unique<storedmap::StoredMap>(log->store_.get(), storedmap::StoredMap::Id::kTeams);
    for (storedmap::StoredMap* m : {log->map_.get(), log->team_map_.get()}) {
      if (log->integrity_.ok()) log->integrity_ = m->LoadTop();
    }
  }
  if (log->integrity_.ok() && log->options_.sequencer.projector != nullptr) {
    auto upgraded = UpgradeProjections(*log->store_, *log->options_.sequencer.projector);
    if (!upgraded.ok() && absl::IsFailedPrecondition(upgraded.status())) return upgraded.status();
    if (upgraded.ok()) {
      log->projection_upgrade_ = *upgraded;
    } else {
      log->integrity_ = upgraded.status();
    }
  }
  if (log->integrity_.ok() && log->options_.sequencer.projector != nullptr && log->projected_ < state->size) {
    // Projections written since the last flush were lost with the process:
    // the log has them all.
    log->integrity_ =
        ReplayProjections(*log->store_, *log->options_.sequencer.projector, log->projected_, state->size, nullptr);
  }
  if (log->integrity_.ok()) {
    sequencer::Sequencer::Options seq_options = log->options_.sequencer;
    seq_options.track_runs = log->options_.run_map;
    seq_options.team_chain = log->options_.run_map && seq_options.team_chain;
    auto seq = sequencer::Sequencer::Start(log->store_.get(), std::move(seq_options));
    if (seq.ok()) {
      log->sequencer_ = *std::move(seq);
    } else {
      log->integrity_ = seq.status();
    }
  }
  if (log->integrity_.ok()) {
    if (!log->options_.replicated.has_value()) {
      if (auto s = log->SignCheckpoint(); !s.ok()) return s;
      if (auto s = log->FinishErasures(); !s.ok()) return s;
      if (auto s = log->FinishPass(); !s.ok()) return s.status();
    }
    log->checkpointer_ = std::thread([l = log.get()] { l->RunCheckpointer(); });
  }
  return log;
}

Log::Log(Options options, note::Signer signer, std::unique_ptr<store::Store> store)
    : options_(std::move(options)), signer_(std::move(signer)), store_(std::move(store)) {
  sync::MutexLock lock(&keys_mu_);
  keys_ = *note::KeySet::Of(signer_.VerifierKey());  // until LoadKeys reads the rotations
}

Log::~Log() {
  {
    sync::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (checkpointer_.joinable()) checkpointer_.join();
  if (sequencer_ != nullptr) {
    sequencer_->Stop();  // commits what is queued
    stopped_ = true;
    if (Writable().ok()) SignCheckpoint().IgnoreError();  // best effort: the next start signs it otherwise
    sequencer_.reset();
  }
}

absl::StatusOr<Log::BackupInfo> Log::Backup(const std::string& dir) const {
  if (dir.empty()) return absl::InvalidArgumentError("dir: required");
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    if (!std::filesystem::is_directory(dir, ec) || !std::filesystem::is_empty(dir, ec)) {
      return absl::AlreadyExistsError(absl::StrCat("dir: ", dir, " exists; a backup goes to a new directory"));
    }
  } else if (!std::filesystem::create_directories(dir, ec) || ec) {
    return absl::UnavailableError(absl::StrCat("dir: cannot create ", dir, ": ", ec.message()));
  }
  ::chmod(dir.c_str(), 0700);
  if (auto s = store_->Backup(dir + "/db"); !s.ok()) return s;
  BackupInfo info;
  {
    auto copy = store::Store::Open(dir + "/db");
    if (!copy.ok()) return copy.status();
    auto state = (*copy)->ReadState();
    if (!state.ok()) return state.status();
    info.tree_size = state->size;
    auto latest = (*copy)->LatestCheckpoint();
    if (!latest.ok()) return latest.status();
    if (latest->has_value()) info.checkpoint = (*latest)->second;
  }
  std::ofstream guard(absl::StrCat(dir, "/", kGuardFile), std::ios::binary | std::ios::trunc);
  guard << info.checkpoint;
  guard.close();
  if (!guard) return absl::UnavailableError(absl::StrCat("dir: cannot write ", dir, "/", kGuardFile));
  return info;
}

absl::Status Log::WriteGuard(const std::string& note) const {
  absl::Status s = files::WriteFileAtomically(absl::StrCat(options_.data_dir, "/", kGuardFile), note);
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("checkpoint guard: ", s.message()));
}

absl::Status Log::CheckGuard(const store::State& state) {
  std::string path = absl::StrCat(options_.data_dir, "/", kGuardFile);
  // Without a guard (a new log, or one just accepted after a rollback), the
  // store's latest checkpoint becomes it.
  auto write_latest = [&]() -> absl::Status {
    auto latest = store_->LatestCheckpoint();
    if (!latest.ok()) return latest.status();
    return latest->has_value() ? WriteGuard((*latest)->second) : absl::OkStatus();
  };
  auto guard = files::ReadFile(path);
  if (!guard.ok()) return write_latest();
  const std::string& note_text = *guard;
  std::string problem;
  // The size the note claims says which key must have signed it.
  auto claimed = note::ClaimedCheckpoint(note_text);
  auto text = claimed.ok() ? OpenNote(note_text, claimed->size) : absl::StatusOr<std::string>(claimed.status());
  auto cp = text.ok() ? note::ParseCheckpoint(*text) : absl::StatusOr<note::Checkpoint>(text.status());
  if (!cp.ok() || cp->origin != options_.origin) {
    problem = absl::StrCat("the checkpoint in ", path, " is not a checkpoint of '", options_.origin,
                           "' signed by this key", cp.ok() ? "" : ": ", cp.ok() ? "" : cp.status().message());
  } else if (cp->size > state.size) {
    problem = absl::StrCat("the store holds ", state.size, " entries but a checkpoint of size ", cp->size, " (root ",
                           hash::Hex(cp->root), ") was signed: the store was rolled back");
  } else {
    auto node = [&](int level, uint64_t index) { return store_->GetNode(level, index); };
    auto root = merkle::RootHash(cp->size, node);
    if (!root.ok()) return root.status();
    if (*root != cp->root) {
      problem = absl::StrCat("at tree size ", cp->size, " the store's root is ", hash::Hex(*root),
                             " but the signed checkpoint in ", path, " says ", hash::Hex(cp->root),
                             ": the store is not the log that signed it");
    }
  }
  if (problem.empty()) return absl::OkStatus();
  if (!options_.accept_rollback) {
    return absl::FailedPreconditionError(
        absl::StrCat("rollback guard: ", problem,
                     "; to start anyway, knowing that checkpoints already given out "
                     "may not be consistent with the ones signed from now on, pass --accept-rollback"));
  }
  std::string kept = absl::StrCat(path, ".rolled-back-", cp.ok() ? cp->size : 0);
  std::error_code ec;
  std::filesystem::rename(path, kept, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("rollback guard: cannot keep ", path, ": ", ec.message()));
  rollback_ = absl::StrCat(problem, "; the refused checkpoint is kept in ", kept);
  return write_latest();
}

absl::Status Log::CheckIntegrity(const store::State& state) {
  auto node = [&](int level, uint64_t index) { return store_->GetNode(level, index); };
  if (state.size > 0) {
    auto leaf = store_->GetLeaf(state.size - 1);
    if (!leaf.ok()) {
      return absl::DataLossError(
          absl::StrCat("integrity: last entry ", state.size - 1, " unreadable: ", leaf.status().message()));
    }
    hash::Hash h = hash::LeafHash(*leaf);
    if (h != state.head) {
      return absl::DataLossError(absl::StrCat("integrity: entry ", state.size - 1, " hashes to ", hash::Hex(h),
                                              " but the chain head is ", hash::Hex(state.head)));
    }
  }
  if (options_.sequencer.projector != nullptr) {
    auto projected = store_->GetProjection(projection::Table::kIndex, projection::kProjectedSizeKey);
    if (!projected.ok()) return projected.status();
    uint64_t covered = 0;
    if (projected->has_value() && (*projected)->size() == 8) {
      for (char c : **projected) covered = covered << 8 | static_cast<uint8_t>(c);
    }
    if (covered > state.size) {
      return absl::FailedPreconditionError(
          absl::StrCat("projections cover ", covered, " entries but the log holds ", state.size,
                       "; stop the server and run: ledgerctl rebuild --data ", options_.data_dir));
    }
    projected_ = covered;
  }
  auto latest = store_->LatestCheckpoint();
  if (!latest.ok()) return latest.status();
  if (!latest->has_value()) return absl::OkStatus();
  const auto& [size, note_text] = **latest;
  auto text = OpenNote(note_text, size);
  if (!text.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("integrity: the checkpoint of size ", size, " was not signed by this key (", VerifierKeyAt(size),
                     "): ", text.status().message(), "; start with the key and origin that signed it"));
  }
  auto cp = note::ParseCheckpoint(*text);
  if (!cp.ok() || cp->size != size || cp->origin != options_.origin) {
    return absl::FailedPreconditionError(absl::StrCat("integrity: the checkpoint stored at size ", size,
                                                      " is not a checkpoint of '", options_.origin, "' at that size"));
  }
  if (size > state.size) {
    return absl::DataLossError(absl::StrCat("integrity: a checkpoint of size ", size,
                                            " was signed but the store holds only ", state.size, " entries"));
  }
  auto root = merkle::RootHash(size, node);
  if (!root.ok()) {
    return absl::DataLossError(
        absl::StrCat("integrity: tree of size ", size, " cannot be recomputed: ", root.status().message()));
  }
  if (*root != cp->root) {
    return absl::DataLossError(absl::StrCat("integrity: at tree size ", size, " the stored nodes give root ",
                                            hash::Hex(*root), " but the signed checkpoint says ", hash::Hex(cp->root)));
  }
  SignedCheckpoint found{size, cp->root, note_text, {}, 0, std::nullopt, std::nullopt, 0};
  if (auto time = ReadCheckpointTime(size); time.ok()) {
    found.time_note = time->note;
    found.signed_at_us = time->time_us;
    found.run_map_root = time->runs;
    found.team_map_root = time->teams;
    found.time_version = time->version;
  } else if (!absl::IsNotFound(time.status())) {
    return time.status();
  }
  sync::MutexLock lock(&mu_);
  latest_ = std::move(found);
  latest_at_us_ = sequencer::SystemClockMicros();
  has_latest_ = true;
  return absl::OkStatus();
}

absl::StatusOr<Log::SignedTime> Log::ReadCheckpointTime(uint64_t size) const {
  auto note_text = store_->GetCheckpointTime(size);
  if (!note_text.ok()) return note_text.status();
  auto text = OpenNote(*note_text, size);
  auto time = text.ok() ? note::ParseCheckpointTime(*text) : absl::StatusOr<note::CheckpointTime>(text.status());
  if (!time.ok() || time->checkpoint.size != size || time->checkpoint.origin != options_.origin) {
    return absl::DataLossError(absl::StrCat("checkpoint time of size ", size, " does not verify", time.ok() ? "" : ": ",
                                            time.ok() ? "" : time.status().message()));
  }
  return SignedTime{*std::move(note_text), time->time_us, time->run_map_root, time->team_map_root, time->version()};
}

absl::StatusOr<Log::SignedTime> Log::SignCheckpointTime(uint64_t size, const hash::Hash& root,
                                                        std::optional<hash::Hash> runs, std::optional<hash::Hash> teams,
                                                        int64_t now) {
  {
    sync::MutexLock lock(&mu_);
    if (has_latest_) now = std::max(now, latest_.signed_at_us);  // never backwards
  }
  // With both maps the runs are keyed by team (run keys v2): note version 4.
  const bool keyed_by_team = teams.has_value();
  auto signed_note =
      SignFor(size, note::FormatCheckpointTime({{options_.origin, size, root}, now, runs, teams, keyed_by_team}));
  if (!signed_note.ok()) return signed_note.status();
  return SignedTime{*std::move(signed_note), now, runs, teams, keyed_by_team ? 4 : runs ? 2 : 1};
}

absl::Status Log::Append(const std::string& emitter, std::vector<const receipt::Receipt*> receipts, AppendDone done) {
  if (emitter == receipt::kLedgerEmitter) {
    return absl::PermissionDeniedError(
        absl::StrCat("emitter: '", emitter, "' is the name of the ledger's own entries; no caller appends as it"));
  }
  return AppendAs(emitter, receipt::Author::kEmitter, std::move(receipts), std::move(done));
}

absl::Status Log::AppendAsLedger(std::vector<const receipt::Receipt*> receipts, AppendDone done) {
  return AppendAs("ledger", receipt::Author::kLedger, std::move(receipts), std::move(done));
}

absl::Status Log::AppendAs(const std::string& emitter, receipt::Author author,
                           std::vector<const receipt::Receipt*> receipts, AppendDone done) {
  {
    sync::MutexLock gate(&gate_mu_);
    while (gate_closed_) gate_cv_.Wait(&gate_mu_);  // a key rotation, for milliseconds
    ++in_flight_;
  }
  auto finished = [this] {
    sync::MutexLock gate(&gate_mu_);
    if (--in_flight_ == 0) gate_cv_.SignalAll();
  };
  absl::Status queued = Submit(emitter, author, std::move(receipts),
                               [done = std::move(done), finished](std::vector<sequencer::Outcome> out) {
                                 done(std::move(out));
                                 finished();
                               });
  if (!queued.ok()) finished();
  return queued;
}

absl::Status Log::Submit(const std::string& emitter, receipt::Author author,
                         std::vector<const receipt::Receipt*> receipts, AppendDone done) {
  if (receipts.size() > kMaxReceiptsPerAppend) {
    return absl::InvalidArgumentError(
        absl::StrCat("receipts: at most ", kMaxReceiptsPerAppend, " per request, got ", receipts.size()));
  }
  if (!integrity_.ok()) return integrity_;
  if (auto writable = Writable(); !writable.ok()) return writable;
  if (author == receipt::Author::kEmitter && options_.replicated.has_value() && options_.replicated->open) {
    if (auto open = options_.replicated->open(); !open.ok()) return open;
  }
  std::vector<sequencer::Outcome> results(receipts.size());
  std::vector<sequencer::Submission> submissions;
  std::vector<size_t> where;
  submissions.reserve(receipts.size());
  where.reserve(receipts.size());
  for (size_t i = 0; i < receipts.size(); ++i) {
    auto canonical = receipt::Canonicalize(*receipts[i], author);
    if (!canonical.ok()) {
      results[i].status = canonical.status();
      continue;
    }
    submissions.push_back(sequencer::Submission::Of(*receipts[i], *std::move(canonical), emitter));
    where.push_back(i);
  }
  if (submissions.empty()) {
    done(std::move(results));
    return absl::OkStatus();
  }
  return sequencer_->Submit(std::move(submissions),
                            [results = std::move(results), where = std::move(where),
                             done = std::move(done)](std::vector<sequencer::Outcome> outcomes) mutable {
                              for (size_t k = 0; k < outcomes.size(); ++k) results[where[k]] = std::move(outcomes[k]);
                              done(std::move(results));
                            });
}

void Log::SetBeforeSign(std::function<int(int64_t now_us)> fn) {
  sync::MutexLock lock(&before_sign_mu_);  // waits for a call under way
  before_sign_ = std::move(fn);
}

sequencer::Head Log::TakeHead() {
  std::vector<sequencer::RunChange> runs, teams;
  sequencer::Head head = sequencer_->TakeCommitted(&runs, &teams);
  changed_runs_.insert(changed_runs_.end(), runs.begin(), runs.end());
  changed_teams_.insert(changed_teams_.end(), teams.begin(), teams.end());
  return head;
}

absl::Status Log::Writable() const {
  if (!options_.replicated.has_value() || !options_.replicated->writable) return absl::OkStatus();
  return options_.replicated->writable();
}

absl::StatusOr<sequencer::Head> Log::Replay(std::vector<std::string> leaves, uint64_t size, const hash::Hash& root) {
  if (sequencer_ == nullptr) return integrity_;
  std::promise<std::pair<absl::Status, sequencer::Head>> replayed;
  auto result = replayed.get_future();
  if (auto s = sequencer_->Replay(std::move(leaves),
                                  [&](absl::Status st, sequencer::Head h) {
                                    replayed.set_value({std::move(st), h});
                                  });
      !s.ok()) {
    return s;
  }
  auto [status, head] = result.get();
  if (!status.ok()) return status;
  if (head.size != size || head.root != root) {
    return absl::DataLossError(absl::StrCat("replayed batch: this node's tree is of size ", head.size, " with root ",
                                            hash::Hex(head.root), ", the leader committed size ", size, " with root ",
                                            hash::Hex(root)));
  }
  return head;
}

absl::Status Log::AdoptCheckpoint(const std::string& note_text, const std::string& time_note) {
  // A replicated log never rotates (RotateKey): one key signs every size.
  auto verifier = note::Verifier::Parse(verifier_key());
  if (!verifier.ok()) return verifier.status();
  auto text = verifier->Open(time_note);
  auto time = text.ok() ? note::ParseCheckpointTime(*text) : absl::StatusOr<note::CheckpointTime>(text.status());
  if (!time.ok()) {
    return absl::DataLossError(absl::StrCat("leader's checkpoint time note: ", time.status().message()));
  }
  Adopted adopt{time->checkpoint.size, time->time_us, note_text, time_note};
  return Sign(&adopt);
}

absl::Status Log::SignCheckpoint() { return Sign(nullptr); }

absl::Status Log::Sign(const Adopted* adopt) {
  if (sequencer_ == nullptr) return integrity_;
  sync::MutexLock signing(&sign_mu_);
  int64_t now = adopt != nullptr           ? adopt->time_us
                : options_.sequencer.clock ? options_.sequencer.clock()
                                           : sequencer::SystemClockMicros();
  // Everything due by `now` (the sweeper's declarations) is committed
  // before the head is read, so the time note's time never precedes a
  // deadline the signed tree leaves undeclared.
  auto owed_by = [this, adopt](int64_t time) {
    if (adopt != nullptr) return 0;  // the leader declared what was due
    sync::MutexLock lock(&before_sign_mu_);
    return !stopped_ && before_sign_ ? before_sign_(time) : 0;
  };
  owed_by(now);
  // The map and the head are taken together and held until the checkpoint
  // is the latest: a run proof (ProveRun) is always of the latest one.
  sync::MutexLock map_lock(&map_mu_);
  changed_runs_.clear();
  changed_teams_.clear();
  sequencer::Head head = TakeHead();
  if (adopt != nullptr && head.size != adopt->size) {
    return absl::FailedPreconditionError(absl::StrCat("adopt checkpoint: this node's log holds ", head.size,
                                                      " entries, the leader's checkpoint ", adopt->size));
  }
  // The note's time must not precede entries logged after `now`: it moves
  // to the newest one's when nothing fell due in between, else the head is
  // taken again with the declarations (a few rounds; past them it stays `now`).
  for (int round = 0; adopt == nullptr && round < 4 && head.last_logged_at_us > now; ++round) {
    const int64_t newest = head.last_logged_at_us;
    if (owed_by(newest) == 0) {
      now = newest;
      break;
    }
    now = newest;
    head = TakeHead();
  }
  std::optional<hash::Hash> runs, teams;
  if (options_.run_map) {
    // Written to the store as of head.size. The heads taken are kept, for
    // both maps before either is written, until a write stores them: a
    // failed write leaves them for the next time, so that neither map moves
    // on without them.
    // From here the stored maps may stand past the latest checkpoint: no
    // proof is served until it is signed with them.
    map_size_ = head.size;
    for (const sequencer::RunChange& c : changed_runs_) unapplied_runs_.push_back({c.key, c.head});
    for (const sequencer::RunChange& c : changed_teams_) unapplied_teams_.push_back({c.key, c.head});
    for (auto [map, unapplied, name] : {std::tuple{map_.get(), &unapplied_runs_, "run-head map"},
                                        std::tuple{team_map_.get(), &unapplied_teams_, "team-head map"}}) {
      absl::Status applied = map->Apply(head.size, *unapplied);
      if (absl::IsInvalidArgument(applied)) return absl::DataLossError(absl::StrCat(name, ": ", applied.message()));
      if (!applied.ok()) return applied;
      unapplied->clear();
    }
    auto run_root = map_->Root();
    if (!run_root.ok()) return run_root.status();
    auto team_root = team_map_->Root();
    if (!team_root.ok()) return team_root.status();
    runs = *run_root;
    teams = *team_root;
  }
  bool timed = false;
  {
    sync::MutexLock lock(&mu_);
    if (has_latest_ && latest_.size == head.size) {
      // Equal roots of another version are not the same statement: the
      // runs of an empty map have the same root under both run keys.
      const int version = teams ? 4 : runs ? 2 : 1;
      if (!latest_.time_note.empty() && latest_.run_map_root == runs && latest_.team_map_root == teams &&
          latest_.time_version == version) {
        return absl::OkStatus();
      }
      // Signed before the ledger signed times (or run-head map roots): sign
      // them now.
      timed = true;
    }
  }
  auto time = SignCheckpointTime(head.size, head.root, runs, teams, now);
  if (!time.ok()) return time.status();
  if (adopt != nullptr && time->note != adopt->time_note) {
    return absl::DataLossError(
        absl::StrCat("adopt checkpoint of size ", head.size,
                     ": the leader's time note is not the one this node's tree and maps give (roots: tree ",
                     hash::Hex(head.root), runs ? absl::StrCat(", runs ", hash::Hex(*runs)) : "",
                     teams ? absl::StrCat(", teams ", hash::Hex(*teams)) : "", ")"));
  }
  auto publish = [&](const std::string& note) -> absl::Status {
    if (adopt != nullptr || !options_.replicated.has_value() || !options_.replicated->publish) {
      return absl::OkStatus();
    }
    return options_.replicated->publish(
        {head.size, head.root, note, time->note, time->time_us, time->runs, time->teams, time->version});
  };
  if (timed) {
    std::string note;
    {
      sync::MutexLock lock(&mu_);
      note = latest_.note;
    }
    if (auto s = publish(note); !s.ok()) return s;
    if (auto s = store_->PutCheckpoint(head.size, {}, time->note); !s.ok()) return s;
    sync::MutexLock lock(&mu_);
    latest_.time_note = time->note;
    latest_.signed_at_us = time->time_us;
    latest_.run_map_root = time->runs;
    latest_.team_map_root = time->teams;
    latest_.time_version = time->version;
    return absl::OkStatus();
  }
  auto signed_note = SignFor(head.size, note::FormatCheckpoint({options_.origin, head.size, head.root}));
  if (!signed_note.ok()) return signed_note.status();
  if (adopt != nullptr && *signed_note != adopt->note) {
    return absl::DataLossError(absl::StrCat("adopt checkpoint of size ", head.size,
                                            ": the leader's checkpoint is not the one this node's tree gives (root ",
                                            hash::Hex(head.root), ")"));
  }
  if (auto s = publish(*signed_note); !s.ok()) return s;
  if (auto s = store_->PutCheckpoint(head.size, *signed_note, time->note); !s.ok()) return s;
  // Not the latest until the guard says so too; a failure here is retried
  // with the same (deterministic) signature at the next interval.
  if (auto s = WriteGuard(*signed_note); !s.ok()) return s;
  sync::MutexLock lock(&mu_);
  latest_ = {head.size, head.root, *signed_note, time->note, time->time_us, time->runs, time->teams, time->version};
  latest_at_us_ = sequencer::SystemClockMicros();
  has_latest_ = true;
  return absl::OkStatus();
}

void Log::RunCheckpointer() {
  pthread_setname_np(pthread_self(), "ledger-signer");
  auto interval = std::chrono::milliseconds(std::max<int64_t>(1, options_.checkpoint_interval_ms));
  sync::MutexLock lock(&mu_);
  while (true) {
    const auto deadline = sync::CondVar::Clock::now() + interval;
    while (!stopping_ && cv_.WaitUntil(&mu_, deadline)) {
    }
    if (stopping_) return;
    mu_.Unlock();
    if (Writable().ok()) {
      const uint64_t signed_size = LatestCheckpointTime().first;
      const auto started = std::chrono::steady_clock::now();
      absl::Status s = SignCheckpoint();  // retried at the next interval
      if (s.ok() && LatestCheckpointTime().first != signed_size) {
        checkpoint_us_.Observe(static_cast<double>(
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count()));
      }
    }
    mu_.Lock();
  }
}

absl::Status Log::KeepMapCosignature(uint64_t size, const hash::Hash& monitor, std::string_view line) {
  return store_->PutMapCosignature(size, monitor, line);
}

absl::Status Log::KeepTimeStamp(uint64_t size, std::string_view line) { return store_->PutTimeStamp(size, line); }

absl::StatusOr<std::string> Log::TimeStamp(uint64_t size) const { return store_->TimeStamp(size); }

absl::StatusOr<std::vector<std::pair<hash::Hash, std::string>>> Log::MapCosignatures(uint64_t size) const {
  return store_->MapCosignatures(size);
}

absl::StatusOr<uint64_t> MigrateLegacyReceipts(store::Store& store) {
  constexpr size_t kRowsPerBatch = 10'000;
  uint64_t migrated = 0;
  for (;;) {
    auto rows = store.LegacyReceipts(kRowsPerBatch);
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return migrated;
    store::Batch batch = store.NewBatch();
    for (const auto& [id, ref] : *rows) {
      auto leaf = store.GetLeaf(ref.seq);
      auto entry = leaf.ok() ? receipt::ParseLeaf(*leaf) : absl::StatusOr<receipt::Entry>(leaf.status());
      if (!entry.ok() || entry->receipt.receipt_id() != id) {
        return absl::DataLossError(absl::StrCat("receipt index: the format-1 row of '", id, "' points at seq ", ref.seq,
                                                ", which does not hold that receipt", entry.ok() ? "" : ": ",
                                                entry.ok() ? "" : entry.status().message()));
      }
      store::IdSpace space =
          entry->emitter == receipt::kLedgerEmitter ? store::IdSpace::kLedger : store::IdSpace::kEmitter;
      batch.PutReceipt({space, entry->receipt.team(), id}, ref);
      batch.DeleteLegacyReceipt(id);
    }
    if (auto s = store.Commit(batch); !s.ok()) return s;
    migrated += rows->size();
  }
}

sequencer::Head Log::WaitForMore(uint64_t size, std::chrono::milliseconds timeout) const {
  if (sequencer_ == nullptr) return head();
  return sequencer_->WaitCommitted(size, timeout);
}

std::pair<uint64_t, int64_t> Log::LatestCheckpointTime() const {
  sync::MutexLock lock(&mu_);
  return {has_latest_ ? latest_.size : 0, has_latest_ ? latest_at_us_ : 0};
}

sequencer::Head Log::head() const {
  if (sequencer_ != nullptr) return sequencer_->committed();
  auto state = store_->ReadState();
  return state.ok() ? sequencer::Head{state->size, {}, state->head} : sequencer::Head{};
}

}  // namespace ledger::log
