// The witness's record of the latest checkpoint it cosigned for each log:
// one file per log in a directory, named by the lowercase hex SHA-256 of the
// log's origin, holding exactly what GET <hash>/checkpoint serves (format
// version 1; DO NOT CHANGE: a witness must read its own records forever):
//
//   record = checkpoint-text "\n" 1*log-signature-line 1*cosignature-line
//
// the checkpoint text as submitted (extension lines included), the log's
// signature lines that verified, and the witness's cosignature lines
// (ledger/format/cosign). A record is replaced atomically: written to
// "<hash>.tmp", fsynced, renamed over "<hash>", and the directory fsynced.
// After a crash the file is the old record or the new one, never a mix,
// and a new record is durable before Write returns.
//
// Thread-safe: functions touch only the files they are given; one writer
// per log at a time (the witness holds the log's lock).
#ifndef WITNESS_SERVER_STATE_H_
#define WITNESS_SERVER_STATE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace ledger::witness {

// The file name of a log's record: hex SHA-256 of the origin.
std::string OriginHash(std::string_view origin);

// The record of `origin` in `dir`, or nullopt when there is none.
// UNAVAILABLE when it cannot be read.
absl::StatusOr<std::optional<std::string>> ReadRecord(const std::string& dir, std::string_view origin);

// Replaces the record of `origin` in `dir` as above; UNAVAILABLE when the
// disk refuses (the old record stays).
absl::Status WriteRecord(const std::string& dir, std::string_view origin, std::string_view record);

}  // namespace ledger::witness

#endif  // WITNESS_SERVER_STATE_H_
