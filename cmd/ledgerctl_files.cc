// ledgerctl's commands on files alone: a stopped ledger's data directory
// (rebuild, audit), a pack (verify), a key (keygen) and a checkpoint
// against a tlog-policy (policy-check).
//
// Rebuild and audit open the stopped ledger's store itself: the one place
// above the storage room allowed to (docs/rooms.json, `private`), because
// they must see the rows as they lie on disk, where Log::Open would first
// migrate, catch up and sign, and refuse the damaged store an audit is for.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cmd/ledgerctl.h"
#include "cmd/verify_options.h"
#include "export/verify/cc/pack_proof.h"
#include "export/verify/cc/verify.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/note.h"
#include "ledger/format/retention/policy.h"
#include "ledger/format/tlogpolicy/tlogpolicy.h"
#include "ledger/keys/key_file.h"
#include "ledger/keys/pkcs11.h"
#include "ledger/storage/log/audit.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/log/run_heads.h"
#include "ledger/storage/store/store.h"
#include "query/projector/projector.h"
#include "util/files/files.h"
#include "util/text/progress.h"
#include "util/text/terminal.h"

namespace ledger::ctl {
namespace {

// The process that holds the store's lock (RocksDB's LOCK file, locked
// with fcntl), or 0 when none does.
pid_t LockHolder(const std::string& lock_file) {
  int fd = ::open(lock_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  pid_t holder = ::fcntl(fd, F_GETLK, &lock) == 0 && lock.l_type != F_UNLCK ? lock.l_pid : 0;
  ::close(fd);
  return holder;
}

// FAILED_PRECONDITION in one sentence naming the process when a process
// (a running ledgerd) holds the store in `data`: `what` says why that matters.
absl::Status NotHeld(const std::string& data, std::string_view what) {
  pid_t holder = LockHolder(data + "/db/LOCK");
  if (holder == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("the store in ", data, " is in use by process ", holder,
                   " (a running ledgerd?); stop the server first: ", std::string(what)));
}

absl::StatusOr<std::string> ReadVkeyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("--vkey: cannot read ", path));
  std::string vkey;
  std::getline(in, vkey);
  return vkey;
}

// A verification's or audit's result: JSON with --json, else its summary;
// exit 0 when it holds, 1 when it does not.
template <typename Result>
int Report(const Result& result, const Flags& flags) {
  if (flags.Bool("json")) {
    std::cout << result.Json().dump() << "\n";
  } else {
    std::cout << result.Summary();
  }
  return result.ok ? 0 : 1;
}

}  // namespace

int Rebuild(const Flags& flags) {
  if (flags.Get("data").empty()) return Fail(absl::InvalidArgumentError("rebuild: --data DIR is required"));
  if (absl::Status held = NotHeld(flags.Get("data"), "rebuild rewrites a store that no process is writing");
      !held.ok()) {
    return Fail(absl::Status(held.code(), absl::StrCat("rebuild: ", held.message())));
  }
  ledger::query::StepProjector projector;
  auto start = std::chrono::steady_clock::now();
  absl::Status s = ledger::log::RebuildProjections(flags.Get("data"), projector, [](uint64_t done, uint64_t total) {
    std::cerr << "\rrebuild: " << done << " / " << total << " entries" << std::flush;
  });
  std::cerr << "\n";
  if (!s.ok()) return Fail(s);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "projections rebuilt from the log in " << secs << " s\n";
  // The run rows, which the run-head map is loaded from, too.
  start = std::chrono::steady_clock::now();
  auto store = ledger::store::Store::Open(flags.Get("data") + "/db");
  if (!store.ok()) return Fail(store.status());
  auto rows = ledger::log::RebuildRunHeads(**store);
  if (!rows.ok()) return Fail(rows.status());
  secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << *rows << " run heads rebuilt from the log in " << secs << " s\n";
  auto teams = ledger::log::RebuildTeamHeads(**store);
  if (!teams.ok()) return Fail(teams.status());
  std::cout << *teams << " team heads rebuilt from the log\n";
  return 0;
}

int Verify(const Flags& flags) {
  if (flags.positional().size() != 2) return Fail(absl::InvalidArgumentError("verify: give one PACK"));
  return ledger::cmd::RunVerify(flags, flags.positional()[1], "ledgerctl");
}

// The pack is verified as `verify` does (the same options); only a pack
// that holds yields a proof. Exit codes as verify's.
int PackProof(const Flags& flags) {
  if (flags.positional().size() != 2) return Fail(absl::InvalidArgumentError("pack-proof: give one PACK"));
  auto seq = flags.Int("seq");
  if (!flags.Has("seq") || !seq.ok() || *seq < 0) {
    return Fail(absl::InvalidArgumentError("pack-proof: --seq N is required (the entry's seq, N >= 0)"));
  }
  // tlog-proof unless JSON is asked for (prove's --format is json by default).
  const std::string format = flags.Has("format") ? flags.Get("format") : "tlog-proof";
  if (format != "json" && format != "tlog-proof") {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("pack-proof: --format: want json or tlog-proof, found '", text::TerminalEscape(format), "'")));
  }
  const std::string& pack = flags.positional()[1];
  auto options = ledger::cmd::VerifyOptions(flags);
  if (!options.ok()) return Fail(options.status());
  text::ProgressMeter progress("verifying", "entries", !flags.Bool("no-progress"));
  options->progress = &progress;
  auto result = verify::VerifyPack(pack, *options);
  progress.Finish();
  if (!result.ok()) return Fail(result.status());
  if (!result->ok) {
    std::cerr << result->Summary();
    return 1;
  }
  auto proof = verify::ProveFromPack(pack, static_cast<uint64_t>(*seq));
  if (!proof.ok()) return Fail(proof.status());
  if (format == "tlog-proof") {
    std::cout << verify::TlogProofText(*proof);
    return 0;
  }
  Json inclusion = Json::array();
  for (const hash::Hash& h : proof->path) inclusion.push_back(hash::Hex(h));
  std::cout << Json{{"seq", proof->seq},
                    {"tree_size", proof->tree_size},
                    {"leaf_hash", hash::Hex(proof->leaf_hash)},
                    {"inclusion", inclusion}}
                   .dump()
            << "\n";
  return 0;
}

// Exit codes: 0 consistent, 1 an inconsistency (reported), 2 bad usage,
// 3 the store or key could not be read (for example: the server is running).
int AuditStore(const Flags& flags) {
  const std::string& data = flags.Get("data");
  if (data.empty()) return Fail(absl::InvalidArgumentError("audit: --data DIR is required"));
  auto unreadable = [](const absl::Status& s) {
    std::cerr << "ledgerctl: audit: " << text::TerminalEscape(std::string(s.message())) << "\n";
    return 3;
  };
  std::string vkey;
  if (!flags.Get("vkey").empty()) {
    auto read = ReadVkeyFile(flags.Get("vkey"));
    if (!read.ok()) return unreadable(read.status());
    vkey = *read;
  } else {
    auto signer = ledger::keys::ReadKeyFile(data + "/signing.key", flags.Get("origin"));
    if (!signer.ok()) return unreadable(signer.status());
    vkey = signer->VerifierKey();
  }
  auto key = ledger::note::Verifier::Parse(vkey);
  if (!key.ok()) return unreadable(key.status());
  // Never create a store where there is none.
  if (!std::filesystem::exists(data + "/db/CURRENT")) {
    return unreadable(absl::NotFoundError(absl::StrCat("no ledger store in ", data)));
  }
  if (absl::Status held = NotHeld(data, "audit reads a store that no process is writing"); !held.ok()) {
    return unreadable(held);
  }
  auto store = ledger::store::Store::Open(data + "/db");
  if (!store.ok()) return unreadable(store.status());
  text::ProgressMeter progress("auditing", "entries", !flags.Bool("no-progress"));
  std::string replay_state;
  auto report =
      ledger::log::Audit(**store, *key, &progress, flags.Get("replay-state").empty() ? nullptr : &replay_state);
  progress.Finish();  // the line erased before the report is printed
  if (!report.ok()) return unreadable(report.status());
  if (report->ok && !flags.Get("replay-state").empty()) {
    if (absl::Status s = ledger::files::WriteFileAtomically(flags.Get("replay-state"), replay_state); !s.ok()) {
      return unreadable(s);
    }
  }
  return Report(*report, flags);
}

int Keygen(const Flags& flags) {
  if (!flags.Get("pkcs11").empty()) {
    if (!flags.Get("out").empty()) {
      return Fail(absl::InvalidArgumentError("keygen: give --out FILE or --pkcs11 URI, not both"));
    }
    if (!ledger::keys::IsPkcs11Uri(flags.Get("pkcs11"))) {
      return Fail(absl::InvalidArgumentError("--pkcs11: must be an RFC 7512 URI starting with 'pkcs11:'"));
    }
    auto uri = ledger::keys::ParsePkcs11Uri(flags.Get("pkcs11"));
    if (!uri.ok()) return Fail(uri.status());
    auto key = ledger::keys::Pkcs11Key::Generate(*uri);
    if (!key.ok()) return Fail(key.status());
    auto signer = ledger::note::Signer::FromKey(flags.Get("origin"), *std::move(key));
    if (!signer.ok()) return Fail(signer.status());
    std::cout << signer->VerifierKey() << "\n";
    return 0;
  }
  if (flags.Get("out").empty())
    return Fail(absl::InvalidArgumentError("keygen: --out FILE or --pkcs11 URI is required"));
  auto signer = ledger::keys::CreateKeyFile(flags.Get("out"), flags.Get("origin"));
  if (!signer.ok()) return Fail(signer.status());
  std::cout << signer->VerifierKey() << "\n";
  return 0;
}

// Checks a checkpoint (a file or stdin) against a C2SP tlog-policy: signed
// by one of its logs, and cosigned by witnesses that meet its quorum. Exit
// 0 with the OK line naming each cosignature's time; otherwise the reason,
// naming the missing witnesses.
int RetentionCheck(const Flags& flags) {
  if (flags.positional().size() != 2) {
    std::cerr << "usage: ledgerctl retention-check FILE\n";
    return 2;
  }
  auto text = ledger::files::ReadFile(flags.positional()[1]);
  if (!text.ok()) return Fail(text.status());
  auto policy = ledger::retention::Policy::Parse(*text);
  if (!policy.ok()) {
    std::cerr << "retention-check: " << flags.positional()[1] << ": " << policy.status().message() << "\n";
    return 2;
  }
  std::cout << policy->Describe();
  return 0;
}

int PolicyCheck(const Flags& flags) {
  if (flags.Get("policy").empty()) return Fail(absl::InvalidArgumentError("policy-check: --policy FILE is required"));
  std::ifstream policy_file(flags.Get("policy"));
  if (!policy_file) return Fail(absl::NotFoundError(absl::StrCat("--policy: cannot read ", flags.Get("policy"))));
  std::stringstream policy_text, note_text;
  policy_text << policy_file.rdbuf();
  auto policy = ledger::tlogpolicy::Policy::Parse(policy_text.str());
  if (!policy.ok()) return Fail(absl::InvalidArgumentError(absl::StrCat("--policy: ", policy.status().message())));
  std::string path = flags.positional().size() > 1 ? flags.positional()[1] : "-";
  if (path == "-") {
    note_text << std::cin.rdbuf();
  } else {
    std::ifstream in(path);
    if (!in) return Fail(absl::NotFoundError(absl::StrCat("policy-check: cannot read ", path)));
    note_text << in.rdbuf();
  }
  auto text = policy->OpenCheckpoint(note_text.str());
  if (!text.ok()) return Fail(text.status());
  auto checkpoint = ledger::note::ParseCheckpoint(*text);
  if (!checkpoint.ok()) return Fail(checkpoint.status());
  auto evaluation = policy->Evaluate(note_text.str());
  if (!evaluation.ok()) return Fail(evaluation.status());
  std::string cosigned;
  for (const auto& c : evaluation->cosigned) {
    absl::StrAppend(&cosigned, cosigned.empty() ? "" : ", ", c.witness, " at ",
                    absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(static_cast<int64_t>(c.time)),
                                     absl::UTCTimeZone()));
  }
  if (!evaluation->quorum) {
    std::string missing;
    for (const auto& m : evaluation->missing) absl::StrAppend(&missing, missing.empty() ? "" : ", ", m);
    return Fail(absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", checkpoint->origin, " size ", checkpoint->size, " lacks the quorum '",
                     policy->quorum(), "': missing cosignatures of ", missing,
                     cosigned.empty() ? "" : absl::StrCat(" (cosigned by ", cosigned, ")"))));
  }
  std::cout << "OK: checkpoint " << text::TerminalEscape(checkpoint->origin) << " size " << checkpoint->size
            << " meets the quorum '" << policy->quorum() << "'"
            << (cosigned.empty() ? "" : absl::StrCat(": cosigned by ", cosigned)) << "\n";
  return 0;
}

}  // namespace ledger::ctl
