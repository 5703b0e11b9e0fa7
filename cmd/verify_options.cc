#include "cmd/verify_options.h"

#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "export/verify/cc/key_history.h"
#include "ledger/format/note/note.h"
#include "ledger/format/tlogpolicy/tlogpolicy.h"
#include "util/files/files.h"
#include "util/text/progress.h"
#include "util/text/terminal.h"

namespace ledger::cmd {
namespace {

// The whole file a flag names; it MUST NOT be empty.
absl::StatusOr<std::string> FlagFile(const Flags& flags, const std::string& name) {
  const std::string& path = flags.Get(name);
  auto text = files::ReadFile(path);
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat("--", name, ": cannot read ", path));
  if (text->empty()) return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", path, " is empty"));
  return text;
}

// The key line of --vkey FILE (its first line) or --vkey-string S.
absl::StatusOr<std::string> GivenKey(const Flags& flags) {
  std::string vkey, flag = "--vkey-string";
  if (flags.Has("vkey")) {
    const std::string& path = flags.Get("vkey");
    std::ifstream in(path);
    if (!in) return absl::InvalidArgumentError(absl::StrCat("--vkey: cannot read ", path));
    std::getline(in, vkey);
    while (!vkey.empty() && (vkey.back() == '\r' || vkey.back() == ' ')) vkey.pop_back();
    if (vkey.empty()) return absl::InvalidArgumentError(absl::StrCat("--vkey: ", path, " holds no verifier key line"));
    flag = absl::StrCat("--vkey: ", path);
  } else {
    vkey = flags.Get("vkey-string");
    if (vkey.empty()) return absl::InvalidArgumentError("--vkey-string: empty");
  }
  if (auto key = note::Verifier::Parse(vkey); !key.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": not a verifier key (", key.status().message(), ")"));
  }
  return vkey;
}

// The checkpoint in the file a flag names, signed by `vkey`, and the time
// of the time note that may follow it (verify::SplitKeptCheckpoint).
struct FlagCheckpointAndTime {
  note::Checkpoint checkpoint;
  std::optional<verify::KeptTime> note;  // its time note's, when there is one
};
absl::StatusOr<FlagCheckpointAndTime> FlagCheckpoint(const Flags& flags, const std::string& name, std::string vkey,
                                                     const std::optional<note::KeySet>& keys = std::nullopt) {
  auto file = FlagFile(flags, name);
  if (!file.ok()) return file.status();
  verify::KeptCheckpoint kept = verify::SplitKeptCheckpoint(*file);
  if (keys) {
    // The key of the checkpoint's own size (CONTRACT section 5d).
    auto claimed = note::ClaimedCheckpoint(kept.checkpoint);
    if (!claimed.ok()) return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", claimed.status().message()));
    const note::KeySet::Range* at = keys->At(claimed->size);
    if (at == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, ": size ", claimed->size, ": no key of the key set is trusted for it"));
    }
    vkey = at->vkey;
  }
  auto text = note::Verifier::Parse(vkey)->Open(kept.checkpoint);
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", text.status().message()));
  auto cp = note::ParseCheckpoint(*text);
  if (!cp.ok()) return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", cp.status().message()));
  FlagCheckpointAndTime out{*cp, std::nullopt};
  if (!kept.time_note.empty()) {
    auto t = verify::KeptCheckpointNote(vkey, kept);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", t.status().message()));
    out.note = *t;
  }
  return out;
}

// CONTRACT section 5d: --key-set FILE, or the key given; then
// --key-history FILE followed from them. nullopt: neither flag, the key
// given stands for every size.
absl::StatusOr<std::optional<note::KeySet>> KeysBySize(const Flags& flags, const std::string& vkey) {
  if (!flags.Has("key-set") && !flags.Has("key-history")) return std::optional<note::KeySet>();
  absl::StatusOr<note::KeySet> keys = absl::InvalidArgumentError(
      "--key-history: needs the keys it starts from (--vkey FILE, --vkey-string S or --key-set FILE)");
  if (flags.Has("key-set")) {
    if (!vkey.empty()) return absl::InvalidArgumentError("verify: give --vkey or --key-set, not both");
    auto text = FlagFile(flags, "key-set");
    if (!text.ok()) return text.status();
    keys = note::KeySet::Parse(*text);
    if (!keys.ok()) return absl::InvalidArgumentError(absl::StrCat("--key-set: ", keys.status().message()));
  } else if (!vkey.empty()) {
    keys = note::KeySet::Of(vkey);
  }
  if (!keys.ok()) return keys.status();
  if (flags.Has("key-history")) {
    auto text = FlagFile(flags, "key-history");
    if (!text.ok()) return text.status();
    if (auto s = verify::FollowKeyHistory(*text, &*keys); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--key-history: ", s.message()));
    }
  }
  return std::optional<note::KeySet>(*std::move(keys));
}

}  // namespace

absl::StatusOr<verify::Options> VerifyOptions(const Flags& flags) {
  verify::Options options;
  bool key_given = flags.Has("vkey") || flags.Has("vkey-string");
  const bool key_set_given = flags.Has("key-set");
  options.trust_pack_key = flags.Bool("trust-pack-key");
  options.report_by_digest = flags.Bool("report-by-digest");
  if (flags.Has("vkey") && flags.Has("vkey-string")) {
    return absl::InvalidArgumentError("verify: give --vkey FILE or --vkey-string S, not both");
  }
  if (options.trust_pack_key && key_given) {
    return absl::InvalidArgumentError("verify: --trust-pack-key with a key given: give one or the other");
  }
  if (flags.Has("policy")) {
    auto text = FlagFile(flags, "policy");
    if (!text.ok()) return text.status();
    auto policy = tlogpolicy::Policy::Parse(*text);
    if (!policy.ok()) {
      std::string why(policy.status().message());
      if (why.starts_with("policy line ")) why.erase(0, 7);
      if (why.starts_with("policy: ")) why.erase(0, 8);
      return absl::InvalidArgumentError(absl::StrCat("--policy: ", why));
    }
    options.policy = *std::move(policy);
  }
  if (options.trust_pack_key && key_set_given) {
    return absl::InvalidArgumentError("verify: --trust-pack-key with a key set given: give one or the other");
  }
  if (!options.trust_pack_key && !key_given && !key_set_given && !options.policy) {
    return absl::InvalidArgumentError(
        "verify: give the ledger's key (--vkey FILE or --vkey-string S), a --policy FILE naming it in a log "
        "line, or --trust-pack-key to trust the key inside the pack");
  }
  if (key_given) {
    auto vkey = GivenKey(flags);
    if (!vkey.ok()) return vkey.status();
    options.vkey = *vkey;
  }
  if (auto keys = KeysBySize(flags, options.vkey); !keys.ok()) {
    return keys.status();
  } else if (keys->has_value()) {
    options.keys = *std::move(*keys);
    options.vkey.clear();
  }
  if (flags.Has("expect-scope")) {
    auto scope = verify::ParseExpectedScope(flags.Get("expect-scope"));
    if (!scope.ok()) return absl::InvalidArgumentError(absl::StrCat("--expect-scope: ", scope.status().message()));
    options.expect_scope = *scope;
  }
  if (flags.Has("since")) {
    auto since = FlagFile(flags, "since");
    if (!since.ok()) return since.status();
    options.since = *since;
    // Without the key (--trust-pack-key), the verifier checks it against the pack's.
    if (key_given || key_set_given) {
      if (auto cp = FlagCheckpoint(flags, "since", options.vkey, options.keys); !cp.ok()) return cp.status();
    }
  }
  if (flags.Has("not-older-than")) {
    const std::string& arg = flags.Get("not-older-than");
    if (!arg.empty() && arg.find_first_not_of("0123456789") == std::string::npos) {
      auto n = flags.Int("not-older-than");
      if (!n.ok()) return n.status();
      options.not_older_than = static_cast<uint64_t>(*n);
    } else if (!key_given) {
      return absl::InvalidArgumentError(
          "verify: --not-older-than CHECKPOINT needs the ledger's key (--vkey or --vkey-string)");
    } else {
      auto cp = FlagCheckpoint(flags, "not-older-than", options.vkey, options.keys);
      if (!cp.ok()) return cp.status();
      options.not_older_than = cp->checkpoint.size;
      options.not_older_than_root = cp->checkpoint.root;
      if (cp->note) {
        options.not_older_than_time_us = cp->note->time_us;
        options.not_older_than_note_version = cp->note->version;
        options.not_older_than_run_map_root = cp->note->run_map_root;
        options.not_older_than_team_map_root = cp->note->team_map_root;
      }
    }
  }
  if (flags.Has("tsa-root")) {
    auto pem = FlagFile(flags, "tsa-root");
    if (!pem.ok()) return pem.status();
    auto roots = timestamp::TsaRoots::Parse(*pem);
    if (!roots.ok()) return absl::InvalidArgumentError(absl::StrCat("--tsa-root: ", roots.status().message()));
    options.tsa_roots = *std::move(roots);
  }
  if (flags.Has("tsa-max-delay")) {
    auto s = flags.Int("tsa-max-delay");
    if (!s.ok() || *s < 1) return absl::InvalidArgumentError("--tsa-max-delay: want a number of seconds, 1 or more");
    options.tsa_max_delay_s = *s;
  }
  if (flags.Has("expect-grace-ms")) {
    const std::string& arg = flags.Get("expect-grace-ms");
    auto ms = flags.Int("expect-grace-ms");
    if (arg.empty() || arg.find_first_not_of("0123456789") != std::string::npos || !ms.ok()) {
      return absl::InvalidArgumentError("--expect-grace-ms: want a number of milliseconds");
    }
    options.expect_grace_ms = static_cast<uint64_t>(*ms);
  }
  return options;
}

void DefineVerifyFlags(Flags& flags) {
  flags.Define("vkey", "", "a file holding the ledger's verifier key line");
  flags.Define("vkey-string", "", "the ledger's verifier key line itself");
  flags.Define("key-set", "",
               "a file of the ledger's keys, each with the sizes it signs (CONTRACT section 5d): "
               "<vkey>[ from N][ until N] a line");
  flags.Define("key-history", "",
               "the ledger's key history (ledgerctl key-history), followed from --vkey or --key-set to the key "
               "of the pack's size");
  flags.Define("trust-pack-key", "",
               "trust the key inside the pack (the result proves nothing about the ledger's identity)", true);
  flags.Define("since", "",
               "a file holding an earlier signed checkpoint: the pack must prove consistency from exactly it");
  flags.Define("expect-scope", "",
               "the scope asked for (run:TEAM/RUN, seq:A:B, team:TEAM,FROM,TO with RFC 3339 times); a pack of "
               "another scope fails");
  flags.Define("not-older-than", "",
               "a tree size, or a file holding a signed checkpoint: a pack against an older checkpoint fails");
  flags.Define("policy", "",
               "a C2SP tlog-policy file: the ledger's key must be one of its logs (the key, when no --vkey is "
               "given) and the checkpoint's cosignatures must meet its quorum");
  flags.Define("expect-grace-ms", "",
               "the ledger's grace (ledgerd --unknown-grace-ms) the auditor expects: a pack whose manifest states "
               "another unknown_grace_ms fails");
  flags.Define(
      "report-by-digest", "",
      "check report.html of a pack of format 5 or earlier by its digest only, not rebuilt from the entries (for a "
      "pack written by an earlier version, whose page's words have changed since; the page is then only as good "
      "as the ledger's key)",
      true);
  flags.Define("tsa-root", "",
               "a file of PEM certificates: the checkpoint-time note must carry a time-stamp token of a TSA that "
               "chains to one of them, over its text, stamped at most --tsa-max-delay after the note's time "
               "(CONTRACT section 5e)");
  flags.Define("tsa-max-delay", "60", "seconds a time-stamp may come after the note's time (with --tsa-root)");
  flags.Define("json", "", "the result as JSON", true);
  flags.Define("no-progress", "", "no progress line on stderr (shown only when stderr is a terminal)", true);
}

int RunVerify(const Flags& flags, const std::string& pack_path, std::string_view program) {
  auto fail = [&](const absl::Status& s) {
    // The message may quote the pack or the files given (util/text).
    std::cerr << program << ": " << text::TerminalEscape(std::string(s.message())) << "\n";
    return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 3;  // usage, or the pack never judged
  };
  auto options = VerifyOptions(flags);
  if (!options.ok()) return fail(options.status());
  text::ProgressMeter progress("verifying", "entries", !flags.Bool("no-progress"));
  options->progress = &progress;
  auto result = verify::VerifyPack(pack_path, *options);
  progress.Finish();  // the line erased before the result is printed
  if (!result.ok()) return fail(result.status());
  if (flags.Bool("json")) {
    // Every character outside ASCII as \uXXXX: the same JSON, and nothing
    // a terminal acts on.
    std::cout << result->Json().dump(-1, ' ', /*ensure_ascii=*/true) << "\n";
  } else {
    std::cout << result->Summary();
  }
  return result->ok ? 0 : 1;
}

}  // namespace ledger::cmd
