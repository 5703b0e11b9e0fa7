// Monitor lines of a tlog-policy (CONTRACT section 5c) against the golden
// vectors of tests/vectors/map_cosignature.json.
#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ledger/format/tlogpolicy/tlogpolicy.h"
#include "nlohmann/json.hpp"

namespace ledger::tlogpolicy {
namespace {

nlohmann::json Vectors() {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/map_cosignature.json");
  return nlohmann::json::parse(in);
}

TEST(MonitorPolicyTest, EachSetOfCosignersMeetsTheMonitorQuorumOrNotAsTheVectorsSay) {
  auto v = Vectors();
  const std::string note = v["note"].get<std::string>();
  for (const auto& p : v["policies"]) {
    auto policy = Policy::Parse(p["text"].get<std::string>());
    ASSERT_TRUE(policy.ok()) << policy.status() << "\n" << p["text"].get<std::string>();
    EXPECT_FALSE(policy->monitors().empty());
    for (const char* kind : {"meets", "does_not_meet"}) {
      for (const auto& set : p[kind]) {
        std::string cosigned = note;
        for (const auto& name : set) cosigned += v["policy_lines"][name.get<std::string>()].get<std::string>();
        auto e = policy->EvaluateMonitors(cosigned);
        ASSERT_TRUE(e.ok()) << e.status();
        EXPECT_EQ(e->quorum, std::string(kind) == "meets") << kind << " " << set.dump();
        EXPECT_EQ(e->cosigned.size(), set.size());
        if (!e->quorum) {
          EXPECT_EQ(e->missing.size(), policy->monitors().size() - set.size()) << set.dump();
        }
      }
    }
  }
}

TEST(MonitorPolicyTest, PoliciesThatBreakAMonitorRuleAreRefusedNamingTheLine) {
  auto v = Vectors();
  for (const auto& p : v["invalid_policies"]) {
    auto policy = Policy::Parse(p["text"].get<std::string>());
    EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument) << p["what"].get<std::string>();
    EXPECT_EQ(std::string(policy.status().message()).rfind("policy line ", 0), 0u)
        << p["what"].get<std::string>() << ": " << policy.status();
  }
}

TEST(MonitorPolicyTest, AForgedMapCosignatureIsRefusedNamingTheMonitor) {
  auto v = Vectors();
  auto policy = Policy::Parse(v["policies"][1]["text"].get<std::string>());
  ASSERT_TRUE(policy.ok());
  for (const auto& r : v["refused"]) {
    if (r["refusal"] == "ignored") continue;
    auto e = policy->EvaluateMonitors(v["note"].get<std::string>() + r["line"].get<std::string>());
    EXPECT_EQ(e.status().code(), absl::StatusCode::kPermissionDenied) << r["what"].get<std::string>();
    EXPECT_EQ(std::string(e.status().message()).rfind("monitor m1: map cosignature: ", 0), 0u) << e.status();
  }
  // Without monitor lines nothing is required.
  auto none = Policy::Parse(absl::StrCat("log ", v["log_vkey"].get<std::string>(), "\nquorum none\n"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->monitor_quorum(), 0u);
  EXPECT_TRUE(none->EvaluateMonitors(v["note"].get<std::string>())->quorum);
}

}  // namespace
}  // namespace ledger::tlogpolicy
