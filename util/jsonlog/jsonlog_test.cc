#include "util/jsonlog/jsonlog.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace ledger::jsonlog {
namespace {

TEST(JsonLog, OneParsableLinePerEvent) {
  std::string path = ::testing::TempDir() + "/jsonlog_test.err";
  ASSERT_NE(std::freopen(path.c_str(), "w", stderr), nullptr);
  Warn("rpc_refused").Msg("a \"quoted\"\nline").Str("identity", "bad\xff").Int("receipts", 3).Emit();
  Info("listening").Str("address", "127.0.0.1:1").Emit();
  std::fflush(stderr);
  std::ifstream in(path);
  std::string first, second, extra;
  ASSERT_TRUE(std::getline(in, first));
  ASSERT_TRUE(std::getline(in, second));
  EXPECT_FALSE(std::getline(in, extra));
  auto j = nlohmann::json::parse(first);
  EXPECT_EQ(j["level"], "warn");
  EXPECT_EQ(j["event"], "rpc_refused");
  EXPECT_EQ(j["msg"], "a \"quoted\"\nline");
  EXPECT_EQ(j["identity"], "bad\xef\xbf\xbd");
  EXPECT_EQ(j["receipts"], 3);
  EXPECT_EQ(j["ts"].get<std::string>().size(), 27u);  // 2026-11-29T20:45:01.123456Z
  EXPECT_EQ(nlohmann::json::parse(second)["address"], "127.0.0.1:1");
}

TEST(JsonLog, RequestIds) {
  EXPECT_EQ(RequestId("abc-123_x.y"), "abc-123_x.y");
  EXPECT_EQ(RequestId("has space").size(), 16u);
  EXPECT_EQ(RequestId("").size(), 16u);
  EXPECT_EQ(RequestId(std::string(65, 'a')).size(), 16u);
  EXPECT_NE(NewRequestId(), NewRequestId());
}

}  // namespace
}  // namespace ledger::jsonlog
