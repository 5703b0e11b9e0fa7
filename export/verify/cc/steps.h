// The steps of VerifyPack (verify.h), each a function of the values the
// steps before it produced; the first, ReadArchive, reads the pack into an
// Archive. A step that fails stops the chain with what VerifyPack returns
// (Stop).
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
#include "export/verify/cc/scope.h"
#include "export/verify/cc/stream_check.h"
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
  // proofs.jsonl, against `cp` and `scope`; MUST follow Entries. The report
  // is rebuilt from `manifest_text`, the outcomes and `checkpoint_note` on a
  // thread. An error only when the file cannot be read.
  absl::Status Proofs(const note::Checkpoint& cp, const Scope& scope, const std::string& manifest_text,
                      const std::string& checkpoint_note, NextPiece next);

  const StreamCheck& stream() const { return stream_; }
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
Step<Archive> ReadArchive(const std::string& pack_path);

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_STEPS_H_
