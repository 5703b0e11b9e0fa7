// A replicated shard's batch log and fence, in PostgreSQL: the one record
// every node of the shard agrees on. The database is a PostgreSQL with a
// synchronous standby; each node keeps its own RocksDB store, rebuilt from
// these batches (Trillian's commit-log design: the fence decides, local
// storage is disposable).
//
// Tables (created when missing; every row is of one shard, its origin):
//   ledger_shard(origin PRIMARY KEY, epoch, holder, address, lease_expires,
//                size, root)
//       The fence and the lease. `epoch` grows by one at each take-over;
//       `holder` (a node id) leads epoch `epoch` until `lease_expires`, and
//       `address` is where it takes appends. `size` and `root` are the tree
//       after the last committed batch.
//   ledger_batches(origin, first_seq, epoch, size, root, format, leaves)
//       One row per committed batch: the entries [first_seq, size), and the
//       tree's root after them. `leaves` (format 1) is the leaves' bytes,
//       each as a 4-byte big-endian length then the leaf (CONTRACT §1): the
//       whole of what a node needs to rebuild everything else.
//   ledger_checkpoints(origin, size, epoch, note, time_note)
//       Every checkpoint a leader signed, stored before it is served.
//   ledger_nodes(origin, node, address, applied, reported_at)
//       What each node has applied, for lag and for trimming.
//   ledger_cosignatures(origin, witness, size, line)
//       What each witness last cosigned, as the node that submitted to it
//       recorded it: `witness` is the hex SHA-256 of its verifier key,
//       `line` its cosignature line over the checkpoint of `size`. Sizes
//       only grow. A node that takes the lead resumes each witness from
//       there (C2SP tlog-witness: a submission names the size the witness
//       last cosigned, or gets a 409).
//
// A batch commits in one statement that moves the fence only if the epoch
// is the committer's and the fence's size is the batch's first seq; it
// counts as committed only when the statement returns its row with no
// warning. PostgreSQL answers a commit whose wait for the synchronous
// standby was cancelled with a WARNING ("... already committed locally,
// but might not have been replicated to the standby") and success: that,
// a lost connection and a timeout are failures here.
//
// Not thread-safe: one thread per ShardLog (each holds its connection).
#ifndef LEDGER_STORAGE_REPLICATION_SHARD_LOG_H_
#define LEDGER_STORAGE_REPLICATION_SHARD_LOG_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"
#include "ledger/storage/replication/pg.h"
#include "ledger/storage/sequencer/sequencer.h"

namespace ledger::replication {

inline constexpr int kBatchFormat = 1;

struct Fence {
  int64_t epoch = 0;
  std::string holder;   // "" before any node led
  std::string address;  // the holder's
  bool lease_live = false;
  int64_t lease_left_ms = 0;  // negative once expired
  uint64_t size = 0;
  hash::Hash root{};
};

struct StoredBatch {
  uint64_t first_seq = 0;
  int64_t epoch = 0;
  uint64_t size = 0;
  hash::Hash root{};
  std::vector<std::string> leaves;
};

struct StoredCheckpoint {
  uint64_t size = 0;
  int64_t epoch = 0;
  std::string note, time_note;
};

struct StoredCosignature {
  std::string witness;  // hex SHA-256 of the witness's verifier key
  uint64_t size = 0;    // of the checkpoint it covers
  std::string line;     // the cosignature line, with its "\n"
};

struct NodeReport {
  std::string node, address;
  uint64_t applied = 0;
  double seconds_ago = 0;  // since it last reported
};

// The batches' `leaves` column (format 1) and back.
std::string EncodeLeaves(const std::vector<std::string>& leaves);
absl::StatusOr<std::vector<std::string>> DecodeLeaves(std::string_view bytes);

class ShardLog {
 public:
  struct Options {
    std::string uri;                          // libpq URI, without a password
    std::string password;                     // from a file or the environment
    std::string origin;                       // the shard's log origin: its rows
    std::chrono::milliseconds timeout{5000};  // per statement, commits included
  };
  // Connects and creates the tables when missing.
  static absl::StatusOr<std::unique_ptr<ShardLog>> Open(Options options);

  // The shard's fence, written first with epoch 0, no holder and the given
  // tree when the shard has no row yet (its first node's store).
  absl::StatusOr<Fence> Init(uint64_t size, const hash::Hash& root);
  absl::StatusOr<Fence> Read();

  // Takes the lease for `node` as epoch + 1 when it has expired or no node
  // held it: the fence as taken, or nullopt when another node's lease is
  // live. `address` is where this node takes appends.
  absl::StatusOr<std::optional<Fence>> TakeOver(const std::string& node, const std::string& address,
                                                std::chrono::milliseconds lease);
  // Extends the lease of `epoch`; FAILED_PRECONDITION once another epoch
  // began (the node was deposed).
  absl::Status Renew(int64_t epoch, const std::string& node, std::chrono::milliseconds lease);

  // Ends the lease of `epoch` now (a clean shutdown).
  absl::Status Release(int64_t epoch, const std::string& node);

  // Commits `batch` in `epoch` (see above). FAILED_PRECONDITION naming the
  // fence when the epoch or size is not the batch's; UNAVAILABLE or
  // DEADLINE_EXCEEDED when the outcome is not known to be a clean commit.
  absl::Status Commit(int64_t epoch, const sequencer::ReplicatedBatch& batch);

  // Batches from `from` (the first one's first_seq MUST be `from`: else the
  // tail was trimmed past it), up to about `max_bytes` of leaves.
  absl::StatusOr<std::vector<StoredBatch>> Batches(uint64_t from, size_t max_bytes);
  // The lowest first_seq kept, if any.
  absl::StatusOr<std::optional<uint64_t>> FirstKept();

  // Stores a checkpoint signed in `epoch`: FAILED_PRECONDITION when the
  // epoch is over or the fence is not at least that size.
  absl::Status PutCheckpoint(int64_t epoch, uint64_t size, const std::string& note, const std::string& time_note);
  // The checkpoints of size in (after, upto], by size.
  absl::StatusOr<std::vector<StoredCheckpoint>> Checkpoints(uint64_t after, uint64_t upto);

  // Records what a witness cosigned, unless a larger size is recorded for it.
  absl::Status PutCosignature(const StoredCosignature& c);
  // Every witness's recorded cosignature, by witness.
  absl::StatusOr<std::vector<StoredCosignature>> Cosignatures();

  absl::Status Report(const std::string& node, const std::string& address, uint64_t applied);
  absl::StatusOr<std::vector<NodeReport>> Nodes();

  // Deletes the batches every node that reported within `grace` has
  // applied, keeping those above the latest checkpoint; returns how many.
  absl::StatusOr<uint64_t> Trim(std::chrono::seconds grace);
  // The batches' rows and bytes on disk (pg_total_relation_size).
  struct TailSize {
    uint64_t batches = 0, bytes = 0;
  };
  absl::StatusOr<TailSize> Tail();

  // LISTEN for committed batches; WaitNotify waits for one.
  absl::Status Listen();
  absl::StatusOr<bool> WaitNotify(std::chrono::milliseconds timeout);

  // Reconnects when the connection was lost (and LISTENs again if it did).
  absl::Status EnsureConnected();

 private:
  ShardLog(Options options, std::unique_ptr<pg::Connection> conn)
      : options_(std::move(options)), conn_(std::move(conn)) {}
  absl::StatusOr<pg::Result> Exec(std::string_view sql, const std::vector<pg::Param>& params, bool binary = false);
  // Creates the tables that are missing, one node at a time.
  absl::Status CreateSchema();
  absl::StatusOr<Fence> FenceOf(const pg::Result& r);

  const Options options_;
  std::unique_ptr<pg::Connection> conn_;
  bool listening_ = false;
};

}  // namespace ledger::replication

#endif  // LEDGER_STORAGE_REPLICATION_SHARD_LOG_H_
