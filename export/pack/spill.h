// Projection records on disk, so that the outcomes of a pack of any size
// are recomputed in bounded memory. Outcomes keeps the records it is
// working on in memory; when they pass a budget they are written out as a
// run, and the records are looked up in the runs when they are needed
// again. A run is a file of records sorted by (table, key):
//
//   record = u8 table, u32 key length, key, u8 present (0: deleted),
//            u32 value length, value                 ; little-endian
//
// and, in memory, a Bloom filter of its keys (10 bits a key, 7 probes),
// every 32nd record's key and offset, and where each table starts: about
// two bytes a record, against the record's hundreds. Past kMaxRuns runs,
// the newer half are merged into one (size-tiered, as LSM trees do).
//
// Thread-compatible.
#ifndef EXPORT_PACK_SPILL_H_
#define EXPORT_PACK_SPILL_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "ledger/format/projection/projection.h"

namespace ledger::pack {

class SpillRuns {
 public:
  // Runs are files in `dir`, which MUST exist and outlive this object.
  explicit SpillRuns(std::string dir) : dir_(std::move(dir)) {}
  ~SpillRuns();
  SpillRuns(const SpillRuns&) = delete;
  SpillRuns& operator=(const SpillRuns&) = delete;

  // A run file and what is kept of it in memory.
  struct Run {
    std::string path;
    int fd = -1;
    uint64_t bytes = 0;
    uint64_t records = 0;
    std::vector<uint64_t> bloom;
    uint64_t bloom_bits = 0;
    // Every kIndexEvery-th record: (table, key) and its offset.
    std::vector<std::pair<std::string, uint64_t>> index;
    std::array<uint64_t, projection::kTableCount + 1> table_start{};
  };

  // Writes every record of `writes`, all tables, as the newest run:
  // Insert(Write(writes, NextRunPath())).
  absl::Status Add(const projection::OverlayTxn::Writes& writes);
  // Add in halves, so that a run is written on another thread while this
  // object is read on its own: NextRunPath names the next run; Write,
  // which touches nothing of this object and may run on any thread, writes
  // `writes` there (the caller closes the Run's fd if it never inserts
  // it); Insert adds it as the newest run.
  std::string NextRunPath();
  static absl::StatusOr<Run> Write(const projection::OverlayTxn::Writes& writes, std::string path);
  absl::Status Insert(Run run);
  // The newest value of (table, key) in the runs: nullopt if absent or
  // deleted.
  absl::StatusOr<std::optional<std::string>> Get(projection::Table table, std::string_view key) const;
  // Calls fn(key, value) for every record of `table`, sorted by key, the
  // newest value of each key (`latest`, then the runs from the newest),
  // deleted ones left out.
  absl::Status ForEach(projection::Table table, const projection::OverlayTxn::TableWrites& latest,
                       absl::FunctionRef<absl::Status(std::string_view, std::string_view)> fn) const;

  size_t runs() const { return runs_.size(); }

  // Past this many runs, the newer half are merged into one, so that a
  // lookup reads few filters and a merge holds few buffers.
  static constexpr size_t kMaxRuns = 16;

 private:
  class Writer;
  absl::Status Compact();
  // Calls fn(key, newest value or nullopt if deleted) for every key of
  // `table` in runs_[first_run..] and `latest`, sorted.
  absl::Status Merge(projection::Table table, size_t first_run, const projection::OverlayTxn::TableWrites& latest,
                     absl::FunctionRef<absl::Status(std::string_view, std::optional<std::string_view>)> fn) const;

  std::string dir_;
  std::vector<Run> runs_;  // oldest first
  uint64_t next_run_ = 0;
};

}  // namespace ledger::pack

#endif  // EXPORT_PACK_SPILL_H_
