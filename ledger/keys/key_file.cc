#include "ledger/keys/key_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "util/files/files.h"

namespace ledger::keys {

absl::StatusOr<note::Signer> CreateKeyFile(const std::string& path, const std::string& origin) {
  auto signer = note::Signer::Generate(origin);
  if (!signer.ok()) return signer.status();
  auto text = signer->KeyFileText();
  if (!text.ok()) return text.status();
  absl::Status s = files::CreateFileDurably(path, *text, 0600);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("signing key: ", s.message()));
  return signer;
}

absl::StatusOr<note::Signer> ReadKeyFile(const std::string& path, const std::string& origin) {
  auto text = files::ReadFile(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat("signing key: cannot read ", path));
  auto signer = note::Signer::ParseKeyFile(*text);
  if (!signer.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", std::string(signer.status().message())));
  }
  if (signer->name() != origin) {
    return absl::FailedPreconditionError(absl::StrCat("signing key: ", path, " is named '", signer->name(),
                                                      "' but the origin is '", origin,
                                                      "'; checkpoints are signed with the origin as key name"));
  }
  return signer;
}

absl::StatusOr<std::string> KeyFileName(const std::string& path) {
  auto text = files::ReadFile(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat("signing key: cannot read ", path));
  auto signer = note::Signer::ParseKeyFile(*text);
  if (!signer.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", std::string(signer.status().message())));
  }
  return signer->name();
}

absl::StatusOr<note::Signer> LoadOrCreateKey(const std::string& data_dir, const std::string& explicit_path,
                                             const std::string& origin) {
  if (!explicit_path.empty()) return ReadKeyFile(explicit_path, origin);
  std::string path = data_dir + "/signing.key";
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return ReadKeyFile(path, origin);
  return CreateKeyFile(path, origin);
}

}  // namespace ledger::keys
