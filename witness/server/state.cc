#include "witness/server/state.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ledger/format/hash/hash.h"
#include "util/files/files.h"

namespace ledger::witness {
namespace {

absl::Status Errno(std::string_view what, const std::string& path) {
  return absl::UnavailableError(
      absl::StrCat("witness state: ", std::string(what), " ", path, ": ", std::strerror(errno)));
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

absl::Status WriteRecord(const std::string& dir, std::string_view origin, std::string_view record) {
  absl::Status s = files::WriteFileAtomically(absl::StrCat(dir, "/", OriginHash(origin)), record);
  if (s.ok()) return s;
  return absl::UnavailableError(absl::StrCat("witness state: ", s.message()));
}

}  // namespace ledger::witness
