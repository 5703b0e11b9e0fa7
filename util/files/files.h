// Whole files: read at once, written durably. What the ledger and the
// witness keep outside RocksDB (keys, the checkpoint guard, the witness's
// records, the witnesses' cosignatures) goes through these.
//
// Errors name the operation and the path: NOT_FOUND for a file that is not
// there, ALREADY_EXISTS for CreateFileDurably's, UNAVAILABLE for what the
// disk refuses (with the system's reason).
//
// Thread-safe: functions touch only the files they are given; one writer
// per path at a time is the caller's to ensure.
#ifndef UTIL_FILES_FILES_H_
#define UTIL_FILES_FILES_H_

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ledger::files {

// The bytes of the file at `path`.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Replaces the file at `path` with `bytes`: written to "<path>.tmp",
// fsynced, renamed over `path`, and the directory fsynced. After a crash
// the file is the old one or the new one, never a mix, and the new one is
// durable once this returns OK.
absl::Status WriteFileAtomically(const std::string& path, std::string_view bytes, mode_t mode = 0600);

// Creates the file at `path` holding `bytes` (never replacing one:
// ALREADY_EXISTS), fsynced with its directory; on failure nothing is left.
absl::Status CreateFileDurably(const std::string& path, std::string_view bytes, mode_t mode = 0600);

// Writes all of `bytes` to the open `fd` at its offset (no fsync); `path`
// names the file in an error.
absl::Status WriteAll(int fd, std::string_view bytes, const std::string& path);

}  // namespace ledger::files

#endif  // UTIL_FILES_FILES_H_
