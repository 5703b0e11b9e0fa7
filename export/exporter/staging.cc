#include "export/exporter/staging.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace ledger::exporter {
namespace {

bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// kStagingPrefix-XXXXXX, as mkdtemp names it.
bool IsStagingName(std::string_view name) {
  std::string_view prefix = kStagingPrefix;
  if (name.size() != prefix.size() + 7 || !name.starts_with(prefix) || name[prefix.size()] != '-') return false;
  return std::all_of(name.begin() + static_cast<ptrdiff_t>(prefix.size()) + 1, name.end(), IsAlnum);
}

// kPackPrefix<digits>-<digits>.tar.gz, as the export service names it.
bool IsPackName(std::string_view name) {
  std::string_view prefix = kPackPrefix, suffix = ".tar.gz";
  if (!name.starts_with(prefix) || !name.ends_with(suffix)) return false;
  std::string_view middle = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  size_t dash = middle.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == middle.size()) return false;
  return std::all_of(middle.begin(), middle.begin() + static_cast<ptrdiff_t>(dash), IsDigit) &&
         std::all_of(middle.begin() + static_cast<ptrdiff_t>(dash) + 1, middle.end(), IsDigit);
}

}  // namespace

absl::StatusOr<int> Staging::RemoveStale() const {
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) {
    return absl::UnavailableError(absl::StrCat("export staging: cannot read ", dir_, ": ", std::strerror(errno)));
  }
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    struct stat st;
    if (!IsStagingName(name) && !IsPackName(name)) continue;
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if ((IsStagingName(name) && S_ISDIR(st.st_mode)) || (IsPackName(name) && S_ISREG(st.st_mode))) {
      stale.emplace_back(name);
    }
  }
  ::closedir(d);
  int removed = 0;
  for (const std::string& name : stale) {
    std::error_code ec;
    // remove_all removes symbolic links inside, never what they point to.
    std::filesystem::remove_all(dir_ + "/" + name, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("export staging: cannot remove ", dir_, "/", name, ": ", ec.message()));
    }
    ++removed;
  }
  return removed;
}

absl::StatusOr<int> Staging::CreateUnlinked() const {
  int fd = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  if (errno != EOPNOTSUPP && errno != EISDIR) {
    return absl::UnavailableError(
        absl::StrCat("export staging: cannot create a file in ", dir_, ": ", std::strerror(errno)));
  }
  std::string name = absl::StrCat(dir_, "/", kPackPrefix, "XXXXXX");
  fd = ::mkostemp(name.data(), O_CLOEXEC);  // O_EXCL: a new file, never one that was there
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("export staging: cannot create a file in ", dir_, ": ", std::strerror(errno)));
  }
  ::unlink(name.c_str());
  return fd;
}

Staging::Lease::~Lease() {
  sync::MutexLock lock(&staging_->mu_);
  staging_->used_ -= bytes_;
}

absl::Status Staging::Lease::Set(uint64_t bytes) {
  sync::MutexLock lock(&staging_->mu_);
  uint64_t others = staging_->used_ - bytes_;
  if (bytes > bytes_ && others + bytes > staging_->quota_) {
    return absl::ResourceExhaustedError(absl::StrCat("export: the staging quota is used up (--export-staging-bytes ",
                                                     staging_->quota_,
                                                     "): exports in progress would stage more; retry later"));
  }
  staging_->used_ = others + bytes;
  bytes_ = bytes;
  return absl::OkStatus();
}

uint64_t Staging::used() const {
  sync::MutexLock lock(&mu_);
  return used_;
}

uint64_t DiskUsage(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return 0;
  uint64_t bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  if (!S_ISDIR(st.st_mode)) return bytes;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (::lstat(it->path().c_str(), &st) == 0) bytes += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return bytes;
}

}  // namespace ledger::exporter
