#include "util/text/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ledger::text {

size_t Newlines(std::string_view text) {
  if (text.empty()) return 0;  // memchr MUST NOT be given a null pointer, which an empty view may hold
  size_t n = 0;
  const char* end = text.data() + text.size();
  for (const char* at = text.data(); (at = static_cast<const char*>(std::memchr(at, '\n', end - at))) != nullptr;
       ++at) {
    ++n;
  }
  return n;
}

std::string Thousands(uint64_t n) {
  std::string digits = absl::StrCat(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string Duration(uint64_t seconds) {
  if (seconds < 60) return absl::StrCat(seconds, " s");
  if (seconds < 3600) return absl::StrCat(seconds / 60, " min ", seconds % 60, " s");
  return absl::StrCat(seconds / 3600, " h ", seconds % 3600 / 60, " min");
}

std::string ProgressText(std::string_view verb_view, std::string_view unit_view, uint64_t done,
                         std::optional<uint64_t> total, double seconds, std::optional<double> fraction) {
  const std::string verb(verb_view), unit(unit_view);  // the system's Abseil has its own string_view
  const uint64_t rate = seconds > 0 ? static_cast<uint64_t>(static_cast<double>(done) / seconds) : 0;
  std::string text = absl::StrCat(verb, ": ", Thousands(done));
  std::optional<uint64_t> pct, left;
  if (total) {
    absl::StrAppend(&text, " of ", Thousands(*total));
    pct = *total == 0 ? 100 : std::min<uint64_t>(done, *total) * 100 / *total;
    if (rate > 0) left = done >= *total ? 0 : (*total - done + rate - 1) / rate;
  } else if (fraction) {
    const double f = std::clamp(*fraction, 0.0, 1.0);
    pct = static_cast<uint64_t>(f * 100);
    if (rate > 0 && f > 0) left = static_cast<uint64_t>(std::ceil(seconds * (1 - f) / f));
  }
  absl::StrAppend(&text, " ", unit);
  if (pct) absl::StrAppend(&text, " (", *pct, "%)");
  if (rate > 0) {
    absl::StrAppend(&text, ", ", Thousands(rate), "/s");
    if (left) absl::StrAppend(&text, ", ", Duration(*left), " left");
  }
  return text;
}

namespace {

std::chrono::milliseconds Interval() {
  int ms = 0;
  const char* env = std::getenv("LEDGER_PROGRESS_INTERVAL_MS");
  if (env != nullptr && absl::SimpleAtoi(env, &ms) && ms > 0) return std::chrono::milliseconds(ms);
  return std::chrono::milliseconds(250);
}

void WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n <= 0) return;  // a terminal that went away: progress is not worth failing for
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

ProgressMeter::ProgressMeter(std::string verb, std::string unit, bool enabled, int fd)
    : verb_(std::move(verb)), unit_(std::move(unit)), fd_(fd) {
  if (!enabled || ::isatty(fd_) != 1) return;
  thread_ = std::thread([this] {
    const auto interval = Interval();
    sync::MutexLock lock(&mu_);
    while (!stop_) {
      cv_.WaitUntil(&mu_, sync::CondVar::Clock::now() + interval);
      if (!stop_) Draw();
    }
  });
}

ProgressMeter::~ProgressMeter() { Finish(); }

void ProgressMeter::Draw() {
  const uint64_t total = total_.load(std::memory_order_relaxed);
  const uint64_t work_total = work_total_.load(std::memory_order_relaxed);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  std::optional<uint64_t> items;
  if (total != 0) items = total - 1;
  std::optional<double> fraction;
  if (work_total != 0) {
    fraction = static_cast<double>(work_done_.load(std::memory_order_relaxed)) / static_cast<double>(work_total);
  }
  uint64_t done = done_.load(std::memory_order_relaxed);
  if (items && done > *items) done = *items;
  if (!items && !fraction && done == 0) return;  // nothing known yet: no line
  WriteAll(fd_, absl::StrCat("\r", ProgressText(verb_, unit_, done, items, seconds, fraction), "\x1b[K"));
  drawn_ = true;
}

void ProgressMeter::Finish() {
  if (!thread_.joinable()) return;
  {
    sync::MutexLock lock(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  thread_.join();
  sync::MutexLock lock(&mu_);
  if (drawn_) WriteAll(fd_, "\r\x1b[K");
  drawn_ = false;
}

}  // namespace ledger::text
