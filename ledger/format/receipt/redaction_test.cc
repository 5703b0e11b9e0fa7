#include "ledger/format/receipt/redaction.h"

#include <cstdlib>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/merkle/merkle.h"
#include "nlohmann/json.hpp"

namespace ledger::receipt {
namespace {

nlohmann::json Load() {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/redaction.json");
  return nlohmann::json::parse(in);
}

std::string Leaf(const nlohmann::json& v, uint64_t seq) { return v["entries"][seq]["leaf_bytes_utf8"]; }

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// CONTRACT section 8's vectors: each redaction entry is what
// receipt::Redaction makes of the leaf it erases, passes the ledger's
// validation, and gives the redacted line, whose skeleton is the leaf's.
TEST(RedactionVectorsTest, TheLedgersRedactionOfEachLeafGivesItsLine) {
  auto v = Load();
  ASSERT_EQ(v["redacted_lines"].size(), 2u);
  for (const auto& item : v["redacted_lines"]) {
    const uint64_t seq = item["seq"], by = item["by"];
    auto erased = ParseLeaf(Leaf(v, seq));
    ASSERT_TRUE(erased.ok()) << erased.status();
    auto logged = ParseLeaf(Leaf(v, by));
    ASSERT_TRUE(logged.ok()) << logged.status();
    ASSERT_TRUE(logged->receipt.has_redaction());
    EXPECT_EQ(logged->emitter, kLedgerEmitter);
    const auto& d = logged->receipt.redaction();
    Receipt made = Redaction(*erased, hash::LeafHash(Leaf(v, seq)), d.reason(), d.requested_by(), d.approved_by(),
                             logged->receipt.occurred_at_us());
    auto checked = Canonicalize(made, Author::kLedger);
    ASSERT_TRUE(checked.ok()) << checked.status();
    EXPECT_EQ(*checked, Encode(logged->receipt));
    EXPECT_EQ(EncodeEntry(*logged, *checked), Leaf(v, by));

    const std::string line = item["line_utf8"];
    EXPECT_EQ(RedactedLine(by, logged->receipt), line);
    auto read = ParseRedacted(line);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->by, by);
    EXPECT_EQ(read->leaf_hash, hash::LeafHash(Leaf(v, seq)));
    const Entry& s = read->skeleton;
    EXPECT_EQ(s.seq, seq);
    EXPECT_EQ(s.prev, erased->prev);
    EXPECT_EQ(s.run_prev, erased->run_prev);
    EXPECT_EQ(s.team_prev, erased->team_prev);
    EXPECT_EQ(s.version, erased->version);
    EXPECT_EQ(s.logged_at_us, erased->logged_at_us);
    EXPECT_EQ(s.receipt.team(), erased->receipt.team());
    EXPECT_EQ(s.receipt.run_id(), erased->receipt.run_id());
    EXPECT_EQ(s.receipt.receipt_id(), erased->receipt.receipt_id());
    EXPECT_EQ(s.receipt.step_id(), erased->receipt.step_id());
    EXPECT_EQ(KindName(s.receipt), KindName(erased->receipt));
    EXPECT_EQ(s.emitter, "");
    // The tail readers read the line as the leaf it stands for.
    EXPECT_EQ(*SeqOf(line), seq);
    EXPECT_EQ(*RunPrevOf(line), erased->run_prev);
    EXPECT_EQ(TeamLinkOf(line)->team_prev, erased->team_prev);
    EXPECT_EQ(*TeamOf(line), erased->receipt.team());
    // A line is never a leaf, nor a leaf a line.
    EXPECT_FALSE(ParseLeaf(line).ok());
    EXPECT_EQ(ParseRedacted(Leaf(v, seq)).status().message(), "not a redacted line: it does not begin {\"redacted\":");
  }
}

TEST(RedactionVectorsTest, ABundleHoldsTheLinesInPlaceOfTheLeaves) {
  auto v = Load();
  std::string before, after;
  merkle::Frontier tree;
  for (uint64_t seq = 0; seq < v["size"].get<uint64_t>(); ++seq) {
    std::string leaf = Leaf(v, seq);
    std::string shown = leaf;
    for (const auto& item : v["redacted_lines"]) {
      if (item["seq"].get<uint64_t>() == seq) shown = item["line_utf8"];
    }
    for (auto [out, bytes] : {std::pair{&before, &leaf}, std::pair{&after, &shown}}) {
      out->push_back(static_cast<char>(bytes->size() >> 8));
      out->push_back(static_cast<char>(bytes->size() & 0xff));
      out->append(*bytes);
    }
    // The tree over the lines' leaf hashes is the log's.
    hash::Hash h = LooksRedacted(shown) ? ParseRedacted(shown)->leaf_hash : hash::LeafHash(shown);
    tree.Append(h, [](int, uint64_t, const hash::Hash&) {});
  }
  EXPECT_EQ(before, Unhex(v["bundle_before_hex"]));
  EXPECT_EQ(after, Unhex(v["bundle_hex"]));
  EXPECT_EQ(hash::Hex(tree.Root()), v["root_hex"].get<std::string>());
  EXPECT_NE(before.find("ERASE-ME-4242"), std::string::npos);
  EXPECT_EQ(after.find("ERASE-ME-4242"), std::string::npos);
}

TEST(RedactionVectorsTest, TheRefusedRedactionsNameTheirField) {
  auto v = Load();
  ASSERT_GE(v["refused"].size(), 10u);
  for (const auto& c : v["refused"]) {
    auto r = FromJson(c["receipt"]);
    if (!r.ok()) {
      // Refused when read: the field named in the reader's message.
      EXPECT_THAT(std::string(r.status().message()), ::testing::StartsWith(c["field"].get<std::string>() + ":"))
          << c["name"];
      continue;
    }
    const Author author = c["emitter"] == std::string(kLedgerEmitter) ? Author::kLedger : Author::kEmitter;
    auto checked = Canonicalize(*r, author);
    ASSERT_FALSE(checked.ok()) << c["name"];
    EXPECT_THAT(std::string(checked.status().message()), ::testing::StartsWith(c["field"].get<std::string>() + ":"))
        << c["name"] << ": " << checked.status();
  }
  for (const auto& c : v["accepted"]) {
    auto r = FromJson(c["receipt"]);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(Canonicalize(*r, Author::kLedger).ok()) << c["name"];
  }
}

TEST(RedactionTest, TheAdminsAreIdentitiesTypedAsEmittersAre) {
  auto v = Load();
  auto r = FromJson(v["accepted"][0]["receipt"]);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(Canonicalize(*r, Author::kLedger).ok());
  for (const char* who : {"ledger", "alice", "spiffe://x/admin"}) {
    Receipt bad = *r;
    bad.mutable_redaction()->set_requested_by(who);
    auto checked = Canonicalize(bad, Author::kLedger);
    ASSERT_FALSE(checked.ok()) << who;
    EXPECT_THAT(std::string(checked.status().message()), ::testing::StartsWith("requested_by: an identity typed"));
  }
}

TEST(RedactionTest, OnlyExactLinesAreRead) {
  auto v = Load();
  const std::string line = v["redacted_lines"][0]["line_utf8"];
  EXPECT_TRUE(ParseRedacted(line).ok());
  const std::string not_canonical = "not a redacted line: not its canonical form, or a key not of the line";
  const std::pair<std::string, std::string> cases[] = {
      {line + " ", not_canonical},
      {line.substr(0, line.size() - 1), "not a redacted line: not one JSON object"},
      {"{\"redacted\":{}}", "not a redacted line: by, seq, logged_at_us and v: want integers"},
      {"{\"redacted\":1}", "not a redacted line: redacted: want an object"},
  };
  for (const auto& [bad, why] : cases) EXPECT_EQ(ParseRedacted(bad).status().message(), why) << bad;
  // Found by fuzz_receipt: a line of version 1 with a team_prev, which no
  // redaction states (entry_team_prev is only with entry_v 2) and whose
  // tail SeqOf cannot read as a leaf's.
  const std::string v1_team_prev =
      R"({"redacted":{"by":5,"leaf_hash":"32d4da4134a1600ba3a057d4699da508fe24cb1f0ccc72a871ec509634ad8d3b",)"
      R"("logged_at_us":1767225600001000,"prev":"d672f028d20bd29185c177196ccbf2ed6ee17aef67dee0fac5b661256ae5bf97",)"
      R"("receipt":{"attempt":1,"kind":"agent_exec","receipt_id":"build-exec","run_id":"run-6",)"
      R"("start_receipt_id":"build-start","step_id":"build","team":"acme"},"run_prev":0,"seq":1,"team_prev":0,"v":1}})";
  EXPECT_EQ(ParseRedacted(v1_team_prev).status().message(), "not a redacted line: team_prev: only with v 2");
  std::string v3 = v1_team_prev;
  v3.replace(v3.find(R"(,"team_prev":0,"v":1)"), 20, R"(,"v":3)");
  EXPECT_EQ(ParseRedacted(v3).status().message(), "not a redacted line: v: want 1 or 2");
  std::string v1 = v1_team_prev;
  v1.replace(v1.find(R"(,"team_prev":0)"), 14, "");
  ASSERT_TRUE(ParseRedacted(v1).ok()) << ParseRedacted(v1).status();
  EXPECT_EQ(*SeqOf(v1), 1u);
  std::string spaced = line;
  spaced.insert(spaced.find(',') + 1, " ");
  EXPECT_EQ(ParseRedacted(spaced).status().message(), not_canonical);
}

}  // namespace
}  // namespace ledger::receipt
