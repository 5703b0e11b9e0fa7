// The deadline sweeper: declares pending steps unknown. When a pending
// step's deadline (its start's logged_at_us + timeout_ms + grace) has
// passed, the sweeper appends a step_unknown entry through the log's normal
// append path, with emitter "ledger", so the declaration is itself
// evidence. Steps are declared in (deadline, start seq) order. The pending
// set is read from the projection each time, never kept only in memory, so
// a deadline that passed while the server was down is declared at the first
// sweep after start.
//
// A step_unknown's receipt_id is "ledger.unknown.<start seq>", in the
// ledger's own id space of the step's team (store::IdSpace::kLedger): no
// emitter can take it first (emitters may not use "ledger." ids, and their
// ids, in stores of any format, live in another space), and a sweep that is
// retried appends nothing twice.
//
// One step that cannot be declared never holds up another: a sweep tries
// every due step, logs each failing step once (not at every sweep), counts
// each failure (failures()), and reports how many due steps are still
// undeclared after it (overdue()); both are metrics.
//
// Thread-safe: SweepNow may be called from any thread; sweeps are serial.
#ifndef QUERY_SWEEPER_SWEEPER_H_
#define QUERY_SWEEPER_SWEEPER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/sequencer/sequencer.h"
#include "util/stats/stats.h"
#include "util/sync/mutex.h"

namespace ledger::query {

class Sweeper {
 public:
  struct Options {
    int64_t grace_ms = 30'000;
    // How often to look; 0: never on its own (tests call SweepNow).
    int64_t interval_ms = 1'000;
    sequencer::Clock clock = sequencer::SystemClockMicros;
    // If set, the timer sweeps only while it returns true: on a replicated
    // shard's node, while it leads (a follower's log takes the leader's
    // declarations; its own appends are refused).
    std::function<bool()> active;
  };

  // `log` MUST outlive the sweeper and keep projections. The sweeper also
  // declares, before every checkpoint the log signs, the steps due by that
  // checkpoint's time (Log::SetBeforeSign), until it is destroyed.
  Sweeper(log::Log* log, Options options);
  ~Sweeper();

  // Declares every step due by now and waits until the declarations are in
  // the log. Returns how many steps it declared; a step that could not be
  // declared is counted in failures() and overdue(), not returned as an
  // error. An error only when the pending set cannot be read.
  absl::StatusOr<int> SweepNow() { return SweepAt(options_.clock()); }
  // The same, as of `now_us`.
  absl::StatusOr<int> SweepAt(int64_t now_us);

  // Steps this sweeper declared unknown since it started.
  uint64_t declared() const { return declared_.value(); }
  // The same, by team.
  const stats::CounterFamily& declared_by_team() const { return declared_by_team_; }
  // Declarations that failed since it started (one per step and sweep).
  uint64_t failures() const { return failures_.value(); }
  // Due steps the last sweep left undeclared.
  uint64_t overdue() const { return overdue_.load(std::memory_order_relaxed); }

 private:
  void Run();

  log::Log* const log_;
  const Options options_;
  static constexpr size_t kMaxPerSweep = 10'000;  // steps held in memory at once

  // The step_unknown of the pending step at `step_key`; DATA_LOSS when its
  // record is missing or malformed.
  absl::StatusOr<receipt::Receipt> UnknownOf(const log::LogView& view, std::string_view step_key, int64_t now,
                                             int64_t grace_us) const;
  // Appends the declarations of `chunk` and waits for them; adds the new
  // ones to *declared; returns the failed ones, by index in `chunk`.
  std::vector<std::pair<size_t, absl::Status>> Declare(std::span<const receipt::Receipt> chunk, int* declared);
  // Logs a step's failure the first time only.
  void Failed(uint64_t start_seq, const absl::Status& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sweep_mu_);

  stats::Counter declared_;
  stats::CounterFamily declared_by_team_;
  stats::Counter failures_;
  std::atomic<uint64_t> overdue_{0};
  sync::Mutex sweep_mu_;                                  // one sweep at a time
  std::set<uint64_t> logged_ ABSL_GUARDED_BY(sweep_mu_);  // start seqs whose failure was logged
  sync::Mutex mu_;
  sync::CondVar cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace ledger::query

#endif  // QUERY_SWEEPER_SWEEPER_H_
