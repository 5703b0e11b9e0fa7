// The ledger as a client of witnesses (C2SP tlog-witness): every witness of
// a tlog-policy that has a URL gets each new checkpoint, with a consistency
// proof from the size it last cosigned, on a thread of its own; its
// cosignature is verified with its key from the policy, kept, and served
// with the checkpoint it covers.
//
// Appends never wait for a witness: submission reads signed checkpoints
// only, after they are signed. A witness that is down is retried with
// backoff (up to max_backoff_ms); a 409 is retried at once from the size
// the witness states (at most twice in a row).
//
// What is kept: for each witness, its latest 1024 cosignatures in memory,
// each served with the checkpoint it covers; and its latest one, with the
// tree size it covers, in <data_dir>/witnesses/<hex SHA-256 of the
// witness's vkey> (format version 1: "<size>\n<cosignature line>\n",
// replaced atomically), so a restart serves it and resumes from that size.
// In a replicated shard the same is shared through the shard's database
// (Shared, below).
//
// Thread-safe: every method may be called concurrently.
#ifndef WITNESS_CLIENT_WITNESSES_H_
#define WITNESS_CLIENT_WITNESSES_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/tlogpolicy/tlogpolicy.h"
#include "util/http/client.h"
#include "util/sync/mutex.h"

namespace ledger::witnesses {

// A key rotation as a witness is told it: the statement both keys signed.
struct Rotation {
  uint64_t seq = 0;
  std::string note;
};

// What submission needs of the log.
struct Source {
  // The signed checkpoint note of `size` (0: the latest); NOT_FOUND when
  // there is none.
  std::function<absl::StatusOr<std::string>(uint64_t size)> checkpoint;
  // The RFC 9162 consistency proof from `from` to `to`.
  std::function<absl::StatusOr<std::vector<hash::Hash>>(uint64_t from, uint64_t to)> consistency;
  // The log's key rotations (CONTRACT section 5d), ascending seq: each is
  // told to a witness (POST add-key-rotation) before the first checkpoint
  // past it. Unset: none.
  std::function<std::vector<Rotation>()> rotations;
};

// POSTs a body to a URL: HttpPost, or a fake for fault injection.
using Post = std::function<absl::StatusOr<http::Reply>(const std::string& url, const std::string& body)>;

// What a witness last cosigned, as recorded by one of a shard's nodes.
struct Recorded {
  std::string witness;  // hex SHA-256 of the witness's verifier key
  uint64_t size = 0;    // of the checkpoint it covers
  std::string line;     // the cosignature line, with its "\n"
};

// A replicated shard's nodes share one witness history: only the node for
// which `submits()` is true sends checkpoints, each node records the
// cosignatures it receives (`record`), and every node takes those the
// others recorded (`recorded`), polled with the log. So a node that takes
// the lead sends each witness its consistency proof from the size that
// witness last cosigned (no 409), and followers serve the cosignatures of
// the checkpoints they adopted.
struct Shared {
  std::function<bool()> submits;
  std::function<absl::Status(const Recorded&)> record;
  std::function<absl::StatusOr<std::vector<Recorded>>()> recorded;
};

// A witness's cosignature held for a checkpoint.
struct Held {
  std::string witness;  // the name in the policy
  uint64_t time = 0;    // POSIX seconds, as signed
  std::string line;     // the signature line, with its "\n"
};

class Witnesses {
 public:
  struct Options {
    std::string data_dir;  // MUST exist
    int poll_ms = 100;     // how often a new checkpoint is looked for
    int max_backoff_ms = 10'000;
    std::function<int64_t()> now_s;  // POSIX seconds, for ages; default: the system clock
    std::optional<Shared> shared;    // unset: this process alone submits
  };

  // Loads what was kept and starts one thread per witness with a URL.
  // INVALID_ARGUMENT when no witness of the policy has a URL.
  static absl::StatusOr<std::unique_ptr<Witnesses>> Start(tlogpolicy::Policy policy, Source source, Post post,
                                                          Options options);
  // Stops the threads (a submission under way finishes or times out).
  ~Witnesses();

  // The cosignatures held for exactly the checkpoint `note` (the ledger's
  // signed note of one size), in policy order: any of each witness's latest
  // 1024 since this process started, or its latest one before.
  std::vector<Held> For(std::string_view note) const;

  // `note` with the held cosignature lines appended.
  std::string Cosigned(std::string_view note) const;

  // Cosigned(note) once its cosignatures meet the policy's quorum, waiting
  // at most `wait` for the witnesses; then UNAVAILABLE: "the checkpoint of
  // size N lacks the witness quorum Q after W ms: no cosignature from A, B"
  // (the witnesses the quorum names that did not cosign, policy order).
  absl::StatusOr<std::string> CosignedWithQuorum(std::string_view note, std::chrono::milliseconds wait) const;

  // Prometheus text (0.0.4):
  //   ledger_witness_cosignatures_total{witness}        cosignatures received
  //   ledger_witness_failures_total{witness,reason}     conflict (409), refused (4xx, bad cosignature), unavailable
  //   ledger_witness_cosigned_tree_size{witness}        size of the latest cosignature held
  //   ledger_witness_cosignature_age_seconds{witness}   since the time the latest one states
  std::string RenderMetrics() const;

 private:
  struct State;
  Witnesses(tlogpolicy::Policy policy, Source source, Post post, Options options);
  void Run(State& w);
  // One submission of the latest checkpoint; true when the witness now
  // holds it cosigned.
  bool Submit(State& w, const std::string& note, uint64_t size);
  void Keep(State& w);
  // Tells the witness the rotations below `size` it was not told yet.
  void TellRotations(State& w, uint64_t size);
  // Takes what another node recorded for `w`'s witness (Options::shared):
  // held when it verifies over this log's checkpoint of its size, else
  // only the size the witness is at.
  void TakeRecorded(State& w);

  const tlogpolicy::Policy policy_;
  const Source source_;
  const Post post_;
  const Options options_;
  std::vector<std::unique_ptr<State>> states_;
  sync::Mutex stop_mu_;
  sync::CondVar stop_cv_;
  bool stop_ ABSL_GUARDED_BY(stop_mu_) = false;
};

}  // namespace ledger::witnesses

#endif  // WITNESS_CLIENT_WITNESSES_H_
