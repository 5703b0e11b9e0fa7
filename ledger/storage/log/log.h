// The ledger's log: the store, the sequencer and the checkpointer behind
// one API that the gRPC service adapts. Readers (exports, tiles, queries,
// the sweeper, metrics) take a LogView (log_view.h) at a checkpoint; the
// store itself stays inside the storage room.
//
// On Open the log checks itself: the stored tree must reproduce the root of
// the latest signed checkpoint and the chain head must be the hash of the
// last entry. If not, the log still serves reads (so the damage can be
// inspected) but refuses appends with DATA_LOSS naming the size and both
// roots, and signs nothing.
//
// Checkpoints are signed only over committed state: at most every
// checkpoint_interval_ms, when the log grew, and once more on shutdown.
// Every checkpoint is kept, with its checkpoint-time note (note.h), signed
// with it in the same synced write; the time is the sequencer's clock, never
// below the time of the checkpoint before. A latest checkpoint found
// without one (signed by an earlier version) gets one at Open.
//
// Thread-safe: every method may be called concurrently.
#ifndef LEDGER_STORAGE_LOG_LOG_H_
#define LEDGER_STORAGE_LOG_LOG_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/key_set.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/receipt/retention.h"
#include "ledger/format/retention/policy.h"
#include "ledger/format/runmap/runmap.h"
#include "ledger/storage/log/log_view.h"
#include "ledger/storage/sequencer/sequencer.h"
#include "ledger/storage/store/types.h"
#include "ledger/storage/storedmap/storedmap.h"
#include "util/stats/stats.h"
#include "util/sync/mutex.h"

namespace ledger::log {

inline constexpr char kDefaultOrigin[] = "evidence-ledger.local/dev";
inline constexpr size_t kMaxReceiptsPerAppend = 1000;

// A run's place in the run-head map of a checkpoint: its head (path.found)
// or the proof that it has none.
struct RunProof {
  SignedCheckpoint checkpoint;  // its time note signs the map root
  runmap::Key key{};
  runmap::Path path;
};

struct Inclusion {
  uint64_t seq = 0;
  hash::Hash leaf_hash{};
  uint64_t tree_size = 0;
  std::vector<hash::Hash> path;
  std::string checkpoint;  // the signed note of tree_size, if one was signed
};

struct Consistency {
  uint64_t from_size = 0;
  uint64_t to_size = 0;
  std::vector<hash::Hash> hashes;
};

// What UpgradeProjections found and did: the stored format (`from`), the
// projector's (`to`) and the records rewritten.
struct ProjectionUpgrade {
  uint64_t from = 0, to = 0, rows = 0;
};

class Log {
 public:
  struct Options {
    std::string data_dir;
    std::string origin = kDefaultOrigin;
    int64_t checkpoint_interval_ms = 1000;
    // sequencer.projector, when set, keeps projections beside the log; Open
    // first catches them up with the log (they may lag it after a crash).
    sequencer::Sequencer::Options sequencer;
    // Start even when the store is behind, or not consistent with, the
    // checkpoint kept outside it (kGuardFile). The operator's decision; the
    // refused checkpoint is kept beside it for the record.
    bool accept_rollback = false;
    // Keep the run-head and team-head maps (runmap.h), sign their roots in
    // every checkpoint-time note (format 3), and append leaves of version 2
    // (team chains). Off: format 1 notes, version 1 leaves, no run or team
    // proofs.
    bool run_map = true;
    // What the store's RocksDB may hold in memory (store::Store::Open).
    uint64_t store_memory_bytes = store::kDefaultMemoryBytes;
    // Injected storage faults (ledger/storage/store/testing.h), for tests; MUST
    // outlive the log.
    store::Faults* faults = nullptr;
    // Set on every node of a replicated shard (ledger/storage/replication), with
    // sequencer.replicate. Such a log signs nothing at Open: it appends and
    // signs only while `writable` says OK, and every checkpoint it signs is
    // given to `publish` before it is stored or served (an error: it is not
    // signed). A node that follows fills its log with Replay and takes the
    // leader's checkpoints with AdoptCheckpoint.
    struct Replicated {
      // OK while this node leads; otherwise the error every append gets
      // (UNAVAILABLE, naming the leader).
      std::function<absl::Status()> writable;
      // OK once this node's epoch takes emitters' appends (after its
      // leader_epoch entry is committed); until then they get its error.
      // Unset: as `writable`.
      std::function<absl::Status()> open;
      std::function<absl::Status(const SignedCheckpoint&)> publish;
    };
    std::optional<Replicated> replicated;
    // A key made for a rotation and kept beside the key given to Open
    // (ledger/keys/key_file.h, kNextKeyFile): when the store's last
    // rotation names it, a rotation was committed and the process stopped
    // before the key file was replaced. Open then signs with it and calls
    // `took_next_key`, which replaces the key file.
    std::optional<note::Signer> next_key;
    std::function<absl::Status()> took_next_key;
  };

  // The latest signed checkpoint, kept outside RocksDB in the data
  // directory: the signed note, replaced atomically (write, fsync, rename,
  // fsync the directory) after each checkpoint is stored. A store restored
  // from an older copy, or swapped for another, cannot pass it silently.
  static constexpr char kGuardFile[] = "latest-checkpoint";

  // Opens (creating if needed) the log in options.data_dir, signed by
  // `signer`, whose name MUST be the origin and whose key MUST be the log's
  // current key: the first, or the new key of its last key_rotation entry
  // (CONTRACT section 5d; the rotations are read from the run
  // (ledger, ledger.keys), and each one's statement is checked).
  // FAILED_PRECONDITION when the stored checkpoints were signed by another
  // key or for another origin, when `signer` is a key the log rotated
  // away from (naming the key it rotated to),
  // and, unless options.accept_rollback, when the store's tree is behind
  // the guard file's checkpoint or its root at that size differs, or the
  // guard file does not verify.
  static absl::StatusOr<std::unique_ptr<Log>> Open(Options options, note::Signer signer);

  // Finishes queued appends and signs a final checkpoint.
  ~Log();

  using AppendDone = std::function<void(std::vector<sequencer::Outcome>)>;

  // Validates each receipt (CONTRACT §3) and appends the valid ones; `done`
  // gets one outcome per receipt, in order, once they are durable. The
  // receipts are not copied: they MUST stay alive and unchanged until `done`
  // is called (or Append returned an error).
  // Returns an error, and does not call `done`, when nothing could be
  // queued: INVALID_ARGUMENT for more than kMaxReceiptsPerAppend receipts,
  // DATA_LOSS when the store failed its check, RESOURCE_EXHAUSTED when the
  // queue is full, UNAVAILABLE while shutting down, PERMISSION_DENIED when
  // `emitter` is receipt::kLedgerEmitter (that name is AppendAsLedger's).
  // A receipt whose (team, receipt_id) is in the log already is a retry
  // (its seq back) or ALREADY_EXISTS; ids are unique per team only.
  absl::Status Append(const std::string& emitter, std::vector<const receipt::Receipt*> receipts, AppendDone done);

  // Appends receipts the ledger itself writes (step_unknown), with emitter
  // "ledger". Same contract as Append.
  absl::Status AppendAsLedger(std::vector<const receipt::Receipt*> receipts, AppendDone done);

  // The checkpoint of `size`, or the latest when size is 0. NOT_FOUND when
  // no checkpoint of that size was signed.
  absl::StatusOr<SignedCheckpoint> Checkpoint(uint64_t size) const;

  // Monitors' map cosignatures of checkpoint-time notes, kept beside them
  // (store.h's map_cosignatures; monitor/client/monitors.h verifies each
  // before it is kept, and again when it is read back): by the tree size of
  // the note and the SHA-256 of the monitor's vkey.
  absl::Status KeepMapCosignature(uint64_t size, const hash::Hash& monitor, std::string_view line);
  absl::StatusOr<std::vector<std::pair<hash::Hash, std::string>>> MapCosignatures(uint64_t size) const;
  // A TSA's time-stamp line of the time note of `size` (store.h's
  // time_stamps; tsa/client/stamper.h checks it before it is kept, and
  // again when it is read back); "" when none is kept.
  absl::Status KeepTimeStamp(uint64_t size, std::string_view line);
  absl::StatusOr<std::string> TimeStamp(uint64_t size) const;

  // A reader's view of the log (log_view.h) at the latest checkpoint: of the
  // empty tree, its checkpoint empty, while none is signed yet.
  LogView View() const;
  // The view at the checkpoint of `size` (0: of the empty tree). NOT_FOUND
  // when no checkpoint of that size was signed; DATA_LOSS when it does not
  // verify.
  absl::StatusOr<LogView> ViewAt(uint64_t size) const;

  // Inclusion proof of `seq` in the tree of `tree_size` (0: the latest
  // checkpoint). OUT_OF_RANGE when seq or tree_size is beyond the log.
  absl::StatusOr<Inclusion> ProveInclusion(uint64_t seq, uint64_t tree_size) const;

  // The seq of `team`'s receipt `receipt_id` (an id in the ledger's
  // namespace, receipt::kLedgerIdPrefix, names the ledger's own entry of
  // that team). NOT_FOUND when there is none: nothing of other teams'.
  absl::StatusOr<uint64_t> SeqOf(std::string_view team, std::string_view receipt_id) const;

  // The run-head map proof of (team, run_id) at the latest checkpoint.
  // INVALID_ARGUMENT for a malformed team or run_id; FAILED_PRECONDITION
  // without options.run_map; UNAVAILABLE until a checkpoint with the map is
  // signed (at Open it is, unless signing failed).
  absl::StatusOr<RunProof> ProveRun(std::string_view team, std::string_view run_id) const;
  // The team-head map proof of `team` at the latest checkpoint, the same way
  // (its key a team key).
  absl::StatusOr<RunProof> ProveTeam(std::string_view team) const;
  // The path of any key in the run-head map (run keys v2) or, with `teams`,
  // the team-head map, at the latest checkpoint (CONTRACT section 6a,
  // "Proofs of any key over HTTP"). The caller checks that its asker may
  // read every team: a path's end may be any team's run.
  absl::StatusOr<RunProof> ProveMapKey(bool teams, const runmap::Key& key) const;

  // Consistency proof from `from` to `to` (0: the latest checkpoint's
  // size, which the result states). OUT_OF_RANGE when `to` is beyond the
  // log or `from` beyond `to`.
  absl::StatusOr<Consistency> ProveConsistency(uint64_t from, uint64_t to) const;

  // Calls fn for from <= seq < to. OUT_OF_RANGE when `to` is beyond the log.
  absl::Status ScanEntries(uint64_t from, uint64_t to,
                           absl::FunctionRef<absl::Status(uint64_t, std::string_view)> fn) const;

  // Replication (Options::replicated): appends the leader's `leaves`, the
  // entries from the committed size on, through the sequencer
  // (Sequencer::Replay), and checks that the tree then has `size` entries
  // and `root`. DATA_LOSS when a leaf or the root differs: nothing of that
  // batch is kept. Returns the committed head.
  absl::StatusOr<sequencer::Head> Replay(std::vector<std::string> leaves, uint64_t size, const hash::Hash& root);

  // Replication: takes the leader's checkpoint of the committed size as
  // this log's latest, as SignCheckpoint would have signed it. The run and
  // team maps are brought to that size, and the notes this log's key signs
  // for that tree, those maps and the leader's time MUST be the leader's
  // notes byte for byte (Ed25519 signatures are deterministic): DATA_LOSS,
  // and nothing stored, when they differ; FAILED_PRECONDITION when the
  // committed size is not the checkpoint's.
  absl::Status AdoptCheckpoint(const std::string& note, const std::string& time_note);

  // Signs a checkpoint of the committed log now if it grew since the last.
  // First calls the before-sign hook (SetBeforeSign) with the time the
  // checkpoint-time note will state. That time is never before the
  // logged_at_us of an entry the checkpoint covers: when entries were
  // logged after the hook's time, the hook is called again with the newest
  // one's, and the checkpoint is signed at that time only if nothing fell
  // due in between (else the head is taken again with what was declared).
  absl::Status SignCheckpoint();

  // `fn(now_us)` is called before each checkpoint is signed, with the time
  // its time note will state, and MUST return only once everything the
  // ledger owes by then is in the committed log: the sweeper declares every
  // step due by `now_us`, so no signed time ever follows an undeclared
  // deadline. It returns how many entries it appended for that (0: none
  // were owed). nullptr clears it; clearing waits for a call under way, so
  // the owner of `fn` MUST clear it before it goes away.
  void SetBeforeSign(std::function<int(int64_t now_us)> fn);

  struct BackupInfo {
    uint64_t tree_size = 0;
    std::string checkpoint;  // the backup's latest signed checkpoint
  };
  // Copies the store, consistently and while serving, to `dir`/db, where
  // `dir` MUST NOT exist or MUST be an empty directory, and
  // `dir`/latest-checkpoint (kGuardFile) the backup's latest checkpoint.
  // ledgerd --restore-from=`dir` copies both into an empty data directory,
  // and Open continues from there. The signing key is not copied: keep it
  // apart.
  absl::StatusOr<BackupInfo> Backup(const std::string& dir) const;

  // Signs `text` (note text: lines ending in "\n") with the ledger's key,
  // for a statement about the tree of `size` (a pack's manifest):
  // FAILED_PRECONDITION when the key signing now is not the key of that
  // size (the log rotated past it).
  absl::StatusOr<std::string> SignNoteAt(uint64_t size, std::string_view text) const;

  // Key rotation (CONTRACT section 5d).
  struct Rotation {
    uint64_t seq = 0;
    std::string old_key, new_key, note;
  };
  struct RotateOptions {
    // Checkpoints of sizes up to seq + transition_sizes carry the old key's
    // signature line after the new key's, while this process runs (a
    // restart drops the old key).
    uint64_t transition_sizes = 0;
    // How long appends under way may take to finish before the rotation
    // gives up (UNAVAILABLE, nothing changed).
    std::chrono::milliseconds timeout{10000};
  };
  // Moves the log to `next`'s key: new appends wait while the ones under
  // way finish, the key_rotation entry is appended at the committed size s
  // with the statement both keys signed, and from then on checkpoints of
  // sizes > s are signed by `next`. FAILED_PRECONDITION on a replicated
  // log, for a key of another name or the current key; errors of the
  // append as Append's, and then nothing changed.
  absl::StatusOr<Rotation> RotateKey(note::Signer next, RotateOptions options);
  // The log's rotations, ascending seq.
  std::vector<Rotation> Rotations() const;
  // The log's keys by size: the first key, and each rotation followed.
  note::KeySet Keys() const;

  // Erasure of one entry's body (CONTRACT section 8). The caller (the
  // service) checked that both identities are admins.
  struct Erasure {
    uint64_t seq = 0;
    std::string reason;
    std::string requested_by, approved_by;
  };
  struct Erased {
    uint64_t seq = 0;  // the erased entry
    uint64_t by = 0;   // its redaction entry
  };
  // Appends the redaction entry of `erasure.seq`, signs a checkpoint that
  // holds it, then replaces the entry's leaf by its redacted line, clears
  // what the projections took from it (re-derived over its run) and purges
  // the store's files of both (Store::Purge). INVALID_ARGUMENT for a bad
  // reason or one identity twice; OUT_OF_RANGE beyond the committed log;
  // FAILED_PRECONDITION on a replicated log or for an entry the ledger
  // wrote; ALREADY_EXISTS for an entry erased already (naming its
  // redaction). A failure after the redaction entry is committed leaves the
  // body, which the next Erase of it or the next Open removes.
  absl::StatusOr<Erased> Erase(const Erasure& erasure);

  // Retention (CONTRACT section 9; retention.cc): a pass of `policy` at
  // the log's clock. Each rule's line is the size of the latest checkpoint
  // signed at or before its cutoff, never below its line at the pass
  // before. When a line moved, appends the pass's `retention` entries,
  // signs a checkpoint that holds them, then deletes the pruned entries'
  // rows (a chunk at a time, appends held meanwhile) and compacts the
  // store. FAILED_PRECONDITION on a replicated log. A failure after the
  // entries are committed leaves rows that the next Prune or Open deletes.
  struct Pruned {
    uint64_t pass = 0;                          // the pass appended; 0 when no line moved
    std::vector<receipt::RetentionRule> rules;  // the lines now
    uint64_t pruned = 0;                        // entries whose rows this call deleted
  };
  absl::StatusOr<Pruned> Prune(const retention::Policy& policy);

  sequencer::Head head() const;
  // Waits until the log holds more than `size` entries, or `timeout`.
  sequencer::Head WaitForMore(uint64_t size, std::chrono::milliseconds timeout) const;
  // The latest checkpoint's tree size, and when this process signed it (or
  // found it, at Open), in microseconds since the Unix epoch; {0, 0} when
  // there is none yet.
  std::pair<uint64_t, int64_t> LatestCheckpointTime() const;
  // The sequencer's queue and commit figures.
  size_t queued() const { return sequencer_ ? sequencer_->queued() : 0; }
  const sequencer::Sequencer::Stats* sequencer_stats() const { return sequencer_ ? &sequencer_->stats() : nullptr; }
  // Each checkpoint the interval's signer made (maps, signature, the
  // replicated log's copy, the store's), in microseconds.
  const stats::Histogram& checkpoint_us() const { return checkpoint_us_; }
  const std::string& origin() const { return options_.origin; }
  // The key signing now, and the key of the tree of `size` (the current
  // key for a size the log has not reached).
  std::string verifier_key() const;
  std::string VerifierKeyAt(uint64_t size) const;
  // How many entries the projections covered when Open found them (Open
  // caught them up to the whole log).
  uint64_t projected_at_open() const { return projected_; }
  // Receipt index rows of format 1 that Open rewrote (MigrateLegacyReceipts).
  uint64_t migrated_receipts() const { return migrated_receipts_; }
  // Run rows of format 1 that Open rewrote (MigrateRunHeads).
  uint64_t migrated_run_heads() const { return migrated_run_heads_; }
  // Team rows Open wrote for a store of a version without them
  // (FillTeamHeads).
  uint64_t filled_team_heads() const { return filled_team_heads_; }
  // What Open did to the projections' format (UpgradeProjections).
  const ProjectionUpgrade& projection_upgrade() const { return projection_upgrade_; }
  // OK, or the DATA_LOSS found on Open.
  const absl::Status& integrity() const { return integrity_; }
  // With options.accept_rollback: what Open accepted ("" if nothing), and
  // the file where the refused checkpoint was kept.
  const std::string& rollback_accepted() const { return rollback_; }

 private:
  // The log's own tests read its rows (log_testing.h); readers take a View.
  friend const store::Store& TestingStoreOf(const Log& log);
  Log(Options options, note::Signer signer, std::unique_ptr<store::Store> store);
  absl::Status CheckIntegrity(const store::State& state);
  absl::Status CheckGuard(const store::State& state);
  absl::Status WriteGuard(const std::string& note) const;
  // The stored time note of `size` and its time; NOT_FOUND when none,
  // DATA_LOSS when it does not verify or names another checkpoint.
  struct SignedTime {
    std::string note;
    int64_t time_us = 0;
    std::optional<hash::Hash> runs;
    std::optional<hash::Hash> teams;
    int version = 0;
  };
  absl::StatusOr<SignedTime> ReadCheckpointTime(uint64_t size) const;
  // The stored checkpoint of `size` with its time note, as Checkpoint.
  absl::StatusOr<SignedCheckpoint> StoredCheckpoint(uint64_t size) const;
  absl::StatusOr<SignedTime> SignCheckpointTime(uint64_t size, const hash::Hash& root, std::optional<hash::Hash> runs,
                                                std::optional<hash::Hash> teams, int64_t now);
  // ProveRun and ProveTeam: `key` in `map` at the latest checkpoint.
  absl::StatusOr<RunProof> ProveKey(const runmap::Key& key, const storedmap::StoredMap& map,
                                    std::string_view map_name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(map_mu_);
  void RunCheckpointer();
  // SignCheckpoint, or with `adopt` AdoptCheckpoint: the leader's time, its
  // notes compared instead of signed anew.
  struct Adopted {
    uint64_t size = 0;
    int64_t time_us = 0;
    std::string note, time_note;
  };
  absl::Status Sign(const Adopted* adopt);
  // Whether this log may append and sign now (Options::replicated).
  absl::Status Writable() const;
  absl::StatusOr<uint64_t> ResolveSize(uint64_t tree_size) const;
  absl::Status AppendAs(const std::string& emitter, receipt::Author author,
                        std::vector<const receipt::Receipt*> receipts, AppendDone done);
  // AppendAs without the rotation's gate.
  absl::Status Submit(const std::string& emitter, receipt::Author author, std::vector<const receipt::Receipt*> receipts,
                      AppendDone done);
  // Erasure (erasure.cc): the body of `seq`, redacted by `redaction` of seq
  // `by`, replaced and purged; and, at Open, every redaction whose body is
  // still stored.
  absl::Status FinishErasure(uint64_t seq, uint64_t by, const receipt::Receipt& redaction);
  absl::Status FinishErasures();
  // Closes the rotation's gate once no one else holds it and the appends
  // under way are done (erasure.cc); OpenGate lets appends through again.
  void CloseGate();
  void OpenGate();
  sync::Mutex erase_mu_;  // one erasure or retention pass at a time
  // The size of the latest checkpoint whose time note is at or before
  // `cutoff_us` (0 when none).
  absl::StatusOr<uint64_t> LineAt(int64_t cutoff_us) const;
  // Deletes the rows the latest pass prunes, if its deletions did not
  // finish; returns how many entries it pruned.
  absl::StatusOr<uint64_t> FinishPass();
  absl::StatusOr<uint64_t> PruneChunk(const std::vector<receipt::RetentionRule>& rules, uint64_t from, uint64_t to,
                                      std::set<std::pair<std::string, std::string>>* whole_runs);
  // Reads the rotations (keys.cc) and checks `signer` against them.
  absl::Status LoadKeys();
  // The text of `note` about the tree of `size` when the key of that size
  // signed it; PERMISSION_DENIED naming the size and the key otherwise.
  absl::StatusOr<std::string> OpenNote(std::string_view note, uint64_t size) const;
  // The signed note of `text` about the tree of `size`: the current key's
  // line, and the old key's in a transition.
  absl::StatusOr<std::string> SignFor(uint64_t size, std::string_view text) const;

  const Options options_;
  // The current key, the keys by size, the rotations; the old key while
  // a transition lasts (sizes up to transition_until_).
  mutable sync::Mutex keys_mu_;
  note::Signer signer_ ABSL_GUARDED_BY(keys_mu_);
  note::KeySet keys_ ABSL_GUARDED_BY(keys_mu_);
  std::vector<Rotation> rotations_ ABSL_GUARDED_BY(keys_mu_);
  std::optional<note::Signer> old_signer_ ABSL_GUARDED_BY(keys_mu_);
  uint64_t transition_until_ ABSL_GUARDED_BY(keys_mu_) = 0;
  // The rotation's gate: while closed, appends wait; in_flight_ counts the
  // appends submitted and not yet done.
  sync::Mutex gate_mu_;
  sync::CondVar gate_cv_;
  bool gate_closed_ ABSL_GUARDED_BY(gate_mu_) = false;
  uint64_t in_flight_ ABSL_GUARDED_BY(gate_mu_) = 0;
  std::unique_ptr<store::Store> store_;
  absl::Status integrity_;
  uint64_t projected_ = 0;  // entries the projections covered at open
  uint64_t migrated_receipts_ = 0;
  uint64_t migrated_run_heads_ = 0;
  uint64_t filled_team_heads_ = 0;
  ProjectionUpgrade projection_upgrade_;
  std::string rollback_;
  bool stopped_ = false;  // set by the destructor once the sequencer is gone
  std::unique_ptr<sequencer::Sequencer> sequencer_;

  mutable sync::Mutex mu_;
  sync::CondVar cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  SignedCheckpoint latest_ ABSL_GUARDED_BY(mu_);
  int64_t latest_at_us_ ABSL_GUARDED_BY(mu_) = 0;
  bool has_latest_ ABSL_GUARDED_BY(mu_) = false;
  stats::Histogram checkpoint_us_{stats::Histogram::Decades(1e7)};
  sync::Mutex sign_mu_;  // one signer at a time
  // The run-head map as of map_size_ entries: the latest checkpoint's size
  // once it is signed. Kept in the store (null without Options::run_map).
  // Lock order: sign_mu_, map_mu_, mu_.
  mutable sync::Mutex map_mu_;
  std::unique_ptr<storedmap::StoredMap> map_ ABSL_GUARDED_BY(map_mu_);
  uint64_t map_size_ ABSL_GUARDED_BY(map_mu_) = 0;
  std::vector<sequencer::RunChange> changed_runs_ ABSL_GUARDED_BY(map_mu_);
  // The team-head map, the same way.
  std::unique_ptr<storedmap::StoredMap> team_map_ ABSL_GUARDED_BY(map_mu_);
  // Heads taken from the sequencer that a failed write did not store yet.
  std::vector<runmap::Leaf> unapplied_runs_ ABSL_GUARDED_BY(map_mu_);
  std::vector<runmap::Leaf> unapplied_teams_ ABSL_GUARDED_BY(map_mu_);
  std::vector<sequencer::RunChange> changed_teams_ ABSL_GUARDED_BY(map_mu_);
  sync::Mutex before_sign_mu_;
  std::function<int(int64_t)> before_sign_ ABSL_GUARDED_BY(before_sign_mu_);
  // The committed head; the runs and teams it changed since the last take
  // are added to changed_runs_ and changed_teams_.
  sequencer::Head TakeHead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(map_mu_);
  std::thread checkpointer_;
};

// Rewrites every receipt index row of format 1 (keyed by the bare
// receipt_id) into format 2 (store.h: keyed by space, team and id, the space
// taken from the entry's emitter), in atomic batches: a crash midway leaves
// rows of both formats, and the next call finishes. Returns how many rows it
// rewrote. DATA_LOSS when a row does not point at its receipt's entry.
// Nothing may append meanwhile.
absl::StatusOr<uint64_t> MigrateLegacyReceipts(store::Store& store);

// Brings the projections' records to `projector`'s format (Projector::Format
// and Upgrade), and records the format in the batch of the upgrade's last
// writes: a crash before it leaves the old format recorded, and the next
// call starts again (rows derived from the log are stored a chunk at a
// time before it, and written again then). FAILED_PRECONDITION when the
// stored format is newer than the projector's, or cannot be upgraded.
// Nothing may append meanwhile.
absl::StatusOr<ProjectionUpgrade> UpgradeProjections(store::Store& store, projection::Projector& projector);

// Applies entries [from, to) of `store`'s log to its projections, in
// batches, and advances the projected-size marker.
absl::Status ReplayProjections(store::Store& store, projection::Projector& projector, uint64_t from, uint64_t to,
                               const std::function<void(uint64_t done, uint64_t total)>& progress);

// Drops the projections of the log in `data_dir` and replays every entry
// through `projector`, in batches; the result is what live appends would
// have written, byte for byte. The server MUST be stopped (the store's lock
// enforces it). `progress`, if set, is called with the entries replayed.
absl::Status RebuildProjections(const std::string& data_dir, projection::Projector& projector,
                                const std::function<void(uint64_t done, uint64_t total)>& progress);

}  // namespace ledger::log

#endif  // LEDGER_STORAGE_LOG_LOG_H_
