#include "cmd/loopback.h"

#include "gtest/gtest.h"

namespace ledger::cmd {
namespace {

TEST(LoopbackTest, LocalhostIpv6LoopbackAnd127Slash8AreLoopbackNothingElse) {
  EXPECT_TRUE(IsLoopback("127.0.0.1:0"));
  EXPECT_TRUE(IsLoopback("127.3.2.1:7420"));
  EXPECT_TRUE(IsLoopback("localhost:1"));
  EXPECT_TRUE(IsLoopback("[::1]:1"));
  EXPECT_FALSE(IsLoopback("0.0.0.0:7420"));
  EXPECT_FALSE(IsLoopback("10.0.0.1:7420"));
  EXPECT_FALSE(IsLoopback("[::]:7420"));
  EXPECT_FALSE(IsLoopback("ledger.example:7420"));
}

}  // namespace
}  // namespace ledger::cmd
