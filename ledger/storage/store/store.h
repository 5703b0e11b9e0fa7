// The log's durable state in RocksDB. RocksDB types stay below this header;
// the values its records decode to (State, RunHead, ...) are in types.h.
//
// Column families and their records (format version 1; DO NOT CHANGE the
// byte layouts, stored data depends on them):
//   default      "state"                  -> 0x01 | size u64 | head[32] |
//                                             last_logged_at_us i64
//                "retention"              -> 0x01 | below u64 |
//                                             finished_pass u64 (Pruning;
//                                             absent until the first
//                                             retention pass deletes)
//                "retention_replay"       -> the log replayed up to
//                                             Pruning::below, written with
//                                             it before any row goes
//                                             (ledger/format/replay's
//                                             state encoding): where an
//                                             audit of a pruned store
//                                             takes up the run and team
//                                             chains and the maps
//                "retention_policy/" | sha256[32]
//                                         -> the bytes of a policy whose
//                                             SHA-256 that is, written
//                                             before the retention pass
//                                             that applied it appends its
//                                             entries (a run pack across
//                                             the line carries them)
//   entries      seq u64                  -> leaf bytes, or the redacted
//                                             line of an erased entry
//                                             (CONTRACT section 8; written
//                                             over its leaf by an erasure);
//                                             no row for an entry a
//                                             retention pass pruned (below
//                                             Pruning::below; CONTRACT
//                                             section 9), which reads as
//                                             its pruned line
//   receipts     0x00 | space u8 | len(team) u8 | team | receipt_id
//                                         -> 0x01 | seq u64 | leaf_hash[32] |
//                                             receipt_sha256[32]
//                space: 0x01 an emitter's receipt, 0x02 one the ledger
//                wrote (emitter "ledger"). Receipt ids are unique per
//                (space, team): the idempotency key.
//   nodes        level u8 | group u64     -> hash[32] x k, 1 <= k <= 16: the
//                                             nodes group*16 .. group*16+k-1 of
//                                             that level, in index order
//   runs         len(team) u8 | team | run_id -> the run's head (RunHead):
//                format 2: 0x02 | count u64 | last seq u64 | leaf_hash[32]
//                (49 bytes); format 1: last seq u64 (8 bytes), written
//                before the ledger kept the run-head map; Log::Open rewrites
//                format-1 rows into format 2 (MigrateRunHeads) before it
//                appends
//   teams        team                     -> the team's head (RunHead, format
//                                             2 as in `runs`): its number of
//                                             entries and its last entry;
//                                             written with every append from
//                                             the version that keeps team
//                                             chains (Log::Open fills it from
//                                             the log when it is empty)
//   maps         rows of the run-head and team-head maps kept on disk;
//                their layout is ledger/storage/storedmap/storedmap.h's
//   checkpoints  tree size u64            -> signed checkpoint note
//   checkpoint_times tree size u64        -> signed checkpoint-time note of
//                                             that checkpoint (note.h); absent
//                                             for checkpoints signed before
//                                             the ledger signed times
//   map_cosignatures tree size u64 |      -> a monitor's map cosignature line
//                SHA-256(monitor vkey)       (CONTRACT section 5c) of that
//                                            checkpoint's time note, with its
//                                            newline; from the version that
//                                            asks monitors (a store of an
//                                            earlier one gets the column
//                                            family, empty, when opened)
//   run_seqs     len(team) u8 | team |   -> empty: the index of a run's
//                len(run_id) u8 | run_id |   entries, a row for each entry,
//                seq u64                     written with it, so that a run
//                                            is read in seq order without
//                                            walking its chain back; from
//                                            the version that keeps it (a
//                                            store of an earlier one gets
//                                            the column family, empty, when
//                                            opened, and indexes the entries
//                                            appended after: a run's older
//                                            entries are found by walking
//                                            back from its first indexed one)
//   time_stamps  tree size u64            -> a TSA's time-stamp line (CONTRACT
//                                            section 5e) of that checkpoint's
//                                            time note, with its newline; from
//                                            the version that asks a TSA (an
//                                            earlier store gets the column
//                                            family, empty, when opened)
//   p_steps, p_runs, p_index, p_changes   -> projection records; their
//                                             layouts are query/projector/
//                                             keys.h's, made of the parts
//                                             of ledger/format/projection/keys.h
//                                             (the memtable hints cut
//                                             prefixes by them)
// Projection records are derived from the log and are written without the
// WAL (after the log's records of the same batch, which are synced): after a
// crash they may lag the log, never lead it, and always stand at a batch
// boundary (all column families flush together); the log catches them up.
// Receipt index format 1 keyed a row by the bare receipt_id (ids were
// global). A receipt_id never starts with 0x00, so rows of both formats can
// be told apart; Log::Open rewrites format-1 rows into format 2 before it
// appends (MigrateLegacyReceipts), and appends only ever write format 2.
// All integers are big-endian, so keys sort numerically. Nodes are grouped
// sixteen to a record so that an append writes about one node record per
// sixteen leaves instead of two per leaf; a node is still one read.
//
// Thread-safe: concurrent reads and commits are allowed; the sequencer is
// the only committer of log records.
#ifndef LEDGER_STORAGE_STORE_STORE_H_
#define LEDGER_STORAGE_STORE_STORE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/projection/projection.h"
#include "ledger/storage/store/types.h"
#include "util/stats/stats.h"

namespace ledger::store {

// A set of writes that Commit applies atomically. Made by Store::NewBatch
// and valid only with that store.
class Batch final : public projection::Sink {
 public:
  ~Batch() override;
  Batch(Batch&&) noexcept;
  Batch& operator=(Batch&&) noexcept;

  void PutEntry(uint64_t seq, std::string_view leaf);
  // The row of the run index (`run_seqs`) for the entry `seq` of a run.
  void PutRunSeq(std::string_view team, std::string_view run_id, uint64_t seq);
  void PutReceipt(const ReceiptKey& key, const ReceiptRef& ref);
  // Removes the receipt index row stored under `stored_key` (for a
  // migration: a format-1 row's key is its bare receipt_id).
  void DeleteLegacyReceipt(std::string_view stored_key);
  // Nodes of one level MUST be put in index order (a node may be put again
  // at the same index); the record of its group is rewritten.
  void PutNode(int level, uint64_t index, const hash::Hash& h);
  // Always writes format 2.
  void PutRunHead(std::string_view team, std::string_view run_id, const RunHead& head);
  void PutTeamHead(std::string_view team, const RunHead& head);
  void PutState(const State& s);
  // Retention (CONTRACT section 9): a pruned entry's rows. The store reads
  // an entry below the committed Pruning::below without a row as its
  // pruned line, so PutPruning goes in the batch of the first deletions
  // (or one before them).
  void PutPruning(const Pruning& p);
  void PutPrunedReplay(std::string_view state);
  // The bytes of a retention policy, by their SHA-256.
  void PutRetentionPolicy(const hash::Hash& sha256, std::string_view text);
  void DeleteEntry(uint64_t seq);
  void DeleteRunSeq(std::string_view team, std::string_view run_id, uint64_t seq);
  void DeleteReceipt(const ReceiptKey& key);
  // Rows of the `maps` column family (ledger/storage/storedmap): written with the
  // log's records. DeleteMapRows removes those with from <= key < to.
  void PutMapRow(std::string_view key, std::string_view value);
  void DeleteMapRow(std::string_view key);
  void DeleteMapRows(std::string_view from, std::string_view to);
  void PutProjection(projection::Table t, std::string_view key, std::string_view value) override;
  void DeleteProjection(projection::Table t, std::string_view key) override;
  // Every put and delete an overlay holds.
  void PutProjections(const projection::OverlayTxn::Writes& writes);
  // Projection records written with the log's records (synced, with the
  // WAL): an erasure's, which no replay would write again.
  void PutProjectionsWithLog(const projection::OverlayTxn::Writes& writes);

 private:
  friend class Store;
  friend class Testing;  // testing.h
  struct Rep;
  explicit Batch(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

class Store {
 public:
  // Opens or creates the store in `dir`. UNAVAILABLE when the directory is
  // unusable or locked by another process. `faults`, if set, MUST outlive
  // the store. `memory_bytes` bounds what RocksDB holds in memory however
  // large the store grows: one cache of that size holds the data blocks,
  // the index and filter blocks (partitioned, so that only the parts in use
  // stay), and is charged for the memtables, which may take half of it.
  // INVALID_ARGUMENT below kMinMemoryBytes.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& dir, Faults* faults = nullptr,
                                                     uint64_t memory_bytes = kDefaultMemoryBytes);
  ~Store();

  // The duration of each sync of a file RocksDB wrote (WAL, flushes), in
  // microseconds.
  const stats::Histogram& sync_us() const;
  // Where RocksDB's memory goes, in bytes.
  Memory MemoryUse() const;

  // A new batch. With `base`, a batch not yet committed that this one
  // follows: node records rewritten by `base` are continued from its
  // values. `base` MUST stay alive until the last PutNode on the new batch.
  Batch NewBatch(const Batch* base = nullptr) const;

  // Applies the log's records of `batch` atomically and fsyncs them, then
  // its projection records (without the WAL). OK means the log's part is
  // durable; on error nothing of the batch is visible. Aborts the process if
  // the projection part fails after the log's part was written. Only reads
  // `batch`'s node records, so a batch based on it may be filled meanwhile.
  absl::Status Commit(Batch& batch);

  absl::StatusOr<State> ReadState() const;
  // The committed retention row; zeros when none.
  Pruning ReadPruning() const;
  // The replay state kept with it; NOT_FOUND when none.
  absl::StatusOr<std::string> PrunedReplay() const;
  // The bytes of the retention policy whose SHA-256 is `sha256`;
  // NOT_FOUND when no pass kept them (a pass of a ledger before format 9).
  absl::StatusOr<std::string> RetentionPolicy(const hash::Hash& sha256) const;
  // NOT_FOUND when absent; DATA_LOSS when a stored record is malformed. An
  // entry pruned (below Pruning::below, without a row) reads as its pruned
  // line (ledger/format/retention/pruned.h), made from its level-0 node, in
  // GetLeaf, ScanLeaves and WalkLeavesBack alike.
  absl::StatusOr<std::string> GetLeaf(uint64_t seq) const;
  // The first entry at or above `from` and below `to` whose body is stored
  // (no pruned line): its seq and bytes; nullopt when there is none.
  absl::StatusOr<std::optional<std::pair<uint64_t, std::string>>> NextStoredLeaf(uint64_t from, uint64_t to) const;
  absl::StatusOr<hash::Hash> GetNode(int level, uint64_t index) const;
  // The stored nodes (level, group * kNodesPerGroup + i), i = 0, 1, ... up to
  // the last one stored: one read for a reader that wants neighbours too.
  absl::StatusOr<std::vector<hash::Hash>> GetNodeGroup(int level, uint64_t group) const;
  absl::StatusOr<std::optional<ReceiptRef>> FindReceipt(const ReceiptKey& key) const;
  absl::StatusOr<std::optional<RunHead>> GetRunHead(std::string_view team, std::string_view run_id) const;
  absl::StatusOr<std::optional<RunHead>> GetTeamHead(std::string_view team) const;

  // Calls fn(seq) for the seqs below `below` of the run's rows in the run
  // index (`run_seqs`), ascending, until fn returns an error, which is
  // returned; DATA_LOSS when a row is malformed.
  absl::Status ScanRunSeqs(std::string_view team, std::string_view run_id, uint64_t below,
                           absl::FunctionRef<absl::Status(uint64_t seq)> fn) const;

  // Every row of the run index, a run's rows together in seq order; for
  // audits, as the other Scan functions below.
  absl::Status ScanRunIndex(
      absl::FunctionRef<absl::Status(std::string_view team, std::string_view run_id, uint64_t seq)> fn) const;

  // Calls fn(seq, leaf) for from <= seq < to in order; stops at and returns
  // the first error of fn. DATA_LOSS when a seq in the range is missing.
  absl::Status ScanLeaves(uint64_t from, uint64_t to,
                          absl::FunctionRef<absl::Status(uint64_t seq, std::string_view leaf)> fn) const;

  // The Scan functions are for audits: they call fn for every row, stop at
  // and return fn's first error, and return DATA_LOSS on a malformed row.
  // The receipt index: rows of format 2 first, then those of format 1 (as
  // kLegacy keys).
  absl::Status ScanReceipts(absl::FunctionRef<absl::Status(const ReceiptKey& key, const ReceiptRef& ref)> fn) const;
  // Rows of format 1 (keyed by the bare receipt_id), in key order, at most
  // `limit`; empty when none are left.
  absl::StatusOr<std::vector<std::pair<std::string, ReceiptRef>>> LegacyReceipts(size_t limit) const;
  // Run heads, checkpoints and checkpoint-time notes, in key order.
  absl::Status ScanRunHeads(
      absl::FunctionRef<absl::Status(std::string_view team, std::string_view run_id, const RunHead& head)> fn) const;
  absl::Status ScanTeamHeads(absl::FunctionRef<absl::Status(std::string_view team, const RunHead& head)> fn) const;
  absl::Status ScanCheckpoints(absl::FunctionRef<absl::Status(uint64_t size, std::string_view note)> fn) const;
  absl::Status ScanCheckpointTimes(absl::FunctionRef<absl::Status(uint64_t size, std::string_view time_note)> fn) const;
  // The highest seq with an entry, whatever the state says; nullopt if none.
  absl::StatusOr<std::optional<uint64_t>> LastLeafSeq() const;

  // Walks back from `from`: calls next(seq, leaf), which returns the seq to
  // visit next (MUST be below seq: a bug otherwise, and the process aborts)
  // or nullopt to stop, or an error, which is returned. DATA_LOSS when a seq
  // to visit is missing. One iterator serves the whole walk, so a chain of
  // mostly adjacent seqs costs a step each instead of a lookup each; where
  // the walk goes one seq back at a time (a run alone in its part of the
  // log), the entries below are first read forwards in windows of
  // kWarmEntries, which the disk reads ahead: backwards it cannot.
  static constexpr uint64_t kWarmEntries = 8192;
  absl::Status WalkLeavesBack(
      uint64_t from,
      absl::FunctionRef<absl::StatusOr<std::optional<uint64_t>>(uint64_t seq, std::string_view leaf)> next) const;

  // Writes `batch`, which MUST hold map rows only, synced: beside the
  // sequencer's commits (as PutCheckpoint is), from the one thread that
  // writes the maps.
  absl::Status CommitMapRows(Batch& batch);
  // A row of the `maps` column family; nullopt when absent.
  absl::StatusOr<std::optional<std::string>> GetMapRow(std::string_view key) const;
  // The first `limit` rows with from <= key < to, ascending, or the last
  // `limit` descending with `reverse`.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> MapRows(std::string_view from, std::string_view to,
                                                                           size_t limit, bool reverse = false) const;

  // A projection record; nullopt when absent.
  absl::StatusOr<std::optional<std::string>> GetProjection(projection::Table t, std::string_view key) const;
  // Calls fn(key, value) for the records of `t` with from <= key < to (an
  // empty `to`: no upper bound), ascending, or descending with `reverse`,
  // until fn returns false.
  absl::Status ScanProjection(projection::Table t, std::string_view from, std::string_view to, bool reverse,
                              absl::FunctionRef<bool(std::string_view key, std::string_view value)> fn) const;
  // Removes every projection record (for a rebuild). MUST NOT run while
  // anything else uses the store.
  absl::Status DropProjections();

  // Checkpoints are written by the checkpointer, synced, and never replaced.
  // Writes the checkpoint's note and its time note (either may be empty:
  // not written) atomically.
  absl::Status PutCheckpoint(uint64_t size, std::string_view note, std::string_view time_note = {});
  absl::StatusOr<std::string> GetCheckpoint(uint64_t size) const;
  // NOT_FOUND when the checkpoint of `size` has no time note.
  absl::StatusOr<std::string> GetCheckpointTime(uint64_t size) const;
  // The smallest tree size at or above `from` whose checkpoint has a time
  // note; nullopt when there is none.
  absl::StatusOr<std::optional<uint64_t>> NextTimedCheckpoint(uint64_t from) const;
  // Keeps a monitor's map cosignature `line` of the time note of `size`
  // (the caller verified it), synced, beside the sequencer's commits; a
  // line of the same monitor and size is replaced.
  absl::Status PutMapCosignature(uint64_t size, const hash::Hash& monitor, std::string_view line);
  // The lines kept for the time note of `size`, by monitor (the SHA-256 of
  // its vkey), in key order.
  absl::StatusOr<std::vector<std::pair<hash::Hash, std::string>>> MapCosignatures(uint64_t size) const;
  // Keeps a TSA's time-stamp `line` of the time note of `size` (the caller
  // checked it), synced; a line of the same size is replaced.
  absl::Status PutTimeStamp(uint64_t size, std::string_view line);
  // The line kept for the time note of `size`; "" when none.
  absl::StatusOr<std::string> TimeStamp(uint64_t size) const;
  // OK, or why the store cannot write again in this process: a write failed
  // and RocksDB cannot resume. The data on disk is intact up to the last
  // acknowledged commit; reopening the store (a restart) recovers.
  absl::Status failure() const;

  // Erasure (CONTRACT section 8): once the records of an erased entry
  // were rewritten (its leaf replaced by its redacted line, projection
  // records cleared), makes sure no file of the store holds what they held:
  // flushes every column family, then compacts the entry of `seq` and the
  // projection records `keys` down to the last level, so that the table
  // files that held the earlier values are replaced and deleted. Backups
  // made before keep their own files.
  absl::Status Purge(uint64_t seq, const std::vector<std::pair<projection::Table, std::string>>& keys);
  // Retention: once a pass deleted its rows, makes sure no file of the
  // store holds them: flushes, then compacts the entries below `below` and
  // the whole of the receipt index, the run index and the projection
  // tables down to the last level.
  absl::Status CompactPruned(uint64_t below);

  // A consistent copy of the whole store in `dir`, which MUST NOT exist:
  // memtables are flushed first (all column families together), then files
  // are hard-linked where possible. Safe while commits continue.
  absl::Status Backup(const std::string& dir) const;

  // The checkpoint of the largest size, if any.
  absl::StatusOr<std::optional<std::pair<uint64_t, std::string>>> LatestCheckpoint() const;

 private:
  friend class Batch;
  friend class Testing;  // testing.h
  struct Rep;
  explicit Store(std::unique_ptr<Rep> rep);
  // Memory RocksDB holds for reading its table files outside the cache
  // (the table readers themselves, and the top level of partitioned
  // indexes and filters): MemoryUse's table_readers.
  uint64_t TableReaderBytes() const;
  // The pruned line of `seq` (pruned.h), from its level-0 node.
  absl::StatusOr<std::string> PrunedLineOf(uint64_t seq) const;
  // The stored record of a node group ("" if none).
  absl::StatusOr<std::string> NodeGroup(int level, uint64_t group) const;
  absl::Status ScanRows(int cf, absl::FunctionRef<absl::Status(std::string_view, std::string_view)> fn,
                        const char* what) const;
  std::unique_ptr<Rep> rep_;
};

}  // namespace ledger::store

#endif  // LEDGER_STORAGE_STORE_STORE_H_
