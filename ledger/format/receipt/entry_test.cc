#include "ledger/format/receipt/entry.h"

#include <cstdlib>
#include <fstream>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/receipt/receipt.h"
#include "nlohmann/json.hpp"
#include "tests/util/status_matchers.h"

namespace ledger::receipt {
namespace {

using ::ledger::testing::StatusIs;

nlohmann::json LoadLeaves(const std::string& name = "leaves.json") {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/" + name);
  return nlohmann::json::parse(in);
}

TEST(EntryVectorsTest, LeafBytesHashesAndRootMatch) {
  auto v = LoadLeaves();
  merkle::Frontier tree;
  ASSERT_EQ(v["entries"].size(), 3u);
  for (const auto& item : v["entries"]) {
    const auto& e = item["entry"];
    auto r = FromJson(e["receipt"]);
    ASSERT_TRUE(r.ok()) << r.status();
    auto canonical = Canonicalize(*r, Author::kEmitter);
    ASSERT_TRUE(canonical.ok()) << canonical.status();
    std::optional<uint64_t> run_prev;
    if (e.contains("run_prev")) run_prev = e["run_prev"].get<uint64_t>();
    std::string leaf = EncodeLeaf(e["seq"], *hash::ParseHex(e["prev"].get<std::string>()), run_prev, e["logged_at_us"],
                                  e["emitter"].get<std::string>(), *canonical);
    EXPECT_EQ(leaf, item["leaf_bytes_utf8"].get<std::string>());
    EXPECT_EQ(hash::Hex(hash::LeafHash(leaf)), item["leaf_hash_hex"].get<std::string>());
    tree.Append(hash::LeafHash(leaf), [](int, uint64_t, const hash::Hash&) {});

    auto parsed = ParseLeaf(leaf);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->seq, e["seq"].get<uint64_t>());
    EXPECT_EQ(parsed->run_prev, run_prev);
    EXPECT_EQ(parsed->emitter, "local");
    EXPECT_EQ(Encode(parsed->receipt), *canonical);
    EXPECT_EQ(*TeamOf(leaf), e["receipt"]["team"].get<std::string>());
  }
  EXPECT_EQ(TeamOf("{\"v\":1}").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(hash::Hex(tree.Root()), v["root_hex"].get<std::string>());
}

TEST(EntryTest, LeafNeverContainsANewline) {
  auto v = LoadLeaves();
  for (const auto& item : v["entries"]) {
    EXPECT_EQ(item["leaf_bytes_utf8"].get<std::string>().find('\n'), std::string::npos);
  }
}

TEST(EntryTest, ParseRefusesNonCanonicalLeaves) {
  auto v = LoadLeaves();
  std::string leaf = v["entries"][1]["leaf_bytes_utf8"];
  ASSERT_TRUE(ParseLeaf(leaf).ok());
  // White space.
  std::string spaced = leaf;
  spaced.insert(1, " ");
  EXPECT_EQ(ParseLeaf(spaced).status().message(), "leaf: not in canonical form");
  // Keys out of order.
  std::string reordered = leaf;
  size_t at = reordered.find(",\"logged_at_us\"");
  reordered =
      "{\"logged_at_us\":1767225600000101,\"emitter\":\"local\"" + reordered.substr(reordered.find(",\"prev\""));
  EXPECT_EQ(ParseLeaf(reordered).status().message(), "leaf: not in canonical form");
  (void)at;
  // An escaped slash is valid JSON but not canonical.
  std::string slash = leaf;
  slash.replace(slash.find("not in"), 6, "not\\/in");
  EXPECT_EQ(ParseLeaf(slash).status().message(), "leaf: not in canonical form");
  // Another version.
  std::string v3 = leaf;
  v3.replace(v3.find("\"v\":1"), 5, "\"v\":3");
  EXPECT_EQ(ParseLeaf(v3).status().message(), "leaf: v: want format version 1 or 2");
  // team_prev in a version 1 leaf.
  std::string v1_team = leaf;
  v1_team.replace(v1_team.find(",\"v\":1"), 6, ",\"team_prev\":0,\"v\":1");
  EXPECT_EQ(ParseLeaf(v1_team).status().message(), "leaf: team_prev: not a field of version 1");
  // An extra field.
  std::string extra = leaf;
  extra.insert(extra.size() - 1, ",\"x\":1");
  EXPECT_EQ(ParseLeaf(extra).status().message(), "leaf: unknown field");
  // A receipt that does not decode.
  std::string bad_receipt = leaf;
  bad_receipt.replace(bad_receipt.find("\"kind\":\"model_call\""), 19, "\"kind\":\"nope\"");
  EXPECT_EQ(ParseLeaf(bad_receipt).status().message().substr(0, 19), "leaf: receipt.kind:");
}

// Leaves of versions 1 and 2 made from the contract's text: each parses to
// its entry, re-encodes to its exact bytes, and its tail gives its link.
TEST(EntryVectorsTest, LeavesOfBothVersions) {
  auto v = LoadLeaves("leaf_v2.json");
  ASSERT_EQ(v["entries"].size(), 4u);
  merkle::Frontier tree;
  for (const auto& e : v["entries"]) {
    const std::string leaf = e["leaf_bytes_utf8"];
    SCOPED_TRACE(leaf);
    EXPECT_EQ(hash::Hex(hash::LeafHash(leaf)), e["leaf_hash_hex"]);
    tree.Append(hash::LeafHash(leaf), [](int, uint64_t, const hash::Hash&) {});
    auto parsed = ParseLeaf(leaf);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    Entry fast;
    EXPECT_TRUE(ReadLeaf(leaf, &fast));
    const auto& want = e["entry"];
    EXPECT_EQ(parsed->version, want["v"].get<int>());
    EXPECT_EQ(fast.version, want["v"].get<int>());
    std::optional<uint64_t> team_prev;
    if (want.contains("team_prev")) team_prev = want["team_prev"].get<uint64_t>();
    EXPECT_EQ(parsed->team_prev, team_prev);
    EXPECT_EQ(fast.team_prev, team_prev);
    EXPECT_EQ(parsed->seq, want["seq"].get<uint64_t>());
    EXPECT_EQ(EncodeEntry(*parsed, Encode(parsed->receipt)), leaf);
    auto link = TeamLinkOf(leaf);
    ASSERT_TRUE(link.ok());
    EXPECT_EQ(link->version, want["v"].get<int>());
    EXPECT_EQ(link->team_prev, team_prev);
    EXPECT_EQ(*SeqOf(leaf), want["seq"].get<uint64_t>());
  }
  EXPECT_EQ(hash::Hex(tree.Root()), v["root_hex"]);
}

// A log of leaves made from the contract's text with a leader_epoch inside:
// the entry reads, re-encodes, is what receipt::LeaderEpoch makes, passes the
// ledger's validation and no emitter's, and names the root before it.
TEST(EntryVectorsTest, LeaderEpochNamesTheTreeBeforeIt) {
  auto v = LoadLeaves("leader_epoch.json");
  const size_t at = v["epoch_seq"].get<size_t>();
  merkle::Frontier tree;
  for (size_t i = 0; i < v["entries"].size(); ++i) {
    const std::string leaf = v["entries"][i]["leaf_bytes_utf8"];
    SCOPED_TRACE(leaf);
    auto parsed = ParseLeaf(leaf);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(EncodeEntry(*parsed, Encode(parsed->receipt)), leaf);
    if (i == at) {
      const auto& r = parsed->receipt;
      ASSERT_TRUE(r.has_leader_epoch());
      EXPECT_EQ(r.leader_epoch().previous_size(), static_cast<int64_t>(at));
      EXPECT_EQ(r.leader_epoch().previous_root(), hash::Hex(tree.Root()));
      Receipt made = LeaderEpoch(r.leader_epoch().epoch(), r.leader_epoch().node(), at,
                                 r.leader_epoch().previous_root(), r.occurred_at_us());
      EXPECT_EQ(Encode(made), Encode(r));
      auto checked = Canonicalize(made, Author::kLedger);
      ASSERT_TRUE(checked.ok()) << checked.status();
      EXPECT_EQ(*checked, Encode(r));
      EXPECT_EQ(parsed->emitter, kLedgerEmitter);
      EXPECT_THAT(Canonicalize(made, Author::kEmitter),
                  StatusIs(absl::StatusCode::kInvalidArgument, ::testing::StartsWith("receipt_id: 'ledger.epoch.2'")));
      made.set_receipt_id("epoch-2");
      EXPECT_THAT(Canonicalize(made, Author::kEmitter),
                  StatusIs(absl::StatusCode::kInvalidArgument, "kind: leader_epoch is written by the ledger only"));
    }
    tree.Append(hash::LeafHash(leaf), [](int, uint64_t, const hash::Hash&) {});
  }
  EXPECT_EQ(hash::Hex(tree.Root()), v["root_hex"]);
}

// CONTRACT section 5d's log: its key_rotation entry reads, re-encodes, is
// what receipt::KeyRotation makes, passes the ledger's validation and no
// emitter's, and its ids are fixed.
TEST(EntryVectorsTest, KeyRotationIsTheLedgersEntryOfTheRunOfKeys) {
  auto v = LoadLeaves("key_rotation.json");
  const size_t at = v["rotation_seq"].get<size_t>();
  const std::string leaf = v["entries"][at]["leaf_bytes_utf8"];
  auto parsed = ParseLeaf(leaf);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(EncodeEntry(*parsed, Encode(parsed->receipt)), leaf);
  const auto& r = parsed->receipt;
  ASSERT_TRUE(r.has_key_rotation());
  Receipt made = KeyRotation(1, r.key_rotation().old_key(), r.key_rotation().new_key(), r.key_rotation().note(),
                             r.occurred_at_us());
  EXPECT_EQ(Encode(made), Encode(r));
  auto checked = Canonicalize(made, Author::kLedger);
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ(*checked, Encode(r));
  made.set_receipt_id("key-1");
  EXPECT_THAT(Canonicalize(made, Author::kEmitter),
              StatusIs(absl::StatusCode::kInvalidArgument, "kind: key_rotation is written by the ledger only"));
  EXPECT_THAT(Canonicalize(made, Author::kLedger),
              StatusIs(absl::StatusCode::kInvalidArgument, "receipt_id: a key_rotation's is 'ledger.key.<n>', n >= 1"));
  made.set_receipt_id("ledger.key.01");
  EXPECT_FALSE(Canonicalize(made, Author::kLedger).ok());
  made.set_receipt_id("ledger.key.2");
  made.set_run_id("ledger.epochs");
  EXPECT_THAT(Canonicalize(made, Author::kLedger),
              StatusIs(absl::StatusCode::kInvalidArgument, "run_id: a key_rotation's is 'ledger.keys'"));
}

TEST(ReceiptTest, LeaderEpochFieldsAreChecked) {
  const std::string root(64, 'a');
  auto refused = [&](Receipt r, const std::string& message) {
    EXPECT_THAT(Canonicalize(r, Author::kLedger), StatusIs(absl::StatusCode::kInvalidArgument, message));
  };
  Receipt ok = LeaderEpoch(3, "node-a", 10, root, 1767225600000000);
  EXPECT_TRUE(Canonicalize(ok, Author::kLedger).ok());
  refused(LeaderEpoch(0, "node-a", 10, root, 1767225600000000), "epoch: must be >= 1, not 0");
  refused(LeaderEpoch(3, "node a", 10, root, 1767225600000000), "node: 'node a' is not 1-64 bytes of [A-Za-z0-9._-]");
  refused(LeaderEpoch(3, "", 10, root, 1767225600000000), "node: required, 1-64 bytes of [A-Za-z0-9._-]");
  refused(LeaderEpoch(3, "node-a", 10, std::string(64, 'A'), 1767225600000000),
          "previous_root: '" + std::string(64, 'A') + "' is not 64 lower-case hex");
  Receipt other = ok;
  other.set_receipt_id("ledger.epoch.4");
  refused(other, "receipt_id: a leader_epoch's is 'ledger.epoch.3'");
  other = ok;
  other.set_team("team-a");
  refused(other, "team: a leader_epoch's is 'ledger'");
  other = ok;
  other.set_run_id("ledger.other");
  refused(other, "run_id: a leader_epoch's is 'ledger.epochs'");
  other = ok;
  other.set_step_id("s1");
  refused(other, "step_id: a leader_epoch has none");
  // The run of epochs is the ledger's: no emitter writes into it.
  Receipt call;
  call.set_receipt_id("c1");
  call.set_team("ledger");
  call.set_run_id("ledger.epochs");
  call.set_occurred_at_us(1767225600000000);
  call.mutable_tool_call()->set_tool("git");
  call.mutable_tool_call()->set_decision(evidence::ledger::v1::DECISION_ALLOW);
  EXPECT_THAT(Canonicalize(call, Author::kEmitter),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "run_id: 'ledger.epochs' is in the ledger's namespace: ids starting with 'ledger.' are written "
                       "by the ledger only"));
  call.set_run_id("run-1");
  EXPECT_TRUE(Canonicalize(call, Author::kEmitter).ok()) << Canonicalize(call, Author::kEmitter).status();
}

TEST(EntryTest, RunPrevOfReadsTheTail) {
  auto v = LoadLeaves();
  EXPECT_EQ(*RunPrevOf(v["entries"][0]["leaf_bytes_utf8"].get<std::string>()), std::nullopt);
  EXPECT_EQ(*RunPrevOf(v["entries"][2]["leaf_bytes_utf8"].get<std::string>()), 1u);
  // A receipt whose strings mention run_prev does not confuse it.
  std::string tricky = EncodeLeaf(9, kZeroHash, std::nullopt, 1, "e", R"({"reason":"","run_prev":7,"seq":9"})");
  EXPECT_EQ(*RunPrevOf(tricky), std::nullopt);
  EXPECT_THAT(RunPrevOf("{}"), StatusIs(absl::StatusCode::kInvalidArgument, "leaf: not a leaf of version 1 or 2"));
}

TEST(EntryTest, GenesisPrevIsZeros) {
  std::string leaf = EncodeLeaf(0, kZeroHash, std::nullopt, 1, "e", "{}");
  EXPECT_EQ(leaf, "{\"emitter\":\"e\",\"logged_at_us\":1,\"prev\":\"" + std::string(64, '0') +
                      "\",\"receipt\":{},\"seq\":0,\"v\":1}");
}

}  // namespace
}  // namespace ledger::receipt
