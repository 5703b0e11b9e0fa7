// The steps of VerifyPack that check what the signed files hold
// (steps.h): the entries and proofs, the outcomes and the report.
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "export/pack/pack.h"
#include "export/pack/team_window.h"
#include "export/verify/cc/internal/file_checks.h"
#include "export/verify/cc/steps.h"
#include "ledger/format/note/key_set.h"

namespace ledger::verify {

Step<Proven> CheckEntriesAndProofs(const StreamCheck& stream, const std::string* run_head,
                                   const std::string* team_window, const std::string* redactions,
                                   const std::string* retention, const std::string* retention_policy,
                                   const Keyed& keyed, const Checkpointed& checkpointed, Timed timed) {
  const manifest::Manifest& manifest = keyed.manifest;
  Result& told = timed.told;
  if (!stream.entries_checked() || !stream.proofs_checked()) {
    return absl::InternalError("verify: entries or proofs were not checked");
  }
  // The entries' own failures first; then, in a pack of format 8, the
  // erased entries against their redactions (CONTRACT section 8) before
  // the multiproof's, which a redaction altered would break; in a pack of
  // format 9, the retention entry and policy before the entries' scope
  // (CONTRACT section 9: the scope's from_seq is the entry's line).
  std::optional<Failure> first = stream.first_failure();
  if (first && first->file != pack::kMultiproof && first->file != pack::kRedactions &&
      first->file != pack::kRetention && !(manifest.format == 9 && first->stage == Failure::kScope)) {
    return Fail(told, first->file, first->seq, first->message);
  }
  if (auto bad = CheckRedactions(manifest, redactions, stream.erased(), &told)) {
    return Fail(told, bad->file, bad->seq, bad->message);
  }
  // Format 9: the retention entry and policy that say why the run's first
  // entries are not in the pack (CONTRACT section 9).
  if (auto bad = CheckRetention(manifest, retention, retention_policy, &told)) {
    return Fail(told, bad->file, bad->seq, bad->message);
  }
  if (first) return Fail(told, first->file, first->seq, first->message);
  if (manifest.format == 9 && stream.entries() == 0) {
    return Fail(told, pack::kEntries, -1, "a pack of format 9 holds at least one entry of its run");
  }
  if (std::string failure = CheckTimeAgainstEntries(told, stream, checkpointed.cosignature_times); !failure.empty()) {
    return Fail(told, pack::kCheckpointTime, -1, failure);
  }
  // That the pack is the whole run (the run chain, gap-free from the run's
  // first entry, was checked with the proofs).
  if (std::string failure = CheckRunHead(manifest, run_head, stream, &told); !failure.empty()) {
    return Fail(told, pack::kRunHead, -1, failure);
  }
  // That a team window holds every entry of its team (the team chain).
  if (std::string failure = CheckTeamWindow(manifest, checkpointed.cp, team_window, stream, &told); !failure.empty()) {
    return Fail(told, pack::kTeamWindow, -1, failure);
  }
  if (stream.more_proofs_than_entries()) return Fail(told, pack::kProofs, -1, "more proofs than entries");
  std::optional<uint64_t> last_seq = stream.last_seq();
  if (manifest.scope.kind() == "seq" && (!last_seq || *last_seq + 1 != manifest.scope.to_seq)) {
    return Fail(told, pack::kEntries, -1, "the seq range ends early");
  }
  told.entries = stream.entries();
  for (const StreamCheck::Epoch& e : stream.epochs()) {
    told.leader_epochs.push_back(absl::StrCat("leader epoch ", e.epoch, ": node ", e.node, " leads from seq ", e.seq,
                                              ", over the tree of size ", e.seq, " with root ", e.previous_root, "."));
  }
  for (const StreamCheck::Rotation& r : stream.rotations()) {
    // CONTRACT section 5d: the statement both keys signed, of this log.
    if (absl::Status s = note::CheckKeyRotation(told.origin, r.seq, r.old_key, r.new_key, r.note); !s.ok()) {
      return Fail(told, pack::kEntries, static_cast<int64_t>(r.seq),
                  absl::StrCat("key_rotation: ", std::string(s.message())));
    }
    told.key_rotations.push_back(absl::StrCat("key rotation at seq ", r.seq, ": the log's key moved from ", r.old_key,
                                              " to ", r.new_key, " (a statement both keys signed)."));
  }
  if (told.entries != manifest.entries) {
    return Fail(told, pack::kManifest, -1,
                absl::StrCat("counts.entries says ", manifest.entries, ", the pack has ", told.entries));
  }
  return Proven{std::move(told)};
}

Step<Projected> CheckOutcomes(const std::string& pack_path, const std::string& outcomes_digest,
                              const manifest::Manifest& manifest, StreamedChecks& streamed, Proven proven) {
  Result& told = proven.told;
  // Compared by digest, so that neither document is held in memory.
  if (!streamed.outcomes_recomputed()) return absl::InternalError("verify: outcomes were not recomputed");
  auto recomputed = streamed.OutcomesDigest();
  if (!recomputed.ok()) return Fail(told, pack::kOutcomes, -1, std::string(recomputed.status().message()));
  if (*recomputed != outcomes_digest) {
    if (auto twice = ArchivedFileDuplicateKey(pack_path, pack::kOutcomes)) {
      return Fail(told, pack::kOutcomes, -1, absl::StrCat("key ", *twice, " twice"));
    }
    return Fail(told, pack::kOutcomes, -1, "differs from the outcomes recomputed from the entries");
  }
  if (auto s = CheckDeadlines(manifest, told.signed_at_us, streamed.outcomes()); !s.empty()) {
    return Fail(told, pack::kOutcomes, -1, s);
  }
  if (told.run_complete.has_value()) {
    auto unsettled = pack::UnsettledSteps(streamed.outcomes());
    if (!unsettled.ok()) return Fail(told, pack::kOutcomes, -1, std::string(unsettled.status().message()));
    told.unsettled = *std::move(unsettled);
  }
  return Projected{std::move(told)};
}

// The first format whose page's words never change (CONTRACT section 7):
// each later format adds to it, and its pages stay as they were.
constexpr int kFixedPageFormat = 6;

absl::StatusOr<Result> CheckReport(const std::string& pack_path, const Files& files, StreamedChecks& streamed,
                                   const manifest::Manifest& manifest, bool by_digest, Projected projected) {
  Result& told = projected.told;
  // The page of format 6 or later is rebuilt whatever is asked: its words
  // change only with a new format.
  if (by_digest && manifest.format < kFixedPageFormat) {  // its digest was checked against the manifest's
    told.report_by_digest = true;
    told.ok = true;
    return std::move(told);
  }
  // Rebuilt from what the steps before checked by the exporter's own
  // function, byte for byte.
  if (!streamed.report_rebuilt()) return absl::InternalError("verify: the report was not rebuilt");
  auto rebuilt = streamed.ReportDigest();
  if (!rebuilt.ok()) return Fail(told, pack::kReport, -1, std::string(rebuilt.status().message()));
  if (*rebuilt != files.digests.at(pack::kReport)) {
    const std::string* time_note = files.Find(pack::kCheckpointTime);
    std::string why = ReportDifference(pack_path, files.small.at(pack::kManifest), streamed.outcomes(),
                                       files.small.at(pack::kCheckpoint), time_note ? *time_note : std::string());
    // The page's words are fixed from format 6 on: an older pack may hold
    // the page an earlier version wrote.
    if (manifest.format < kFixedPageFormat) {
      absl::StrAppend(&why, " (a pack of format ", manifest.format,
                      " may hold the page of the version that wrote it: --report-by-digest checks the page by its "
                      "digest only)");
    }
    return Fail(told, pack::kReport, -1, why);
  }
  told.ok = true;
  return std::move(told);
}

}  // namespace ledger::verify
