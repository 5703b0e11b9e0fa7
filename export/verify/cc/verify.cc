#include "export/verify/cc/verify.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "export/pack/pack.h"
#include "export/pack/team_window.h"
#include "export/verify/cc/digest_thread.h"
#include "export/verify/cc/file_checks.h"
#include "export/verify/cc/signature_lines.h"
#include "export/verify/cc/stream_check.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/note/note.h"
#include "ledger/format/runmap/proof_json.h"
#include "util/text/terminal.h"

namespace ledger::verify {
namespace {

// The pack is read once, in archive order, and never extracted: small files
// are kept in memory, entries.jsonl and proofs.jsonl are checked as they
// stream out of the archive (stream_check.h), and every file is hashed on
// the way. A file that comes before what it needs (a pack whose names are
// not in the order the exporter writes them) is spilled to a private
// temporary file and checked after the archive.
constexpr size_t kSmallFileBytes = size_t{1} << 20;  // 1 MiB

// A checkpoint's body, read before its signature can be checked (the key
// may come later in the archive); it is verified before anything that
// used it is reported.
std::optional<note::Checkpoint> UncheckedCheckpoint(std::string_view signed_note) {
  size_t end = signed_note.find("\n\n");
  if (end == std::string_view::npos) return std::nullopt;
  auto cp = note::ParseCheckpoint(signed_note.substr(0, end + 1));
  if (!cp.ok()) return std::nullopt;
  return *cp;
}

// A scope as asked for with --expect-scope, for messages: a team window's
// seqs are found by the exporter, not asked for.
std::string AskedScopeJson(const Scope& s) {
  if (!s.is_team_window()) return manifest::ScopeJson(s);
  nlohmann::json j = {{"kind", "team"}, {"team", s.team}, {"from_us", s.from_us}, {"to_us", s.to_us}};
  return j.dump();
}

bool SameScope(const Scope& pack, const Scope& want) {
  if (pack.kind() != want.kind()) return false;
  if (want.is_run()) return pack.team == want.team && pack.run_id == want.run_id;
  if (want.is_team_window()) return pack.team == want.team && pack.from_us == want.from_us && pack.to_us == want.to_us;
  return pack.from_seq == want.from_seq && pack.to_seq == want.to_seq;
}

Result Fail(Result r, const std::string& file, int64_t seq, const std::string& message) {
  r.ok = false;
  // A hostile pack chooses some of the text (names, ids, hashes): what a
  // terminal would act on is escaped (util/text).
  r.file = text::TerminalEscape(file);
  r.seq = seq;
  r.message = text::TerminalEscape(message);
  return r;
}

}  // namespace

namespace {

// The policy's log key named as the pack's key (the name before the first
// '+'): the key when the auditor gave a policy and no key.
absl::StatusOr<std::string> PolicyKey(const tlogpolicy::Policy& policy, const std::string& pack_vkey) {
  std::string name = pack_vkey.substr(0, pack_vkey.find('+'));
  for (const tlogpolicy::Log& log : policy.logs()) {
    if (log.key.name() == name) return log.vkey;
  }
  return absl::InvalidArgumentError(absl::StrCat("--policy: no log of the policy is named ", name));
}

// The checkpoint file with one cosignature line per policy witness: the
// first of a witness's lines, once every line of that witness (same name
// and key ID) verifies on its own; a witness cosigning twice counts once
// towards the quorum. `times` gets every verified line's time.
absl::StatusOr<std::string> OneLinePerWitness(const tlogpolicy::Policy& policy, const std::string& note,
                                              std::vector<std::pair<std::string, uint64_t>>* times) {
  auto parts = cosign::SplitNote(note);
  if (!parts.ok()) return parts.status();
  std::string out = parts->text + "\n";
  std::vector<bool> kept(policy.witnesses().size(), false);
  for (const std::string& line : parts->signatures) {
    auto parsed = cosign::ParseSignatureLine(line);
    if (!parsed.ok()) return parsed.status();
    bool drop = false;
    for (size_t i = 0; i < policy.witnesses().size(); ++i) {
      const tlogpolicy::Witness& w = policy.witnesses()[i];
      if (parsed->name != w.key.name() || parsed->key_id() != w.key.key_id()) continue;
      auto time = w.key.Verify(cosign::NoteParts{parts->text, {line}});
      if (!time.ok()) {
        return absl::PermissionDeniedError(absl::StrCat("the cosignature of witness ", w.name, " does not verify"));
      }
      times->emplace_back(w.name, *time);
      drop = kept[i];
      kept[i] = true;
    }
    if (!drop) absl::StrAppend(&out, line, "\n");
  }
  return out;
}

// The checks of a policy on the pack's checkpoint file, once its signature
// by `vkey` holds: `vkey` is a log of the policy, every line of a policy
// witness verifies, the quorum is met. Fills r.quorum and r.cosigned, and
// `times` with every verified cosignature's witness and time.
absl::Status CheckWitnesses(const tlogpolicy::Policy& policy, const std::string& vkey, const std::string& note,
                            Result& r, std::vector<std::pair<std::string, uint64_t>>* times) {
  bool listed = false;
  for (const tlogpolicy::Log& log : policy.logs()) listed = listed || log.vkey == vkey;
  if (!listed) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the ledger's key ", vkey.substr(0, vkey.find('+', vkey.find('+') + 1)), " is not a log of the policy"));
  }
  auto once = OneLinePerWitness(policy, note, times);
  if (!once.ok()) return once.status();
  auto evaluation = policy.Evaluate(*once);
  if (!evaluation.ok()) return evaluation.status();
  if (!evaluation->quorum) {
    std::vector<std::string> by;
    for (const tlogpolicy::Cosigned& c : evaluation->cosigned) by.push_back(c.witness);
    return absl::PermissionDeniedError(absl::StrCat(
        "the policy's quorum ", policy.quorum(), " is not met: no cosignature from ",
        absl::StrJoin(evaluation->missing, ", "), by.empty() ? "" : "; cosigned by " + absl::StrJoin(by, ", ")));
  }
  r.quorum = policy.quorum();
  r.cosigned = evaluation->cosigned;
  return absl::OkStatus();
}

}  // namespace

namespace {

// One verification of a pack, its steps in order (VerifyPack). Each step
// returns nullopt to go on, or what VerifyPack returns: a failed Result, or
// an error when the pack cannot be examined.
struct PackCheck {
  using Stop = std::optional<absl::StatusOr<Result>>;

  PackCheck(const std::string& pack_path, const Options& options)
      : pack_path(pack_path), options(options), dir("ledger-verify"), stream(dir.path(), &outcomes) {}

  Stop ReadArchive();
  Stop KeyAndManifest();
  Stop Checkpoint();
  Stop ConsistencyAndTime();
  Stop KeptNotes(const std::optional<note::Checkpoint>& since, const std::optional<KeptTime>& since_note);
  Stop EntriesAndProofs();
  Stop OutcomesAndReport();

  // Checks entries.jsonl or proofs.jsonl, `next` giving its pieces.
  absl::Status CheckStreamed(const std::string& name, NextPiece next);
  // Whether what `name` is checked against was read.
  bool Ready(const std::string& name) const;
  Stop CheckSpilled();

  const std::string& pack_path;
  const Options& options;
  Result r;
  pack::ScratchDir dir;
  std::map<std::string, std::string> small, digests, spilled;
  std::optional<note::Checkpoint> unchecked_cp;
  // The manifest as parsed before its signature is checked (the key may
  // come later): its scope steers the proof pass, and nothing it said is
  // reported before the signature is.
  std::optional<absl::StatusOr<manifest::Manifest>> unchecked_manifest;
  std::optional<Scope> scope;
  pack::Outcomes outcomes;
  StreamCheck stream;
  // The outcomes' digest, recomputed while the proofs are checked, then the
  // report's, rebuilt from them.
  std::shared_future<absl::StatusOr<std::string>> outcomes_digest;
  std::future<absl::StatusOr<std::string>> report_digest;
  std::string vkey;  // the key the pack is checked with
  std::optional<note::Verifier> verifier;
  std::optional<note::Checkpoint> cp;  // once its signature holds
  // Under a policy: each verified cosignature's witness and time.
  std::vector<std::pair<std::string, uint64_t>> cosignature_times;
};

absl::Status PackCheck::CheckStreamed(const std::string& name, NextPiece next) {
  if (name == pack::kProofs) {
    // The manifest and checkpoint are read by now; their texts are what
    // the checks below hold the report to.
    if (outcomes_digest.valid()) {
      report_digest = std::async(
          std::launch::async,
          [&outcomes = outcomes, outcomes_digest = outcomes_digest, manifest = small[pack::kManifest],
           note = small[pack::kCheckpoint]]() -> absl::StatusOr<std::string> {
            if (!outcomes_digest.get().ok()) return outcomes_digest.get().status();
            hash::Sha256Stream rebuilt;
            auto s = RebuildReport(manifest, outcomes, note, [&](std::string_view piece) { rebuilt.Update(piece); });
            if (!s.ok()) return s;
            return hash::Hex(rebuilt.Final());
          });
    }
    return stream.Proofs(*unchecked_cp, *scope, next);
  }
  if (auto s = stream.Entries(unchecked_cp->size, next); !s.ok()) return s;
  outcomes_digest = std::async(std::launch::async, [&outcomes = outcomes]() -> absl::StatusOr<std::string> {
    hash::Sha256Stream recomputed;
    if (auto s = outcomes.Write([&](std::string_view piece) { recomputed.Update(piece); }); !s.ok()) return s;
    return hash::Hex(recomputed.Final());
  });
  return absl::OkStatus();
}

bool PackCheck::Ready(const std::string& name) const {
  if (name == pack::kEntries) return unchecked_cp.has_value();
  return stream.entries_checked() && scope.has_value();
}

// One pass over the archive: small files kept, entries and proofs checked
// as they stream (or spilled, when they come before what they need).
PackCheck::Stop PackCheck::ReadArchive() {
  if (dir.path().empty()) {
    return absl::UnavailableError("verify: cannot create a temporary directory (set TMPDIR to a writable one)");
  }
  auto opened = pack::PackReader::Open(pack_path, pack::Limits());
  if (!opened.ok()) return Fail(r, "archive", -1, std::string(opened.status().message()));
  pack::PackReader* reader = opened->get();
  DigestThread file_digest;
  while (true) {
    auto name = reader->Next();
    if (!name.ok()) return Fail(r, "archive", -1, std::string(name.status().message()));
    if (!name->has_value()) break;
    const std::string file = **name;
    auto next = [&]() -> absl::StatusOr<std::string_view> {
      auto piece = reader->Read();
      if (piece.ok()) file_digest.Update(*piece);
      return piece;
    };
    absl::Status read;
    if (file == pack::kEntries || file == pack::kProofs) {
      if (Ready(file)) {
        read = CheckStreamed(file, next);
      } else {
        std::string path = dir.path() + "/" + file;
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        while (true) {
          auto piece = next();
          if (!piece.ok() || piece->empty()) {
            read = piece.status();
            break;
          }
          out.write(piece->data(), static_cast<std::streamsize>(piece->size()));
        }
        out.close();
        if (!out) return absl::UnavailableError("verify: cannot write a temporary file");
        spilled[file] = path;
      }
    } else if (file == pack::kOutcomes || file == pack::kReport) {
      while (true) {
        auto piece = next();
        if (!piece.ok() || piece->empty()) {
          read = piece.status();
          break;
        }
      }
    } else {
      std::string& content = small[file];
      while (true) {
        auto piece = next();
        if (!piece.ok() || piece->empty()) {
          read = piece.status();
          break;
        }
        content.append(*piece);
        if (content.size() > kSmallFileBytes) {
          return Fail(r, file, -1, "larger than 1 MiB");
        }
      }
      if (file == pack::kCheckpoint) unchecked_cp = UncheckedCheckpoint(content);
      if (file == pack::kManifest) {
        unchecked_manifest = manifest::Parse(content);
        if (unchecked_manifest->ok()) scope = (*unchecked_manifest)->scope;
      }
    }
    if (!read.ok()) return Fail(r, "archive", -1, std::string(read.message()));
    digests[file] = hash::Hex(file_digest.Final());
  }
  return CheckSpilled();
}

// Files that came before what they need.
PackCheck::Stop PackCheck::CheckSpilled() {
  for (const char* name : {pack::kEntries, pack::kProofs}) {
    if (!spilled.count(name) || !Ready(name)) continue;
    std::ifstream in(spilled[name], std::ios::binary);
    std::string buf(1 << 18, '\0');
    auto next = [&]() -> absl::StatusOr<std::string_view> {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      return std::string_view(buf.data(), static_cast<size_t>(in.gcount()));
    };
    if (auto s = CheckStreamed(name, next); !s.ok()) return s;
  }

  return std::nullopt;
}

// "signed by <key>, not by <the key verified with> (...)" when no
// signature line of `note` names `key`; "" when one does.
std::string OtherSigner(const std::string& note, const note::Verifier& key, const Options& options) {
  const std::string want = KeyNameAndId(key.name(), key.key_id());
  std::vector<std::string> signers = SignatureKeys(note);
  if (std::find(signers.begin(), signers.end(), want) != signers.end()) return "";
  const char* which = options.trust_pack_key ? "the pack's own key, ledger.vkey"
                      : options.vkey.empty() ? "the policy's log"
                                             : "the key given";
  return absl::StrCat("signed by ", signers.empty() ? "no key" : absl::StrJoin(signers, ", "), ", not by ", want, " (",
                      which, ")");
}

// The key, the manifest's signature and every file's digest.
PackCheck::Stop PackCheck::KeyAndManifest() {
  for (const char* name : {pack::kCheckpoint, pack::kEntries, pack::kVkey, pack::kManifest, pack::kManifestSig,
                           pack::kOutcomes, pack::kProofs, pack::kReport}) {
    if (!digests.count(name)) return Fail(r, name, -1, "missing");
  }

  // The key.
  const std::string& vkey_file = small[pack::kVkey];
  if (vkey_file.empty() || vkey_file.back() != '\n' || vkey_file.find('\n') != vkey_file.size() - 1 ||
      vkey_file.find('\r') != std::string::npos) {
    return Fail(r, pack::kVkey, -1, "want one line ending in a newline");
  }
  std::string pack_vkey = vkey_file.substr(0, vkey_file.size() - 1);
  vkey = options.vkey;
  if (vkey.empty() && !options.trust_pack_key) {
    auto named = PolicyKey(*options.policy, pack_vkey);
    if (!named.ok()) return named.status();
    vkey = *named;
  }
  if (options.trust_pack_key) {
    vkey = pack_vkey;
    r.trusted_key_in_pack = true;
  }
  auto parsed = note::Verifier::Parse(vkey);
  if (!parsed.ok()) return Fail(r, pack::kVkey, -1, std::string(parsed.status().message()));
  verifier = *std::move(parsed);

  // The manifest and every file's digest, after who signed it: a pack of
  // another ledger says so, naming both keys.
  const std::string& manifest_text = small[pack::kManifest];
  if (std::string bad = CheckSignatureLines(small[pack::kManifestSig], verifier->name(), verifier->key_id());
      !bad.empty()) {
    return Fail(r, pack::kManifestSig, -1, bad);
  }
  if (std::string other = OtherSigner(small[pack::kManifestSig], *verifier, options); !other.empty()) {
    return Fail(r, pack::kManifestSig, -1, other);
  }
  if (!options.trust_pack_key && vkey != pack_vkey) {
    return Fail(r, pack::kVkey, -1, absl::StrCat("expected the given key ", vkey, ", found ", pack_vkey));
  }
  auto signed_digest = verifier->Open(small[pack::kManifestSig]);
  if (!signed_digest.ok()) {
    return Fail(r, pack::kManifestSig, -1, std::string(signed_digest.status().message()));
  }
  std::string digest = hash::Hex(hash::Sha256(manifest_text)) + "\n";
  if (*signed_digest != digest) {
    return Fail(
        r, pack::kManifest, -1,
        absl::StrCat("SHA-256 is ", digest.substr(0, 64), ", the signature covers ", signed_digest->substr(0, 64)));
  }
  if (!unchecked_manifest->ok()) {
    return Fail(r, pack::kManifest, -1, std::string(unchecked_manifest->status().message()));
  }
  const manifest::Manifest& manifest = **unchecked_manifest;
  r.origin = manifest.origin;
  r.tree_size = manifest.tree_size;
  r.scope = manifest::ScopeJson(manifest.scope);
  // An entry the digests below cannot check is refused, not skipped.
  for (const char* self : {pack::kManifest, pack::kManifestSig}) {
    if (manifest.files.contains(self)) {
      return Fail(r, pack::kManifest, -1, absl::StrCat("lists ", self, ", whose digest it cannot hold"));
    }
  }
  for (const auto& [name, sha] : digests) {
    if (name == pack::kManifest || name == pack::kManifestSig) continue;
    auto listed = manifest.files.find(name);
    if (listed == manifest.files.end()) return Fail(r, name, -1, "not listed in the manifest");
    if (sha != listed->second) {
      return Fail(r, name, -1, absl::StrCat("SHA-256 expected ", listed->second, ", found ", sha));
    }
  }
  for (const auto& [name, sha] : manifest.files) {
    if (!digests.count(name)) return Fail(r, name, -1, "listed in the manifest but missing");
  }

  return std::nullopt;
}

PackCheck::Stop PackCheck::Checkpoint() {
  const manifest::Manifest& manifest = **unchecked_manifest;
  if (std::string bad = CheckSignatureLines(small[pack::kCheckpoint], verifier->name(), verifier->key_id());
      !bad.empty()) {
    return Fail(r, pack::kCheckpoint, -1, bad);
  }
  auto cp_text = verifier->Open(small[pack::kCheckpoint]);
  if (!cp_text.ok()) return Fail(r, pack::kCheckpoint, -1, std::string(cp_text.status().message()));
  auto parsed = note::ParseCheckpoint(*cp_text);
  if (!parsed.ok()) return Fail(r, pack::kCheckpoint, -1, std::string(parsed.status().message()));
  cp = *parsed;
  if (cp->origin != r.origin || cp->origin != verifier->name()) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("origin '", cp->origin, "', manifest and key say '", r.origin, "'"));
  }
  if (cp->size != r.tree_size || hash::Hex(cp->root) != manifest.root) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("size ", cp->size, " root ", hash::Hex(cp->root), ", the manifest says size ", r.tree_size,
                             " root ", manifest.root));
  }
  // What the entries were checked against, before the signature was, is
  // what the signature covers.
  if (!unchecked_cp || unchecked_cp->size != cp->size || unchecked_cp->root != cp->root) {
    return Fail(r, pack::kCheckpoint, -1, "its text is not the one its signature covers");
  }
  r.root = hash::Hex(cp->root);
  if (options.policy) {
    if (auto s = CheckWitnesses(*options.policy, vkey, small[pack::kCheckpoint], r, &cosignature_times); !s.ok()) {
      return Fail(r, pack::kCheckpoint, -1, std::string(s.message()));
    }
  }

  // What the auditor asked for.
  if (options.expect_scope && !SameScope(manifest.scope, *options.expect_scope)) {
    return Fail(
        r, pack::kManifest, -1,
        absl::StrCat("scope is ", r.scope, ", expected ", AskedScopeJson(*options.expect_scope), " (--expect-scope)"));
  }
  if (std::string failure = CheckGrace(manifest, options.expect_grace_ms); !failure.empty()) {
    return Fail(r, pack::kManifest, -1, failure);
  }
  if (cp->size < options.not_older_than) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("tree size ", cp->size, " is older than the ", options.not_older_than,
                             " asked for (--not-older-than)"));
  }
  if (options.not_older_than_root && cp->size == options.not_older_than && cp->root != *options.not_older_than_root) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("root ", hash::Hex(cp->root), " at tree size ", cp->size,
                             ", the checkpoint given with "
                             "--not-older-than has root ",
                             hash::Hex(*options.not_older_than_root)));
  }

  return std::nullopt;
}

PackCheck::Stop PackCheck::ConsistencyAndTime() {
  const manifest::Manifest& manifest = **unchecked_manifest;
  // The consistency proof from an earlier checkpoint, when there is one;
  // from the auditor's, when given.
  std::optional<note::Checkpoint> since;
  std::optional<KeptTime> since_note;
  if (!options.since.empty()) {
    KeptCheckpoint kept = SplitKeptCheckpoint(options.since);
    if (!kept.time_note.empty()) {
      auto t = KeptCheckpointNote(vkey, kept);
      if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", t.status().message()));
      since_note = *t;
    }
    auto since_text = verifier->Open(kept.checkpoint);
    if (!since_text.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", since_text.status().message()));
    auto parsed = note::ParseCheckpoint(*since_text);
    if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", parsed.status().message()));
    since = *parsed;
  }
  const std::string* consistency = digests.count(pack::kConsistency) ? &small[pack::kConsistency] : nullptr;
  if (std::string failure = CheckConsistency(*verifier, *cp, consistency, since, &r); !failure.empty()) {
    return Fail(r, pack::kConsistency, -1, failure);
  }

  // The checkpoint's signed time.
  const std::string* time_note = digests.count(pack::kCheckpointTime) ? &small[pack::kCheckpointTime] : nullptr;
  if (std::string failure = CheckTime(*verifier, *cp, manifest, time_note, &r); !failure.empty()) {
    return Fail(r, pack::kCheckpointTime, -1, failure);
  }
  std::optional<int64_t> since_time;
  if (since_note) since_time = since_note->time_us;
  if (std::string failure = CheckTimeOrder(r.signed_at_us, since_time, options.not_older_than_time_us);
      !failure.empty()) {
    return Fail(r, pack::kCheckpointTime, -1, failure);
  }
  return KeptNotes(since, since_note);
}

// The time notes the auditor kept (with --since, --not-older-than) against
// the pack's: a ledger that signed a map root with a kept checkpoint signs
// it with every later one, and a note of the pack's very tree size signs
// the same map roots.
PackCheck::Stop PackCheck::KeptNotes(const std::optional<note::Checkpoint>& since,
                                     const std::optional<KeptTime>& since_note) {
  const int since_note_version = since_note ? since_note->version : 0;
  const int note_version = r.signed_at_us ? r.note_version : 0;
  for (auto [kept, flag] :
       {std::pair{since_note_version, "--since"}, std::pair{options.not_older_than_note_version, "--not-older-than"}}) {
    if (r.signed_at_us && note_version < kept && kept >= 2) {
      return Fail(r, pack::kCheckpointTime, -1,
                  absl::StrCat("a version ", note_version, " note, but the checkpoint given with ", flag,
                               " has a version ", kept, " note: a ledger that ",
                               kept >= 4   ? "keys runs by team does so"
                               : kept >= 3 ? "signs the team-head map root signs it"
                                           : "signs the run-head map root signs it",
                               " with every later checkpoint"));
    }
  }
  if (since_note && since && since->size == cp->size) {
    if (std::string failure =
            CheckKeptRoots(r, since_note->version, since_note->run_map_root, since_note->team_map_root, "--since");
        !failure.empty()) {
      return Fail(r, pack::kCheckpointTime, -1, failure);
    }
  }
  if (options.not_older_than_time_us && options.not_older_than == cp->size) {
    if (std::string failure =
            CheckKeptRoots(r, options.not_older_than_note_version, options.not_older_than_run_map_root,
                           options.not_older_than_team_map_root, "--not-older-than");
        !failure.empty()) {
      return Fail(r, pack::kCheckpointTime, -1, failure);
    }
  }
  return std::nullopt;
}

PackCheck::Stop PackCheck::EntriesAndProofs() {
  const manifest::Manifest& manifest = **unchecked_manifest;
  // Entries and proofs.
  if (!stream.entries_checked() || !stream.proofs_checked()) {
    return absl::InternalError("verify: entries or proofs were not checked");
  }
  if (auto first = stream.first_failure()) return Fail(r, first->file, first->seq, first->message);
  if (std::string failure = CheckTimeAgainstEntries(r, stream, cosignature_times); !failure.empty()) {
    return Fail(r, pack::kCheckpointTime, -1, failure);
  }

  // That the pack is the whole run (the run chain, gap-free from the run's
  // first entry, was checked with the proofs).
  const std::string* run_head = digests.count(pack::kRunHead) ? &small[pack::kRunHead] : nullptr;
  if (std::string failure = CheckRunHead(manifest, run_head, stream, &r); !failure.empty()) {
    return Fail(r, pack::kRunHead, -1, failure);
  }
  // That a team window holds every entry of its team (the team chain).
  const std::string* team_window = digests.count(pack::kTeamWindow) ? &small[pack::kTeamWindow] : nullptr;
  if (std::string failure = CheckTeamWindow(manifest, *cp, team_window, stream, &r); !failure.empty()) {
    return Fail(r, pack::kTeamWindow, -1, failure);
  }
  if (stream.more_proofs_than_entries()) return Fail(r, pack::kProofs, -1, "more proofs than entries");
  std::optional<uint64_t> last_seq = stream.last_seq();
  if (scope->kind() == "seq" && (!last_seq || *last_seq + 1 != scope->to_seq)) {
    return Fail(r, pack::kEntries, -1, "the seq range ends early");
  }
  r.entries = stream.entries();
  for (const StreamCheck::Epoch& e : stream.epochs()) {
    r.leader_epochs.push_back(absl::StrCat("leader epoch ", e.epoch, ": node ", e.node, " leads from seq ", e.seq,
                                           ", over the tree of size ", e.seq, " with root ", e.previous_root, "."));
  }
  if (r.entries != manifest.entries) {
    return Fail(r, pack::kManifest, -1,
                absl::StrCat("counts.entries says ", manifest.entries, ", the pack has ", r.entries));
  }

  return std::nullopt;
}

PackCheck::Stop PackCheck::OutcomesAndReport() {
  const manifest::Manifest& manifest = **unchecked_manifest;
  // Outcomes, compared by digest, so that neither document is held in memory.
  if (!outcomes_digest.valid()) return absl::InternalError("verify: outcomes were not recomputed");
  auto recomputed = outcomes_digest.get();
  if (!recomputed.ok()) return Fail(r, pack::kOutcomes, -1, std::string(recomputed.status().message()));
  if (*recomputed != digests[pack::kOutcomes]) {
    if (auto twice = ArchivedFileDuplicateKey(pack_path, pack::kOutcomes)) {
      return Fail(r, pack::kOutcomes, -1, absl::StrCat("key ", *twice, " twice"));
    }
    return Fail(r, pack::kOutcomes, -1, "differs from the outcomes recomputed from the entries");
  }
  if (auto s = CheckDeadlines(manifest, r.signed_at_us, outcomes); !s.empty()) {
    return Fail(r, pack::kOutcomes, -1, s);
  }
  if (r.run_complete.has_value()) {
    auto unsettled = pack::UnsettledSteps(outcomes);
    if (!unsettled.ok()) return Fail(r, pack::kOutcomes, -1, std::string(unsettled.status().message()));
    r.unsettled = *std::move(unsettled);
  }

  // The report, rebuilt from what was checked above by the exporter's own
  // function, byte for byte.
  if (!report_digest.valid()) return absl::InternalError("verify: the report was not rebuilt");
  auto rebuilt = report_digest.get();
  if (!rebuilt.ok()) return Fail(r, pack::kReport, -1, std::string(rebuilt.status().message()));
  if (*rebuilt != digests[pack::kReport]) {
    return Fail(r, pack::kReport, -1,
                ReportDifference(pack_path, small[pack::kManifest], outcomes, small[pack::kCheckpoint]));
  }
  return std::nullopt;
}

// NOT_FOUND, naming the path and why, when the pack's file cannot be
// opened for reading or is a directory: nothing of it is judged then.
absl::Status Readable(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  int error = fd < 0 ? errno : 0;
  struct stat st;
  if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) error = EISDIR;
  if (fd >= 0) ::close(fd);
  if (error == 0) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("cannot read the pack ", path, ": ", std::strerror(error)));
}

}  // namespace

absl::StatusOr<Result> VerifyPack(const std::string& pack_path, const Options& options) {
  if (options.trust_pack_key && !options.vkey.empty()) {
    return absl::InvalidArgumentError("verify: a key given and trust_pack_key set: give one or the other");
  }
  if (!options.trust_pack_key && !(options.vkey.empty() && options.policy)) {
    if (options.vkey.empty()) {
      return absl::InvalidArgumentError("verify: no key given (vkey) and trust_pack_key not set");
    }
    if (auto given = note::Verifier::Parse(options.vkey); !given.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("verify: vkey: ", given.status().message()));
    }
  }
  if (auto readable = Readable(pack_path); !readable.ok()) return readable;
  PackCheck check(pack_path, options);
  for (auto step : {&PackCheck::ReadArchive, &PackCheck::KeyAndManifest, &PackCheck::Checkpoint,
                    &PackCheck::ConsistencyAndTime, &PackCheck::EntriesAndProofs, &PackCheck::OutcomesAndReport}) {
    if (PackCheck::Stop stop = (check.*step)()) return *std::move(stop);
  }
  check.r.ok = true;
  return check.r;
}

}  // namespace ledger::verify
