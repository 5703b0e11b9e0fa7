#include "util/stats/stats.h"

#include <thread>

#include "gtest/gtest.h"

namespace ledger::stats {
namespace {

TEST(Histogram, CumulativeBucketsCountAndSum) {
  Histogram h({1, 10, 100});
  for (double v : {0.5, 1.0, 3.0, 10.0, 50.0, 500.0}) h.Observe(v);
  Histogram::Snapshot s = h.Read();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 4, 5}));
  EXPECT_EQ(s.count, 6u);
  EXPECT_DOUBLE_EQ(s.sum, 564.5);
}

TEST(Histogram, Decades) { EXPECT_EQ(Histogram::Decades(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100})); }

TEST(Histogram, FamiliesKeepOneHistogramPerLabelTuple) {
  HistogramFamily f({1, 10});
  f.With({"/a", "x"})->Observe(0.5);
  f.With({"/a", "x"})->Observe(20);
  f.With({"/b", "x"})->Observe(5);
  auto read = f.Read();
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].first, (std::vector<std::string>{"/a", "x"}));
  EXPECT_EQ(read[0].second.cumulative, (std::vector<uint64_t>{1, 1}));
  EXPECT_EQ(read[0].second.count, 2u);
  EXPECT_EQ(read[1].second.cumulative, (std::vector<uint64_t>{0, 1}));
}

TEST(Counters, ConcurrentAddsAndFamilies) {
  Counter c;
  CounterFamily f;
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        c.Add();
        f.With({"model_call", t % 2 ? "ok" : "invalid_argument"})->Add(2);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 4000u);
  auto read = f.Read();
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].first, (std::vector<std::string>{"model_call", "invalid_argument"}));
  EXPECT_EQ(read[0].second, 4000u);
  EXPECT_EQ(read[1].second, 4000u);
}

}  // namespace
}  // namespace ledger::stats
