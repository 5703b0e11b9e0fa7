#include "ledger/log/key_file.h"

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

namespace ledger::log {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

absl::Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return Errno(absl::StrCat("open ", dir));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Errno(absl::StrCat("fsync ", dir));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<note::Signer> CreateKeyFile(const std::string& path, const std::string& origin) {
  auto signer = note::Signer::Generate(origin);
  if (!signer.ok()) return signer.status();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) {
      return absl::AlreadyExistsError(absl::StrCat("signing key: ", path, " already exists"));
    }
    return Errno(absl::StrCat("signing key: create ", path));
  }
  std::string text = signer->KeyFileText();
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    return Errno(absl::StrCat("signing key: write ", path));
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (auto s = SyncDir(dir.empty() ? "." : dir); !s.ok()) return s;
  return signer;
}

absl::StatusOr<note::Signer> ReadKeyFile(const std::string& path, const std::string& origin) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("signing key: cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  auto signer = note::Signer::ParseKeyFile(text.str());
  if (!signer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", std::string(signer.status().message())));
  }
  if (signer->name() != origin) {
    return absl::FailedPreconditionError(absl::StrCat(
        "signing key: ", path, " is named '", signer->name(), "' but the origin is '", origin,
        "'; checkpoints are signed with the origin as key name"));
  }
  return signer;
}

absl::StatusOr<note::Signer> LoadOrCreateKey(const std::string& data_dir,
                                             const std::string& explicit_path,
                                             const std::string& origin) {
  if (!explicit_path.empty()) return ReadKeyFile(explicit_path, origin);
  std::string path = data_dir + "/signing.key";
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return ReadKeyFile(path, origin);
  return CreateKeyFile(path, origin);
}

}  // namespace ledger::log
