// ledgerctl prove-run: a run's head proof in the run-head map (CONTRACT
// section 6a), printed alone as run-head.json holds it. From a server (the
// latest checkpoint), or, with --data, from a stopped ledger's store by a
// replay of its entries up to --size (what a monitor does): the replayed
// root must be the one the checkpoint-time note of that size signs.
// ledgerctl prove-team: the same for a team's head in the team-head map,
// as team-window.json's `head` holds it, from a stopped ledger's store.
// Like audit (ledgerctl_files.cc), --data opens the stopped store itself
// (docs/rooms.json, `private`): a monitor's replay reads it as it lies.
#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cmd/ledgerctl.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/note.h"
#include "ledger/format/runmap/proof_json.h"
#include "ledger/keys/key_file.h"
#include "ledger/storage/log/run_heads.h"
#include "ledger/storage/store/store.h"
#include "ledger_service.grpc.pb.h"

namespace ledger::ctl {
namespace {

absl::Status Need(const Flags& flags) {
  if (flags.Get("team").empty() || flags.Get("run").empty()) {
    return absl::InvalidArgumentError("prove-run: give --team T --run R");
  }
  return absl::OkStatus();
}

// Which head map a command proves from: the run-head map (note version 2 on)
// or the team-head map (version 3 on).
struct MapKind {
  std::string_view command;
  std::string_view name;     // "run-head map"
  std::string_view signed_;  // what notes before it lack
  bool team;
};
constexpr MapKind kRunMap{"prove-run", "run-head map", "run-head map roots", false};
constexpr MapKind kTeamMap{"prove-team", "team-head map", "team-head map roots (checkpoint-time notes of version 3)",
                           true};

// The map root the time note of `size` signs, checked against the key, and
// the run keys it is under.
struct SignedRoot {
  hash::Hash root;
  runmap::KeyVersion keys;
};
absl::StatusOr<SignedRoot> SignedMapRoot(const store::Store& store, const note::Verifier& key, uint64_t size,
                                         const MapKind& kind) {
  auto note_text = store.GetCheckpointTime(size);
  if (absl::IsNotFound(note_text.status())) {
    return absl::NotFoundError(absl::StrCat("size: no checkpoint of size ", size, " has a signed time note"));
  }
  if (!note_text.ok()) return note_text.status();
  auto text = key.Open(*note_text);
  if (!text.ok())
    return absl::DataLossError(absl::StrCat("checkpoint time of size ", size, ": ", text.status().message()));
  auto t = note::ParseCheckpointTime(*text);
  if (!t.ok()) return absl::DataLossError(std::string(t.status().message()));
  const std::optional<hash::Hash>& root = kind.team ? t->team_map_root : t->run_map_root;
  if (!root) {
    return absl::NotFoundError(absl::StrCat("size: the checkpoint of size ", size,
                                            " was signed before the ledger signed ", std::string(kind.signed_)));
  }
  return SignedRoot{*root, runmap::KeysOfNote(t->version()).value_or(runmap::KeyVersion::kV2)};
}

int Offline(const Flags& flags, const MapKind& kind) {
  auto unreadable = [&kind](const absl::Status& s) {
    std::cerr << "ledgerctl: " << kind.command << ": " << s.message() << "\n";
    return 3;
  };
  const std::string& data = flags.Get("data");
  auto size = flags.Int("size");
  if (!size.ok()) return Fail(size.status());
  if (*size <= 0) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat(std::string(kind.command), ": --data needs --size S, a checkpoint's size")));
  }
  auto signer = keys::ReadKeyFile(data + "/signing.key", flags.Get("origin"));
  if (!signer.ok()) return unreadable(signer.status());
  auto key = note::Verifier::Parse(signer->VerifierKey());
  if (!key.ok()) return unreadable(key.status());
  if (!std::filesystem::exists(data + "/db/CURRENT")) {
    return unreadable(absl::NotFoundError(absl::StrCat("no ledger store in ", data)));
  }
  auto store = store::Store::Open(data + "/db");
  if (!store.ok()) return unreadable(store.status());
  // Checked before the note is read: a bad team or run is the caller's.
  if (auto k = kind.team ? runmap::TeamKey(flags.Get("team"))
                         : runmap::RunKey(flags.Get("team"), flags.Get("run"), runmap::KeyVersion::kV2);
      !k.ok()) {
    return Fail(k.status());
  }
  auto signed_root = SignedMapRoot(**store, *key, static_cast<uint64_t>(*size), kind);
  if (!signed_root.ok()) return unreadable(signed_root.status());
  // The keys of the note's version (CONTRACT section 6a, "Which run key").
  const runmap::Key k = kind.team ? runmap::TeamKeyOf(flags.Get("team"))
                                  : runmap::RunKeyOf(flags.Get("team"), flags.Get("run"), signed_root->keys);
  auto map = kind.team ? log::ReplayTeamMap(**store, static_cast<uint64_t>(*size))
                       : log::ReplayRunMap(**store, static_cast<uint64_t>(*size), signed_root->keys);
  if (!map.ok()) return unreadable(map.status());
  if (map->Root() != signed_root->root) {
    return unreadable(absl::DataLossError(absl::StrCat("the checkpoint-time note of size ", *size, " signs the ",
                                                       std::string(kind.name), " root ", hash::Hex(signed_root->root),
                                                       ", the log's entries give ", hash::Hex(map->Root()))));
  }
  auto path = map->Prove(k);
  if (!path.ok()) return unreadable(path.status());
  std::cout << runmap::EncodeProof({k, *path}) << "\n";
  return 0;
}

}  // namespace

int ProveRun(pb::LedgerService::Stub* stub, const Flags& flags) {
  if (auto s = Need(flags); !s.ok()) return Fail(s);
  if (!flags.Get("data").empty()) return Offline(flags, kRunMap);
  if (stub == nullptr) return Fail(absl::InvalidArgumentError("prove-run: give --server or --data"));
  pb::GetRunProofRequest request;
  request.set_team(flags.Get("team"));
  request.set_run_id(flags.Get("run"));
  auto size = flags.Int("size");
  if (!size.ok()) return Fail(size.status());
  request.set_tree_size(static_cast<uint64_t>(*size));
  grpc::ClientContext ctx;
  pb::RunProof proof;
  grpc::Status s = stub->GetRunProof(&ctx, request, &proof);
  if (!s.ok()) return Fail(FromGrpc(s));
  std::cout << proof.proof() << "\n";
  return 0;
}

int ProveTeam(const Flags& flags) {
  if (flags.Get("team").empty()) return Fail(absl::InvalidArgumentError("prove-team: give --team T"));
  if (flags.Get("data").empty()) {
    return Fail(absl::InvalidArgumentError("prove-team: give --data DIR (a stopped ledger's data directory)"));
  }
  return Offline(flags, kTeamMap);
}

}  // namespace ledger::ctl
