#include "ledger/keys/signing_key.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ledger/keys/key_file.h"
#include "ledger/keys/pkcs11.h"

namespace ledger::keys {

absl::StatusOr<note::Signer> OpenLogSigner(const std::string& data_dir, const std::string& spec,
                                           const std::string& origin) {
  if (!IsPkcs11Uri(spec)) return LoadOrCreateKey(data_dir, spec, origin);
  if (origin.empty()) {
    return absl::InvalidArgumentError(
        "--origin: required with a PKCS#11 signing key; the origin is the name checkpoints are signed with");
  }
  auto key = OpenPkcs11Key(spec);
  if (!key.ok()) return key.status();
  return note::Signer::FromKey(origin, *std::move(key));
}

absl::StatusOr<note::Signer> OpenNextSigner(const std::string& data_dir, const std::string& log_spec,
                                            const std::string& spec, const std::string& origin) {
  if (!spec.empty()) {
    if (IsPkcs11Uri(spec)) return OpenLogSigner(data_dir, spec, origin);
    return ReadKeyFile(spec, origin);
  }
  if (!log_spec.empty()) {
    return absl::FailedPreconditionError(
        "new_key: required: the ledger's key is not the data directory's own (--signing-key), so the new key "
        "must be named too (a key file's path or a PKCS#11 URI); start ledgerd with it afterwards");
  }
  if (auto s = DropNextKey(data_dir); !s.ok()) return s;
  return CreateKeyFile(data_dir + "/" + kNextKeyFile, origin);
}

absl::StatusOr<std::optional<note::Signer>> ReadNextKey(const std::string& data_dir, const std::string& origin) {
  const std::string path = data_dir + "/" + kNextKeyFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<note::Signer>();
  auto key = ReadKeyFile(path, origin);
  if (!key.ok()) return key.status();
  return std::optional<note::Signer>(*std::move(key));
}

absl::Status PromoteNextKey(const std::string& data_dir) {
  const std::string from = data_dir + "/" + kNextKeyFile, to = data_dir + "/signing.key";
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    return absl::UnavailableError(
        absl::StrCat("signing key: cannot rename ", from, " to ", to, ": ", std::strerror(errno)));
  }
  int dir = ::open(data_dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir < 0 || ::fsync(dir) != 0) {
    if (dir >= 0) ::close(dir);
    return absl::UnavailableError(absl::StrCat("signing key: cannot sync ", data_dir, ": ", std::strerror(errno)));
  }
  ::close(dir);
  return absl::OkStatus();
}

absl::Status DropNextKey(const std::string& data_dir) {
  const std::string path = data_dir + "/" + kNextKeyFile;
  if (std::remove(path.c_str()) != 0 && errno != ENOENT) {
    return absl::UnavailableError(absl::StrCat("signing key: cannot remove ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace ledger::keys
