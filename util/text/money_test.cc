#include "util/text/money.h"

#include <cstdio>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace ledger::text {
namespace {

TEST(Money, DollarsWithAllSixDecimals) {
  EXPECT_EQ(Dollars(0), "$0.000000");
  EXPECT_EQ(Dollars(200000), "$0.200000");
  EXPECT_EQ(Dollars(123), "$0.000123");
  EXPECT_EQ(Dollars(12000042), "$12.000042");
  EXPECT_EQ(Dollars(-5), "-$0.000005");
  EXPECT_EQ(Dollars(std::numeric_limits<int64_t>::max()), "$9223372036854.775807");
  EXPECT_EQ(Dollars(std::numeric_limits<int64_t>::min()), "-$9223372036854.775808");
}

// The report in a pack (export/pack/report.cc) writes "$%.6f" of micros /
// 1e6, and verifiers rebuild it byte for byte: the terminal and the
// dashboard show the same string for every amount a report can hold
// exactly: up to 2^50 micros ($1.1 billion), where micros / 1e6 as a
// double still rounds to the very six decimals.
TEST(Money, TheReportsStringForEveryAmountItHoldsExactly) {
  std::mt19937_64 random(42);
  auto report = [](int64_t micros) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "$%.6f", static_cast<double>(micros) / 1e6);
    return std::string(buf);
  };
  for (int i = 0; i < 200000; ++i) {
    const int64_t micros = static_cast<int64_t>(random() % (uint64_t{1} << (i % 51)));
    ASSERT_EQ(Dollars(micros), report(micros)) << micros;
  }
}

}  // namespace
}  // namespace ledger::text
