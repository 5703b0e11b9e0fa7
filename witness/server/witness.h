// A transparency-log witness (C2SP tlog-witness): for each log it is
// configured with (origin and verifier keys) it keeps the latest checkpoint
// it cosigned, and cosigns a submitted checkpoint only when the log signed
// it and it is consistent with that one. It never cosigns two inconsistent
// checkpoints of one origin, across restarts and crashes: the check and
// the durable update of the record (state.h) happen under the log's lock,
// and the answer is given only after the record is on disk.
//
// The calls take and return the HTTP bodies of the protocol, so the HTTP
// server is a thin adapter (cmd/ledger_witness.cc).
//
// Thread-safe: every method may be called concurrently; requests for one
// log are serialized, requests for different logs are not.
#ifndef WITNESS_SERVER_WITNESS_H_
#define WITNESS_SERVER_WITNESS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/note.h"
#include "util/sync/mutex.h"

namespace ledger::witness {

// An HTTP answer: status, Content-Type and body.
struct Reply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// The parsed add-checkpoint request body:
//
//   body      = "old " decimal "\n" *63(base64(hash[32]) "\n") "\n" note
//   note      = checkpoint text "\n" 1*signature-line
//   checkpoint text = origin "\n" decimal(size) "\n" base64(root) "\n" *(extension "\n")
//
// decimal has no leading zeros ("0" itself). INVALID_ARGUMENT naming the
// part and the rule otherwise.
struct AddCheckpointRequest {
  uint64_t old_size = 0;
  std::vector<hash::Hash> proof;
  std::string note;  // the signed checkpoint as sent
  std::string text;  // its text
  std::vector<std::string> signatures;
  std::string origin;
  uint64_t size = 0;
  hash::Hash root{};
};
absl::StatusOr<AddCheckpointRequest> ParseAddCheckpoint(std::string_view body);

// The origin, size and root of checkpoint text (the first three lines; any
// further non-empty lines are extensions).
absl::StatusOr<note::Checkpoint> ParseCheckpointText(std::string_view text);

class Witness {
 public:
  // POSIX seconds, never 0.
  using Clock = std::function<uint64_t()>;

  // Reads the records of the logs signed by `log_keys` (grouped by key
  // name, which is the origin) from `state_dir`, which MUST exist.
  // INVALID_ARGUMENT when no log key is given or one is given twice;
  // DATA_LOSS when a record does not parse, names another origin or is not
  // cosigned by `cosigner` (the witness refuses to start rather than forget
  // what it cosigned); UNAVAILABLE when a record cannot be read.
  static absl::StatusOr<std::unique_ptr<Witness>> Open(std::string state_dir, cosign::Cosigner cosigner,
                                                       std::vector<note::Verifier> log_keys, Clock clock);

  // POST add-checkpoint, exactly as C2SP tlog-witness says: 200 with the
  // cosignature line; 400 for a malformed body or old size above the
  // checkpoint's; 404 for an unknown origin; 403 when no trusted log key
  // signed it or a trusted key's line does not verify; 409 with
  // "<size>\n" (Content-Type text/x.tlog.size) when the old size is not
  // the size last cosigned; 422 for a bad consistency proof, a proof from
  // size 0, a size-0 checkpoint whose root is not the empty root, or the
  // size last cosigned with another root; 503 when the record cannot be
  // written (nothing is cosigned then).
  //
  // Evidence is kept beside the record, the first of each kind, and no
  // later request replaces it: a checkpoint the log signed at the size last
  // cosigned with another root (a fork: <origin hash>.fork, forever), and a
  // log-signed checkpoint whose consistency proof did not verify (a fork,
  // or the log's public checkpoint sent with a junk proof: <origin
  // hash>.refused, removed when that very checkpoint is later cosigned).
  // Requests the log did not sign, or malformed, leave no state. `peer`
  // (the client's address) may make kMaxFailuresPerMinute requests a
  // minute that fail (400, 403, 422), then gets 429 until the minute is over.
  // Every answer but 200 is logged (witness_refused: its status, the peer,
  // the first line of its body).
  Reply AddCheckpoint(std::string_view body, std::string_view peer = "");
  static constexpr int kMaxFailuresPerMinute = 30;

  // POST add-key-rotation (CONTRACT section 5b, "Following a key
  // rotation"): the body is a log's rotation statement signed by both keys
  // (section 5d). 200 "ok" once it is recorded (durably, in <origin
  // hash>.keys) or was already: from then on the old key counts only for
  // checkpoints of sizes up to its seq and the new key for larger ones.
  // 400 malformed; 404 unknown origin; 403 when its old key is not the key
  // this witness trusts at that seq, or a signature fails; 409 when another
  // rotation of that key or at that seq is recorded; 503 when the record
  // cannot be written (nothing changed).
  Reply AddKeyRotation(std::string_view body, std::string_view peer = "");

  // GET <origin hash>/checkpoint: the record (state.h) of the log whose
  // origin hashes to `origin_hash` (lowercase hex SHA-256); 404 when there
  // is none.
  Reply GetCheckpoint(std::string_view origin_hash) const;

  const cosign::Cosigner& cosigner() const { return cosigner_; }

 private:
  struct LogState {
    std::string origin;
    std::vector<note::Verifier> keys;
    mutable ledger::sync::Mutex mu;
    uint64_t size ABSL_GUARDED_BY(mu) = 0;
    hash::Hash root ABSL_GUARDED_BY(mu) = hash::EmptyRoot();  // of size 0 until it cosigns one
    std::string record ABSL_GUARDED_BY(mu);                   // empty: never cosigned
    // The rotations followed, in the order recorded: after one at `seq`
    // its old key counts for sizes up to seq, its new key for larger ones.
    struct Rotation {
      uint64_t seq = 0;
      uint32_t old_id = 0;
      note::Verifier new_key;
      std::string note;
    };
    std::vector<Rotation> rotations ABSL_GUARDED_BY(mu);
  };

  Witness(std::string state_dir, cosign::Cosigner cosigner, Clock clock)
      : state_dir_(std::move(state_dir)), cosigner_(std::move(cosigner)), clock_(std::move(clock)) {}
  absl::Status Load(LogState& log);
  absl::Status LoadRotations(LogState& log);
  // The keys that count for a checkpoint of `size`: the keys given, and the
  // rotations' new keys, each while no rotation retired it.
  static std::vector<note::Verifier> TrustedAt(const LogState& log, uint64_t size)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(log.mu);
  // AddKeyRotation's checks and its change to `log` (not its record).
  static Reply Follow(LogState& log, std::string_view note) ABSL_EXCLUSIVE_LOCKS_REQUIRED(log.mu);
  // 403 unless a trusted key of `log` signed the note and no trusted key's
  // line fails; fills `verified` with the lines that verified.
  std::optional<Reply> CheckLogSignature(const LogState& log, const AddCheckpointRequest& request,
                                         std::vector<std::string>* verified) const;
  Reply Add(std::string_view body);
  Reply Cosign(LogState& log, const AddCheckpointRequest& request, const std::vector<std::string>& log_lines)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(log.mu);
  enum class Evidence {
    kFork,      // <origin hash>.fork: two roots the log signed for one size
    kUnproven,  // <origin hash>.refused: a log-signed checkpoint whose proof did not verify
  };
  std::string EvidencePath(const LogState& log, Evidence kind) const;
  void KeepEvidence(const LogState& log, std::string_view body, std::string_view why, Evidence kind) const;
  // Removes the kept unproven evidence when it is of `cosigned_text`.
  void WithdrawUnproven(const LogState& log, const std::string& cosigned_text) const;
  // Whether `peer` is over its failures this minute; counts `failed`.
  bool OverFailures(std::string_view peer) ABSL_LOCKS_EXCLUDED(failures_mu_);
  void CountFailure(std::string_view peer, const Reply& reply) ABSL_LOCKS_EXCLUDED(failures_mu_);
  // `reply` counted against `peer` (CountFailure) and, unless a 200,
  // logged (witness_refused).
  Reply Counted(Reply reply, std::string_view peer) ABSL_LOCKS_EXCLUDED(failures_mu_);

  const std::string state_dir_;
  const cosign::Cosigner cosigner_;
  const Clock clock_;
  std::map<std::string, std::unique_ptr<LogState>> by_origin_;  // fixed after Open
  std::map<std::string, LogState*> by_hash_;
  ledger::sync::Mutex failures_mu_;
  uint64_t failures_minute_ ABSL_GUARDED_BY(failures_mu_) = 0;                      // clock_() / 60 they count in
  std::map<std::string, int, std::less<>> failures_ ABSL_GUARDED_BY(failures_mu_);  // peer -> failures then
};

}  // namespace ledger::witness

#endif  // WITNESS_SERVER_WITNESS_H_
