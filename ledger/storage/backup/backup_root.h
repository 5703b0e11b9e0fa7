// Where backups may go (ledgerd --backup-root): a directory held open,
// apart from the data directory. A backup's path is walked down from the
// root one component at a time with O_NOFOLLOW, so that neither '..' nor a
// symbolic link (planted by anyone who can write in the root) leads out of
// it, and no component may be the data directory (when the root holds it).
// The new directory is then reached through its open descriptor
// (/proc/self/fd/N), so a component renamed or replaced meanwhile cannot
// redirect the backup.
//
// Thread-safe: BackupRoot is immutable after Open; a NewDir belongs to one
// caller.
#ifndef LEDGER_STORAGE_BACKUP_BACKUP_ROOT_H_
#define LEDGER_STORAGE_BACKUP_BACKUP_ROOT_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ledger::backup {

// A directory just made for one backup, empty, held open; closed when the
// object goes (what was written in it stays).
class NewDir {
 public:
  NewDir(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  NewDir(NewDir&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }
  NewDir& operator=(NewDir&&) = delete;
  NewDir(const NewDir&) = delete;
  ~NewDir();

  // The directory's path as the operator names it: the root as configured
  // and the components below it.
  const std::string& path() const { return path_; }
  // A path to the directory through its descriptor, for code that takes
  // paths (the store's backup). Valid while the object lives.
  std::string handle() const;

 private:
  int fd_;
  std::string path_;
};

class BackupRoot {
 public:
  // Opens `root`, an existing directory. INVALID_ARGUMENT naming
  // --backup-root when it is not a directory, or when it is `data_dir` or
  // lies inside it. `data_dir` MUST exist.
  static absl::StatusOr<std::unique_ptr<BackupRoot>> Open(const std::string& root, const std::string& data_dir);
  ~BackupRoot();
  BackupRoot(const BackupRoot&) = delete;
  BackupRoot& operator=(const BackupRoot&) = delete;

  // Creates the directory `dir` names, with its missing parents (mode
  // 0700): a path relative to the root, or an absolute path under it.
  // INVALID_ARGUMENT naming `dir` when it is empty, holds NUL or a '..'
  // component, lies outside the root, goes through a symbolic link or
  // through the data directory, or when a component is not a directory;
  // ALREADY_EXISTS when it exists; UNAVAILABLE when it cannot be made.
  // On an error nothing is left behind.
  absl::StatusOr<NewDir> Create(std::string_view dir) const;

  // The root as configured, without a trailing '/'.
  const std::string& path() const { return path_; }

 private:
  BackupRoot(int fd, std::string path, std::string real, dev_t data_dev, ino_t data_ino)
      : fd_(fd), path_(std::move(path)), real_(std::move(real)), data_dev_(data_dev), data_ino_(data_ino) {}

  const int fd_;
  const std::string path_;
  const std::string real_;  // with symbolic links resolved
  const dev_t data_dev_;
  const ino_t data_ino_;
};

}  // namespace ledger::backup

#endif  // LEDGER_STORAGE_BACKUP_BACKUP_ROOT_H_
