#include "export/exporter/run_entries.h"

#include <fcntl.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "export/exporter/pruned.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/retention/pruned.h"

namespace ledger::exporter {
namespace {

// Seqs pushed in descending order and read back ascending, a block at a
// time, from a temporary file: a run's chain is walked from its head
// backwards, and memory must not grow with the run.
class SeqSpool {
 public:
  static constexpr size_t kBlock = 1 << 16;

  // `wrote` is called after each block written to disk.
  SeqSpool(std::string path, std::function<absl::Status()> wrote) : path_(std::move(path)), wrote_(std::move(wrote)) {}
  ~SeqSpool() {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Push(uint64_t seq) {
    block_.push_back(seq);
    ++size_;
    if (block_.size() < kBlock) return absl::OkStatus();
    if (fd_ < 0) fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t bytes = block_.size() * sizeof(uint64_t);
    if (fd_ < 0 ||
        ::pwrite(fd_, block_.data(), bytes, static_cast<off_t>(blocks_ * bytes)) != static_cast<ssize_t>(bytes)) {
      return absl::UnavailableError(absl::StrCat("export: cannot write ", path_));
    }
    ++blocks_;
    block_.clear();
    return wrote_();
  }

  // Calls fn(seq) for every seq pushed, in the reverse of the order pushed.
  absl::Status ForEachReversed(absl::FunctionRef<absl::Status(uint64_t)> fn) {
    for (auto it = block_.rbegin(); it != block_.rend(); ++it) {
      if (auto s = fn(*it); !s.ok()) return s;
    }
    std::vector<uint64_t> block(kBlock);
    for (uint64_t b = blocks_; b-- > 0;) {
      size_t bytes = kBlock * sizeof(uint64_t);
      if (::pread(fd_, block.data(), bytes, static_cast<off_t>(b * bytes)) != static_cast<ssize_t>(bytes)) {
        return absl::DataLossError(absl::StrCat("export: cannot read ", path_));
      }
      for (auto it = block.rbegin(); it != block.rend(); ++it) {
        if (auto s = fn(*it); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  uint64_t size() const { return size_; }

 private:
  std::string path_;
  std::function<absl::Status()> wrote_;
  int fd_ = -1;
  std::vector<uint64_t> block_;
  uint64_t blocks_ = 0, size_ = 0;
};

// Spools the seqs of a run's entries from `from` down to `floor` by
// walking its run chain back; `below` is the run_prev of the last spooled
// (none: the run's first entry).
absl::Status WalkRunBack(const log::LogView& view, std::string_view team, std::string_view run_id, uint64_t from,
                         uint64_t floor, SeqSpool* spool, std::optional<uint64_t>* below) {
  return view.WalkLeavesBack(from, [&](uint64_t at, std::string_view leaf) -> absl::StatusOr<std::optional<uint64_t>> {
    if (retention::LooksPruned(leaf)) return RunPruned(view, team, run_id, at);
    // The whole entry is checked when it is written into the pack.
    auto run_prev = receipt::RunPrevOf(leaf);
    if (!run_prev.ok()) {
      return absl::DataLossError(absl::StrCat("entry ", at, ": ", run_prev.status().message()));
    }
    if (auto s = spool->Push(at); !s.ok()) return s;
    if (run_prev->has_value() && **run_prev >= at) {
      return absl::DataLossError(absl::StrCat("entry ", at, ": run_prev does not go back"));
    }
    *below = *run_prev;
    if (run_prev->has_value() && **run_prev < floor) return std::optional<uint64_t>();
    return *run_prev;
  });
}

// Reads the leaves of seqs given in ascending order: a scan for each run
// of consecutive seqs, a point read for a lone one.
class SeqReader {
 public:
  using Fn = absl::FunctionRef<absl::Status(uint64_t seq, std::string_view leaf)>;
  SeqReader(const log::LogView& view, Fn fn) : view_(view), fn_(fn) {}

  absl::Status Add(uint64_t seq) {
    if (end_ != first_ && seq == end_) {
      ++end_;
      return absl::OkStatus();
    }
    if (auto s = Flush(); !s.ok()) return s;
    first_ = seq;
    end_ = seq + 1;
    return absl::OkStatus();
  }

  // Reads the seqs not read yet.
  absl::Status Flush() {
    uint64_t first = first_, end = end_;
    first_ = end_ = 0;
    if (end == first) return absl::OkStatus();
    if (end - first > 1) return view_.ScanLeaves(first, end, fn_);
    auto leaf = view_.GetLeaf(first);
    return leaf.ok() ? fn_(first, *leaf) : leaf.status();
  }

 private:
  const log::LogView& view_;
  Fn fn_;
  uint64_t first_ = 0, end_ = 0;  // the consecutive seqs [first_, end_) not yet read
};

std::string SeqOrNone(std::optional<uint64_t> seq) { return seq ? std::to_string(*seq) : std::string("none"); }

}  // namespace

absl::Status ReadRunEntries(const log::LogView& view, std::string_view team, std::string_view run_id,
                            const runmap::Head& head, uint64_t from_seq, const std::string& spool_path,
                            std::function<absl::Status()> spooled, EntryFn fn) {
  std::optional<uint64_t> first_indexed;
  absl::Status scanned = view.ScanRunSeqs(team, run_id, [&](uint64_t seq) {
    if (seq < from_seq) return absl::OkStatus();  // below the line: left out
    first_indexed = seq;
    return absl::CancelledError();  // the first is all this asks
  });
  if (!scanned.ok() && !first_indexed.has_value()) return scanned;
  // Where the walk back starts, when there is one to make.
  bool walk = true;
  uint64_t walk_from = head.last_seq;
  // The run_prev of the first entry read: none for the run's first entry,
  // or one below from_seq.
  std::optional<uint64_t> below;
  if (first_indexed.has_value()) {
    auto leaf = view.GetLeaf(*first_indexed);
    if (!leaf.ok()) return leaf.status();
    if (retention::LooksPruned(*leaf)) return RunPruned(view, team, run_id, *first_indexed);
    auto run_prev = receipt::RunPrevOf(*leaf);
    if (!run_prev.ok()) {
      return absl::DataLossError(absl::StrCat("entry ", *first_indexed, ": ", run_prev.status().message()));
    }
    below = *run_prev;
    walk = run_prev->has_value() && !(from_seq > 0 && **run_prev < from_seq);
    if (walk) walk_from = **run_prev;
  }
  std::optional<uint64_t> last;
  uint64_t read = 0;
  auto chained = [&](uint64_t seq, std::string_view leaf) -> absl::Status {
    auto run_prev = receipt::RunPrevOf(leaf);
    if (!run_prev.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", run_prev.status().message()));
    if (*run_prev != last) {
      return absl::DataLossError(absl::StrCat("entry ", seq, ": run_prev ", SeqOrNone(*run_prev),
                                              ", the run's entry before it is ", SeqOrNone(last),
                                              ": the store's run index or run chain is damaged"));
    }
    last = seq;
    ++read;
    return fn(seq, leaf);
  };
  SeqReader reader(view, chained);
  SeqSpool spool(spool_path, std::move(spooled));
  if (walk) {
    if (auto s = WalkRunBack(view, team, run_id, walk_from, from_seq, &spool, &below); !s.ok()) return s;
  }
  if (from_seq > 0 && (!below.has_value() || *below >= from_seq)) {
    return absl::DataLossError(absl::StrCat("run: its first entry at or above seq ", from_seq,
                                            " does not link below it: the store's run index or run chain is damaged"));
  }
  if (from_seq > 0) last = below;
  if (spool.size() > 0) {
    if (auto s = spool.ForEachReversed([&](uint64_t seq) { return reader.Add(seq); }); !s.ok()) return s;
  }
  if (first_indexed.has_value()) {
    absl::Status indexed = view.ScanRunSeqs(
        team, run_id, [&](uint64_t seq) { return seq < from_seq ? absl::OkStatus() : reader.Add(seq); });
    if (!indexed.ok()) return indexed;
  }
  if (auto s = reader.Flush(); !s.ok()) return s;
  if ((from_seq == 0 ? read != head.count : read >= head.count) || last != head.last_seq) {
    return absl::DataLossError(absl::StrCat("run: the run-head map counts ", head.count, " entries ending at seq ",
                                            head.last_seq, "; the store's run index and chain give ", read,
                                            " ending at seq ", SeqOrNone(last)));
  }
  return absl::OkStatus();
}

}  // namespace ledger::exporter
