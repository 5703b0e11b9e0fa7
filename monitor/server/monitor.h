// A monitor of a ledger (CONTRACT section 5c, docs/contract/monitors.md):
// it follows the log over C2SP tlog-tiles, replays every entry into its own
// tree, run-head map and team-head map (ledger/format/replay), and for each
// checkpoint-time note of version 4 it reads, checks the note's tree and
// map roots against its replay at the note's size. When they match it
// cosigns the note (a map cosignature, ledger/format/cosign/mapcosign.h);
// when they do not, it raises the alarm: it writes the evidence to
// <dir>/alarm.json and cosigns nothing for that log again until an
// operator removes that file.
//
// What it reads from the ledger's HTTP port (`log_url`):
//   GET /checkpoint/time-note              the latest checkpoint's time note
//   GET /tlog/tile/entries/<N>[.p/<W>]     entry bundles (docs/contract/tiles.md)
//
// Its directory (one monitor per directory; the caller locks it):
//   replay.state    the replay (replay.h's format), replaced atomically
//   cosigned.note   the note it cosigned last, with its map cosignature
//   alarm.json      the evidence of a refusal; while it exists the monitor
//                   halts
// Records are durable before a cosignature is served: Step writes
// replay.state and cosigned.note (each fsynced, then renamed) before the
// note is returned by Cosigned(). A crash loses at most the entries
// replayed since the last write, which are read again.
//
// Thread-safe: every method may be called concurrently (Step and Cosign
// take turns).
#ifndef MONITOR_SERVER_MONITOR_H_
#define MONITOR_SERVER_MONITOR_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ledger/format/cosign/mapcosign.h"
#include "ledger/format/note/key_set.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/replay/replay.h"
#include "nlohmann/json_fwd.hpp"
#include "util/http/client.h"
#include "util/http/http.h"
#include "util/stats/stats.h"
#include "util/sync/mutex.h"

namespace ledger::monitor {

struct Options {
  // The ledger's HTTP port, "http://host:port" or "https://host:port".
  std::string log_url;
  // The ledger's verifier key; notes are checked against it, and their
  // origin MUST be its name.
  note::Verifier log_key;
  std::shared_ptr<const cosign::MapCosigner> cosigner;
  std::string dir;
  // Reads a URL (GET); http::Fetch by default, a fake for fault injection.
  std::function<absl::StatusOr<http::Reply>(const std::string& url)> get;
  // POSIX seconds, for the cosignatures' time.
  std::function<uint64_t()> now;
  // The replay is written to replay.state at least every this many entries
  // while it catches up.
  uint64_t save_every = 1'000'000;
};

// What one Step did.
struct Round {
  uint64_t note_size = 0;  // of the note read (0: none, or not version 4)
  uint64_t replayed = 0;   // entries replayed in this round
  bool cosigned = false;   // a new note was cosigned
  std::string skipped;     // why the note was not checked, if it was not
};

struct Status {
  uint64_t replayed = 0;       // entries replayed in all
  uint64_t cosigned_size = 0;  // of the note cosigned last (0: none)
  std::string alarm;           // the finding, when halted
};

class Monitor {
 public:
  // Loads <dir>'s state (a replay of 0 entries when there is none).
  // DATA_LOSS for a state file that is damaged; FAILED_PRECONDITION naming
  // the file when alarm.json is there (the monitor halted, and stays so
  // until an operator who read it removes it).
  static absl::StatusOr<std::unique_ptr<Monitor>> Open(Options options);

  // One round: reads the latest time note; if it is signed by the log's
  // key, of version 4 and beyond what was cosigned, replays the entries up
  // to its size and checks it. OK with what was done, including when the
  // note was skipped; UNAVAILABLE when the log could not be read (try
  // again); FAILED_PRECONDITION when the monitor halted (now or before):
  // the note or the entries are not the log's, evidence in alarm.json.
  absl::StatusOr<Round> Step();

  // A cosignature of one note: the map cosignature line, the note's size,
  // the entries replayed to check it, and whether it was made now (false:
  // the note was cosigned before).
  struct Cosignature {
    std::string line;
    uint64_t size = 0;
    uint64_t replayed = 0;
    bool now = false;
  };
  // Checks and cosigns `signed_note`, a time note as the log signed it
  // (POST /cosign): replays the entries up to its size first. OK with the
  // line (also for a note among the last 1024 cosigned); PERMISSION_DENIED
  // for a note the log's key did not sign or of another origin;
  // INVALID_ARGUMENT for a malformed note or one not of version 4;
  // OUT_OF_RANGE for a note below the entries replayed (not checkable any
  // more); UNAVAILABLE when the log cannot be read; FAILED_PRECONDITION
  // when the note is refused (the alarm) or the monitor halted before.
  absl::StatusOr<Cosignature> Cosign(const std::string& signed_note);

  // The note cosigned last with every line and the map cosignature;
  // empty before the first.
  std::string Cosigned() const;
  Status status() const;
  // ledger_monitor_* metrics, Prometheus text.
  std::string RenderMetrics() const;

 private:
  explicit Monitor(Options options) : options_(std::move(options)) {}

  // GETs `path` from the log.
  absl::StatusOr<std::string> Get(const std::string& path) const;
  // Replays entries [replay_.size(), size) from entry bundles.
  absl::Status CatchUp(uint64_t size, const std::string& note) ABSL_EXCLUSIVE_LOCKS_REQUIRED(step_mu_);
  absl::Status Save() ABSL_EXCLUSIVE_LOCKS_REQUIRED(step_mu_);
  void Remember(const std::string& text, const std::string& line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(step_mu_);
  // Writes alarm.json and halts; returns the FAILED_PRECONDITION Step returns.
  absl::Status Alarm(const std::string& note, const replay::Finding& finding) ABSL_EXCLUSIVE_LOCKS_REQUIRED(step_mu_);
  // The `difference` of alarm.json for a map root of `refused` (teams: the
  // team-head map's) that the replay does not share: the key, both heads,
  // the first entry where they differ (difference.cc; CONTRACT section 5c,
  // "When the roots differ"), or why it was not located.
  nlohmann::json Difference(const std::string& signed_note, const note::CheckpointTime& refused, bool teams)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(step_mu_);
  class EntryReader;
  // A key_rotation entry replayed (CONTRACT section 5d): its statement
  // followed in keys_, or the finding that it does not hold.
  std::optional<replay::Finding> FollowRotation(const receipt::Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(step_mu_);
  // The text of `signed_note`, a time note, opened with the key of its
  // size (keys_, once the entries up to it are replayed).
  absl::StatusOr<std::string> OpenNote(const std::string& signed_note) ABSL_EXCLUSIVE_LOCKS_REQUIRED(step_mu_);

  const Options options_;
  sync::Mutex step_mu_;  // one Cosign at a time: the replay is its alone
  replay::Replay replay_ ABSL_GUARDED_BY(step_mu_);
  // The log's keys by size: log_key, and each rotation replayed, whose
  // notes are kept in <dir>/keys (one JSON string a line) before the
  // replay state that covers them.
  note::KeySet keys_ ABSL_GUARDED_BY(step_mu_);
  std::vector<std::string> rotations_ ABSL_GUARDED_BY(step_mu_);
  // The last notes cosigned (their text, without signatures), with their lines.
  absl::flat_hash_map<std::string, std::string> recent_ ABSL_GUARDED_BY(step_mu_);
  std::deque<std::string> recent_order_ ABSL_GUARDED_BY(step_mu_);
  mutable sync::Mutex mu_;
  std::string cosigned_ ABSL_GUARDED_BY(mu_);
  uint64_t cosigned_size_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t replayed_ ABSL_GUARDED_BY(mu_) = 0;
  std::string alarm_ ABSL_GUARDED_BY(mu_);
  mutable stats::Counter cosignatures_, fetch_errors_, notes_read_;
};

// The monitor's HTTP surface (ledger-monitor --listen):
//   POST /cosign     a time note as the log signed it: Monitor::Cosign;
//                    200 with the map cosignature line, 409 for a note
//                    below the entries replayed, 422 when refused (the
//                    alarm), 403 for a note not the log's, 400 for one it
//                    does not cosign, 503 when the log cannot be read
//   GET  /cosigned   the note cosigned last, with its map cosignature
//                    (404 before the first)
//   GET  /metrics    RenderMetrics; GET /healthz
http::HttpResponse Handle(const http::HttpRequest& r, Monitor& monitor);

// The path of an entry bundle (C2SP tlog-tiles): "tile/entries/<N>" with N
// in groups of three digits ("x001/234"), and ".p/<W>" for a partial one.
std::string EntryBundlePath(uint64_t index, uint64_t width);

// The leaves of an entry bundle of `width` entries: each u16 big-endian
// length, then the leaf. DATA_LOSS unless it holds exactly `width`.
absl::StatusOr<std::vector<std::string_view>> ParseEntryBundle(std::string_view bundle, uint64_t width);

}  // namespace ledger::monitor

#endif  // MONITOR_SERVER_MONITOR_H_
