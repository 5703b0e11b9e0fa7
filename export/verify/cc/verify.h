// The offline verifier of evidence packs. It links hashing, Merkle
// verification, signed notes, JSON and the step projector: no RocksDB, no
// gRPC, no network. A pack is read strictly (CONTRACT section 7): what the
// contract does not allow, or what two readers could read two ways (a JSON
// key twice, a note signed twice by the ledger's key, a malformed signature
// line, tar members out of order or of another mode or mtime, bytes after
// the gzip stream, a last line without its newline), is refused. It
// checks, in this order, and stops at the first failure, naming the file,
// the seq, and what was expected and found:
//   the archive's shape; the manifest's signature, grammar
//   (export/manifest) and every file's digest; the checkpoint's signature
//   and that the manifest describes it, and the grace asked for; the
//   consistency proof; the checkpoint's time note and that its time is not
//   before the auditor's kept times, and signs the same map roots as a
//   kept note of the same tree size; every
//   entry's canonical form, leaf hash and inclusion proof; the signed
//   time not before the entries' logged_at_us nor after a witness's
//   cosignature, and a version 3 note with version 2 leaves; prev links
//   between consecutive seqs; for a run pack, that every entry is the run's
//   and the run chain is gap-free from its first entry; for a seq pack, that
//   the range is complete; the outcomes recomputed from the entries, and
//   that no step is pending past its deadline at the signed time; the
//   report rebuilt with the exporter's pack::WriteReport, byte for byte (a
//   difference names its first byte and line).
//
// Thread-safe: each call uses its own temporary directory.
#ifndef EXPORT_VERIFY_CC_VERIFY_H_
#define EXPORT_VERIFY_CC_VERIFY_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "export/verify/cc/scope.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/key_set.h"
#include "ledger/format/timestamp/timestamp.h"
#include "ledger/format/tlogpolicy/tlogpolicy.h"
#include "nlohmann/json.hpp"

namespace ledger::text {
class ProgressMeter;  // util/text/progress.h
}  // namespace ledger::text

namespace ledger::verify {

struct Options {
  // The ledger's verifier key line, obtained apart from the pack. MUST be
  // given unless trust_pack_key is set.
  std::string vkey;
  // The keys by size (CONTRACT section 5d: --key-set, a key history
  // followed): set, the pack is checked against the key of its tree size
  // (vkey is then empty), an old checkpoint against the key of its own.
  std::optional<note::KeySet> keys;
  // Trust the key inside the pack instead (vkey MUST then be empty): the
  // result proves nothing about the ledger's identity, and says so.
  bool trust_pack_key = false;
  // The auditor's earlier checkpoint (a signed note), or empty. Given, the
  // pack MUST prove consistency from exactly it: same origin, size, root.
  // It may be followed by its checkpoint-time note (as kept by
  // SplitKeptCheckpoint's rule): the pack's checkpoint MUST then carry a
  // time, and not an earlier one.
  std::string since;
  // What the auditor asked for, when given: the manifest's scope MUST be
  // it (for a team window: the team and times; the seqs follow from them).
  std::optional<Scope> expect_scope;
  // The pack's checkpoint MUST be at least this size; with a root (from an
  // earlier checkpoint), at that very size it MUST have that root.
  uint64_t not_older_than = 0;
  std::optional<hash::Hash> not_older_than_root;
  // The signed time of that checkpoint, when its time note was given: the
  // pack's checkpoint MUST carry a time, and not an earlier one.
  std::optional<int64_t> not_older_than_time_us;
  // The version of that time note (0: none given): the pack's MUST be at
  // least as new.
  int not_older_than_note_version = 0;
  // The map roots that note signs (versions 2 to 4): a pack whose
  // checkpoint is of that very size MUST carry a note signing the same.
  std::optional<hash::Hash> not_older_than_run_map_root, not_older_than_team_map_root;
  // The ledger's grace the auditor expects (--expect-grace-ms): the
  // manifest's unknown_grace_ms MUST be it.
  std::optional<uint64_t> expect_grace_ms;
  // The auditor's tlog-policy (CONTRACT section 7, "Witnessed packs"): the
  // ledger's key MUST be one of its logs and the checkpoint's cosignatures
  // MUST meet its quorum. With it, vkey may be empty (and trust_pack_key
  // unset): the key is then its log named as the pack's key.
  std::optional<tlogpolicy::Policy> policy;
  // Told of each entry as it is checked and of the bytes of the pack read
  // (ProgressMeter::SetWork); or none.
  text::ProgressMeter* progress = nullptr;
  // report.html of a pack of an earlier format than the newest checked by
  // its digest only, as verify_pack.py and ledger-verify-go check it, not
  // rebuilt byte for byte: for a pack written by an earlier version, whose
  // page's words have since changed (CONTRACT section 7). The page is then
  // only as good as the ledger's key. The newest format's page is rebuilt
  // whatever is asked.
  bool report_by_digest = false;
  // The TSA roots (CONTRACT section 5e, --tsa-root): set, the pack's
  // checkpoint-time note MUST carry a time-stamp token that chains to one
  // of them, over its text, at most tsa_max_delay_s after its time.
  std::optional<timestamp::TsaRoots> tsa_roots;
  int64_t tsa_max_delay_s = timestamp::kDefaultMaxDelaySeconds;
};

// A checkpoint as an auditor keeps it in a file: the signed checkpoint,
// optionally followed by its checkpoint-time note (the output of
// `ledgerctl checkpoint` then `ledgerctl checkpoint --time-note`). The time
// note starts at the first line that is the header of a checkpoint-time
// note of any version; empty when there is none.
struct KeptCheckpoint {
  std::string checkpoint;
  std::string time_note;
};
KeptCheckpoint SplitKeptCheckpoint(const std::string& file);

// What a kept checkpoint's time note states, after checking it is signed
// by `vkey` and names exactly the kept checkpoint; INVALID_ARGUMENT naming
// the rule otherwise.
struct KeptTime {
  int64_t time_us = 0;
  int version = 1;
  std::optional<hash::Hash> run_map_root, team_map_root;  // versions 2 to 4
};
absl::StatusOr<KeptTime> KeptCheckpointNote(const std::string& vkey, const KeptCheckpoint& kept);
// Its time alone.
absl::StatusOr<int64_t> KeptCheckpointTime(const std::string& vkey, const KeptCheckpoint& kept);

// A signed time as verifiers print it: UTC, ISO 8601 with microseconds and
// 'Z', then the microseconds: "2026-01-01T00:00:00.000000Z (1767225600000000 us)".
std::string SignedTime(int64_t time_us);

// An expected scope as written on a command line: "run:TEAM/RUN",
// "seq:A:B" (seqs A to B, B excluded), or "team:TEAM,FROM,TO" (RFC 3339
// times, TO excluded). INVALID_ARGUMENT naming the rule otherwise.
absl::StatusOr<Scope> ParseExpectedScope(const std::string& text);

struct Result {
  bool ok = false;
  bool trusted_key_in_pack = false;
  // report.html checked by its digest only (Options::report_by_digest).
  bool report_by_digest = false;
  std::string origin;
  uint64_t tree_size = 0;
  std::string root;  // hex
  uint64_t entries = 0;
  std::string scope;  // the manifest's scope, as JSON
  // The checkpoint's signed time; nullopt for a checkpoint signed before
  // the ledger signed times (a format 1 pack).
  std::optional<int64_t> signed_at_us;
  // The time note's version (0: none), and the run-head map root it signs
  // (versions 2 to 4; under run keys v2 in version 4).
  int note_version = 0;
  std::optional<hash::Hash> run_map_root;
  // A format 3 run pack: the run's entries up to the checkpoint, all in the
  // pack (0: the run has none, by an absence proof), and the steps it shows
  // pending or unknown, proven to have no completion up to tree_size - 1
  // ("TEAM/RUN/STEP attempt N (state)").
  std::optional<uint64_t> run_complete;
  std::vector<std::string> unsettled;
  // The team-head map root the time note signs (format 3 notes), and, for a
  // team window checked against it, what is proven: the line the OK line is
  // followed by ("complete: every entry of team ...").
  std::optional<hash::Hash> team_map_root;
  std::string team_window;
  // The leader epochs the pack's entries show (replicated shards): one
  // line each, "leader epoch N: node X leads from seq S (...)".
  std::vector<std::string> leader_epochs;
  // The key the pack's notes were checked against (its verifier key), and
  // where it came from ("the key given", "the key set's key of size N", ...).
  std::string key, key_from;
  // The key rotations the pack's entries show (CONTRACT section 5d): one
  // line each, "key rotation at seq S: from K1 to K2 (...)".
  std::vector<std::string> key_rotations;
  // The erased entries of a pack of format 8 (CONTRACT section 8): one line
  // each, "entry S: erased by redaction R (...): REASON; ...".
  std::vector<std::string> erasures;
  // A run pack across the retention line (format 9, CONTRACT section 9):
  // from which seq it is complete, how many of the run's entries before it
  // were pruned, and the pass, rule and entry that say so.
  struct PrunedBefore {
    uint64_t from_seq = 0, count = 0, pass = 0, retention_seq = 0;
    std::string rule;  // "default" or "team T"
    int64_t cutoff_us = 0;
    std::string policy_sha256;
  };
  std::optional<PrunedBefore> pruned_before;
  // The earlier checkpoint the pack proved consistency with, and whether
  // it is the one given in Options::since.
  std::optional<uint64_t> since_size;
  std::string since_root;  // hex
  bool since_given = false;
  // Under a policy: its quorum (met), and the witnesses whose cosignature
  // verified, in policy order.
  std::optional<std::string> quorum;
  std::vector<tlogpolicy::Cosigned> cosigned;
  // Under a policy naming monitors (CONTRACT section 5c): its
  // monitor-quorum (met) of how many monitors, and the monitors whose map
  // cosignature of the checkpoint-time note verified, in policy order.
  std::optional<size_t> monitor_quorum;
  size_t monitors = 0;
  std::vector<tlogpolicy::Cosigned> monitored;
  // The time-stamp of the checkpoint-time note (CONTRACT section 5e): the
  // TSA's name and genTime, checked against Options::tsa_roots; or a line
  // present and not checked (no roots given).
  std::optional<timestamp::Stamp> stamp;
  bool stamp_unchecked = false;
  // When !ok: the first failing item.
  std::string file;
  int64_t seq = -1;
  std::string message;

  nlohmann::json Json() const;
  std::string Summary() const;
};

// An error status only when the pack cannot be examined at all:
// INVALID_ARGUMENT when the options give no key (nor a policy with a log
// named as the pack's key), or a key that is not a
// verifier key line, or both a key and trust_pack_key, or a since that is
// not a checkpoint the key signed; NOT_FOUND ("cannot read the pack P:
// <why>") when the pack's file cannot be opened for reading or is a
// directory; UNAVAILABLE when no temporary directory can be made. Every
// verification failure is a Result with ok == false; a pack signed by
// another key than the one verified with fails at manifest.sig naming both
// ("signed by <name>+<id>, not by <name>+<id> (the key given)").
absl::StatusOr<Result> VerifyPack(const std::string& pack_path, const Options& options);

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_VERIFY_H_
