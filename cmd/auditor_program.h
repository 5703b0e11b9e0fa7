// What the programs an auditor runs (ledger-witness, ledger-monitor) share:
// the key they cosign with, --key FILE (a mounted Secret; never created),
// --key pkcs11:URI (a key kept in a token, ledger/keys/pkcs11.h; --name
// required), or <data>/<file> (mode 0600, created on first use), `Key`
// being cosign::Cosigner or cosign::MapCosigner; and how they serve:
// HTTPS with client certificates, or plain HTTP on loopback.
#ifndef CMD_AUDITOR_PROGRAM_H_
#define CMD_AUDITOR_PROGRAM_H_

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cmd/flags.h"
#include "cmd/loopback.h"
#include "ledger/keys/pkcs11.h"
#include "util/files/files.h"
#include "util/http/http.h"
#include "util/jsonlog/jsonlog.h"

namespace ledger::cmd {

struct CosignerKeyFile {
  const char* file;          // in the data directory, e.g. "witness.key"
  const char* default_name;  // of a key created there
  const char* role;          // "witness", "monitor": in messages
};

// The file of --`flag`; errors name the flag.
inline absl::StatusOr<std::string> ReadFlagFile(const std::string& flag, const std::string& path) {
  auto text = files::ReadFile(path);
  if (!text.ok()) return absl::Status(text.status().code(), absl::StrCat("--", flag, ": ", text.status().message()));
  return text;
}

template <typename Key>
absl::StatusOr<Key> LoadOrCreateCosignerKey(const std::string& data, const std::string& name,
                                            const CosignerKeyFile& kind) {
  std::string path = absl::StrCat(data, "/", kind.file);
  auto text = ReadFlagFile("data", path);
  if (text.ok()) {
    auto key = Key::ParseKeyFile(*text);
    if (!key.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", key.status().message()));
    if (!name.empty() && key->name() != name) {
      return absl::FailedPreconditionError(absl::StrCat("--name: the key in ", path, " is named '", key->name(),
                                                        "', not '", name, "'; a ", kind.role, " keeps its name"));
    }
    return key;
  }
  auto key = Key::Generate(name.empty() ? kind.default_name : name);
  if (!key.ok()) return absl::InvalidArgumentError(absl::StrCat("--name: ", key.status().message()));
  auto key_file = key->KeyFileText();
  if (!key_file.ok()) return key_file.status();
  absl::Status s = files::CreateFileDurably(path, *key_file, 0600);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(kind.role, " key: ", s.message()));
  return key;
}

// --key FILE, --key pkcs11:URI, or the data directory's key.
template <typename Key>
absl::StatusOr<Key> CosignerKey(const Flags& flags, const std::string& data, const CosignerKeyFile& kind) {
  if (flags.Get("key").empty()) return LoadOrCreateCosignerKey<Key>(data, flags.Get("name"), kind);
  if (keys::IsPkcs11Uri(flags.Get("key"))) {
    if (flags.Get("name").empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--name: required with a PKCS#11 key; the name is part of the ", kind.role, "'s verifier key"));
    }
    auto token_key = keys::OpenPkcs11Key(flags.Get("key"));
    if (!token_key.ok()) {
      return absl::Status(token_key.status().code(), absl::StrCat("--key: ", token_key.status().message()));
    }
    if ((*token_key)->info().extractable) {
      jsonlog::Warn("key_extractable")
          .Msg(absl::StrCat("the token lets the key out (CKA_EXTRACTABLE): ", (*token_key)->where()))
          .Emit();
    }
    auto c = Key::FromKey(flags.Get("name"), *std::move(token_key));
    if (!c.ok()) return absl::InvalidArgumentError(absl::StrCat("--name: ", c.status().message()));
    return c;
  }
  auto text = ReadFlagFile("key", flags.Get("key"));
  if (!text.ok()) return text.status();
  auto key = Key::ParseKeyFile(*text);
  if (!key.ok())
    return absl::InvalidArgumentError(absl::StrCat("--key: ", flags.Get("key"), ": ", key.status().message()));
  if (flags.Has("name") && key->name() != flags.Get("name")) {
    return absl::FailedPreconditionError(
        absl::StrCat("--name: the key in ", flags.Get("key"), " is named '", key->name(), "'"));
  }
  return key;
}

// HTTPS with client certificates when any of --tls-cert, --tls-key and
// --client-ca is given (then all three are required); plain HTTP only on a
// --listen on loopback unless --insecure.
inline absl::StatusOr<std::optional<http::HttpTls>> ServingTls(const Flags& flags) {
  bool tls = flags.Has("tls-cert") || flags.Has("tls-key") || flags.Has("client-ca");
  if (!tls) {
    if (!IsLoopback(flags.Get("listen")) && !flags.Bool("insecure")) {
      return absl::InvalidArgumentError(absl::StrCat("--listen: ", flags.Get("listen"),
                                                     " is not a loopback address; give --tls-cert, --tls-key and "
                                                     "--client-ca, or --insecure"));
    }
    return std::nullopt;
  }
  http::HttpTls http_tls;
  for (auto [flag, part] : {std::pair{"tls-cert", &http_tls.cert_pem}, std::pair{"tls-key", &http_tls.key_pem},
                            std::pair{"client-ca", &http_tls.client_ca_pem}}) {
    auto pem = ReadFlagFile(flag, flags.Get(flag));
    if (!pem.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": required with TLS (--tls-cert, --tls-key, --client-ca)"));
    }
    *part = *std::move(pem);
  }
  return http_tls;
}

// Parses argv into `flags` (defined by the caller) and answers --help with
// `usage` and the flags: nullopt to go on, else the exit code (2 for a bad
// flag, 0 after --help).
inline std::optional<int> ParseOrHelp(Flags& flags, int argc, char** argv, const char* usage) {
  if (absl::Status s = flags.Parse(argc, argv, 1); !s.ok()) {
    std::cerr << s.message() << "\n" << flags.Usage();
    return 2;
  }
  if (flags.Bool("help")) {
    std::cout << usage << flags.Usage();
    return 0;
  }
  return std::nullopt;
}

// The one command both programs take beside serving: `vkey` prints the
// verifier key of `key`. nullopt when no command was given, else the exit
// code (2 for another command).
template <typename Key>
std::optional<int> VkeyCommand(const Flags& flags, const Key& key) {
  if (flags.positional().empty()) return std::nullopt;
  if (flags.positional() != std::vector<std::string>{"vkey"}) {
    std::cerr << "unknown command; commands: vkey\n";
    return 2;
  }
  std::cout << key.VerifierKey() << "\n";
  return 0;
}

// One serving process per data directory: two would each keep their own
// copy of its records. Holds <data>/LOCK for the life of the process;
// FAILED_PRECONDITION naming `program` when another holds it.
inline absl::Status LockDataDir(const std::string& data, const char* program) {
  int lock = ::open((data + "/LOCK").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    if (lock >= 0) ::close(lock);
    return absl::FailedPreconditionError(absl::StrCat("--data: ", data, " is in use by another ", program));
  }
  return absl::OkStatus();  // the descriptor stays open: the lock with it
}

}  // namespace ledger::cmd

#endif  // CMD_AUDITOR_PROGRAM_H_
