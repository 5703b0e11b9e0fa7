#include "util/files/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ledger::files {
namespace {

absl::Status Errno(std::string_view what, const std::string& path) {
  int e = errno;
  std::string message = absl::StrCat(std::string(what), " ", path, ": ", std::strerror(e));
  return e == ENOENT ? absl::NotFoundError(message) : absl::UnavailableError(message);
}

absl::Status SyncDirOf(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  const std::string dir = parent.empty() ? std::string(".") : parent;
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open", dir);
  int rc = ::fsync(fd);
  absl::Status s = rc == 0 ? absl::OkStatus() : Errno("fsync", dir);
  ::close(fd);
  return s;
}

// Writes all of `bytes` to `fd` and fsyncs it.
absl::Status WriteAllAndSync(int fd, std::string_view bytes, const std::string& path) {
  if (auto s = WriteAll(fd, bytes, path); !s.ok()) return s;
  if (::fsync(fd) != 0) return Errno("fsync", path);
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteAll(int fd, std::string_view bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("write", path);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("read", path);
  std::string out;
  char buf[16384];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status s = Errno("read", path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view bytes, mode_t mode) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Errno("create", tmp);
  absl::Status s = WriteAllAndSync(fd, bytes, tmp);
  ::close(fd);
  if (!s.ok()) return s;
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Errno("rename", tmp);
  return SyncDirOf(path);
}

absl::Status CreateFileDurably(const std::string& path, std::string_view bytes, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) return absl::AlreadyExistsError(absl::StrCat(path, " already exists"));
    return Errno("create", path);
  }
  absl::Status s = WriteAllAndSync(fd, bytes, path);
  ::close(fd);
  if (!s.ok()) {
    ::unlink(path.c_str());
    return s;
  }
  return SyncDirOf(path);
}

}  // namespace ledger::files
