// Structured logs: one JSON object per line on stderr, one line per event.
//
//   {"ts":"2026-11-29T20:45:01.123456Z","level":"warn","event":"rpc_refused",
//    "request_id":"4f1c...","method":"Append","identity":"...","code":"permission_denied"}
//
// Keys: ts (UTC, microseconds), level (info, warn, error), event (a fixed
// name), msg (a sentence for people, optional), then the event's fields.
// Receipts' content never goes into a log line: ids, counts and codes only.
//
//   jsonlog::Info("listening").Str("address", addr).Emit();
//
// Thread-safe: a line is written with one call, under a lock.
#ifndef UTIL_JSONLOG_JSONLOG_H_
#define UTIL_JSONLOG_JSONLOG_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace ledger::jsonlog {

class Line {
 public:
  Line(std::string_view level, std::string_view event);
  Line& Msg(std::string_view text) { return Str("msg", text); }
  Line& Str(std::string_view key, std::string_view value);
  Line& Int(std::string_view key, int64_t value);
  // Writes the line (once).
  void Emit();

 private:
  std::string text_;
  bool emitted_ = false;
};

inline Line Info(std::string_view event) { return Line("info", event); }
inline Line Warn(std::string_view event) { return Line("warn", event); }
inline Line Error(std::string_view event) { return Line("error", event); }

// A JSON string literal for `s` (quotes included); invalid UTF-8 bytes
// become U+FFFD.
std::string Quote(std::string_view s);

// A fresh random request id: 16 lowercase hex digits.
std::string NewRequestId();
// `given` if it is 1-64 bytes of [A-Za-z0-9._-], else a new id.
std::string RequestId(std::string_view given);

}  // namespace ledger::jsonlog

#endif  // UTIL_JSONLOG_JSONLOG_H_
