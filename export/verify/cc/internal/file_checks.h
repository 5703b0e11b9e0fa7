// The checks VerifyPack makes of single files of a pack, apart from the
// streaming of entries and proofs (stream_check.h): consistency.json, the
// checkpoint-time note, run-head.json, the outcomes' deadlines, and the
// report rebuilt. Each returns what fails, or "" (a status for what cannot
// be computed).
//
// Thread-safe: pure functions of their arguments.
#ifndef EXPORT_VERIFY_CC_INTERNAL_FILE_CHECKS_H_
#define EXPORT_VERIFY_CC_INTERNAL_FILE_CHECKS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "export/manifest/manifest.h"
#include "export/pack/pack.h"
#include "export/verify/cc/internal/stream_check.h"
#include "export/verify/cc/verify.h"
#include "ledger/format/note/note.h"

namespace ledger::verify {

// A failure of a pack's check, naming its file and, when known, its seq.
struct FileFailure {
  std::string file;
  int64_t seq = -1;
  std::string message;
};

// Format 8 (CONTRACT section 8): redactions.jsonl (`file`, null when the
// pack has none) against the erased entries the entry pass read, in the
// contract's order: each line the leaf of a valid redaction of the
// ledger's, ascending; each erased entry's redaction there, naming it, and
// its line exactly the one the redaction gives; no redaction that names
// none of them; the file required with an erased entry and refused
// without one, and in a pack of an earlier format. Adds the line per
// erased entry to `r`.
std::optional<FileFailure> CheckRedactions(const manifest::Manifest& m, const std::string* file,
                                           const std::vector<StreamCheck::Erased>& erased, Result* r);

// Format 9 (CONTRACT section 9, "A run pack across the line"):
// retention.jsonl (`entry`) and retention-policy.txt (`policy`), null when
// the pack has none, in the contract's order: both there in a pack of
// format 9 and in no other; the entry one leaf of a valid retention of the
// ledger's, in the tree and not below its own line; the policy its bytes
// and a policy, whose rule for the scope's team is the entry's; the
// scope's from_seq the entry's line. Notes what the pack states in
// `r->pruned_before` (but the count, which the run-head proof gives).
std::optional<FileFailure> CheckRetention(const manifest::Manifest& m, const std::string* entry,
                                          const std::string* policy, Result* r);

// Checks consistency.json (`json`, null when the pack has none; required
// when `since` is given) against the checkpoint `cp`: exactly the keys
// old_checkpoint and proof, each once, and a proof that starts at `since`
// when given; notes the earlier checkpoint in `r`. What fails, or "".
std::string CheckConsistency(const note::Verifier& verifier, const note::KeySet* keys, const note::Checkpoint& cp,
                             const std::string* json, const std::optional<note::Checkpoint>& since, Result* r);

// Checks checkpoint-time (`time_note`, null when the pack has none): from
// format 2 on it is there, its signature lines well formed and signed once
// by the key, of a version the format allows (format 2: version 1; format
// 3: 2 or 3; format 4: 3), naming exactly the pack's checkpoint; notes its
// time in `r`. What fails, or "".
std::string CheckTime(const note::Verifier& verifier, const note::Checkpoint& cp, const manifest::Manifest& m,
                      const std::string* time_note, Result* r);

// The run-head proof of a format 3 pack (CONTRACT section 7, "Proven
// completeness"): what fails, or "". Notes what is proven in `r`.
std::string CheckRunHead(const manifest::Manifest& m, const std::string* run_head, const StreamCheck& stream,
                         Result* r);

// team-window.json (`file`, null when the pack has none) of a team window
// whose note signs a team-head map root (CONTRACT section 7, "Closed team
// windows"), against the checkpoint `cp`: what fails, or "". Notes what is
// proven in `r` (team_window).
std::string CheckTeamWindow(const manifest::Manifest& m, const note::Checkpoint& cp, const std::string* file,
                            const StreamCheck& stream, Result* r);

// In a run pack, a step shown pending although its deadline (start +
// timeout + the manifest's grace) is before the signed time: what fails,
// or "".
std::string CheckDeadlines(const manifest::Manifest& m, std::optional<int64_t> signed_at_us, pack::Outcomes& outcomes);

// The times the auditor kept with earlier checkpoints: the pack's MUST be
// stated and not before them. What fails, or "".
std::string CheckTimeOrder(std::optional<int64_t> signed_at_us, std::optional<int64_t> since_us,
                           std::optional<int64_t> not_older_than_us);

// A time note kept with an earlier checkpoint of the pack's very tree size
// (`flag`: --since or --not-older-than) and the pack's note: each map root
// both sign MUST be the same (one tree has one run-head and one team-head
// map; the runs roots only when both notes key runs alike, by version,
// runmap::KeysOfNote). What fails, or "".
std::string CheckKeptRoots(const Result& r, int kept_version, const std::optional<hash::Hash>& kept_run_root,
                           const std::optional<hash::Hash>& kept_team_root, const char* flag);

// The signed time and the note's version against what the pack holds: a
// ledger that writes version 2 leaves (team chains) signs version 3 notes;
// it signs a checkpoint after it logs the entries emitters appended to it
// (its own declarations it logs as it signs); and a
// witness cosigns a checkpoint after the ledger signed it, so the time is
// not after any of `cosignature_times` (witness name, POSIX seconds). What
// fails, or "".
std::string CheckTimeAgainstEntries(const Result& r, const StreamCheck& stream,
                                    const std::vector<std::pair<std::string, uint64_t>>& cosignature_times);

// The manifest's grace against the one the auditor expects
// (--expect-grace-ms). What fails, or "".
std::string CheckGrace(const manifest::Manifest& m, std::optional<uint64_t> expect_grace_ms);

// The key found twice in one object of the pack's file `name` (a JSON
// document checked by its digest, such as outcomes.json), read again from
// the archive as it streams out: asked only when the digest differs, to
// name the reason.
std::optional<std::string> ArchivedFileDuplicateKey(const std::string& pack_path, const std::string& name);

// What the report is made from (pack::WriteReport): the manifest without
// its files, as the exporter gives it before the digests exist.
absl::StatusOr<manifest::Manifest> ReportHeader(const std::string& manifest_text);

// The report rebuilt with the exporter's own function, a piece at a time,
// from `outcomes` fed every checked entry: the page lists the entries
// (pack::ReportEntries) as well as their outcomes.
absl::Status RebuildReport(const std::string& manifest_text, pack::Outcomes& outcomes,
                           const std::string& checkpoint_note, const std::string& time_note,
                           absl::FunctionRef<void(std::string_view)> out);

// Where the pack's report first differs from the one rebuilt: reads the
// archive again (only when the digests differ) and compares the two as
// they come, holding neither. "at byte N (line L)" of the pack's report.
std::string ReportDifference(const std::string& pack_path, const std::string& manifest_text, pack::Outcomes& outcomes,
                             const std::string& checkpoint_note, const std::string& time_note);

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_INTERNAL_FILE_CHECKS_H_
