// The steps of ExportPack (exporter.h), in the order it takes them, each a
// function of the values the steps before it produced (and the inputs:
// the log, the scope, the ExportOptions, the scratch directory):
//
//   Prepared  Prepare(log, scope, options)
//               the checkpoint and a view of the log at it, the run's or
//               team's head proof, the checkpoint and time-note files with
//               the cosignatures held for them, the manifest's header, a
//               team window's seqs
//             CheckRunNotEmpty(scope, options, Prepared)
//   Staged    Stage(scope, options, Prepared, dir)                  stage.cc
//               entries.jsonl and proofs.jsonl or multiproof.txt,
//               compressed and hashed as they are written; the outcomes
//               projected from the entries; the redaction entries the
//               erased ones name; a team window's bounds; the entries
//               counted and the pack's format
//             CheckWindowNotEmpty(scope, options, Staged)
//   Written   WriteFiles(log, options, Prepared, Staged, dir)
//               the small files (checkpoint, checkpoint-time, vkey,
//               run-head.json, team-window.json, redactions.jsonl,
//               consistency.json), outcomes.json and report.html
//             Seal(log, options, Prepared, Written, dir, out_path)
//               the manifest, its signature and the archive
//
// Internal to export_exporter. Thread-compatible: one thread runs the
// chain; Stage projects outcomes on the task pool beside it.
#ifndef EXPORT_EXPORTER_INTERNAL_STEPS_H_
#define EXPORT_EXPORTER_INTERNAL_STEPS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "export/exporter/exporter.h"
#include "export/exporter/pruned.h"
#include "export/exporter/team_window_bounds.h"
#include "export/gzip/blocked_gzip.h"
#include "export/manifest/manifest.h"
#include "export/pack/pack.h"
#include "export/pack/team_window.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/runmap/proof_json.h"
#include "ledger/storage/log/log.h"

namespace ledger::exporter::internal {

// A staged file of the pack: compressed and hashed as it is written, on
// worker threads (export/gzip), so that it is neither written to disk
// uncompressed nor read back; the archive splices its members in.
class StagedFile {
 public:
  explicit StagedFile(const std::string& path) : path_(path), gzip_(path, &sha_) {}

  std::string* buffer() { return gzip_.buffer(); }
  // Hands whole blocks of the buffer to the workers.
  void Spill() { gzip_.Spill(); }
  // Finishes the file; the hex SHA-256 of its content.
  absl::StatusOr<std::string> Close() {
    if (auto s = gzip_.Finish(); !s.ok()) return s;
    return hash::Hex(sha_.Final());
  }
  pack::ArchiveFile file() const { return {path_, true, gzip_.input_bytes()}; }

 private:
  std::string path_;
  hash::Sha256Stream sha_;  // before gzip_, whose workers use it
  gzip::Writer gzip_;
};

struct Prepared {
  log::SignedCheckpoint cp;                    // a run pack's is the one of its run-head proof
  log::LogView view;                           // the log at it: every leaf and node of the pack is read through it
  std::optional<runmap::KeyedPath> run_head;   // a run's
  std::optional<runmap::KeyedPath> team_head;  // a team window's (none without the maps)
  std::string checkpoint_file;                 // the checkpoint with the cosignatures held for it
  std::string time_note_file;                  // its time note with the monitors' map cosignatures
  manifest::Manifest header;                   // all but the files, the entries and format 8
  uint64_t window_lo = 0, window_hi = 0;       // a team window's seqs [lo, hi)
  std::optional<RunFrom> run_from;             // a run pack across the retention line (format 9)
  uint64_t size() const { return cp.size; }
};

struct Staged {
  pack::ArchiveFile entries, proofs;           // entries.jsonl; proofs.jsonl or multiproof.txt
  std::string proofs_name;                     // which of the two
  std::map<std::string, std::string> digests;  // of both, hex SHA-256
  uint64_t entries_count = 0;
  int format = 0;  // the header's, 8 when the pack holds an erased entry, 9 across the retention line
  std::unique_ptr<pack::Outcomes> outcomes;
  std::vector<std::string> redaction_leaves;  // format 8: redactions.jsonl's lines
  std::optional<pack::TeamWindow> team_window;
};

struct Written {
  std::map<std::string, pack::ArchiveFile> files;
  std::map<std::string, std::string> digests;  // those known as they were written
};

absl::StatusOr<Prepared> Prepare(const log::Log& log, const Scope& scope, const ExportOptions& options);
absl::Status CheckRunNotEmpty(const Scope& scope, const ExportOptions& options, const Prepared& prepared);
absl::StatusOr<Staged> Stage(const Scope& scope, const ExportOptions& options, const Prepared& prepared,
                             const pack::ScratchDir& dir);
absl::Status CheckWindowNotEmpty(const Scope& scope, const ExportOptions& options, const Prepared& prepared,
                                 const Staged& staged);
absl::StatusOr<Written> WriteFiles(const log::Log& log, const ExportOptions& options, const Prepared& prepared,
                                   Staged& staged, const pack::ScratchDir& dir);
absl::Status Seal(const log::Log& log, const ExportOptions& options, const Prepared& prepared, const Staged& staged,
                  Written written, const pack::ScratchDir& dir, const std::string& out_path);

// What `dir` holds on disk, told to the options' quota, plus `more` bytes
// about to be written.
absl::Status Charge(const ExportOptions& options, const pack::ScratchDir& dir, uint64_t more);

}  // namespace ledger::exporter::internal

#endif  // EXPORT_EXPORTER_INTERNAL_STEPS_H_
