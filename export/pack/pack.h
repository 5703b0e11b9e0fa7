// The evidence pack (CONTRACT §7): a gzip'd POSIX tar (the gzip in blocked
// members, export/gzip) with one top folder and these regular files, mode
// 0644, mtime 0, owner 0, in sorted order, byte-identical when written twice
// from the same files:
//
//   checkpoint        the signed checkpoint every proof is against
//   checkpoint-time   its checkpoint-time note (ledger/format/note/note.h), from
//                     manifest format 2 on
//   consistency.json  only with an earlier checkpoint: {"old_checkpoint":
//                     "<that signed note>","proof":["<hex>",...]}
//   entries.jsonl     the leaves in scope, ascending seq, one per line
//   ledger.vkey       the verifier key line
//   manifest.json     format, origin, scope, tree size, root, counts and the
//                     SHA-256 of every file above and below (its grammar:
//                     export/manifest/manifest.h)
//   manifest.sig      a signed note whose text is hex(SHA-256(manifest.json))
//   outcomes.json     step outcomes recomputed from entries.jsonl
//   multiproof.txt    (format 6) the multiproof of the entries' seqs, one
//                     hex hash a line (CONTRACT section 6, "Multiproofs")
//   proofs.jsonl      (formats 1 to 5) {"seq":N,"leaf_hash":"<hex>",
//                     "inclusion":["<hex>",...]}
//   report.html       a page for people: WriteReport of the manifest
//                     (without "files"), the entries and the checkpoint;
//                     the verifier rebuilds it and compares bytes
//
// This library writes and reads the archive and builds the files both the
// exporter and the verifier compute (outcomes, manifest); it links no
// RocksDB and no gRPC.
//
// Thread-safe: functions use only their arguments and the files they name.
#ifndef EXPORT_PACK_PACK_H_
#define EXPORT_PACK_PACK_H_

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "export/gzip/blocked_gzip.h"
#include "export/manifest/manifest.h"
#include "export/pack/report.h"
#include "export/pack/spill.h"
#include "ledger/format/projection/projection.h"
#include "ledger/format/receipt/entry.h"
#include "nlohmann/json.hpp"
#include "util/html/html.h"

namespace evidence::ledger::v1 {
class Step;
class Run;
}  // namespace evidence::ledger::v1

struct archive;
struct archive_entry;

namespace ledger::pack {

inline constexpr char kTopFolder[] = "evidence";
inline constexpr char kCheckpoint[] = "checkpoint";
inline constexpr char kCheckpointTime[] = "checkpoint-time";
inline constexpr char kConsistency[] = "consistency.json";
// Format 3 run packs: the run-head map proof of the run (CONTRACT section 6a).
inline constexpr char kRunHead[] = "run-head.json";
inline constexpr char kEntries[] = "entries.jsonl";
inline constexpr char kVkey[] = "ledger.vkey";
inline constexpr char kManifest[] = "manifest.json";
inline constexpr char kManifestSig[] = "manifest.sig";
inline constexpr char kOutcomes[] = "outcomes.json";
inline constexpr char kProofs[] = "proofs.jsonl";
// Format 6, in place of proofs.jsonl: the multiproof of the entries' seqs
// (CONTRACT section 6, "Multiproofs"), one hex hash a line.
inline constexpr char kMultiproof[] = "multiproof.txt";
inline constexpr char kReport[] = "report.html";
// Format 8: the redaction entries of the pack's erased entries (CONTRACT
// section 8).
inline constexpr char kRedactions[] = "redactions.jsonl";
// Format 9: a run pack across the retention line carries the `retention`
// entry of the pass and rule that pruned its run's first entries, and the
// policy that pass applied (CONTRACT section 9).
inline constexpr char kRetention[] = "retention.jsonl";
inline constexpr char kRetentionPolicy[] = "retention-policy.txt";

// A file's content for WriteArchive: a plain file, or (compressed) the
// finished members of a gzip::Writer that was given `compressed_size` bytes
// of content, which are spliced into the archive as they are.
struct ArchiveFile {
  std::string path;
  bool compressed = false;
  uint64_t compressed_size = 0;
};

// Writes `files` (archive name -> its content) as a deterministic tar.gz at
// `out_path`, names sorted, under kTopFolder, in blocked gzip
// (export/gzip): the same content and staging give the same bytes.
absl::Status WriteArchive(const std::map<std::string, ArchiveFile>& files, const std::string& out_path);
// The same, every file plain (archive name -> path of its content).
absl::Status WriteArchive(const std::map<std::string, std::string>& files, const std::string& out_path);

// What a pack may hold. A 1,000,000-entry run is about 2 GB once inflated
// (proofs.jsonl 1.45 GB), so these allow some 30 million entries: large
// enough for any real scope, small enough that an endless file ends.
struct Limits {
  uint64_t max_file_bytes = uint64_t{64} << 30;
  uint64_t max_total_bytes = uint64_t{128} << 30;
  int max_files = 16;
};

// Reads a pack's files in archive order, once, without writing anything:
// blocked gzip (export/gzip) is inflated on several threads, any other gzip
// by libarchive. Refuses, naming the entry: more than one top folder,
// absolute names, "..", any type but a regular file (the top folder's own
// directory entry excepted, first, mode 0755, mtime 0), duplicate or
// unknown names, names out of sorted order, a mode other than 0644, an
// mtime other than 0, files or a total over the limits, and archives that
// do not decode; at the end, any byte after the last gzip member.
class PackReader {
 public:
  static absl::StatusOr<std::unique_ptr<PackReader>> Open(const std::string& pack_path, const Limits& limits);
  ~PackReader();
  PackReader(const PackReader&) = delete;
  PackReader& operator=(const PackReader&) = delete;

  // Moves to the next file and returns its name (without the top folder);
  // nullopt after the last, once the rest of the file is checked.
  absl::StatusOr<std::optional<std::string>> Next();
  // The next piece of the current file, valid until the next call; empty
  // at the file's end. A sparse file (a gap in the data) is refused.
  absl::StatusOr<std::string_view> Read();

  // How far into the pack's file reading is: its bytes read so far (a few
  // blocks ahead of what Read gave), and its size.
  uint64_t bytes_read() const;
  uint64_t file_bytes() const { return pack_file_bytes_; }

 private:
  explicit PackReader(const std::string& pack_path, const Limits& limits) : pack_path_(pack_path), limits_(limits) {}
  // The member's header checked; its name in the top folder, or nullopt
  // for the top folder's directory entry.
  absl::StatusOr<std::optional<std::string>> Member(archive_entry* e);
  // After the tar's end: nothing but gzip members up to the file's end.
  absl::Status CheckEnd();

  std::string pack_path_;
  Limits limits_;
  archive* archive_ = nullptr;
  std::unique_ptr<gzip::Reader> gzip_;
  std::set<std::string> seen_;
  std::string top_, name_, last_path_;
  uint64_t file_bytes_ = 0, total_bytes_ = 0;
  uint64_t pack_file_bytes_ = 0;
};

// Extracts the pack at `pack_path` into `dir` (existing, empty), with
// PackReader's refusals. Returns name -> path; with `digests`, also fills
// name -> hex SHA-256 of the bytes written.
absl::StatusOr<std::map<std::string, std::string>> ExtractArchive(
    const std::string& pack_path, const std::string& dir, const Limits& limits,
    std::map<std::string, std::string>* digests = nullptr);

// A private directory, PREFIX-XXXXXX (mkdtemp), under the system's
// temporary directory or `parent`, removed with everything in it when the
// object goes. path() is empty if it could not be made.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix);
  ScratchDir(const std::string& parent, const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct StepNotes;  // internal/step_notes.h

// Step outcomes recomputed from entries with the ledger's own projector,
// fed in seq order, in chunks of any size. Memory is bounded: past
// kSpillBytes of records, they are written to sorted runs in a private
// temporary directory (spill.h) and read back when needed. A run is
// written on a thread of its own while the next entries are projected
// (one at a time; its records are read from memory until it is written).
// Thread-compatible: what Write notes is read by threads that start, or
// wait for it, after it returns.
class Outcomes {
 public:
  static constexpr size_t kSpillBytes = size_t{8} << 20;

  // Runs spill under `spill_parent`, or the system's temporary directory
  // when it is empty.
  explicit Outcomes(size_t spill_bytes = kSpillBytes, std::string spill_parent = "");
  ~Outcomes();
  // `entry` MUST be the next entry in scope (parsed with receipt::ParseLeaf).
  absl::Status Add(receipt::Entry entry);
  // The next entries in scope, projected now: the caller keeps them (and
  // may free them on another thread). Adds waiting are projected first.
  absl::Status Project(absl::Span<const receipt::Entry> entries);

  // outcomes.json, a piece at a time: {"runs":[...],"steps":[...]} and a
  // newline, each list sorted by key, deterministic. The whole document is
  // never held. The same pass notes what WriteReport, FirstOverdueStep and
  // UnsettledSteps ask of the steps (step_notes()).
  absl::Status Write(absl::FunctionRef<void(std::string_view)> out);
  // Each step's or run's record (query/projector), in the order Write
  // lists them.
  absl::Status ForEachStepRecord(absl::FunctionRef<void(const evidence::ledger::v1::Step&)> fn);
  absl::Status ForEachRunRecord(absl::FunctionRef<void(const evidence::ledger::v1::Run&)> fn);

  // Runs written to disk so far, or being written.
  size_t spilled_runs() const;

  // What the report lists of the entries projected so far (report.h).
  const ReportEntries& report_entries() const { return report_entries_; }

  // What the last Write noted of the steps (internal/step_notes.h), for
  // this library's readers of them; null before a Write, or after an Add
  // or Project.
  const StepNotes* step_notes() const { return notes_.get(); }

 private:
  absl::Status Flush();
  absl::Status MaybeSpill();
  // Waits for the run being written, if one is, and adds it to runs_.
  absl::Status FinishSpill();
  template <typename Record>
  absl::Status ForEachRecord(projection::Table table, absl::FunctionRef<void(const Record&)> fn);
  // Index rows and step changes are for queries, not outcomes: dropped.
  class Discard final : public projection::Sink {
   public:
    void PutProjection(projection::Table, std::string_view, std::string_view) override {}
    void DeleteProjection(projection::Table, std::string_view) override {}
    bool Keeps() const override { return false; }
  };
  const size_t spill_bytes_;
  const std::string spill_parent_;
  Discard discard_;
  std::unique_ptr<projection::OverlayTxn> txn_;
  std::vector<receipt::Entry> pending_;
  std::unique_ptr<ScratchDir> spill_dir_;
  std::unique_ptr<SpillRuns> runs_;
  // The records being written as a run on another thread (txn_'s base
  // meanwhile), and that run.
  std::unique_ptr<projection::OverlayTxn> spilling_;
  std::future<absl::StatusOr<SpillRuns::Run>> spilled_;
  ReportEntries report_entries_;
  std::unique_ptr<StepNotes> notes_;
};

// A step still pending although its deadline, the start's logged_at_us +
// timeout + the ledger's grace, is before a time the ledger signed: an
// honest ledger declares such a step unknown before it signs that time.
struct OverdueStep {
  std::string team, run_id, step_id;
  int64_t attempt = 0;
  int64_t deadline_us = 0;
};

// The first such step in the order outcomes.json lists them, or nullopt.
absl::StatusOr<std::optional<OverdueStep>> FirstOverdueStep(Outcomes& outcomes, int64_t grace_us, int64_t signed_at_us);

// The steps outcomes.json shows pending or unknown (no completion in the
// pack), in its order, each as "TEAM/RUN/STEP attempt N (pending)" or
// "(unknown)".
absl::StatusOr<std::vector<std::string>> UnsettledSteps(Outcomes& outcomes);

// SHA-256 of a file, hex.
absl::StatusOr<std::string> FileSha256(const std::string& path);

// Text for HTML (util/html).
using ::ledger::html::HtmlEscape;

// The report for people (report.cc), a piece at a time: the scope in
// words; the steps in the order they started, on a timeline with a UTC axis
// and each with its entries (kind, model or tool, target, decision and
// reason, tokens, cost, seq, time); the runs; why charged cost can differ
// from actual; the checkpoint (and its cosignatures, unchecked) and how to
// verify. It MUST be a deterministic function of its arguments alone (no
// clock, no environment), and through `outcomes` of the entries in scope
// (their projection and report_entries()): the exporter writes it from the
// manifest without "files", and the verifier rebuilds it from the checked
// manifest, the outcomes of the checked entries, `checkpoint_note` (the
// checkpoint file's bytes) and `time_note` (the checkpoint-time file's,
// read from format 7 on; "" when the pack has none) with this very
// function and compares bytes (CONTRACT section 7).
absl::Status WriteReport(const manifest::Manifest& manifest, Outcomes& outcomes, const std::string& checkpoint_note,
                         const std::string& time_note, absl::FunctionRef<void(std::string_view)> out);

}  // namespace ledger::pack

#endif  // EXPORT_PACK_PACK_H_
