#include "ledger/format/retention/policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/retention/pruned.h"

namespace ledger::retention {
namespace {

TEST(PolicyTest, ReadsRulesCommentsAndForever) {
  auto p = Policy::Parse("# six months by default\n\ndefault 180d\nteam acme 30d\nteam audit forever\nteam ci 1h");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->rules().size(), 4u);
  EXPECT_EQ(p->rules()[0].team, "");
  EXPECT_EQ(p->rules()[0].keep_s, 180 * 86400);
  EXPECT_EQ(p->rules()[0].line, 3);
  EXPECT_EQ(p->rules()[1].keep_s, 30 * 86400);
  EXPECT_FALSE(p->rules()[2].keep_s.has_value());
  EXPECT_EQ(p->rules()[3].keep_s, 3600);
  EXPECT_EQ(p->RuleFor("acme")->keep_s, 30 * 86400);
  EXPECT_EQ(p->RuleFor("globex")->team, "");  // the default
  EXPECT_EQ(p->RuleFor("ledger"), nullptr);   // never pruned
  EXPECT_EQ(p->sha256(),
            hash::Sha256("# six months by default\n\ndefault 180d\nteam acme 30d\nteam audit forever\nteam ci 1h"));
}

TEST(PolicyTest, WithoutADefaultOtherTeamsAreKept) {
  auto p = Policy::Parse("team acme 36500d\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->RuleFor("globex"), nullptr);
  EXPECT_EQ(p->RuleFor("acme")->keep_s, int64_t{36500} * 86400);
}

TEST(PolicyTest, RefusalsNameTheLineAndTheRule) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"default 1d\ndefault 2d\n", "retention policy line 2: a second default rule (the first is on line 1)"},
      {"team a 1d\n\nteam a 2d\n",
       "retention policy line 3: team 'a': a second rule for the team (the first is on line 1)"},
      {"team ledger 1d\n", "retention policy line 1: team 'ledger': the ledger's own entries are never pruned"},
      {"team Acme 1d\n", "retention policy line 1: team 'Acme': want 1-63 bytes of [a-z0-9-]"},
      {"default 0h\n",
       "retention policy line 1: keep '0h': want forever, or 1h to 36500d as a decimal count and d or h"},
      {"default 01d\n",
       "retention policy line 1: keep '01d': want forever, or 1h to 36500d as a decimal count and d or h"},
      {"default 36501d\n",
       "retention policy line 1: keep '36501d': want forever, or 1h to 36500d as a decimal count and d or h"},
      {"default 3w\n",
       "retention policy line 1: keep '3w': want forever, or 1h to 36500d as a decimal count and d or h"},
      {"default  1d\n", "retention policy line 1: want 'default KEEP' or 'team T KEEP'"},
      {"default 1d \n", "retention policy line 1: want 'default KEEP' or 'team T KEEP'"},
      {"keep all\n", "retention policy line 1: want 'default KEEP' or 'team T KEEP'"},
  };
  for (const auto& [text, want] : cases) {
    auto p = Policy::Parse(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.status().message(), want);
  }
}

TEST(PrunedLineTest, ExactBytesOnly) {
  const hash::Hash h = hash::Sha256("leaf");
  const std::string line = PrunedLine(42, h);
  EXPECT_EQ(line, R"({"pruned":{"leaf_hash":")" + hash::Hex(h) + R"(","seq":42}})");
  EXPECT_TRUE(LooksPruned(line));
  auto back = ParsePruned(line);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->seq, 42u);
  EXPECT_EQ(back->leaf_hash, h);
  for (std::string bad :
       {line + " ", line.substr(0, line.size() - 1), R"({"pruned":{"leaf_hash":")" + hash::Hex(h) + R"(","seq":042}})",
        R"({"pruned":{"seq":42,"leaf_hash":")" + hash::Hex(h) + R"("}})"}) {
    auto refused = ParsePruned(bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(std::string(refused.status().message()), "not a pruned line (CONTRACT section 9)") << bad;
  }
  EXPECT_FALSE(LooksPruned(R"({"emitter":"x"})"));
}

}  // namespace
}  // namespace ledger::retention
