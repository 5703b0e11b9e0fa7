#include "witness/state.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ledger/hash/hash.h"

namespace ledger::witness {
namespace {

absl::Status Errno(std::string_view what, const std::string& path) {
  return absl::UnavailableError(absl::StrCat("witness state: ", std::string(what), " ", path, ": ", std::strerror(errno)));
}

absl::Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? absl::OkStatus() : Errno("fsync", dir);
}

}  // namespace

std::string OriginHash(std::string_view origin) { return hash::Hex(hash::Sha256(origin)); }

absl::StatusOr<std::optional<std::string>> ReadRecord(const std::string& dir, std::string_view origin) {
  std::string path = absl::StrCat(dir, "/", OriginHash(origin));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    return Errno("open", path);
  }
  std::string out;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return Errno("read", path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("create", tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      absl::Status s = Errno("write", tmp);
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    absl::Status s = Errno("fsync", tmp);
    ::close(fd);
    return s;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Errno("rename", tmp);
  std::string dir = std::filesystem::path(path).parent_path().string();
  return SyncDir(dir.empty() ? "." : dir);
}

absl::Status WriteRecord(const std::string& dir, std::string_view origin, std::string_view record) {
  return WriteFileAtomically(absl::StrCat(dir, "/", OriginHash(origin)), record);
}

}  // namespace ledger::witness
