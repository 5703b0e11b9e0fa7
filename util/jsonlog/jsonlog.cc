#include "util/jsonlog/jsonlog.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>

#include "util/sync/mutex.h"

namespace ledger::jsonlog {
namespace {

sync::Mutex& WriteMu() {
  static sync::Mutex mu;
  return mu;
}

std::string Now() {
  auto now = std::chrono::system_clock::now();
  int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(us / 1'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(us % 1'000'000));
  return buf;
}

// Length of the valid UTF-8 sequence at s[i], or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
    } else if (size_t n = Utf8Length(s, i); n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out + "\"";
}

Line::Line(std::string_view level, std::string_view event) {
  text_ = "{\"ts\":\"" + Now() + "\",\"level\":" + Quote(level) + ",\"event\":" + Quote(event);
}

Line& Line::Str(std::string_view key, std::string_view value) {
  text_ += "," + Quote(key) + ":" + Quote(value);
  return *this;
}

Line& Line::Int(std::string_view key, int64_t value) {
  text_ += "," + Quote(key) + ":" + std::to_string(value);
  return *this;
}

void Line::Emit() {
  if (emitted_) return;
  emitted_ = true;
  std::string line = text_ + "}\n";
  sync::MutexLock lock(&WriteMu());
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

std::string NewRequestId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

std::string RequestId(std::string_view given) {
  if (given.empty() || given.size() > 64) return NewRequestId();
  for (char c : given) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return NewRequestId();
  }
  return std::string(given);
}

}  // namespace ledger::jsonlog
