// The ledger as a client of monitors (CONTRACT section 5c): each monitor
// of a tlog-policy that has a URL is given the latest checkpoint-time note
// (POST <url>/cosign, ledger-monitor), checks it against its own replay of
// the log and answers with its map cosignature; the line is verified with
// the monitor's key from the policy, kept, and served with the note it
// covers (GetCheckpoint's cosigned_time_note, packs' checkpoint-time file).
//
// Appends never wait for a monitor. One thread gives each monitor the
// latest note once per `interval_ms`; an export that needs the
// monitor-quorum (CosignedWithQuorum) gives its own note to the monitors
// that lack a line for it, and waits. A monitor answers a note below the
// entries it replayed with 409 (it can no longer check it): such an export
// fails UNAVAILABLE, and one of a later checkpoint succeeds.
//
// What is kept: for each monitor, the lines of its latest 1024 notes in
// memory, and every line beside the note it covers through Options::keep
// (the ledger's store: Log::KeepMapCosignature), read back through
// Options::kept and verified again when a note is not in memory (after a
// restart, or an older note).
//
// Thread-safe: every method may be called concurrently.
#ifndef MONITOR_CLIENT_MONITORS_H_
#define MONITOR_CLIENT_MONITORS_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/tlogpolicy/tlogpolicy.h"
#include "util/http/client.h"
#include "util/stats/stats.h"
#include "util/sync/mutex.h"

namespace ledger::monitors {

// POSTs a body to a URL: http::Fetch, or a fake for fault injection.
using Post = std::function<absl::StatusOr<http::Reply>(const std::string& url, const std::string& body)>;
// The latest checkpoint's time note as the ledger signed it; NOT_FOUND
// before the first.
using LatestFn = std::function<absl::StatusOr<std::string>()>;

// A verified map cosignature held for a note.
struct Held {
  std::string monitor;  // its name in the policy
  uint64_t time = 0;    // POSIX seconds, as it signed it
  std::string line;     // the signature line, with its newline
};

class Monitors {
 public:
  using KeepFn = std::function<absl::Status(uint64_t size, const hash::Hash& monitor, const std::string& line)>;
  using KeptFn = std::function<absl::StatusOr<std::vector<std::pair<hash::Hash, std::string>>>(uint64_t size)>;
  struct Options {
    int interval_ms = 1000;
    int timeout_ms = 30'000;  // per request: a monitor may replay many entries first
    // Where lines are kept beside the notes of their tree size, by the
    // SHA-256 of the monitor's vkey, and read back; null: memory alone.
    KeepFn keep;
    KeptFn kept;
  };

  // Starts the thread. INVALID_ARGUMENT when the policy names no monitor
  // with a URL.
  static absl::StatusOr<std::unique_ptr<Monitors>> Start(tlogpolicy::Policy policy, LatestFn latest, Post post,
                                                         Options options);
  ~Monitors();

  // The lines held for `time_note` (as the ledger signed it), in policy order.
  std::vector<Held> For(std::string_view time_note) const;
  // `time_note` with those lines appended.
  std::string Cosigned(std::string_view time_note) const;
  // Cosigned(time_note) once the policy's monitor-quorum is met, giving
  // the note to the monitors that lack a line for it; UNAVAILABLE naming
  // the monitors that did not cosign (and what they answered) when it is
  // not met within `wait`.
  absl::StatusOr<std::string> CosignedWithQuorum(std::string_view time_note, std::chrono::milliseconds wait);

  // ledger_map_cosignatures_total, ledger_map_cosign_failures_total and
  // ledger_map_cosigned_tree_size, by monitor; Prometheus text.
  std::string RenderMetrics() const;

 private:
  struct State {
    const tlogpolicy::Monitor* monitor = nullptr;
    hash::Hash id{};  // SHA-256 of its vkey: its key where lines are kept
    sync::Mutex mu;   // one request at a time to this monitor
    // Note text (as signed) -> its verified line, the latest 1024.
    absl::flat_hash_map<std::string, Held> held ABSL_GUARDED_BY(mu);
    std::deque<std::string> order ABSL_GUARDED_BY(mu);
    uint64_t cosigned_size ABSL_GUARDED_BY(mu) = 0;
    std::string last_error ABSL_GUARDED_BY(mu);
    stats::Counter cosignatures, refused, conflicts, unavailable;
  };

  Monitors(tlogpolicy::Policy policy, LatestFn latest, Post post, Options options);
  // Gives `note` to the monitor unless a line is held for it; OK once one is.
  absl::Status Ask(State& m, const std::string& note);
  void Hold(State& m, const std::string& note, Held held) ABSL_EXCLUSIVE_LOCKS_REQUIRED(m.mu);
  // Counts a request that brought no line, logs it when it is not the
  // monitor's last error again, and returns `status`.
  absl::Status Failed(State& m, stats::Counter& counter, absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(m.mu);
  void Run();

  const tlogpolicy::Policy policy_;
  const LatestFn latest_;
  const Post post_;
  const Options options_;
  std::vector<std::unique_ptr<State>> states_;
  sync::Mutex stop_mu_;
  sync::CondVar stop_cv_;
  bool stop_ ABSL_GUARDED_BY(stop_mu_) = false;
  std::thread thread_;
};

}  // namespace ledger::monitors

#endif  // MONITOR_CLIENT_MONITORS_H_
