#include "ledger/format/receipt/retention.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/receipt/entry.h"

namespace ledger::receipt {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNow = 1767225600000000;

Receipt Genuine() {
  RetentionRule rule{"acme", 30 * 86400, kNow - int64_t{30} * 86400 * 1000000, 1234};
  return Retention(3, rule, hash::Sha256("team acme 30d\n"), kNow);
}

TEST(RetentionTest, TheLedgersEntryIsValidAndNamedByItsPassAndRule) {
  Receipt r = Genuine();
  EXPECT_EQ(r.receipt_id(), "ledger.retention.3.team.acme");
  auto canonical = Canonicalize(r, Author::kLedger);
  ASSERT_TRUE(canonical.ok()) << canonical.status();
  EXPECT_THAT(*canonical, HasSubstr(R"("below_seq":1234)"));
  EXPECT_THAT(*canonical, HasSubstr(R"("kind":"retention")"));
  EXPECT_EQ(RuleOf(r).below_seq, 1234u);
  EXPECT_EQ(RuleOf(r).team, "acme");

  RetentionRule fallback{"", 3600, kNow - int64_t{3600} * 1000000, 0};
  Receipt d = Retention(1, fallback, hash::Sha256(""), kNow);
  EXPECT_EQ(d.receipt_id(), "ledger.retention.1.default");
  EXPECT_TRUE(Canonicalize(d, Author::kLedger).ok());

  RetentionRule forever{"audit", 0, 0, 0};
  Receipt f = Retention(2, forever, hash::Sha256(""), kNow);
  auto kept = Canonicalize(f, Author::kLedger);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_THAT(*kept, ::testing::Not(HasSubstr("keep_s")));
  EXPECT_THAT(*kept, HasSubstr(R"("below_seq":0)"));
  f.mutable_retention()->set_below_seq(5);
  EXPECT_EQ(Canonicalize(f, Author::kLedger).status().message(), "below_seq: required, 0 without keep_s");
}

TEST(RetentionTest, AnEmittersRetentionIsRefused) {
  Receipt r = Genuine();
  auto refused = Canonicalize(r, Author::kEmitter);
  EXPECT_THAT(refused.status().message(), HasSubstr("receipt_id: 'ledger.retention.3.team.acme' is in the ledger's"));
  r.set_receipt_id("r-1");
  EXPECT_EQ(Canonicalize(r, Author::kEmitter).status().message(), "kind: retention is written by the ledger only");
}

// Each rule of CONTRACT section 9's "The `retention` entry", broken alone,
// is refused naming its field.
TEST(RetentionTest, EachBrokenRuleNamesItsField) {
  struct Case {
    std::string field;
    std::function<void(Receipt&)> edit;
  };
  std::vector<Case> cases = {
      {"receipt_id", [](Receipt& r) { r.set_receipt_id("ledger.retention.4.team.acme"); }},
      {"team", [](Receipt& r) { r.set_team("acme"); }},
      {"run_id", [](Receipt& r) { r.set_run_id("ledger.keys"); }},
      {"step_id", [](Receipt& r) { r.set_step_id("s"); }},
      {"attempt", [](Receipt& r) { r.set_attempt(2); }},
      {"pass", [](Receipt& r) { r.mutable_retention()->set_pass(0); }},
      {"rule_team",
       [](Receipt& r) {
         r.mutable_retention()->set_rule_team("ledger");
         r.set_receipt_id("ledger.retention.3.team.ledger");
       }},
      {"rule_team", [](Receipt& r) { r.mutable_retention()->set_rule_team("Acme"); }},
      {"keep_s", [](Receipt& r) { r.mutable_retention()->set_keep_s(3599); }},
      {"keep_s", [](Receipt& r) { r.mutable_retention()->set_keep_s(3153600001); }},
      {"cutoff_us", [](Receipt& r) { r.mutable_retention()->set_cutoff_us(r.retention().cutoff_us() + 1); }},
      {"below_seq", [](Receipt& r) { r.mutable_retention()->set_below_seq(-1); }},
      {"below_seq", [](Receipt& r) { r.mutable_retention()->clear_below_seq(); }},
      {"policy_sha256", [](Receipt& r) { r.mutable_retention()->set_policy_sha256(std::string(64, 'A')); }},
      {"policy_sha256", [](Receipt& r) { r.mutable_retention()->set_policy_sha256(std::string(63, 'a')); }},
  };
  for (const Case& c : cases) {
    Receipt r = Genuine();
    c.edit(r);
    auto refused = Canonicalize(r, Author::kLedger);
    ASSERT_FALSE(refused.ok()) << c.field;
    EXPECT_TRUE(std::string(refused.status().message()).starts_with(c.field + ": ")) << refused.status();
  }
}

}  // namespace
}  // namespace ledger::receipt
