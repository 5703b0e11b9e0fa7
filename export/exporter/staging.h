// The disk that exports stage on: one directory (ledgerd: <data>/tmp) that
// holds every export's staging directory (kStagingPrefix-XXXXXX) and its
// pack while it is sent (kPackPrefix<pid>-<n>.tar.gz), the dashboard's
// copies of packs while they are downloaded (files with no name:
// CreateUnlinked), and a quota on the bytes they hold together, so that
// exports cannot fill the store's disk.
// Each export holds a Lease and reports its bytes on disk as it grows; a
// report that would take all leases past the quota is refused.
//
// Thread-safe: leases are taken and updated from any thread.
#ifndef EXPORT_EXPORTER_STAGING_H_
#define EXPORT_EXPORTER_STAGING_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "util/sync/mutex.h"

namespace ledger::exporter {

inline constexpr char kStagingPrefix[] = "ledger-export";
inline constexpr char kPackPrefix[] = "ledger-pack-";

class Staging {
 public:
  // `dir` MUST exist and belong to this ledger alone.
  Staging(std::string dir, uint64_t quota_bytes) : dir_(std::move(dir)), quota_(quota_bytes) {}

  // Removes what exports left in dir() when the process died with them:
  // directories named kStagingPrefix-XXXXXX (six letters or digits) and
  // regular files named kPackPrefix<digits>-<digits>.tar.gz. Nothing else,
  // and no symbolic link, is touched or followed. Call it before any
  // export starts. Returns how many were removed.
  absl::StatusOr<int> RemoveStale() const;

  // One export's share of the quota, returned when the lease goes.
  class Lease {
   public:
    explicit Lease(Staging* staging) : staging_(staging) {}
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    // Records that the export now holds `bytes` on disk. RESOURCE_EXHAUSTED
    // naming the quota when every lease's bytes together would exceed it;
    // the lease then keeps its previous count.
    absl::Status Set(uint64_t bytes);
    const std::string& dir() const { return staging_->dir_; }

   private:
    Staging* const staging_;
    uint64_t bytes_ = 0;
  };

  // A new, empty file in dir() that has no name (O_TMPFILE; where the file
  // system has none, a unique name made with O_EXCL and removed at once),
  // open for reading and writing: no other request can open, truncate or
  // replace it, and nothing of it is left when the process dies. Its bytes
  // count against the quota only through a Lease. UNAVAILABLE, with the
  // reason, when dir() cannot hold one.
  absl::StatusOr<int> CreateUnlinked() const;

  const std::string& dir() const { return dir_; }
  uint64_t quota() const { return quota_; }
  // Bytes held by every lease now.
  uint64_t used() const;

 private:
  const std::string dir_;
  const uint64_t quota_;
  mutable sync::Mutex mu_;
  uint64_t used_ ABSL_GUARDED_BY(mu_) = 0;
};

// The bytes that `path` and everything under it take on disk (allocated
// blocks), links not followed; 0 when it is gone.
uint64_t DiskUsage(const std::string& path);

}  // namespace ledger::exporter

#endif  // EXPORT_EXPORTER_STAGING_H_
