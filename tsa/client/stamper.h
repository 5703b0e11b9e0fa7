// The ledger as a client of a time-stamping authority (CONTRACT section 5e,
// "Asking a TSA"): checkpoint-time notes are stamped by RFC 3161 over HTTP,
// each token checked as verifiers will check it (its chain to the TSA's CA,
// the note's imprint, the time rule), kept beside the note and served with
// it as the note's time-stamp line (GetCheckpoint's cosigned_time_note,
// packs' checkpoint-time file).
//
// Appends never wait for the TSA. One thread looks at the latest note every
// `interval_ms` and stamps one note in `every` of those it sees; an export
// that needs a stamp (StampedWithin) asks for its own note and waits.
//
// What is kept: the lines of the latest 1024 notes in memory, and every
// line beside the note of its tree size through Options::keep (the ledger's
// store), read back through Options::kept and checked again when a note is
// not in memory (after a restart, or an older note).
//
// Thread-safe: every method may be called concurrently.
#ifndef TSA_CLIENT_STAMPER_H_
#define TSA_CLIENT_STAMPER_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ledger/format/timestamp/timestamp.h"
#include "util/http/client.h"
#include "util/stats/stats.h"
#include "util/sync/mutex.h"

namespace ledger::tsa {

// POSTs a DER TimeStampReq to the TSA: http::Fetch with Content-Type
// application/timestamp-query, or a fake for fault injection.
using Post = std::function<absl::StatusOr<http::Reply>(const std::string& body)>;
// The latest checkpoint's time note as the ledger signed it; NOT_FOUND
// before the first.
using LatestFn = std::function<absl::StatusOr<std::string>()>;

class Stamper {
 public:
  using KeepFn = std::function<absl::Status(uint64_t size, const std::string& line)>;
  using KeptFn = std::function<absl::StatusOr<std::string>(uint64_t size)>;  // "" when none
  struct Options {
    std::string url;           // for logs and errors
    std::string name = "tsa";  // the time-stamp line's name
    std::string policy;        // reqPolicy, a dotted OID; none when empty
    int every = 1;             // stamp one note in `every` seen
    int64_t max_delay_s = timestamp::kDefaultMaxDelaySeconds;
    int interval_ms = 200;
    KeepFn keep;  // null: memory alone
    KeptFn kept;
  };

  // Starts the thread. INVALID_ARGUMENT for a name that is not a key name
  // or `every` below 1.
  static absl::StatusOr<std::unique_ptr<Stamper>> Start(timestamp::TsaRoots roots, LatestFn latest, Post post,
                                                        Options options);
  ~Stamper();

  // The time-stamp line held or kept for `time_note` (as the ledger signed
  // it, with monitors' lines or not), with its newline; "" when none.
  std::string Line(std::string_view time_note) const;
  // `time_note` with that line appended.
  std::string Stamped(std::string_view time_note) const;
  // Stamped(time_note) once it carries a line, asking the TSA for it when
  // none is held; UNAVAILABLE naming the TSA and what it answered when no
  // token comes within `wait`.
  absl::StatusOr<std::string> StampedWithin(std::string_view time_note, std::chrono::milliseconds wait);

  // ledger_tsa_stamps_total, ledger_tsa_failures_total{reason} and
  // ledger_tsa_stamped_tree_size; Prometheus text.
  std::string RenderMetrics() const;

 private:
  Stamper(timestamp::TsaRoots roots, LatestFn latest, Post post, Options options);
  void Run();
  // Stamps `note` unless a line is held for it; OK once one is.
  absl::Status Ask(std::string_view note) ABSL_LOCKS_EXCLUDED(ask_mu_, mu_);
  // The held or kept line of the note whose text is `text`; "" when none.
  std::string LineFor(std::string_view text) const ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Failed(stats::Counter& counter, absl::Status status) ABSL_LOCKS_EXCLUDED(mu_);

  const timestamp::TsaRoots roots_;
  const LatestFn latest_;
  const Post post_;
  const Options options_;

  sync::Mutex ask_mu_;                                                       // one request at a time, held across it
  mutable sync::Mutex mu_;                                                   // what is held, briefly
  absl::flat_hash_map<std::string, std::string> held_ ABSL_GUARDED_BY(mu_);  // note text -> line
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);
  uint64_t stamped_size_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  std::string last_seen_ ABSL_GUARDED_BY(mu_);  // the latest note's text the thread saw
  uint64_t seen_ ABSL_GUARDED_BY(mu_) = 0;
  stats::Counter stamps_, unavailable_, refused_;

  sync::Mutex stop_mu_;
  sync::CondVar stop_cv_;
  bool stop_ ABSL_GUARDED_BY(stop_mu_) = false;
  std::thread thread_;
};

}  // namespace ledger::tsa

#endif  // TSA_CLIENT_STAMPER_H_
