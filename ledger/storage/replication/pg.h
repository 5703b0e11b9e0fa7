// A PostgreSQL connection through libpq, for the replicated batch log
// (replication.h): statements with parameters, a deadline on each, the
// server's warnings kept with the result, LISTEN and waiting for NOTIFY.
//
// A statement that passes its deadline is cancelled and the connection
// closed: its outcome is unknown, and the caller MUST treat it as failed
// (a commit may still have happened). Every later call fails with
// UNAVAILABLE until Reconnect succeeds.
//
// Not thread-safe: one thread per Connection.
#ifndef LEDGER_STORAGE_REPLICATION_PG_H_
#define LEDGER_STORAGE_REPLICATION_PG_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct pg_conn;

namespace ledger::replication::pg {

// A statement's parameter: text, or bytes sent as binary (bytea).
struct Param {
  std::string value;
  bool binary = false;
  static Param Text(std::string v) { return {std::move(v), false}; }
  static Param Int(int64_t v) { return {std::to_string(v), false}; }
  static Param Bytes(std::string v) { return {std::move(v), true}; }
};

struct Result {
  // Each row's columns: text, or the raw bytes of a binary result (Exec's
  // `binary`); nullopt for NULL.
  std::vector<std::vector<std::optional<std::string>>> rows;
  uint64_t affected = 0;  // PQcmdTuples: rows an INSERT, UPDATE or DELETE touched
  // WARNING (and stronger) notices the server sent while running it, each
  // "SEVERITY: message (detail)".
  std::vector<std::string> warnings;
};

class Connection {
 public:
  // `uri` is a libpq connection string or URI. It MUST NOT carry a password:
  // `password` (read by the caller from a file or the environment) is
  // passed apart, and libpq's own PGPASSFILE / ~/.pgpass work too.
  // INVALID_ARGUMENT for a malformed URI or one with a password; UNAVAILABLE
  // when the server cannot be reached within `timeout`.
  static absl::StatusOr<std::unique_ptr<Connection>> Open(const std::string& uri, const std::string& password,
                                                          std::chrono::milliseconds timeout);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one statement ($1, $2... its parameters). UNAVAILABLE when the
  // connection is lost, DEADLINE_EXCEEDED (connection closed) past
  // `timeout`; the server's errors keep their class: FAILED_PRECONDITION for
  // a serialization or constraint failure, INTERNAL otherwise, each naming
  // the SQLSTATE and the server's message.
  absl::StatusOr<Result> Exec(std::string_view sql, const std::vector<Param>& params, std::chrono::milliseconds timeout,
                              bool binary = false);

  // Waits for a notification on a channel this connection LISTENs on, or
  // `timeout`: true if one came (every pending one is consumed).
  absl::StatusOr<bool> WaitNotify(std::chrono::milliseconds timeout);

  bool ok() const { return conn_ != nullptr; }
  // Opens the connection again after a failure.
  absl::Status Reconnect(std::chrono::milliseconds timeout);

 private:
  Connection(std::string uri, std::string password) : uri_(std::move(uri)), password_(std::move(password)) {}
  absl::Status Connect(std::chrono::milliseconds timeout);
  void Close();

  const std::string uri_;
  const std::string password_;
  pg_conn* conn_ = nullptr;
  std::vector<std::string> warnings_;
};

// A big-endian 64-bit integer column of a binary result.
absl::StatusOr<int64_t> BinaryInt64(const std::optional<std::string>& column);

}  // namespace ledger::replication::pg

#endif  // LEDGER_STORAGE_REPLICATION_PG_H_
