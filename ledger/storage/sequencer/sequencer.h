// The single writer of the log. Receipts from any number of callers queue
// here, by emitter; one thread takes what is queued (up to a batch limit,
// round-robin by emitter, a large submission in slices), assigns
// seqs, builds the leaves, the hash chain, the run chain and the new Merkle
// nodes into one RocksDB batch (group commit); a second thread commits it
// with sync while the first already builds the next batch on top of it.
// Only after a batch is committed are its callers told their seqs.
//
// With Options::replicate the commit is two stages, each a thread taking
// batches in order: the replicated log's commit, then the store's. Batch
// N+1's replicated commit runs while batch N is written to the store; N+1
// reaches the store only after N did and after its own replicated commit,
// so the store always holds a prefix of what was replicated.
//
// Contract: an outcome with OK status is never reported before its entry is
// durable, and the committed head (committed()) never runs ahead of the
// store. If a commit fails, nothing of that batch is kept in memory, every
// new receipt in it fails with UNAVAILABLE (a retry by receipt_id is always
// safe: it never appends twice), and the batch built on top of it is
// discarded and rebuilt.
//
// Thread-safe: Submit and committed() may be called from any thread.
#ifndef LEDGER_STORAGE_SEQUENCER_SEQUENCER_H_
#define LEDGER_STORAGE_SEQUENCER_SEQUENCER_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/projection/projection.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/runmap/runmap.h"
#include "ledger/storage/store/types.h"
#include "util/stats/stats.h"
#include "util/sync/mutex.h"

namespace ledger::sequencer {

// Microseconds since the Unix epoch.
using Clock = std::function<int64_t()>;
int64_t SystemClockMicros();

// A validated receipt ready to be sequenced, with what the caller's thread
// can prepare so the single writer does less.
struct Submission {
  // Valid (receipt::Canonicalize accepted it). Not owned: it MUST stay alive
  // until the Done of its Submit is called, so that neither copying nor
  // freeing it costs the single writer anything.
  const receipt::Receipt* receipt = nullptr;
  std::string canonical;  // receipt::Canonicalize's output
  hash::Hash digest{};    // SHA-256 of canonical: compared on retries
  std::string emitter;
  // The idempotency key's stored form (store::EncodeReceiptKey): the team's
  // ids, or the ledger's own when emitter is receipt::kLedgerEmitter.
  std::string id_key;
  // Set only by Sequencer::Replay: the leaf the leader appended for this
  // receipt, and the time it states. The writer builds the leaf itself and
  // MUST arrive at these bytes.
  const std::string* replayed_leaf = nullptr;
  int64_t replayed_at_us = 0;

  store::ReceiptKey key() const;

  // Points at `r` and hashes `canonical`.
  static Submission Of(const receipt::Receipt& r, std::string canonical, std::string emitter);
};

// A run's head as of a commit, keyed for the run-head map.
struct RunChange {
  runmap::Key key{};
  runmap::Head head;
};

struct Outcome {
  absl::Status status;
  uint64_t seq = 0;
  hash::Hash leaf_hash{};
  bool duplicate = false;
};

// Called once per Submit, from the writer thread, with one outcome per
// submission in order. It MUST NOT block for long: it delays every append.
using Done = std::function<void(std::vector<Outcome>)>;

// A batch as the replicated log keeps it (ledger/storage/replication): the leaves
// it appends, in seq order from first_seq, and the tree after it.
struct ReplicatedBatch {
  uint64_t first_seq = 0;
  const std::vector<std::string>* leaves = nullptr;
  uint64_t size = 0;
  hash::Hash root{};
};

// Makes a batch durable elsewhere before it is written to the store: only
// an OK return lets the batch be committed and its receipts acknowledged.
using Replicate = std::function<absl::Status(const ReplicatedBatch&)>;

// The log as last committed: every field describes the same tree.
struct Head {
  uint64_t size = 0;
  hash::Hash root{};
  hash::Hash chain_head{};
  int64_t last_logged_at_us = 0;  // of entry size-1 (0 for an empty log)
};

class Sequencer {
 public:
  struct Options {
    Clock clock = SystemClockMicros;
    size_t max_queued = 100'000;  // receipts waiting; beyond: RESOURCE_EXHAUSTED
    size_t max_batch = 8'192;     // receipts per RocksDB batch
    // Fairness: the writer takes queued receipts from the emitters in turn,
    // at most this many of one emitter's at each turn, so that an emitter
    // with a deep queue delays another's receipt by at most one batch. A
    // submission of more receipts is split across turns (and batches); its
    // Done still comes once, with every outcome in order.
    size_t emitter_slice = 256;
    // Applied to every new entry in the batch that appends it; null: no
    // projections. MUST outlive the sequencer.
    projection::Projector* projector = nullptr;
    // Keep the heads of the runs each commit changes for TakeCommitted (the
    // run-head map's input).
    bool track_runs = false;
    // Append leaves of version 2, each with its team's previous entry
    // (team_prev). Off: version 1 leaves, as ledgers wrote before team
    // chains. The teams' heads are kept in the store either way (and, with
    // track_runs, for TakeCommitted).
    bool team_chain = true;
    // Called with each batch of new entries (never with a replayed one), in
    // seq order from one thread of its own, before the batch is written to
    // the store; the next batch's call may run while this one is written.
    // An error fails the batch as a failed store write does: nothing of it
    // is acknowledged or kept, and the batch built on it is built again (a
    // batch built on one whose store write failed may have been replicated
    // already: it is built again all the same, from the durable head).
    Replicate replicate;
  };

  // Loads the head from `store` (which MUST outlive the sequencer) and starts
  // the writer thread. DATA_LOSS when stored nodes are missing.
  static absl::StatusOr<std::unique_ptr<Sequencer>> Start(store::Store* store, Options options);

  // Commits everything already queued, then stops the writer.
  ~Sequencer();

  // Queues `items`; `done` is called exactly once unless an error is
  // returned: RESOURCE_EXHAUSTED when the queue is full, UNAVAILABLE after
  // shutdown began. Never blocks on I/O.
  absl::Status Submit(std::vector<Submission> items, Done done);

  // Appends `leaves`, entries another writer appended (the replicated log's
  // leader), through the same steps as Submit: the seqs, times and emitters
  // are the leaves', the chains, tree nodes, run and team heads and
  // projections are built here. The first leaf's seq MUST be the committed
  // size, and every leaf built MUST equal the given one byte for byte;
  // otherwise nothing of the batch is kept and `done` gets DATA_LOSS naming
  // the first leaf that differs. `done` is called once, with the committed
  // head after the batch; errors as Submit's, and INVALID_ARGUMENT for a
  // leaf that does not parse.
  using ReplayDone = std::function<void(absl::Status, Head)>;
  absl::Status Replay(std::vector<std::string> leaves, ReplayDone done);

  Head committed() const;

  // The committed head and, with Options::track_runs, the head of every
  // run changed since the last call, as of that committed head (one per
  // run, in no order): atomically, so a run-head map updated with `changed`
  // stands at exactly the returned size.
  // `changed_teams`, if set, receives the teams' heads the same way (keyed
  // by runmap::TeamKeyOf).
  Head TakeCommitted(std::vector<RunChange>* changed, std::vector<RunChange>* changed_teams = nullptr);

  // Commits everything already queued, then stops the writer; Submit then
  // fails with UNAVAILABLE. committed() and TakeCommitted keep working.
  void Stop();

  // Receipts queued and not yet taken into a batch.
  size_t queued() const;

  // Where a batch's time goes, per batch (times in microseconds).
  struct Stats {
    stats::Histogram batch_entries{stats::Histogram::Decades(10'000)};  // new entries per commit
    stats::Histogram build_us{stats::Histogram::Decades(1e7)};          // the writer building one batch
    stats::Histogram replicate_us{stats::Histogram::Decades(1e7)};      // Options::replicate, per batch
    stats::Histogram commit_us{stats::Histogram::Decades(1e7)};         // one synced RocksDB write
    // The first commit stage (the replicator with Options::replicate, else
    // the committer) waiting for the writer's next batch (with work queued
    // or not).
    stats::Histogram idle_us{stats::Histogram::Decades(1e7)};
  };
  const Stats& stats() const { return stats_; }

  // Waits until the committed log holds more than `size` entries or
  // `timeout` passes; returns the committed head either way.
  Head WaitCommitted(uint64_t size, std::chrono::milliseconds timeout) const;

 private:
  // A submission, or a slice of one (Options::emitter_slice).
  struct Request {
    std::string emitter;
    std::vector<Submission> items;
    Done done;
    bool replay = false;  // from Replay: never in a batch with Submit's
  };
  struct Prepared;
  struct Placement;

  Sequencer(store::Store* store, Options options, merkle::Frontier frontier, store::State state);
  // The next batch's requests: from the emitters in turn, one request each
  // per turn, up to Options::max_batch receipts (at least one request).
  std::vector<Request> TakeQueued() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Puts `requests` back at the front of their emitters' queues, in order.
  void Requeue(std::vector<Request> requests) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run();
  void RunCommitter();

  // Builds the next batch on top of `base` (the batch being committed, or
  // null) and of the writer's head, which it advances.
  std::unique_ptr<Prepared> Prepare(std::vector<Request> requests, const Prepared* base);
  // Prepare's steps, in order. An empty batch, with a projection overlay
  // on `base`'s when there is a projector.
  std::unique_ptr<Prepared> NewPrepared(std::vector<Request> requests, const Prepared* base);
  // The first pass: each receipt is either answered at once or placed (its
  // seq, its time, its run's previous entry).
  void Place(Prepared& p, const Prepared* base, Placement& placement);
  // Whether `s`'s receipt id is already taken (in this batch, `base` or the
  // store): `out` is then its outcome (the first one's for a retry,
  // ALREADY_EXISTS for other content), or UNAVAILABLE when the index
  // cannot be read.
  bool Answered(const Submission& s, const Prepared* base, Prepared& p, Placement& placement, Outcome& out);
  // The head of `s`'s run as of `base`, else the store: false, with `out`
  // UNAVAILABLE, when the store cannot be read.
  bool StoredRunHead(const Submission& s, const std::string& run_key, const Prepared* base,
                     std::optional<store::RunHead>* prev, Outcome& out);
  // The same for `s`'s team.
  bool StoredTeamHead(const Submission& s, const Prepared* base, std::optional<store::RunHead>* prev, Outcome& out);
  // The second pass: leaves, receipt index rows and tree nodes into the
  // batch, each placed receipt's (and retry's) outcome.
  void HashIntoChain(Prepared& p, Placement& placement);
  // The runs' heads, the state and the projection records into the batch.
  void PutHeads(Prepared& p, const Placement& placement);
  // A projection record could not be read, or a replayed leaf differs:
  // nothing of the batch is written, its receipts fail with `error`, and
  // the head is what it was before it.
  void Abandon(Prepared& p, const Prepared* base, const absl::Status& error);
  // Waits for `p`'s commit, then publishes it or fails it. Returns whether
  // it was committed. A batch aborted because one before it failed is
  // neither: its requests are queued again, first.
  bool Finish(Prepared& p);
  // Finishes the oldest of `in_flight` and, if it failed, every batch after
  // it (aborted by the committers), newest first.
  void FinishOldest(std::deque<std::unique_ptr<Prepared>>& in_flight);
  // Hands `p` to the first commit stage.
  void HandOver(Prepared* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The end of `p`'s commit with `result`; a failure aborts every batch
  // handed over after it.
  void Settle(Prepared* p, absl::Status result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunReplicator();

  store::Store* const store_;
  const Options options_;

  Stats stats_;
  mutable sync::Mutex mu_;
  sync::CondVar cv_;
  mutable sync::CondVar committed_cv_;  // head_ grew
  // Each emitter's queued requests, and the emitters with any, in turn.
  absl::flat_hash_map<std::string, std::deque<Request>> lanes_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> turns_ ABSL_GUARDED_BY(mu_);
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Head head_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<runmap::Key, runmap::Head> changed_runs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<runmap::Key, runmap::Head> changed_teams_ ABSL_GUARDED_BY(mu_);

  // The hand-off between the writer and the commit stages: at most two
  // batches, the second built on the first. cv_ wakes the writer (new
  // requests, a finished commit), replicate_cv_ the replicator, commit_cv_
  // the committer.
  sync::CondVar replicate_cv_;
  sync::CondVar commit_cv_;
  std::deque<Prepared*> handed_over_ ABSL_GUARDED_BY(mu_);  // not settled yet, oldest first
  std::deque<Prepared*> to_replicate_ ABSL_GUARDED_BY(mu_);
  std::deque<Prepared*> to_commit_ ABSL_GUARDED_BY(mu_);
  bool committer_stop_ ABSL_GUARDED_BY(mu_) = false;

  // Owned by the writer thread: the head as of the last batch built
  // (tentative) and as of the last batch committed (durable).
  merkle::Frontier frontier_;
  store::State state_;
  merkle::Frontier durable_frontier_;
  store::State durable_state_;

  std::thread replicator_;  // with Options::replicate
  std::thread committer_;
  std::thread writer_;
};

}  // namespace ledger::sequencer

#endif  // LEDGER_STORAGE_SEQUENCER_SEQUENCER_H_
