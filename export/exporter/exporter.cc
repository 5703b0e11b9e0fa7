#include "export/exporter/exporter.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "export/exporter/internal/steps.h"
#include "export/exporter/pruned.h"
#include "export/pack/pack.h"
#include "export/pack/team_window.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/redaction.h"
#include "ledger/format/retention/pruned.h"
#include "ledger/format/runmap/proof_json.h"
#include "nlohmann/json.hpp"

namespace ledger::exporter::internal {
namespace {

absl::Status WriteFile(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) return absl::UnavailableError(absl::StrCat("export: cannot write ", path));
  return absl::OkStatus();
}

// The first seq below the view's size whose logged_at_us is >= t
// (logged_at_us never decreases along the log).
// Pruned entries (CONTRACT section 9) have no time left: the search is
// over the entries kept, so every kept entry below the result is logged
// before t and every kept entry at or above it at or after t.
absl::StatusOr<uint64_t> FirstAtOrAfter(const log::LogView& view, int64_t t) {
  uint64_t lo = 0, hi = view.size();
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    auto leaf = view.GetLeaf(mid);
    if (!leaf.ok()) return leaf.status();
    uint64_t at = mid;
    if (retention::LooksPruned(*leaf)) {
      auto kept = view.NextKeptLeaf(mid);
      if (!kept.ok()) return kept.status();
      if (!kept->has_value() || (*kept)->first >= hi) {
        hi = mid;
        continue;
      }
      at = (*kept)->first;
      *leaf = std::move((*kept)->second);
    }
    auto entry = receipt::ParseStored(*leaf);
    if (!entry.ok()) return absl::DataLossError(absl::StrCat("entry ", at, ": ", entry.status().message()));
    if (entry->logged_at_us < t) {
      lo = at + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// consistency.json, from the auditor's earlier checkpoint `since`.
absl::StatusOr<std::string> Consistency(const log::Log& log, const std::string& since, uint64_t size) {
  // The size the note claims says which of the log's keys must have signed it.
  auto claimed = note::ClaimedCheckpoint(since);
  if (!claimed.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", claimed.status().message()));
  auto text = log.Keys().Open(since, claimed->size);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("since: ", text.status().message()));
  }
  auto old = note::ParseCheckpoint(*text);
  if (!old.ok() || old->origin != log.origin()) {
    return absl::InvalidArgumentError("since: not a checkpoint of this log");
  }
  if (old->size > size) {
    return absl::InvalidArgumentError(
        absl::StrCat("since: its size ", old->size, " is beyond the checkpoint's ", size));
  }
  auto proof = log.ProveConsistency(old->size, size);
  if (!proof.ok()) return proof.status();
  nlohmann::ordered_json c = {{"old_checkpoint", since}, {"proof", nlohmann::ordered_json::array()}};
  for (const auto& h : proof->hashes) c["proof"].push_back(hash::Hex(h));
  return c.dump() + "\n";
}

std::string Utc(int64_t us) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", absl::FromUnixMicros(us), absl::UTCTimeZone());
}

}  // namespace

absl::Status Charge(const ExportOptions& options, const pack::ScratchDir& dir, uint64_t more) {
  return options.lease != nullptr ? options.lease->Set(DiskUsage(dir.path()) + more) : absl::OkStatus();
}

absl::StatusOr<Prepared> Prepare(const log::Log& log, const Scope& scope, const ExportOptions& options) {
  // A run pack is of the checkpoint its run-head proof is of.
  std::optional<runmap::KeyedPath> run_head, team_head;
  absl::StatusOr<log::SignedCheckpoint> found = absl::UnknownError("");
  if (scope.is_run()) {
    auto proof = log.ProveRun(scope.team, scope.run_id);
    if (!proof.ok()) return proof.status();
    found = proof->checkpoint;
    run_head = runmap::KeyedPath{proof->key, std::move(proof->path)};
  } else if (auto team = scope.is_team_window() ? log.ProveTeam(scope.team)
                                                : absl::StatusOr<log::RunProof>(absl::FailedPreconditionError(""));
             team.ok()) {
    // A team window is of the checkpoint its team-head proof is of.
    found = team->checkpoint;
    team_head = runmap::KeyedPath{team->key, std::move(team->path)};
  } else if (absl::IsFailedPrecondition(team.status())) {
    found = log.Checkpoint(0);  // a seq range, or a ledger without the maps
  } else {
    return team.status();
  }
  if (absl::IsNotFound(found.status())) {
    return absl::FailedPreconditionError(absl::StrCat("export: ", found.status().message()));
  }
  if (!found.ok()) return found.status();
  auto view = log.ViewAt(found->size);
  if (!view.ok()) return view.status();
  Prepared p{*std::move(found), *std::move(view), std::move(run_head), std::move(team_head), {}, {}, {}, 0, 0, {}};
  const log::SignedCheckpoint& cp = p.cp;
  if (cp.time_note.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("export: the checkpoint of size ", cp.size, " has no signed time"));
  }
  p.checkpoint_file = cp.note;
  if (options.cosign) {
    auto cosigned = options.cosign(cp.note);
    if (!cosigned.ok()) {
      return absl::Status(cosigned.status().code(), absl::StrCat("export: ", cosigned.status().message()));
    }
    p.checkpoint_file = *std::move(cosigned);
  }
  p.time_note_file = cp.time_note;
  if (options.map_cosign) {
    auto cosigned = options.map_cosign(cp.time_note);
    if (!cosigned.ok()) {
      return absl::Status(cosigned.status().code(), absl::StrCat("export: ", cosigned.status().message()));
    }
    p.time_note_file = *std::move(cosigned);
  }
  manifest::Manifest& header = p.header;
  header.origin = log.origin();
  header.scope = scope;
  header.tree_size = cp.size;
  header.root = hash::Hex(cp.root);
  header.unknown_grace_ms = options.unknown_grace_ms;
  // The format says what the pack carries, as the checkpoint's note does.
  // Format F carries a note of version F - 1 (CONTRACT section 7).
  header.format = std::max(cp.time_version, 1) + 1;
  if (header.format == 5 && options.pack_format >= 6) header.format = std::min(options.pack_format, 7);
  if (scope.is_run()) {
    header.scope = {scope.team, scope.run_id};
    auto from = RunAcrossLine(p.view, scope.team, scope.run_id);
    if (!from.ok()) return from.status();
    if (from->has_value()) {
      if (options.pack_format < 9 || header.format < 7) {
        return RunPruned(p.view, scope.team, scope.run_id, (*from)->pruned_seq, /*ask_for_9=*/true);
      }
      header.scope.from_seq = (*from)->from_seq;
      p.run_from = *std::move(from);
    }
  } else if (scope.is_team_window()) {
    if (scope.to_us <= scope.from_us) return absl::InvalidArgumentError("time: want from < to");
    if (auto s = CheckWindowStart(p.view, scope.team, scope.from_us); !s.ok()) return s;
    auto lo = FirstAtOrAfter(p.view, scope.from_us);
    if (!lo.ok()) return lo.status();
    auto hi = FirstAtOrAfter(p.view, scope.to_us);
    if (!hi.ok()) return hi.status();
    p.window_lo = *lo;
    p.window_hi = *hi;
    header.scope = {scope.team, "", p.window_lo, p.window_hi, scope.from_us, scope.to_us};
  } else {
    if (scope.from_seq >= scope.to_seq) {
      return absl::InvalidArgumentError("seq: want A:B with A < B");
    }
    if (scope.to_seq > cp.size) {
      return absl::OutOfRangeError(
          absl::StrCat("seq: ", scope.to_seq, " is beyond the latest checkpoint's size ", cp.size));
    }
    header.scope = {"", "", scope.from_seq, scope.to_seq};
  }
  return p;
}

// A run's emptiness is known from its run-head proof, before it is read.
absl::Status CheckRunNotEmpty(const Scope& scope, const ExportOptions& options, const Prepared& prepared) {
  if (options.empty == EmptyScope::kWrite || !scope.is_run() || prepared.run_head->path.found.has_value()) {
    return absl::OkStatus();
  }
  return absl::NotFoundError(
      absl::StrCat("run ", scope.team, "/", scope.run_id, " has no entry up to tree size ", prepared.size()));
}

// A window's, once it was read.
absl::Status CheckWindowNotEmpty(const Scope& scope, const ExportOptions& options, const Prepared& prepared,
                                 const Staged& staged) {
  if (options.empty == EmptyScope::kWrite || !scope.is_team_window() || staged.entries_count != 0) {
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("team ", scope.team, " has no entry logged in [", Utc(scope.from_us), ", ",
                                          Utc(scope.to_us), ") up to tree size ", prepared.size()));
}

absl::StatusOr<Written> WriteFiles(const log::Log& log, const ExportOptions& options, const Prepared& prepared,
                                   Staged& staged, const pack::ScratchDir& dir) {
  Written w;
  w.files = {{pack::kEntries, staged.entries}, {staged.proofs_name, staged.proofs}};
  w.digests = staged.digests;
  auto write = [&](const char* name, std::string_view text) {
    w.files[name] = {dir.path() + "/" + name};
    return WriteFile(w.files[name].path, text);
  };
  if (auto s = write(pack::kCheckpoint, prepared.checkpoint_file); !s.ok()) return s;
  if (auto s = write(pack::kCheckpointTime, prepared.time_note_file); !s.ok()) return s;
  if (prepared.run_head.has_value()) {
    if (auto s = write(pack::kRunHead, runmap::EncodeProof(*prepared.run_head) + "\n"); !s.ok()) return s;
  }
  if (prepared.run_from.has_value()) {
    if (auto s = write(pack::kRetention, prepared.run_from->retention_leaf + "\n"); !s.ok()) return s;
    if (auto s = write(pack::kRetentionPolicy, prepared.run_from->policy_text); !s.ok()) return s;
  }
  if (!staged.redaction_leaves.empty()) {
    std::string lines;
    for (const std::string& leaf : staged.redaction_leaves) absl::StrAppend(&lines, leaf, "\n");
    if (auto s = write(pack::kRedactions, lines); !s.ok()) return s;
  }
  if (staged.team_window.has_value()) {
    if (auto s = write(pack::kTeamWindow, pack::EncodeTeamWindow(*staged.team_window)); !s.ok()) return s;
  }
  if (!options.since.empty()) {
    auto consistency = Consistency(log, options.since, prepared.size());
    if (!consistency.ok()) return consistency.status();
    if (auto s = write(pack::kConsistency, *consistency); !s.ok()) return s;
  }
  if (auto s = write(pack::kVkey, log.VerifierKeyAt(prepared.size()) + "\n"); !s.ok()) return s;
  // outcomes.json and report.html, derived from the outcomes projected.
  manifest::Manifest header = prepared.header;
  header.entries = staged.entries_count;
  header.format = staged.format;
  for (const char* name : {pack::kOutcomes, pack::kReport}) {
    StagedFile out(dir.path() + "/" + name);
    auto sink = [&](std::string_view piece) {
      out.buffer()->append(piece);
      out.Spill();
    };
    absl::Status written =
        name == std::string_view(pack::kOutcomes)
            ? staged.outcomes->Write(sink)
            : pack::WriteReport(header, *staged.outcomes, prepared.checkpoint_file, prepared.time_note_file, sink);
    if (!written.ok()) return written;
    auto digest = out.Close();
    if (!digest.ok()) return digest.status();
    w.digests[name] = *digest;
    w.files[name] = out.file();
  }
  return w;
}

absl::Status Seal(const log::Log& log, const ExportOptions& options, const Prepared& prepared, const Staged& staged,
                  Written written, const pack::ScratchDir& dir, const std::string& out_path) {
  manifest::Manifest manifest = prepared.header;
  manifest.entries = staged.entries_count;
  manifest.format = staged.format;
  for (const auto& [name, file] : written.files) {
    if (!written.digests.count(name)) {
      auto digest = pack::FileSha256(file.path);
      if (!digest.ok()) return digest.status();
      written.digests[name] = *digest;
    }
    manifest.files[name] = written.digests[name];
  }
  std::string manifest_text = manifest::Encode(manifest);
  auto sig = log.SignNoteAt(prepared.size(), hash::Hex(hash::Sha256(manifest_text)) + "\n");
  if (!sig.ok()) return sig.status();
  written.files[pack::kManifest] = {dir.path() + "/" + pack::kManifest};
  written.files[pack::kManifestSig] = {dir.path() + "/" + pack::kManifestSig};
  if (auto s = WriteFile(written.files[pack::kManifest].path, manifest_text); !s.ok()) return s;
  if (auto s = WriteFile(written.files[pack::kManifestSig].path, *sig); !s.ok()) return s;
  // The archive holds the staged files once more.
  if (auto s = Charge(options, dir, DiskUsage(dir.path())); !s.ok()) return s;
  return pack::WriteArchive(written.files, out_path);
}

}  // namespace ledger::exporter::internal

namespace ledger::exporter {

absl::Status ExportPack(const log::Log& log, const Scope& scope, const std::string& out_path,
                        const ExportOptions& options) {
  if (options.pack_format < 5 || options.pack_format > 9) {
    return absl::InvalidArgumentError(absl::StrCat("pack_format: want 5, 6, 7, 8 or 9, found ", options.pack_format));
  }
  // The steps in order (internal/steps.h); on any error the scratch
  // directory goes with everything staged in it.
  auto prepared = internal::Prepare(log, scope, options);
  if (!prepared.ok()) return prepared.status();
  if (auto s = internal::CheckRunNotEmpty(scope, options, *prepared); !s.ok()) return s;
  const pack::ScratchDir dir(
      options.lease != nullptr ? options.lease->dir() : std::filesystem::temp_directory_path().string(),
      kStagingPrefix);
  if (dir.path().empty()) return absl::UnavailableError("export: cannot create a temporary directory");
  auto staged = internal::Stage(scope, options, *prepared, dir);
  if (!staged.ok()) return staged.status();
  if (auto s = internal::CheckWindowNotEmpty(scope, options, *prepared, *staged); !s.ok()) return s;
  auto written = internal::WriteFiles(log, options, *prepared, *staged, dir);
  if (!written.ok()) return written.status();
  return internal::Seal(log, options, *prepared, *staged, *std::move(written), dir, out_path);
}

}  // namespace ledger::exporter
