// The deadline sweeper: declares pending steps unknown. When a pending
// step's deadline (its start's logged_at_us + timeout_ms + grace) has
// passed, the sweeper appends a step_unknown entry through the log's normal
// append path, with emitter "ledger", so the declaration is itself
// evidence. Steps are declared in (deadline, start seq) order. The pending
// set is read from the projection each time, never kept only in memory, so
// a deadline that passed while the server was down is declared at the first
// sweep after start.
//
// A step_unknown's receipt_id is "ledger.unknown.<start seq>": a sweep that
// is retried appends nothing twice.
//
// Thread-safe: SweepNow may be called from any thread; sweeps are serial.
#ifndef QUERY_SERVICE_SWEEPER_H_
#define QUERY_SERVICE_SWEEPER_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "ledger/log/log.h"
#include "ledger/stats/stats.h"
#include "ledger/sequencer/sequencer.h"

namespace ledger::query {

class Sweeper {
 public:
  struct Options {
    int64_t grace_ms = 30'000;
    // How often to look; 0: never on its own (tests call SweepNow).
    int64_t interval_ms = 1'000;
    sequencer::Clock clock = sequencer::SystemClockMicros;
  };

  // `log` MUST outlive the sweeper and keep projections.
  Sweeper(log::Log* log, Options options);
  ~Sweeper();

  // Declares every step due by now and waits until the declarations are in
  // the log. Returns how many steps it declared.
  absl::StatusOr<int> SweepNow();

  // Steps this sweeper declared unknown since it started.
  uint64_t declared() const { return declared_.value(); }

 private:
  void Run();

  log::Log* const log_;
  const Options options_;
  stats::Counter declared_;
  std::mutex sweep_mu_;  // one sweep at a time
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace ledger::query

#endif  // QUERY_SERVICE_SWEEPER_H_
