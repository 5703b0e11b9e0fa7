// Progress of long work (an export, a verification, an audit), shown on a
// terminal and nowhere else: the same line in ledgerctl, ledger-verify,
// verify_pack.py and ledger-verify-go.
//
//   line      = CR text ESC "[K"       ; redrawn in place, at most every
//                                      ; interval (250 ms)
//   text      = verb ": " done [" of " total] " " unit [" (" pct "%)"]
//               [", " rate "/s" [", " left " left"]]
//   done, total, rate = integers with "," every three digits ("1,000,000")
//   pct       = floor(100 * done / total); without a total, of the work's
//               own measure when it has one (the bytes of a pack read)
//   rate      = done over the seconds since the meter started; shown once
//               it is not 0
//   left      = the time the rest takes at that pace, rounded up, as
//               Duration writes it; shown with a pct
//   end       = CR ESC "[K"            ; the line erased when the work ends,
//                                      ; if a line was shown
//
// e.g. "verifying: 120,000 of 1,000,000 entries (12%), 135,000/s, 7 s left",
// "verifying: 120,000 entries (12%), 135,000/s, 7 s left" (a pack whose
// count comes after its entries: the percent is of its bytes read),
// "exporting: 120,000 entries, 135,000/s".
//
// Thread-safe: ProgressText and the others are pure; a ProgressMeter's Add
// and SetTotal may be called from any thread (they only count; the meter's
// own thread draws).
#ifndef UTIL_TEXT_PROGRESS_H_
#define UTIL_TEXT_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "util/sync/mutex.h"

namespace ledger::text {

// 1234567 -> "1,234,567".
std::string Thousands(uint64_t n);

// The newlines in `text`: the lines a piece of a line-per-record file ends,
// for a meter's Add (memchr finds them a vector at a time).
size_t Newlines(std::string_view text);

// Seconds as "7 s" (under a minute), "2 min 5 s" (under an hour), "1 h 3 min".
std::string Duration(uint64_t seconds);

// The text of a progress line (the grammar above), `seconds` after the work
// began; `fraction` (0 to 1) the work's own measure, for when there is no
// total.
std::string ProgressText(std::string_view verb, std::string_view unit, uint64_t done, std::optional<uint64_t> total,
                         double seconds, std::optional<double> fraction = std::nullopt);

// Counts work done and, while it runs, redraws its line on `fd` every
// interval, once its total or some work done is known; only when `fd` is a
// terminal and `enabled` (a program's --no-progress turns it off). The interval is 250 ms, or
// LEDGER_PROGRESS_INTERVAL_MS from the environment (for tests).
class ProgressMeter {
 public:
  // Counts `unit`s ("entries").
  ProgressMeter(std::string verb, std::string unit, bool enabled = true, int fd = 2);
  ~ProgressMeter();
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;

  void SetTotal(uint64_t items) { total_.store(items + 1, std::memory_order_relaxed); }
  void Add(uint64_t items) { done_.fetch_add(items, std::memory_order_relaxed); }
  // The items done so far, all told, for a count kept elsewhere.
  void Set(uint64_t items) { done_.store(items, std::memory_order_relaxed); }
  // The work's own measure, for the percent and the time left when the
  // total of items is not known: `done` of `total` (bytes of a file read).
  void SetWork(uint64_t done, uint64_t total) {
    work_total_.store(total, std::memory_order_relaxed);
    work_done_.store(done, std::memory_order_relaxed);
  }
  // Stops drawing and erases the line, if one was drawn. Idempotent; the
  // destructor calls it.
  void Finish();

  bool shown() const { return thread_.joinable(); }

 private:
  void Draw() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string verb_, unit_;
  const int fd_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<uint64_t> done_{0};
  std::atomic<uint64_t> total_{0};  // items + 1; 0: not known
  std::atomic<uint64_t> work_done_{0}, work_total_{0};
  sync::Mutex mu_;
  sync::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool drawn_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace ledger::text

#endif  // UTIL_TEXT_PROGRESS_H_
