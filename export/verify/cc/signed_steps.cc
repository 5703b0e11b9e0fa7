// The steps of VerifyPack that check what the ledger's key signs
// (steps.h): the key, the manifest, the checkpoint with the policy's
// witnesses and what the auditor asked of it, the consistency proof and the
// signed time.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "export/pack/pack.h"
#include "export/verify/cc/internal/file_checks.h"
#include "export/verify/cc/internal/signature_lines.h"
#include "export/verify/cc/steps.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/note.h"

namespace ledger::verify {
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

// The key the pack is checked with (CheckKey).
struct Key {
  std::string vkey;
  note::Verifier verifier;
  Result told;  // trusted_key_in_pack
  // ledger.vkey when it is not the key given: refused once the manifest's
  // signature has said who signed the pack.
  std::string other_pack_vkey;
  const char* which = "";  // where the key came from, for a message
};

// "signed by <key>, not by <the key verified with> (<which>)" when no
// signature line of `note` names the key; "" when one does.
std::string OtherSigner(const std::string& note, const Key& key) {
  const std::string want = KeyNameAndId(key.verifier.name(), key.verifier.key_id());
  std::vector<std::string> signers = SignatureKeys(note);
  if (std::find(signers.begin(), signers.end(), want) != signers.end()) return "";
  return absl::StrCat("signed by ", signers.empty() ? "no key" : absl::StrJoin(signers, ", "), ", not by ", want, " (",
                      key.which, ")");
}

// ledger.vkey (`vkey_file`): the key given, or the policy's log named as
// the pack's key, or with trust_pack_key the pack's own.
Step<Key> CheckKey(const std::string& vkey_file, const Options& options, std::optional<uint64_t> tree_size) {
  if (vkey_file.empty() || vkey_file.back() != '\n' || vkey_file.find('\n') != vkey_file.size() - 1 ||
      vkey_file.find('\r') != std::string::npos) {
    return Fail(Result(), pack::kVkey, -1, "want one line ending in a newline");
  }
  std::string pack_vkey = vkey_file.substr(0, vkey_file.size() - 1);
  std::string vkey = options.vkey;
  if (options.keys) {
    // CONTRACT section 5d: the key of the pack's tree size, whatever else
    // signed it.
    const note::KeySet::Range* at = tree_size ? options.keys->At(*tree_size) : nullptr;
    if (at == nullptr) {
      return Fail(Result(), pack::kCheckpoint, -1,
                  tree_size ? absl::StrCat("size ", *tree_size, ": no key of the key set is trusted for it")
                            : "its size is unknown: manifest.json does not parse");
    }
    vkey = at->vkey;
  }
  if (vkey.empty() && !options.trust_pack_key && !options.keys) {
    auto named = PolicyKey(*options.policy, pack_vkey);
    if (!named.ok()) return named.status();
    vkey = *named;
  }
  Result told;
  const char* which = options.trust_pack_key ? "the pack's own key, ledger.vkey"
                      : options.keys         ? "the key set's key of the pack's size"
                      : options.vkey.empty() ? "the policy's log"
                                             : "the key given";
  if (options.trust_pack_key) {
    vkey = pack_vkey;
    told.trusted_key_in_pack = true;
  }
  auto verifier = note::Verifier::Parse(vkey);
  if (!verifier.ok()) return Fail(told, pack::kVkey, -1, std::string(verifier.status().message()));
  told.key = vkey;
  told.key_from =
      options.keys && tree_size
          ? absl::StrCat("the key of size ", *tree_size, " by ",
                         options.keys->ranges().size() > 1 ? "the keys and rotations given" : "the key given")
          : which;
  std::string other = vkey != pack_vkey ? pack_vkey : "";
  return Key{std::move(vkey), *std::move(verifier), std::move(told), std::move(other), which};
}

// The files the manifest lists against those of the archive (`digests`):
// each listed with its digest, none more, never manifest.json or
// manifest.sig. The failure, told, or nullopt.
std::optional<Result> CheckListed(const manifest::Manifest& manifest, const std::map<std::string, std::string>& digests,
                                  const Result& told) {
  // An entry the digests below cannot check is refused, not skipped.
  for (const char* self : {pack::kManifest, pack::kManifestSig}) {
    if (manifest.files.contains(self)) {
      return Fail(told, pack::kManifest, -1, absl::StrCat("lists ", self, ", whose digest it cannot hold"));
    }
  }
  for (const auto& [name, sha] : digests) {
    if (name == pack::kManifest || name == pack::kManifestSig) continue;
    auto listed = manifest.files.find(name);
    if (listed == manifest.files.end()) return Fail(told, name, -1, "not listed in the manifest");
    if (sha != listed->second) {
      return Fail(told, name, -1, absl::StrCat("SHA-256 expected ", listed->second, ", found ", sha));
    }
  }
  for (const auto& [name, sha] : manifest.files) {
    if (!digests.count(name)) return Fail(told, name, -1, "listed in the manifest but missing");
  }
  return std::nullopt;
}

// manifest.json (`unchecked`, as parsed), the digest manifest.sig signs
// with `key`, and every file's digest as it lists them.
Step<Keyed> CheckManifest(const Files& files, const absl::StatusOr<manifest::Manifest>& unchecked, Key key) {
  const std::string& sig = files.small.at(pack::kManifestSig);
  if (std::string bad = CheckSignatureLines(sig, key.verifier.name(), key.verifier.key_id()); !bad.empty()) {
    return Fail(key.told, pack::kManifestSig, -1, bad);
  }
  // Who signed it, before anything else: a pack of another ledger says so,
  // naming both keys.
  if (std::string other = OtherSigner(sig, key); !other.empty()) return Fail(key.told, pack::kManifestSig, -1, other);
  if (!key.other_pack_vkey.empty()) {
    return Fail(key.told, pack::kVkey, -1,
                absl::StrCat("expected the given key ", key.vkey, ", found ", key.other_pack_vkey));
  }
  auto signed_digest = key.verifier.Open(sig);
  if (!signed_digest.ok()) return Fail(key.told, pack::kManifestSig, -1, std::string(signed_digest.status().message()));
  std::string digest = hash::Hex(hash::Sha256(files.small.at(pack::kManifest))) + "\n";
  if (*signed_digest != digest) {
    return Fail(
        key.told, pack::kManifest, -1,
        absl::StrCat("SHA-256 is ", digest.substr(0, 64), ", the signature covers ", signed_digest->substr(0, 64)));
  }
  if (!unchecked.ok()) return Fail(key.told, pack::kManifest, -1, std::string(unchecked.status().message()));
  Keyed keyed{std::move(key.vkey), std::move(key.verifier), *unchecked, std::move(key.told)};
  keyed.told.origin = keyed.manifest.origin;
  keyed.told.tree_size = keyed.manifest.tree_size;
  keyed.told.scope = manifest::ScopeJson(keyed.manifest.scope);
  if (std::optional<Result> failed = CheckListed(keyed.manifest, files.digests, keyed.told)) return *std::move(failed);
  return keyed;
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

// What a policy's witnesses show of the pack's checkpoint (CheckWitnesses).
struct Witnessed {
  std::string quorum;  // met
  std::vector<tlogpolicy::Cosigned> cosigned;
  std::vector<std::pair<std::string, uint64_t>> times;  // each verified cosignature's witness and time
};

// The checks of a policy on the pack's checkpoint file `note`, once its
// signature by `vkey` holds: `vkey` is a log of the policy, every line of a
// policy witness verifies, the quorum is met.
absl::StatusOr<Witnessed> CheckWitnesses(const tlogpolicy::Policy& policy, const std::string& vkey,
                                         const std::string& note) {
  bool listed = false;
  for (const tlogpolicy::Log& log : policy.logs()) listed = listed || log.vkey == vkey;
  if (!listed) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the ledger's key ", vkey.substr(0, vkey.find('+', vkey.find('+') + 1)), " is not a log of the policy"));
  }
  Witnessed witnessed;
  auto once = OneLinePerWitness(policy, note, &witnessed.times);
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
  witnessed.quorum = policy.quorum();
  witnessed.cosigned = evaluation->cosigned;
  return witnessed;
}

// The checks of a policy's monitors on the pack's checkpoint-time note
// (CONTRACT section 5c), once its signature and checkpoint hold: every line
// of a policy monitor verifies, and monitor-quorum is met. The failure, or
// "" with `told` saying who cosigned.
std::string CheckMonitors(const tlogpolicy::Policy& policy, const std::string* time_note, Result* told) {
  if (time_note == nullptr) return "missing: the policy's monitors cosign the checkpoint-time note";
  auto evaluation = policy.EvaluateMonitors(*time_note);
  if (!evaluation.ok()) return std::string(evaluation.status().message());
  if (!evaluation->quorum) {
    std::vector<std::string> by;
    for (const tlogpolicy::Cosigned& c : evaluation->cosigned) by.push_back(c.witness);
    return absl::StrCat("the policy's monitor-quorum ", policy.monitor_quorum(), " of ", policy.monitors().size(),
                        " is not met: no map cosignature from ", absl::StrJoin(evaluation->missing, ", "),
                        by.empty() ? "" : "; cosigned by " + absl::StrJoin(by, ", "));
  }
  told->monitor_quorum = policy.monitor_quorum();
  told->monitors = policy.monitors().size();
  told->monitored = evaluation->cosigned;
  return "";
}

// The time-stamp line of the pack's checkpoint-time note (CONTRACT section
// 5e), once its signature and time hold: with --tsa-root required and
// checked; without, noted when present. The failure, or "" with `told`
// saying what stamped it.
std::string CheckStamp(const std::string* time_note, const Options& options, Result* told) {
  if (!options.tsa_roots) {
    told->stamp_unchecked = time_note != nullptr && !timestamp::FindStamps(*time_note).empty();
    return "";
  }
  if (time_note == nullptr || !told->signed_at_us) {
    return "time stamp: missing: --tsa-root requires the checkpoint-time note to carry a time-stamp token";
  }
  auto stamp = timestamp::CheckNote(*time_note, *told->signed_at_us, *options.tsa_roots, options.tsa_max_delay_s);
  if (!stamp.ok()) return std::string(stamp.status().message());
  told->stamp = *std::move(stamp);
  return "";
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

// What the auditor asked of the manifest and of the checkpoint `cp`
// (--expect-scope, --expect-grace-ms, --not-older-than). The failure,
// told, or nullopt.
std::optional<Result> CheckAsked(const manifest::Manifest& manifest, const note::Checkpoint& cp, const Options& options,
                                 const Result& told) {
  if (options.expect_scope && !SameScope(manifest.scope, *options.expect_scope)) {
    return Fail(told, pack::kManifest, -1,
                absl::StrCat("scope is ", told.scope, ", expected ", AskedScopeJson(*options.expect_scope),
                             " (--expect-scope)"));
  }
  if (std::string failure = CheckGrace(manifest, options.expect_grace_ms); !failure.empty()) {
    return Fail(told, pack::kManifest, -1, failure);
  }
  if (cp.size < options.not_older_than) {
    return Fail(told, pack::kCheckpoint, -1,
                absl::StrCat("tree size ", cp.size, " is older than the ", options.not_older_than,
                             " asked for (--not-older-than)"));
  }
  if (options.not_older_than_root && cp.size == options.not_older_than && cp.root != *options.not_older_than_root) {
    return Fail(told, pack::kCheckpoint, -1,
                absl::StrCat("root ", hash::Hex(cp.root), " at tree size ", cp.size,
                             ", the checkpoint given with "
                             "--not-older-than has root ",
                             hash::Hex(*options.not_older_than_root)));
  }
  return std::nullopt;
}

// The checkpoint the auditor gave with --since, and the time note kept with
// it (ReadSince).
struct Since {
  std::optional<note::Checkpoint> cp;  // nullopt: none given
  std::optional<KeptTime> note;        // nullopt: none kept
};

// `since` (Options::since) opened with the key (`vkey`, `verifier`):
// INVALID_ARGUMENT ("since: ...") when it or its time note does not hold.
absl::StatusOr<Since> ReadSince(const std::string& since, std::string vkey, note::Verifier verifier,
                                const std::optional<note::KeySet>& keys) {
  Since read;
  if (since.empty()) return read;
  KeptCheckpoint kept = SplitKeptCheckpoint(since);
  if (keys) {
    // Its own size's key (CONTRACT section 5d).
    auto claimed = note::ClaimedCheckpoint(kept.checkpoint);
    if (!claimed.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", claimed.status().message()));
    const note::KeySet::Range* at = keys->At(claimed->size);
    if (at == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("since: size ", claimed->size, ": no key is trusted for it"));
    }
    vkey = at->vkey;
    verifier = at->verifier;
  }
  if (!kept.time_note.empty()) {
    auto t = KeptCheckpointNote(vkey, kept);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", t.status().message()));
    read.note = *t;
  }
  auto since_text = verifier.Open(kept.checkpoint);
  if (!since_text.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", since_text.status().message()));
  auto parsed = note::ParseCheckpoint(*since_text);
  if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", parsed.status().message()));
  read.cp = *parsed;
  return read;
}

// The time notes the auditor kept (with --since, --not-older-than) against
// the pack's (in `told`, of the checkpoint `cp`): a ledger that signed a map
// root with a kept checkpoint signs it with every later one, and a note of
// the pack's very tree size signs the same map roots. The failure, told, or
// nullopt.
std::optional<Result> CheckKeptNotes(const Since& since, const note::Checkpoint& cp, const Options& options,
                                     const Result& told) {
  const int since_note_version = since.note ? since.note->version : 0;
  const int note_version = told.signed_at_us ? told.note_version : 0;
  for (auto [kept, flag] :
       {std::pair{since_note_version, "--since"}, std::pair{options.not_older_than_note_version, "--not-older-than"}}) {
    if (told.signed_at_us && note_version < kept && kept >= 2) {
      return Fail(told, pack::kCheckpointTime, -1,
                  absl::StrCat("a version ", note_version, " note, but the checkpoint given with ", flag,
                               " has a version ", kept, " note: a ledger that ",
                               kept >= 4   ? "keys runs by team does so"
                               : kept >= 3 ? "signs the team-head map root signs it"
                                           : "signs the run-head map root signs it",
                               " with every later checkpoint"));
    }
  }
  if (since.note && since.cp && since.cp->size == cp.size) {
    if (std::string failure =
            CheckKeptRoots(told, since.note->version, since.note->run_map_root, since.note->team_map_root, "--since");
        !failure.empty()) {
      return Fail(told, pack::kCheckpointTime, -1, failure);
    }
  }
  if (options.not_older_than_time_us && options.not_older_than == cp.size) {
    if (std::string failure =
            CheckKeptRoots(told, options.not_older_than_note_version, options.not_older_than_run_map_root,
                           options.not_older_than_team_map_root, "--not-older-than");
        !failure.empty()) {
      return Fail(told, pack::kCheckpointTime, -1, failure);
    }
  }
  return std::nullopt;
}

}  // namespace

Step<Keyed> CheckKeyAndManifest(const Files& files, const absl::StatusOr<manifest::Manifest>& unchecked_manifest,
                                const Options& options) {
  // A pack of format 6 proves its entries' inclusion with one multiproof,
  // earlier formats with a path per entry (CONTRACT section 7).
  bool shared = unchecked_manifest.ok() && unchecked_manifest->format >= 6;
  if (shared && files.digests.count(pack::kProofs)) {
    return Fail(Result(), pack::kProofs, -1, "a pack of format 6 proves inclusion with multiproof.txt");
  }
  if (unchecked_manifest.ok() && !shared && files.digests.count(pack::kMultiproof)) {
    return Fail(Result(), pack::kMultiproof, -1, "only a pack of format 6 carries a multiproof");
  }
  // Which proofs a pack carries is known from a manifest that parses;
  // one that does not is refused as such below.
  for (const char* name : {pack::kCheckpoint, pack::kEntries, pack::kVkey, pack::kManifest, pack::kManifestSig,
                           pack::kOutcomes, pack::kReport, shared ? pack::kMultiproof : pack::kProofs}) {
    if (name == pack::kProofs && !unchecked_manifest.ok()) continue;
    if (!files.digests.count(name)) return Fail(Result(), name, -1, "missing");
  }
  Step<Key> key =
      CheckKey(files.small.at(pack::kVkey), options,
               unchecked_manifest.ok() ? std::optional<uint64_t>(unchecked_manifest->tree_size) : std::nullopt);
  if (Stop* stop = key.stop()) return std::move(*stop);
  return CheckManifest(files, unchecked_manifest, std::move(*key));
}

Step<Checkpointed> CheckCheckpoint(const std::string& checkpoint_note,
                                   const std::optional<note::Checkpoint>& unchecked_cp, const Keyed& keyed,
                                   const Options& options) {
  Result told = keyed.told;
  if (std::string bad = CheckSignatureLines(checkpoint_note, keyed.verifier.name(), keyed.verifier.key_id());
      !bad.empty()) {
    return Fail(told, pack::kCheckpoint, -1, bad);
  }
  auto cp_text = keyed.verifier.Open(checkpoint_note);
  if (!cp_text.ok()) return Fail(told, pack::kCheckpoint, -1, std::string(cp_text.status().message()));
  auto cp = note::ParseCheckpoint(*cp_text);
  if (!cp.ok()) return Fail(told, pack::kCheckpoint, -1, std::string(cp.status().message()));
  if (cp->origin != told.origin || cp->origin != keyed.verifier.name()) {
    return Fail(told, pack::kCheckpoint, -1,
                absl::StrCat("origin '", cp->origin, "', manifest and key say '", told.origin, "'"));
  }
  if (cp->size != told.tree_size || hash::Hex(cp->root) != keyed.manifest.root) {
    return Fail(told, pack::kCheckpoint, -1,
                absl::StrCat("size ", cp->size, " root ", hash::Hex(cp->root), ", the manifest says size ",
                             told.tree_size, " root ", keyed.manifest.root));
  }
  // What the entries were checked against, before the signature was, is
  // what the signature covers.
  if (!unchecked_cp || unchecked_cp->size != cp->size || unchecked_cp->root != cp->root) {
    return Fail(told, pack::kCheckpoint, -1, "its text is not the one its signature covers");
  }
  told.root = hash::Hex(cp->root);
  Witnessed witnessed;
  if (options.policy) {
    auto checked = CheckWitnesses(*options.policy, keyed.vkey, checkpoint_note);
    if (!checked.ok()) return Fail(told, pack::kCheckpoint, -1, std::string(checked.status().message()));
    witnessed = *std::move(checked);
    told.quorum = std::move(witnessed.quorum);
    told.cosigned = std::move(witnessed.cosigned);
  }
  if (std::optional<Result> failed = CheckAsked(keyed.manifest, *cp, options, told)) return *std::move(failed);
  return Checkpointed{*std::move(cp), std::move(witnessed.times), std::move(told)};
}

Step<Timed> CheckConsistencyAndTime(const std::string* consistency, const std::string* time_note, const Keyed& keyed,
                                    const Checkpointed& checkpointed, const Options& options) {
  auto since = ReadSince(options.since, keyed.vkey, keyed.verifier, options.keys);
  if (!since.ok()) return since.status();
  Result told = checkpointed.told;
  if (std::string failure = CheckConsistency(keyed.verifier, options.keys ? &*options.keys : nullptr, checkpointed.cp,
                                             consistency, since->cp, &told);
      !failure.empty()) {
    return Fail(told, pack::kConsistency, -1, failure);
  }
  if (std::string failure = CheckTime(keyed.verifier, checkpointed.cp, keyed.manifest, time_note, &told);
      !failure.empty()) {
    return Fail(told, pack::kCheckpointTime, -1, failure);
  }
  std::optional<int64_t> since_time;
  if (since->note) since_time = since->note->time_us;
  if (std::string failure = CheckTimeOrder(told.signed_at_us, since_time, options.not_older_than_time_us);
      !failure.empty()) {
    return Fail(told, pack::kCheckpointTime, -1, failure);
  }
  if (std::optional<Result> failed = CheckKeptNotes(*since, checkpointed.cp, options, told)) return *std::move(failed);
  if (options.policy && !options.policy->monitors().empty()) {
    if (std::string failure = CheckMonitors(*options.policy, time_note, &told); !failure.empty()) {
      return Fail(told, pack::kCheckpointTime, -1, failure);
    }
  }
  if (std::string failure = CheckStamp(time_note, options, &told); !failure.empty()) {
    return Fail(told, pack::kCheckpointTime, -1, failure);
  }
  return Timed{std::move(told)};
}

}  // namespace ledger::verify
