#include "ledger/format/receipt/retention.h"

#include <cstdlib>
#include <fstream>
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/retention/policy.h"
#include "ledger/format/retention/pruned.h"
#include "nlohmann/json.hpp"

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

nlohmann::json LoadVectors() {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/retention.json");
  return nlohmann::json::parse(in);
}

// The bytes of lower-case hex.
std::string BytesOfHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string Bundle(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines)
    out += std::string{static_cast<char>(l.size() >> 8), static_cast<char>(l.size() & 0xFF)} + l;
  return out;
}

// CONTRACT section 9's vectors, made from the text alone by
// tests/vectors/retention_vectors.py: the policies read and refused word
// for word, the pass's entries as the ledger's builder makes them, the
// pruned lines, the bundle before and after over the same root, and each
// refused retention receipt naming its field.
TEST(RetentionVectorsTest, PoliciesReadAndRefusedWordForWord) {
  auto v = LoadVectors();
  ASSERT_FALSE(v["policies"]["accepted"].empty());
  for (const auto& c : v["policies"]["accepted"]) {
    const std::string text = c["text_utf8"];
    auto p = retention::Policy::Parse(text);
    ASSERT_TRUE(p.ok()) << p.status() << text;
    ASSERT_EQ(p->rules().size(), c["rules"].size()) << text;
    for (size_t i = 0; i < p->rules().size(); ++i) {
      const auto& want = c["rules"][i];
      EXPECT_EQ(p->rules()[i].team, want["kind"] == "default" ? "" : want["team"].get<std::string>()) << text;
      EXPECT_EQ(p->rules()[i].line, want["line"].get<int>()) << text;
      if (want["keep_s"].is_null()) {
        EXPECT_FALSE(p->rules()[i].keep_s.has_value()) << text;
      } else {
        EXPECT_EQ(p->rules()[i].keep_s, want["keep_s"].get<int64_t>()) << text;
      }
    }
    EXPECT_EQ(p->sha256(), hash::Sha256(text));
  }
  ASSERT_FALSE(v["policies"]["refused"].empty());
  for (const auto& c : v["policies"]["refused"]) {
    auto p = retention::Policy::Parse(c["text_utf8"].get<std::string>());
    ASSERT_FALSE(p.ok()) << c["name"];
    EXPECT_EQ(std::string(p.status().message()), c["error"].get<std::string>()) << c["name"];
  }
}

TEST(RetentionVectorsTest, ThePassEntriesPrunedLinesAndBundles) {
  auto v = LoadVectors();
  std::map<uint64_t, std::string> lines;  // what a bundle holds in place of the leaf
  for (const auto& r : v["redacted_lines"]) lines[r["seq"].get<uint64_t>()] = r["line_utf8"].get<std::string>();
  std::map<uint64_t, std::string> pruned;
  for (const auto& p : v["pruned"]) pruned[p["seq"].get<uint64_t>()] = p["line_utf8"].get<std::string>();
  ASSERT_FALSE(pruned.empty());
  std::vector<std::string> before, after;
  merkle::Frontier tree;
  for (size_t seq = 0; seq < v["entries"].size(); ++seq) {
    const std::string leaf = v["entries"][seq]["leaf_bytes_utf8"];
    auto e = ParseLeaf(leaf);
    ASSERT_TRUE(e.ok()) << e.status() << leaf;
    const hash::Hash h = hash::LeafHash(leaf);
    EXPECT_EQ(hash::Hex(h), v["entries"][seq]["leaf_hash_hex"].get<std::string>());
    tree.Append(h, [](int, uint64_t, const hash::Hash&) {});
    const std::string stored = lines.contains(seq) ? lines[seq] : leaf;
    before.push_back(stored);
    after.push_back(pruned.contains(seq) ? retention::PrunedLine(seq, h) : stored);
    if (pruned.contains(seq)) {
      EXPECT_EQ(after.back(), pruned[seq]) << seq;
    }
  }
  EXPECT_EQ(hash::Hex(tree.Root()), v["root_hex"].get<std::string>());
  EXPECT_EQ(Bundle(before), BytesOfHex(v["bundle_before_hex"]));
  EXPECT_EQ(Bundle(after), BytesOfHex(v["bundle_hex"]));
  // Each of the pass's entries is what the ledger's builder makes of its
  // rule, and passes the ledger's validation.
  ASSERT_EQ(v["accepted"].size(), 3u);
  for (const auto& a : v["accepted"]) {
    auto e = ParseLeaf(v["entries"][a["seq"].get<size_t>()]["leaf_bytes_utf8"].get<std::string>());
    ASSERT_TRUE(e.ok());
    ASSERT_TRUE(e->receipt.has_retention());
    EXPECT_EQ(e->emitter, kLedgerEmitter);
    const auto& t = e->receipt.retention();
    auto sha = hash::ParseHex(t.policy_sha256());
    ASSERT_TRUE(sha.ok());
    EXPECT_EQ(hash::Hex(*sha), v["pass"]["policy_sha256"].get<std::string>());
    Receipt made = Retention(static_cast<uint64_t>(t.pass()), RuleOf(e->receipt), *sha, e->receipt.occurred_at_us());
    EXPECT_EQ(Encode(made), Encode(e->receipt));
    EXPECT_TRUE(Canonicalize(e->receipt, Author::kLedger).ok());
  }
}

TEST(RetentionVectorsTest, EachRefusedReceiptNamesItsField) {
  auto v = LoadVectors();
  ASSERT_GE(v["refused"].size(), 10u);
  for (const auto& c : v["refused"]) {
    auto r = FromJson(c["receipt"]);
    ASSERT_TRUE(r.ok()) << r.status() << c["name"];
    const Author author = c["emitter"] == "ledger" ? Author::kLedger : Author::kEmitter;
    auto refused = Canonicalize(*r, author);
    ASSERT_FALSE(refused.ok()) << c["name"];
    EXPECT_TRUE(std::string(refused.status().message()).starts_with(c["field"].get<std::string>() + ": "))
        << c["name"] << ": " << refused.status();
  }
}

}  // namespace
}  // namespace ledger::receipt
