#include "ledger/storage/replication/pg.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ledger::replication::pg {
namespace {

using Clock = std::chrono::steady_clock;

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(left);
}

std::string Trimmed(const char* message) {
  std::string s = message != nullptr ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The server's error, by SQLSTATE class.
absl::Status ServerError(const PGresult* r) {
  const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  std::string sqlstate = state != nullptr ? state : "?????";
  std::string message = absl::StrCat("SQLSTATE ", sqlstate, ": ", Trimmed(PQresultErrorMessage(r)));
  if (absl::StartsWith(sqlstate, "08") || absl::StartsWith(sqlstate, "57") || sqlstate == "25006") {
    return absl::UnavailableError(message);  // connection, shutdown, a read-only standby
  }
  if (absl::StartsWith(sqlstate, "40") || absl::StartsWith(sqlstate, "23")) {
    return absl::FailedPreconditionError(message);
  }
  return absl::InternalError(message);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& uri, const std::string& password,
                                                             std::chrono::milliseconds timeout) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(uri.c_str(), &error);
  if (options == nullptr) {
    std::string why = Trimmed(error);
    PQfreemem(error);
    return absl::InvalidArgumentError(absl::StrCat("--replication: not a libpq connection URI: ", why));
  }
  bool has_password = false;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (std::strcmp(o->keyword, "password") == 0 && o->val != nullptr && *o->val != '\0') has_password = true;
  }
  PQconninfoFree(options);
  if (has_password) {
    return absl::InvalidArgumentError(
        "--replication: the URI carries a password; give it with --replication-password-file or PGPASSWORD, "
        "never on the command line");
  }
  auto c = std::unique_ptr<Connection>(new Connection(uri, password));
  if (auto s = c->Connect(timeout); !s.ok()) return s;
  return c;
}

Connection::~Connection() { Close(); }

void Connection::Close() {
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = nullptr;
}

absl::Status Connection::Reconnect(std::chrono::milliseconds timeout) {
  Close();
  return Connect(timeout);
}

absl::Status Connection::Connect(std::chrono::milliseconds timeout) {
  const std::string seconds = std::to_string(std::max<int64_t>(1, (timeout.count() + 999) / 1000));
  const char* keys[] = {"dbname", "password", "connect_timeout", "application_name", nullptr};
  const char* values[] = {uri_.c_str(), password_.empty() ? nullptr : password_.c_str(), seconds.c_str(),
                          "evidence-ledger", nullptr};
  conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn_ == nullptr) return absl::ResourceExhaustedError("replication database: out of memory");
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string why = Trimmed(PQerrorMessage(conn_));
    Close();
    return absl::UnavailableError(absl::StrCat("replication database: cannot connect: ", why));
  }
  PQsetNoticeReceiver(
      conn_,
      [](void* self, const PGresult* r) {
        const char* severity = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
        if (severity == nullptr || std::strcmp(severity, "NOTICE") == 0 || std::strcmp(severity, "DEBUG") == 0 ||
            std::strcmp(severity, "INFO") == 0 || std::strcmp(severity, "LOG") == 0) {
          return;
        }
        const char* primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        const char* detail = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL);
        std::string w = absl::StrCat(severity, ": ", primary != nullptr ? primary : "");
        if (detail != nullptr) absl::StrAppend(&w, " (", detail, ")");
        static_cast<Connection*>(self)->warnings_.push_back(std::move(w));
      },
      this);
  return absl::OkStatus();
}

absl::StatusOr<Result> Connection::Exec(std::string_view sql, const std::vector<Param>& params,
                                        std::chrono::milliseconds timeout, bool binary) {
  if (conn_ == nullptr) return absl::UnavailableError("replication database: not connected");
  warnings_.clear();
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  for (const Param& p : params) {
    values.push_back(p.value.data());
    lengths.push_back(static_cast<int>(p.value.size()));
    formats.push_back(p.binary ? 1 : 0);
  }
  const std::string text(sql);
  if (PQsendQueryParams(conn_, text.c_str(), static_cast<int>(params.size()), nullptr, values.data(), lengths.data(),
                        formats.data(), binary ? 1 : 0) == 0) {
    std::string why = Trimmed(PQerrorMessage(conn_));
    Close();
    return absl::UnavailableError(absl::StrCat("replication database: send failed: ", why));
  }
  const auto deadline = Clock::now() + timeout;
  Result out;
  absl::Status error;
  while (true) {
    while (PQisBusy(conn_) != 0) {
      int left = RemainingMs(deadline);
      if (left == 0) {
        // The outcome is unknown from here: a COMMIT may have happened.
        if (PGcancel* cancel = PQgetCancel(conn_); cancel != nullptr) {
          char buf[256];
          PQcancel(cancel, buf, sizeof buf);
          PQfreeCancel(cancel);
        }
        Close();
        return absl::DeadlineExceededError(absl::StrCat("replication database: no answer within ", timeout.count(),
                                                        " ms; cancelled, outcome unknown"));
      }
      pollfd fd{PQsocket(conn_), POLLIN, 0};
      poll(&fd, 1, left);
      if (PQconsumeInput(conn_) == 0) {
        std::string why = Trimmed(PQerrorMessage(conn_));
        Close();
        return absl::UnavailableError(absl::StrCat("replication database: connection lost: ", why));
      }
    }
    PGresult* r = PQgetResult(conn_);
    if (r == nullptr) break;
    switch (PQresultStatus(r)) {
      case PGRES_TUPLES_OK:
      case PGRES_COMMAND_OK: {
        const int rows = PQntuples(r), cols = PQnfields(r);
        for (int i = 0; i < rows; ++i) {
          auto& row = out.rows.emplace_back();
          for (int j = 0; j < cols; ++j) {
            if (PQgetisnull(r, i, j) != 0) {
              row.emplace_back(std::nullopt);
            } else {
              row.emplace_back(std::string(PQgetvalue(r, i, j), static_cast<size_t>(PQgetlength(r, i, j))));
            }
          }
        }
        const char* tuples = PQcmdTuples(r);
        if (tuples != nullptr && *tuples != '\0') out.affected = std::strtoull(tuples, nullptr, 10);
        break;
      }
      default:
        if (error.ok()) error = ServerError(r);
    }
    PQclear(r);
  }
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string why = Trimmed(PQerrorMessage(conn_));
    Close();
    if (!error.ok()) return absl::UnavailableError(absl::StrCat("replication database: ", error.message()));
    return absl::UnavailableError(absl::StrCat("replication database: connection lost: ", why));
  }
  if (!error.ok()) return error;
  out.warnings = std::move(warnings_);
  warnings_.clear();
  return out;
}

absl::StatusOr<bool> Connection::WaitNotify(std::chrono::milliseconds timeout) {
  if (conn_ == nullptr) return absl::UnavailableError("replication database: not connected");
  const auto deadline = Clock::now() + timeout;
  bool got = false;
  while (true) {
    if (PQconsumeInput(conn_) == 0) {
      std::string why = Trimmed(PQerrorMessage(conn_));
      Close();
      return absl::UnavailableError(absl::StrCat("replication database: connection lost: ", why));
    }
    while (PGnotify* n = PQnotifies(conn_)) {
      got = true;
      PQfreemem(n);
    }
    int left = RemainingMs(deadline);
    if (got || left == 0) return got;
    pollfd fd{PQsocket(conn_), POLLIN, 0};
    poll(&fd, 1, left);
  }
}

absl::StatusOr<int64_t> BinaryInt64(const std::optional<std::string>& column) {
  if (!column.has_value() || column->size() != 8) {
    return absl::DataLossError("replication database: an int8 column is not 8 bytes");
  }
  uint64_t v = 0;
  for (unsigned char c : *column) v = (v << 8) | c;
  return static_cast<int64_t>(v);
}

}  // namespace ledger::replication::pg
