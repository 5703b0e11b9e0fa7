#include "util/stats/stats.h"

#include <algorithm>

namespace ledger::stats {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.bounds = bounds_;
  uint64_t running = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.count = running + buckets_[bounds_.size()].load(std::memory_order_relaxed);
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> Histogram::Decades(double max) {
  std::vector<double> out;
  for (double d = 1; d <= max; d *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (d * m <= max) out.push_back(d * m);
    }
  }
  return out;
}

Counter* CounterFamily::With(const std::vector<std::string>& labels) {
  sync::MutexLock lock(&mu_);
  auto& c = counters_[labels];
  if (c == nullptr) c = std::make_unique<Counter>();
  return c.get();
}

std::vector<std::pair<std::vector<std::string>, uint64_t>> CounterFamily::Read() const {
  sync::MutexLock lock(&mu_);
  std::vector<std::pair<std::vector<std::string>, uint64_t>> out;
  for (const auto& [labels, c] : counters_) out.emplace_back(labels, c->value());
  return out;
}

Histogram* HistogramFamily::With(const std::vector<std::string>& labels) {
  sync::MutexLock lock(&mu_);
  auto& h = histograms_[labels];
  if (h == nullptr) h = std::make_unique<Histogram>(bounds_);
  return h.get();
}

std::vector<std::pair<std::vector<std::string>, Histogram::Snapshot>> HistogramFamily::Read() const {
  sync::MutexLock lock(&mu_);
  std::vector<std::pair<std::vector<std::string>, Histogram::Snapshot>> out;
  for (const auto& [labels, h] : histograms_) out.emplace_back(labels, h->Read());
  return out;
}

}  // namespace ledger::stats
