// Projections: records derived from the log (steps, runs, their indexes),
// kept beside it. The log is the only source of truth; a projection is a
// deterministic function of the entries in seq order, so it can always be
// dropped and rebuilt byte for byte.
//
// A Projector sees one entry at a time and reads and writes records through
// a Txn. The sequencer applies it to every appended entry inside the batch
// that appends the entry; a rebuild replays the log through it; the offline
// verifier runs it over an in-memory Txn. Nothing here touches RocksDB.
//
// Thread-safety: a Txn is used by one thread at a time.
#ifndef LEDGER_FORMAT_PROJECTION_PROJECTION_H_
#define LEDGER_FORMAT_PROJECTION_PROJECTION_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ledger/format/receipt/receipt.h"

namespace ledger::projection {

// The tables projections live in. DO NOT renumber: stored data uses them.
enum class Table : uint8_t { kSteps = 0, kRuns = 1, kIndex = 2, kChanges = 3 };
inline constexpr int kTableCount = 4;
const char* TableName(Table t);

// In Table::kIndex: the number of log entries the projections cover, a
// big-endian u64. Query code MUST NOT use keys starting with 0xff.
inline constexpr std::string_view kProjectedSizeKey =
    "\xff"
    "projected_size";
// In Table::kIndex: the format of the projections' records
// (Projector::Format), a big-endian u64. Absent in a store written before
// formats were kept: format 1 if kProjectedSizeKey is there, else no
// projection was ever made.
inline constexpr std::string_view kFormatKey =
    "\xff"
    "format";

// What a projector sees of an entry.
struct Entry {
  uint64_t seq = 0;
  int64_t logged_at_us = 0;
  std::string_view emitter;
  const receipt::Receipt* receipt = nullptr;
  // An erased entry (CONTRACT section 8): `receipt` is the skeleton its
  // redacted line states (receipt/redaction.h), ids and kind only.
  bool erased = false;
};

// Reads and writes of projection records. Reads see this Txn's own writes.
class Txn {
 public:
  virtual ~Txn() = default;
  // nullopt when absent; an error when the record cannot be read.
  virtual absl::StatusOr<std::optional<std::string>> Get(Table t, std::string_view key) = 0;
  virtual void Put(Table t, std::string_view key, std::string_view value) = 0;
  virtual void Delete(Table t, std::string_view key) = 0;
  // For records that no Get through this Txn, or one built on it, will ask
  // for before they are stored (index rows that only queries read, step
  // changes): a Txn may send them straight to storage.
  virtual void PutUnread(Table t, std::string_view key, std::string_view value) { Put(t, key, value); }
  virtual void DeleteUnread(Table t, std::string_view key) { Delete(t, key); }
  // False when unread records are dropped (projections kept only for their
  // steps and runs, as an evidence pack's outcomes): a projector may then
  // leave them unmade.
  virtual bool KeepsUnread() const { return true; }
};

// Where an OverlayTxn sends unread records: the storage batch being built.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void PutProjection(Table t, std::string_view key, std::string_view value) = 0;
  virtual void DeleteProjection(Table t, std::string_view key) = 0;
  // False if it drops what it is given.
  virtual bool Keeps() const { return true; }
};

class Projector {
 public:
  virtual ~Projector() = default;
  // Applies entries, consecutive and in seq order. The result MUST NOT
  // depend on how the log is cut into calls. An error means a record could
  // not be read or is malformed; the caller MUST NOT write any of the Txn's
  // updates then.
  virtual absl::Status Apply(absl::Span<const Entry> entries, Txn& txn) = 0;

  // The format of the records Apply writes, kept beside them (kFormatKey),
  // so that records an older version wrote are upgraded before use.
  virtual uint64_t Format() const { return 1; }

  // Reads the stored rows of table `t` whose keys start with `prefix`, in
  // key order, until `row` returns false.
  using Scan = std::function<absl::Status(Table t, std::string_view prefix,
                                          absl::FunctionRef<bool(std::string_view key, std::string_view value)> row)>;
  // Reads the log's entries that the stored projections cover, in seq
  // order, a chunk at a time: `chunk` gets each chunk (consecutive entries)
  // and a Txn of its own, whose reads see the stored records and whose
  // writes are stored when `chunk` returns OK, before the next chunk and
  // before the new format is recorded. An error from `chunk` ends the
  // replay with that error.
  using Chunk = absl::FunctionRef<absl::Status(absl::Span<const Entry> entries, Txn& txn)>;
  using Replay = std::function<absl::Status(Chunk chunk)>;
  // Rewrites records of format `from` (1 <= from < Format()) into what
  // Apply would have written for the same entries: those it finds in the
  // stored records (`scan`) through `txn`, those it derives from the log
  // (`replay`) through the chunks' Txns. Returns how many records it wrote.
  // The caller stores `txn`'s writes and the new format in one batch, with
  // nothing appended meanwhile. A crash may come between a chunk's writes
  // and the new format, so the upgrade is done again from `from`: what a
  // chunk writes MUST read the same when written twice (puts of values
  // that depend on the entries alone).
  virtual absl::StatusOr<uint64_t> Upgrade(uint64_t from, Txn& txn, const Scan& scan, const Replay& replay);

  // Retention (CONTRACT section 9): deletes through `txn` what the records
  // keep of the pruned `entries` alone (records keyed by one entry), and
  // every record of each run of `whole_runs` (team, run_id), all of whose
  // entries are pruned, found through `scan`. The default keeps nothing
  // per entry or run, so it deletes nothing.
  virtual absl::Status Forget(absl::Span<const Entry> entries,
                              absl::Span<const std::pair<std::string, std::string>> whole_runs, const Scan& scan,
                              Txn& txn) {
    return absl::OkStatus();
  }
};

// A Txn that buffers its writes over what another source holds: the writes
// of an earlier overlay not yet stored (`base`), then `fallback` (the
// store, or nothing).
class OverlayTxn final : public Txn {
 public:
  using Fallback = std::function<absl::StatusOr<std::optional<std::string>>(Table, std::string_view)>;
  // Per table: a key's value, or nullopt for a delete.
  using TableWrites = absl::flat_hash_map<std::string, std::optional<std::string>>;
  using Writes = std::array<TableWrites, kTableCount>;

  // `sink`, if set, receives PutUnread and DeleteUnread directly, in order,
  // and MUST outlive the Txn.
  OverlayTxn(const OverlayTxn* base, Fallback fallback, Sink* sink = nullptr)
      : base_(base), fallback_(std::move(fallback)), sink_(sink) {}

  absl::StatusOr<std::optional<std::string>> Get(Table t, std::string_view key) override;
  void Put(Table t, std::string_view key, std::string_view value) override;
  void Delete(Table t, std::string_view key) override;
  void PutUnread(Table t, std::string_view key, std::string_view value) override;
  void DeleteUnread(Table t, std::string_view key) override;
  bool KeepsUnread() const override { return sink_ == nullptr || sink_->Keeps(); }

  const Writes& writes() const { return writes_; }
  // About what the writes hold in memory: keys, values and kRowOverhead a
  // row.
  size_t bytes() const { return bytes_; }
  static constexpr size_t kRowOverhead = 64;
  // Forgets `base`: call once base's writes are stored.
  void DetachBase() { base_ = nullptr; }

 private:
  void Write(Table t, std::string_view key, std::optional<std::string_view> value);

  const OverlayTxn* base_;
  Fallback fallback_;
  Sink* sink_;
  Writes writes_;
  size_t bytes_ = 0;
};

}  // namespace ledger::projection

#endif  // LEDGER_FORMAT_PROJECTION_PROJECTION_H_
