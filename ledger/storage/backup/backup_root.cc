#include "ledger/storage/backup/backup_root.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ledger::backup {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

absl::Status Invalid(const std::string& rule) { return absl::InvalidArgumentError("dir: " + rule); }

// Descriptors of the directories walked, closed in reverse; the ones made
// on the way are removed again unless kept.
class Walk {
 public:
  explicit Walk(int root) : fds_{root} {}
  ~Walk() {
    for (size_t i = fds_.size(); i-- > 1;) {
      int parent = fds_[i - 1];
      ::close(fds_[i]);
      if (!kept_ && made_[i - 1]) ::unlinkat(parent, names_[i - 1].c_str(), AT_REMOVEDIR);
    }
  }
  int top() const { return fds_.back(); }
  void Push(int fd, std::string name, bool made) {
    fds_.push_back(fd);
    names_.push_back(std::move(name));
    made_.push_back(made);
  }
  // The last directory, open, for the caller to keep; the walk leaves
  // everything in place.
  int Keep() {
    kept_ = true;
    int fd = fds_.back();
    fds_.pop_back();
    return fd;
  }

 private:
  std::vector<int> fds_;  // fds_[0], the root's, is not ours
  std::vector<std::string> names_;
  std::vector<bool> made_;
  bool kept_ = false;
};

}  // namespace

NewDir::~NewDir() {
  if (fd_ >= 0) ::close(fd_);
}

std::string NewDir::handle() const { return absl::StrCat("/proc/self/fd/", fd_); }

absl::StatusOr<std::unique_ptr<BackupRoot>> BackupRoot::Open(const std::string& root, const std::string& data_dir) {
  std::string path = root;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty()) return absl::InvalidArgumentError("--backup-root: a directory is required");
  struct stat data;
  if (::stat(data_dir.c_str(), &data) != 0) {
    return absl::UnavailableError(absl::StrCat("--data: cannot read ", data_dir, ": ", std::strerror(errno)));
  }
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--backup-root: ", path, ": ", std::strerror(errno)));
  }
  std::string real = resolved;
  // The root and each directory above it: none may be the data directory.
  for (std::string up = real;;) {
    struct stat st;
    if (::stat(up.c_str(), &st) == 0 && st.st_dev == data.st_dev && st.st_ino == data.st_ino) {
      return absl::InvalidArgumentError(
          absl::StrCat("--backup-root: ", path, " is inside the data directory; backups go apart from the store"));
    }
    if (up == "/") break;
    size_t slash = up.rfind('/');
    up = slash == 0 ? "/" : up.substr(0, slash);
  }
  int fd = ::open(real.c_str(), kDirFlags);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--backup-root: ", path, ": not a directory that can be opened: ", std::strerror(errno)));
  }
  return std::unique_ptr<BackupRoot>(new BackupRoot(fd, path, real, data.st_dev, data.st_ino));
}

BackupRoot::~BackupRoot() { ::close(fd_); }

absl::StatusOr<NewDir> BackupRoot::Create(std::string_view dir) const {
  if (dir.empty()) return Invalid("required");
  if (dir.find('\0') != std::string_view::npos) return Invalid("must not contain NUL");
  std::string_view rel = dir;
  if (dir.front() == '/') {
    bool under = false;
    for (const std::string* root : {&path_, &real_}) {
      if (*root == "/" || dir == *root || (dir.starts_with(*root) && dir[root->size()] == '/')) {
        rel = dir.substr(*root == "/" ? 0 : root->size());
        under = true;
        break;
      }
    }
    if (!under) {
      return Invalid(absl::StrCat("must be inside the backup root ", path_, " (a path under it, or relative to it)"));
    }
  }
  std::vector<std::string> parts;
  for (size_t at = 0; at <= rel.size();) {
    size_t end = std::min(rel.find('/', at), rel.size());
    std::string_view part = rel.substr(at, end - at);
    if (part == "..") return Invalid("must not contain '..'");
    if (!part.empty() && part != ".") parts.emplace_back(part);
    at = end + 1;
  }
  std::string shown = path_ == "/" ? "" : path_;
  if (parts.empty()) {
    return absl::AlreadyExistsError(absl::StrCat("dir: ", path_, " exists; a backup goes to a new directory"));
  }
  Walk walk(fd_);
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& name = parts[i];
    const bool last = i + 1 == parts.size();
    absl::StrAppend(&shown, "/", name);
    struct stat st;
    bool made = false;
    if (::fstatat(walk.top(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENAMETOOLONG) return Invalid(absl::StrCat("component too long: ", name));
      if (errno != ENOENT || ::mkdirat(walk.top(), name.c_str(), 0700) != 0) {
        return absl::UnavailableError(absl::StrCat("dir: cannot create ", shown, ": ", std::strerror(errno)));
      }
      made = true;
    } else if (S_ISLNK(st.st_mode)) {
      return Invalid(absl::StrCat(shown, " is a symbolic link; a backup path must not go through links"));
    } else if (!S_ISDIR(st.st_mode)) {
      return Invalid(absl::StrCat(shown, " is not a directory"));
    }
    int fd = ::openat(walk.top(), name.c_str(), kDirFlags);
    if (fd < 0) {
      if (made) ::unlinkat(walk.top(), name.c_str(), AT_REMOVEDIR);
      return absl::UnavailableError(absl::StrCat("dir: cannot open ", shown, ": ", std::strerror(errno)));
    }
    walk.Push(fd, name, made);
    if (::fstat(fd, &st) != 0) {
      return absl::UnavailableError(absl::StrCat("dir: cannot read ", shown, ": ", std::strerror(errno)));
    }
    if (st.st_dev == data_dev_ && st.st_ino == data_ino_) {
      return Invalid(absl::StrCat(shown, " is the data directory; backups go apart from the store"));
    }
    if (last && !made) {
      return absl::AlreadyExistsError(absl::StrCat("dir: ", shown, " exists; a backup goes to a new directory"));
    }
  }
  return NewDir(walk.Keep(), shown);
}

}  // namespace ledger::backup
