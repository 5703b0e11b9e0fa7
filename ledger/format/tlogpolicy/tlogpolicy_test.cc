#include "ledger/format/tlogpolicy/tlogpolicy.h"

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace ledger::tlogpolicy {
namespace {

nlohmann::json LoadVector() {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/tlog_policy.json");
  return nlohmann::json::parse(in);
}

TEST(TlogPolicyTest, GoldenPolicyParsesWithItsGroupsAndUrls) {
  auto vec = LoadVector();
  auto p = Policy::Parse(vec["policy"].get<std::string>());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->logs().size(), 1u);
  EXPECT_EQ(p->logs()[0].url, "http://log.example");
  ASSERT_EQ(p->witnesses().size(), 4u);
  EXPECT_EQ(p->witnesses()[0].name, "X1");
  EXPECT_EQ(p->witnesses()[0].url, "http://w1.example/sub");
  EXPECT_EQ(p->witnesses()[1].url, "");
  EXPECT_EQ(p->witnesses()[2].key.vkey(), vec["witnesses"][2]["vkey"].get<std::string>());
  ASSERT_EQ(p->groups().size(), 3u);
  EXPECT_EQ(p->groups()[0].threshold, 2u);
  EXPECT_EQ(p->groups()[1].threshold, 1u);
  EXPECT_EQ(p->groups()[2].threshold, 2u);
  EXPECT_EQ(p->quorum(), "XY");
}

TEST(TlogPolicyTest, GoldenCasesMeetTheQuorumExactlyAsTheSpecSays) {
  auto vec = LoadVector();
  auto p = *Policy::Parse(vec["policy"].get<std::string>());
  for (const auto& c : vec["cases"]) {
    std::string note = c["note"].get<std::string>();
    auto text = p.OpenCheckpoint(note);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(*text, vec["checkpoint"].get<std::string>());
    auto e = p.Evaluate(note);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->quorum, c["quorum"].get<bool>()) << c["cosigners"];
    EXPECT_EQ(e->missing, c["missing"].get<std::vector<std::string>>()) << c["cosigners"];
    std::vector<std::string> names;
    for (const Cosigned& s : e->cosigned) {
      names.push_back(s.witness);
      EXPECT_GE(s.time, 1700000000u);
    }
    EXPECT_EQ(names, c["cosigners"].get<std::vector<std::string>>());
  }
}

TEST(TlogPolicyTest, PoliciesThatBreakARuleAreRefusedNamingTheLine) {
  auto vec = LoadVector();
  for (const auto& b : vec["bad_policies"]) {
    auto p = Policy::Parse(b["text"].get<std::string>());
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << b["text"];
    EXPECT_EQ(p.status().message(), b["error"].get<std::string>()) << b["text"];
  }
}

TEST(TlogPolicyTest, AForgedCosignatureIsRefusedNamingTheWitness) {
  auto vec = LoadVector();
  auto p = *Policy::Parse(vec["policy"].get<std::string>());
  std::string line = vec["witnesses"][0]["cosignature"].get<std::string>();
  line[line.size() - 5] = line[line.size() - 5] == 'A' ? 'B' : 'A';
  auto e = p.Evaluate(vec["note"].get<std::string>() + line);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(e.status().message().substr(0, 12), "witness X1: ");
}

TEST(TlogPolicyTest, QuorumNoneIsMetWithoutCosignaturesAndAnotherLogIsRefused) {
  auto vec = LoadVector();
  auto p = *Policy::Parse("quorum none\n");
  auto e = p.Evaluate(vec["note"].get<std::string>());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(e->quorum);
  EXPECT_EQ(p.OpenCheckpoint(vec["note"].get<std::string>()).status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(TlogPolicyTest, ControlCharactersAndUnknownKeywordsAreRefused) {
  EXPECT_EQ(Policy::Parse("quorum none\r\n").status().message(),
            "policy line 1: only tab and newline may be control characters");
  EXPECT_EQ(Policy::Parse("quorom none\n").status().message(),
            "policy line 1: unknown keyword 'quorom' (log, witness, group, quorum, monitor, monitor-quorum)");
  EXPECT_TRUE(Policy::Parse("  # comment\n\n\t\nquorum none").ok());
}

}  // namespace
}  // namespace ledger::tlogpolicy
