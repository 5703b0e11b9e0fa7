// Counters and histograms that components keep about themselves, cheap to
// update from any thread (relaxed atomics), read by ops/ when /metrics is
// scraped. Nothing here knows about Prometheus or HTTP.
//
// Thread-safe.
#ifndef UTIL_STATS_STATS_H_
#define UTIL_STATS_STATS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "util/sync/mutex.h"

namespace ledger::stats {

class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Observations counted in buckets with fixed upper bounds.
class Histogram {
 public:
  // `bounds` MUST be ascending; an implicit last bucket holds the rest.
  explicit Histogram(std::vector<double> bounds);

  void Observe(double v);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // observations <= bounds[i]; size() == bounds.size()
    uint64_t count = 0;
    double sum = 0;
  };
  Snapshot Read() const;

  // 1, 2, 5, 10, 20, 50, ... up to `max` (inclusive if it is on the scale).
  static std::vector<double> Decades(double max);

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<double> sum_{0};
};

// Counters by a tuple of label values, created on first use.
class CounterFamily {
 public:
  Counter* With(const std::vector<std::string>& labels);
  // Every tuple seen so far, with its value, in label order.
  std::vector<std::pair<std::vector<std::string>, uint64_t>> Read() const;

 private:
  mutable sync::Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Counter>> counters_ ABSL_GUARDED_BY(mu_);
};

// Histograms by a tuple of label values, created on first use, all with the
// same bounds.
class HistogramFamily {
 public:
  explicit HistogramFamily(std::vector<double> bounds) : bounds_(std::move(bounds)) {}

  Histogram* With(const std::vector<std::string>& labels);
  // Every tuple seen so far, with its snapshot, in label order.
  std::vector<std::pair<std::vector<std::string>, Histogram::Snapshot>> Read() const;

 private:
  const std::vector<double> bounds_;
  mutable sync::Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Histogram>> histograms_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ledger::stats

#endif  // UTIL_STATS_STATS_H_
