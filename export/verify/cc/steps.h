// The steps of VerifyPack (verify.h), in the order it takes them, each a
// function of the values the steps before it produced (and the Options):
//
//   Archive       ReadArchive(the pack's path)
//   Keyed         CheckKeyAndManifest(Files, the unchecked manifest)
//   Checkpointed  CheckCheckpoint(the checkpoint file, the unchecked checkpoint, Keyed)
//   Timed         CheckConsistencyAndTime(consistency.json, checkpoint-time, Keyed, Checkpointed)
//   Proven        CheckEntriesAndProofs(the StreamCheck, run-head.json, team-window.json, redactions.jsonl,
//                 retention.jsonl, retention-policy.txt, Keyed,
//                 Checkpointed, Timed)
//   Projected     CheckOutcomes(outcomes.json's digest, the manifest, StreamedChecks, Proven)
//   Result        CheckReport(Files, StreamedChecks, Projected)
//
// A step that fails stops the chain with what VerifyPack returns (Stop).
// Each value after the archive carries `told`: the Result as far as the
// steps up to it established (the key trusted, the origin, the root, the
// signed time, ...), which a failure in a later step reports with its
// reason, as Result::Json and Summary print it.
//
// Internal to export_verify. Thread-compatible: one thread runs the chain;
// StreamedChecks hashes the outcomes and the report on threads of its own.
#ifndef EXPORT_VERIFY_CC_STEPS_H_
#define EXPORT_VERIFY_CC_STEPS_H_

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "export/manifest/manifest.h"
#include "export/pack/pack.h"
#include "export/verify/cc/internal/stream_check.h"
#include "export/verify/cc/scope.h"
#include "export/verify/cc/verify.h"
#include "ledger/format/note/note.h"

namespace ledger::verify {

// Where the chain stops before its end, as VerifyPack returns it: a failed
// Result, or an error when the pack cannot be examined.
using Stop = absl::StatusOr<Result>;

// What a step gives the next one, or the Stop that ends the chain there.
// Implicit, so that a step returns its value, a failed Result, an error
// (MUST NOT be OK) or the Stop of a step it took.
template <typename T>
class Step {
 public:
  Step(T value) : step_(std::in_place_index<1>, std::move(value)) {}
  Step(Result failed) : step_(std::in_place_index<0>, std::move(failed)) {}
  Step(absl::Status error) : step_(std::in_place_index<0>, std::move(error)) {}
  Step(Stop stop) : step_(std::in_place_index<0>, std::move(stop)) {}

  // Where the chain stops, or null when the value follows.
  Stop* stop() { return std::get_if<0>(&step_); }
  // The value; MUST NOT be called when stop() is not null.
  T& operator*() { return std::get<1>(step_); }
  T* operator->() { return &std::get<1>(step_); }

 private:
  std::variant<Stop, T> step_;
};

// `r` failed at `file` (and `seq`, or -1) for `message`: what a pack chose
// of the text is escaped for the terminal.
Result Fail(Result r, const std::string& file, int64_t seq, const std::string& message);

// The pack's files as the archive held them.
struct Files {
  // Each file's content but entries.jsonl's, proofs.jsonl's,
  // outcomes.json's and report.html's (those are larger), by name.
  std::map<std::string, std::string> small;
  // Each file's SHA-256 (hex), by name.
  std::map<std::string, std::string> digests;

  // A small file's content, or null when the pack has no such file.
  const std::string* Find(const std::string& name) const;
};

// The checkpoint and the manifest as parsed when read, before their
// signatures are checked (the key may come later in the archive): they
// steer the streamed checks, and nothing they say is reported before the
// signature that covers it is checked.
struct Unchecked {
  std::optional<note::Checkpoint> cp;  // nullopt: not read, or no checkpoint
  absl::StatusOr<manifest::Manifest> manifest = absl::NotFoundError("manifest.json: not read");

  // The manifest's scope, or null when it was not read or does not parse.
  const Scope* scope() const { return manifest.ok() ? &manifest->scope : nullptr; }
};

// entries.jsonl and proofs.jsonl checked as they stream (StreamCheck), and
// the outcomes recomputed from the entries and the report rebuilt, each
// hashed on a thread of its own, to be compared with the pack's by digest
// once the steps before have checked what those digests are signed by. Its
// scratch directory holds the StreamCheck's records and the spilled files.
// Not movable: its threads hold its outcomes.
class StreamedChecks {
 public:
  StreamedChecks();
  StreamedChecks(const StreamedChecks&) = delete;
  StreamedChecks& operator=(const StreamedChecks&) = delete;

  // Empty when no temporary directory could be made.
  const std::string& scratch_dir() const { return dir_.path(); }

  // entries.jsonl, against a tree of `tree_size`; the outcomes are then
  // hashed on a thread. An error only when the file cannot be read.
  absl::Status Entries(uint64_t tree_size, NextPiece next);
  // proofs.jsonl or multiproof.txt (`name`), against `cp` and `scope`;
  // MUST follow Entries. The report is rebuilt from `manifest_text`, the
  // outcomes, `checkpoint_note` and `time_note` on a thread. An error only when the
  // file cannot be read.
  absl::Status Proofs(const std::string& name, const note::Checkpoint& cp, const Scope& scope,
                      const std::string& manifest_text, const std::string& checkpoint_note,
                      const std::string& time_note, NextPiece next);

  const StreamCheck& stream() const { return stream_; }
  // Format 8: redactions.jsonl's lines, walked with the entries by the
  // multiproof (StreamCheck::SetRedactions).
  void SetRedactions(std::vector<StreamCheck::Redaction> redactions) { stream_.SetRedactions(std::move(redactions)); }
  pack::Outcomes& outcomes() { return outcomes_; }
  // The digests (hex) of the outcomes recomputed and of the report rebuilt,
  // waiting for their threads; each MUST have started (Entries, Proofs).
  // ReportDigest MUST be asked once.
  bool outcomes_recomputed() const { return outcomes_digest_.valid(); }
  absl::StatusOr<std::string> OutcomesDigest() const { return outcomes_digest_.get(); }
  bool report_rebuilt() const { return report_digest_.valid(); }
  absl::StatusOr<std::string> ReportDigest() { return report_digest_.get(); }

 private:
  // In this order: the threads, last, are waited for first.
  pack::ScratchDir dir_;
  pack::Outcomes outcomes_;
  StreamCheck stream_;
  std::shared_future<absl::StatusOr<std::string>> outcomes_digest_;
  std::future<absl::StatusOr<std::string>> report_digest_;
};

// The pack read once, in archive order, and never extracted: small files
// kept, every file hashed on the way, entries and proofs checked as they
// stream out (or, when they come before what they are checked against,
// spilled to the scratch directory and checked after the archive).
struct Archive {
  Files files;
  Unchecked unchecked;
  std::unique_ptr<StreamedChecks> streamed;  // never null
};
// Each entry checked is told to `progress`, and the bytes of the pack read
// of its size (the count of entries, in the manifest, comes after them).
Step<Archive> ReadArchive(const std::string& pack_path, text::ProgressMeter* progress = nullptr);

// The key the pack is checked with, and the manifest its signature
// (manifest.sig) holds, listing every file of the pack with its digest.
struct Keyed {
  std::string vkey;
  note::Verifier verifier;
  const manifest::Manifest& manifest;  // the Archive's, now checked
  Result told;                         // trusted_key_in_pack, origin, tree_size, scope
};
Step<Keyed> CheckKeyAndManifest(const Files& files, const absl::StatusOr<manifest::Manifest>& unchecked_manifest,
                                const Options& options);

// The checkpoint (`checkpoint_note`, the pack's file), its signature
// holding, the one the manifest describes and the entries were checked
// against (`unchecked_cp`), and what the auditor asked of it
// (--expect-scope, --expect-grace-ms, --not-older-than); under a policy,
// its quorum met.
struct Checkpointed {
  note::Checkpoint cp;
  // Under a policy: each verified cosignature's witness and time.
  std::vector<std::pair<std::string, uint64_t>> cosignature_times;
  Result told;  // and root; quorum and cosigned under a policy
};
Step<Checkpointed> CheckCheckpoint(const std::string& checkpoint_note,
                                   const std::optional<note::Checkpoint>& unchecked_cp, const Keyed& keyed,
                                   const Options& options);

// The consistency proof (`consistency`, null when the pack has none) from
// an earlier checkpoint, the auditor's when given (--since), and the
// checkpoint's signed time (`time_note`, null likewise) against the times
// and notes the auditor kept.
struct Timed {
  Result told;  // and since_*, signed_at_us, note_version, run_map_root, team_map_root
};
Step<Timed> CheckConsistencyAndTime(const std::string* consistency, const std::string* time_note, const Keyed& keyed,
                                    const Checkpointed& checkpointed, const Options& options);

// The entries and proofs as `stream` checked them, the signed time against
// them, and what the scope promises: the whole run (`run_head`, null when
// the pack has none), the whole team in a window (`team_window`, likewise),
// a complete seq range, the entries the manifest counts.
struct Proven {
  Result told;  // and entries, leader_epochs; run_complete, team_window when proven
};
// Format 9: `retention` and `retention_policy`, retention.jsonl and
// retention-policy.txt (null when the pack has none).
Step<Proven> CheckEntriesAndProofs(const StreamCheck& stream, const std::string* run_head,
                                   const std::string* team_window, const std::string* redactions,
                                   const std::string* retention, const std::string* retention_policy,
                                   const Keyed& keyed, const Checkpointed& checkpointed, Timed timed);

// outcomes.json (its digest `outcomes_digest`) against the outcomes that
// `streamed` recomputed from the entries, and no step pending past its
// deadline at the signed time. `pack_path` is read again only to name why
// the digests differ.
struct Projected {
  Result told;  // and unsettled, in a run pack proven complete
};
Step<Projected> CheckOutcomes(const std::string& pack_path, const std::string& outcomes_digest,
                              const manifest::Manifest& manifest, StreamedChecks& streamed, Proven proven);

// report.html against the one `streamed` rebuilt, byte for byte: the Result,
// ok. `pack_path` is read again only to name the first byte that differs.
// With `by_digest`, the report's digest (checked against the manifest) is
// all that is checked of it.
absl::StatusOr<Result> CheckReport(const std::string& pack_path, const Files& files, StreamedChecks& streamed,
                                   const manifest::Manifest& manifest, bool by_digest, Projected projected);

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_STEPS_H_
