// The parts of StreamCheck's passes over a streamed file (stream_check.h):
// whole lines cut out of a file's pieces a chunk at a time, the record the
// entry pass keeps of each entry for the second pass, and the scope checks
// the second pass makes of each record. Only stream_check.cc includes it.
//
// Thread-compatible.
#ifndef EXPORT_VERIFY_CC_INTERNAL_STREAM_LINES_H_
#define EXPORT_VERIFY_CC_INTERNAL_STREAM_LINES_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "export/verify/cc/internal/stream_check.h"
#include "export/verify/cc/scope.h"
#include "ledger/format/hash/hash.h"
#include "util/text/progress.h"

namespace ledger::verify {

inline constexpr size_t kChunkBytes = size_t{1} << 18;
// A leaf holds a receipt of at most 16 KiB; a proof line, 64 hashes.
inline constexpr size_t kMaxLineBytes = size_t{1} << 20;

inline size_t MaxInflight() { return 2 * std::max(2u, std::thread::hardware_concurrency()) + 2; }

// Whole lines out of a file's pieces, a chunk of about kChunkBytes at a
// time. Lines are split at "\n"; a last line without one is a line.
class LineChunker {
 public:
  // Appends a piece; calls emit(chunk, lines) for each whole chunk.
  // False if a line grows beyond kMaxLineBytes.
  template <typename Emit>
  bool Add(std::string_view piece, Emit emit) {
    // Pieces can be larger than a chunk (a gzip member is 1 MiB).
    while (piece.size() > kChunkBytes) {
      if (!Add(piece.substr(0, kChunkBytes), emit)) return false;
      piece.remove_prefix(kChunkBytes);
    }
    buf_.append(piece);
    if (buf_.size() < kChunkBytes) return true;
    size_t cut = buf_.rfind('\n');
    if (cut == std::string::npos) return buf_.size() <= kMaxLineBytes;
    std::string rest = buf_.substr(cut + 1);
    buf_.resize(cut + 1);
    Hand(emit);
    buf_ = std::move(rest);
    return true;
  }
  template <typename Emit>
  void Finish(Emit emit) {
    if (!buf_.empty()) Hand(emit);
  }

 private:
  template <typename Emit>
  void Hand(Emit& emit) {
    size_t lines = text::Newlines(buf_);
    if (buf_.back() != '\n') ++lines;
    emit(std::move(buf_), lines);
    buf_ = std::string();
  }
  std::string buf_;
};

// Calls fn(line) for each line of a chunk.
template <typename Fn>
void ForEachLine(std::string_view chunk, Fn fn) {
  size_t at = 0;
  while (at < chunk.size()) {
    size_t nl = chunk.find('\n', at);
    if (nl == std::string_view::npos) nl = chunk.size();
    fn(chunk.substr(at, nl - at));
    at = nl + 1;
  }
}

// What the proof pass needs of each entry line, kept in a temporary file
// between the two passes so that memory does not grow with the pack.
struct Record {
  enum Flags : uint8_t { kParsed = 1, kSameTeam = 2, kSameRun = 4 };
  int64_t tail_seq;  // the seq at the end of the leaf, -1 if none
  hash::Hash leaf_hash;
  uint64_t seq;
  int64_t logged_at_us;
  uint64_t run_prev_plus_one;  // 0: none
  // The seq of the previous entry of the same run (team and run_id) in the
  // pack, plus one; 0: none.
  uint64_t run_before_plus_one;
  uint8_t flags;
};

// A pass over one file's lines, fed a chunk at a time.
class LinePass {
 public:
  virtual ~LinePass() = default;
  virtual void AddChunk(std::string chunk, size_t lines) = 0;
  // Waits for every chunk.
  virtual void Finish() = 0;
  // A line was longer than kMaxLineBytes: the rest is not checked.
  virtual void Overlong() = 0;
  // After Finish: the file's last line has no "\n" (a line is a leaf or a
  // proof and its newline; a last line without one is not a line of the
  // pack, and a reader that drops it would see one entry fewer).
  virtual void Unterminated() = 0;
};

// The failure of a last line without its newline, the file's line `line`
// (0-based).
inline Failure UnterminatedLine(const char* file, uint64_t line) {
  return Failure{line, Failure::kDecode, file, -1, absl::StrCat("line ", line + 1, ": no newline at its end")};
}

// Cuts `next`'s pieces into chunks of whole lines for `pass`.
inline absl::Status Feed(LinePass& pass, NextPiece next) {
  LineChunker chunker;
  auto emit = [&](std::string chunk, size_t lines) { pass.AddChunk(std::move(chunk), lines); };
  bool fits = true, ends_in_newline = true;
  while (true) {
    auto piece = next();
    if (!piece.ok()) {
      pass.Finish();
      return piece.status();
    }
    if (piece->empty()) break;
    ends_in_newline = piece->back() == '\n';
    if (fits && !chunker.Add(*piece, emit)) fits = false;
  }
  if (fits) {
    chunker.Finish(emit);
    pass.Finish();
    if (!ends_in_newline) pass.Unterminated();
  } else {
    pass.Overlong();
  }
  return absl::OkStatus();
}

// The scope checks of each entry's record (run chain, team window, seq
// range; within a window or range, each run's chain from the window's
// first seq), made in the second pass, with the proofs.
class ScopeCheck {
 public:
  ScopeCheck(const Scope& scope, const std::string& first_team, const std::string& first_run)
      : scope_(scope), first_team_(first_team), first_run_(first_run) {}

  // Why the entries, `last_seq` the last, end before the scope does, or "":
  // a seq range holds every seq up to its to_seq.
  std::string WhyEnded(std::optional<uint64_t> last_seq) const {
    if (scope_.kind() != "seq" || (last_seq && *last_seq + 1 == scope_.to_seq)) return "";
    return "the seq range ends early";
  }

  // Why an entry is outside the pack's scope, or "".
  std::string Why(const Record& rec, std::optional<uint64_t> last_seq) const {
    bool team = (rec.flags & Record::kSameTeam) && first_team_ == scope_.team;
    bool run = (rec.flags & Record::kSameRun) && first_run_ == scope_.run_id;
    std::optional<uint64_t> run_prev;
    if (rec.run_prev_plus_one > 0) run_prev = rec.run_prev_plus_one - 1;
    if (scope_.kind() == "run") {
      if (!team || !run) return "not an entry of the pack's run";
      if (scope_.from_seq > 0) {
        // A run pack across the retention line (format 9): the run from
        // from_seq, its first entry linking below it.
        if (rec.seq < scope_.from_seq) {
          return absl::StrCat("seq ", rec.seq, " is below the scope's from_seq ", scope_.from_seq);
        }
        if (!last_seq && (!run_prev || *run_prev >= scope_.from_seq)) {
          return absl::StrCat("run_prev expected below ", scope_.from_seq,
                              " (the run's entries before the scope's from_seq were pruned), found ",
                              run_prev ? std::to_string(*run_prev) : std::string("none"));
        }
        if (!last_seq) return "";
      }
      if (run_prev != last_seq) {
        return absl::StrCat("run_prev expected ", last_seq ? std::to_string(*last_seq) : "none (the run's first entry)",
                            ", found ", run_prev ? std::to_string(*run_prev) : "none");
      }
    } else if (scope_.kind() == "team") {
      if (!team || rec.logged_at_us < scope_.from_us || rec.logged_at_us >= scope_.to_us) {
        return "not an entry of the pack's team and time window";
      }
      if (rec.seq < scope_.from_seq || rec.seq >= scope_.to_seq) {
        return absl::StrCat("not in the window's seqs [", scope_.from_seq, ", ", scope_.to_seq, ")");
      }
      return RunChainFailure(rec, run_prev, "the window's first seq");
    } else if (rec.seq != (last_seq ? *last_seq + 1 : scope_.from_seq)) {
      return absl::StrCat("seq expected ", last_seq ? *last_seq + 1 : scope_.from_seq, " (the range has a gap)");
    } else {
      return RunChainFailure(rec, run_prev, "the range's first seq");
    }
    return "";
  }

  // Within a window or range of seqs from scope_.from_seq: an entry whose
  // run_prev is at or after it links to the previous entry of its run in
  // the pack; the first of its run in the pack has none, or one below it.
  std::string RunChainFailure(const Record& rec, std::optional<uint64_t> run_prev, const char* first) const {
    auto found = [&] { return run_prev ? std::to_string(*run_prev) : std::string("none"); };
    if (rec.run_before_plus_one > 0) {
      uint64_t before = rec.run_before_plus_one - 1;
      if (run_prev == before) return "";
      return absl::StrCat("run_prev expected ", before, " (the run's previous entry in the pack), found ", found());
    }
    if (!run_prev || *run_prev < scope_.from_seq) return "";
    return absl::StrCat("run_prev expected none or below ", scope_.from_seq, " (", first, "), found ", found());
  }

 private:
  const Scope scope_;
  const std::string first_team_, first_run_;
};

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_INTERNAL_STREAM_LINES_H_
