// One node of a replicated shard: the lease, the leader's commits, and the
// follower's tail, around a local log (ledger/storage/log) and the shard's batch log
// in PostgreSQL (shard_log.h).
//
// Exactly one node leads at a time: the holder of the lease of the current
// epoch. The leader's sequencer hands every batch to Replicate, which
// commits it behind the fence before the store write and before any
// receipt of it is acknowledged; a commit that fails or is not known to be
// clean makes the node step down at once and read the fence again. The
// leader's checkpoints are stored in the database before they are served.
//
// A follower applies the committed batches through its own sequencer
// (Log::Replay), up to the newest checkpoint the leader stored, which it
// takes as its own (Log::AdoptCheckpoint): its reads are of signed
// checkpoints only. A leaf or a root that differs stops the node, loudly.
// When the lease expires a follower takes over (epoch + 1), applies every
// committed batch, checks the fence's root, and leads.
//
// Thread-safe: the hooks are called from the log's threads, state() from any.
#ifndef LEDGER_STORAGE_REPLICATION_NODE_H_
#define LEDGER_STORAGE_REPLICATION_NODE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/replication/shard_log.h"
#include "ledger/storage/sequencer/sequencer.h"
#include "util/sync/mutex.h"

namespace ledger::replication {

enum class Role { kStarting, kFollower, kLeader, kFailed };
const char* RoleName(Role r);

class Node {
 public:
  struct Options {
    ShardLog::Options db;
    std::string node_id;
    std::string address;  // host:port where this node takes appends
    std::chrono::milliseconds lease{3000};
    std::chrono::milliseconds poll{200};
    // Batches every node that reported within this time has applied are
    // trimmed (below the newest checkpoint).
    std::chrono::seconds trim_grace{600};
    std::chrono::seconds trim_every{10};
    // Fault injection, for tests: runs as the node takes the lead, after it
    // leads and before it appends its leader_epoch entry.
    std::function<void()> before_epoch_entry;
  };
  // Connects twice (the commit path and the node's loop) and creates the
  // tables when missing. Nothing leads or follows until Start.
  static absl::StatusOr<std::unique_ptr<Node>> Create(Options options);
  // Stop, then destroys.
  ~Node();
  // Stops the node's loop: it applies, renews and takes over nothing more.
  // A leader still commits and signs what its log finishes (the log's last
  // checkpoint), until Release.
  void Stop();
  // Ends this node's lease, if it leads, so that a follower takes over at
  // once rather than when the lease expires (a clean shutdown).
  void Release();

  // For the log's options, before Log::Open: valid while the node lives.
  sequencer::Replicate ReplicateHook();
  log::Log::Options::Replicated LogHooks();

  // Checks `log` (which MUST outlive the node) against the fence, writing
  // the fence from it when the shard is new, then follows or leads.
  // FAILED_PRECONDITION when the local log is ahead of the fence or behind
  // the kept tail (restore a backup), DATA_LOSS when it is not the shard's.
  absl::Status Start(log::Log* log);

  struct State {
    Role role = Role::kStarting;
    int64_t epoch = 0;
    std::string leader;          // the leader's node id
    std::string leader_address;  // where appends go
    uint64_t applied = 0;        // this node's committed size
    uint64_t fence_size = 0;     // the shard's, as last read
    uint64_t renewals = 0, failovers = 0, step_downs = 0, commit_failures = 0;
    int64_t last_commit_us = 0;  // the last batch committed (leader) or applied (follower)
    std::string failure;         // with kFailed: why the node stopped
    uint64_t tail_batches = 0, tail_bytes = 0;
    int64_t takeover_ms = -1;       // the last take-over: lease won to leading
    bool open = false;              // leading, its leader_epoch entry committed
    uint64_t epoch_seq = 0;         // leading: the seq of its leader_epoch entry
    std::vector<NodeReport> nodes;  // the leader's: every node's last report
  };
  State state() const;
  const std::string& id() const { return options_.node_id; }
  // Prometheus text: role, epoch, applied, lag, renewals, failovers.
  std::string RenderMetrics() const;
  // Witnesses: true while this node leads an open epoch, when it alone
  // sends checkpoints to witnesses.
  bool Submits() const;
  // What each witness last cosigned, shared by the shard's nodes
  // (ShardLog::PutCosignature, ShardLog::Cosignatures), on a connection of
  // its own opened at the first call.
  absl::Status RecordCosignature(const StoredCosignature& c);
  absl::StatusOr<std::vector<StoredCosignature>> Cosignatures();

  // The error an append gets on a node that does not lead.
  absl::Status NotLeader() const;
  // The error an emitter's append gets while this node's epoch opens.
  absl::Status Opening(int64_t epoch) const;

 private:
  explicit Node(Options options) : options_(std::move(options)) {}
  void Run();
  // Follower: applies batches up to the newest checkpoint (or, `all`, the
  // whole committed log), adopting checkpoints on the way.
  absl::Status CatchUp(const Fence& fence, bool all);
  absl::Status Lead(const Fence& taken);
  // Appends the leader_epoch entry of the epoch just taken and waits for it.
  absl::Status AppendEpochEntry(const Fence& taken);
  void StepDown(int64_t epoch, const absl::Status& why);
  void Fail(const absl::Status& why);
  absl::StatusOr<ShardLog*> WitnessConnection() ABSL_EXCLUSIVE_LOCKS_REQUIRED(witness_mu_);
  bool Sleep(std::chrono::milliseconds d);

  const Options options_;
  std::unique_ptr<ShardLog> commits_;  // the committer's and signer's connection
  std::unique_ptr<ShardLog> loop_;     // the node loop's
  log::Log* log_ = nullptr;

  sync::Mutex commit_mu_;  // one statement on commits_ at a time
  sync::Mutex witness_mu_;
  std::unique_ptr<ShardLog> witness_ ABSL_GUARDED_BY(witness_mu_);  // the witnesses' connection
  mutable sync::Mutex mu_;
  sync::CondVar cv_;
  State state_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace ledger::replication

#endif  // LEDGER_STORAGE_REPLICATION_NODE_H_
