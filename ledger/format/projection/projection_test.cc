#include "ledger/format/projection/projection.h"

#include <string>

#include "gtest/gtest.h"
#include "ledger/format/projection/keys.h"

namespace ledger::projection {
namespace {

TEST(KeyPartsTest, PartsRoundTripAndPrefixesStopAtTheAskedPart) {
  std::string key;
  AppendKeyPart(&key, "team");
  AppendKeyPart(&key, std::string(200, 'r'));
  key += "tail";
  EXPECT_EQ(key.size(), 1 + 4 + 1 + 200 + 4u);
  EXPECT_EQ(static_cast<unsigned char>(key[5]), 200);
  std::string_view in = key;
  std::string team, run;
  ASSERT_TRUE(TakeKeyPart(&in, &team));
  ASSERT_TRUE(TakeKeyPart(&in, &run));
  EXPECT_EQ(team, "team");
  EXPECT_EQ(run, std::string(200, 'r'));
  EXPECT_EQ(in, "tail");
  std::string_view cut =
      "\x05"
      "ab";
  EXPECT_FALSE(TakeKeyPart(&cut, &team));
  EXPECT_EQ(cut,
            "\x05"
            "ab");

  EXPECT_EQ(KeyPrefixLength(key, false, 1), 5u);
  EXPECT_EQ(KeyPrefixLength(key, false, 2), 206u);
  EXPECT_EQ(KeyPrefixLength("T" + key, true, 1), 6u);
  EXPECT_EQ(KeyPrefixLength(std::string("D") + std::string(16, '\x7f'), true, 1), 1u);
  EXPECT_EQ(KeyPrefixLength(key.substr(0, 205), false, 2), 0u);  // too short
  EXPECT_EQ(KeyPrefixLength("T", true, 1), 0u);
  EXPECT_EQ(KeyPrefixLength("", true, 1), 0u);
}

TEST(OverlayTxnTest, ReadsOwnWritesThenBaseThenFallback) {
  int fallback_calls = 0;
  auto fallback = [&](Table t, std::string_view key) -> absl::StatusOr<std::optional<std::string>> {
    ++fallback_calls;
    if (t == Table::kSteps && key == "stored") return std::string("from store");
    return std::nullopt;
  };
  OverlayTxn base(nullptr, fallback);
  base.Put(Table::kSteps, "a", "base a");
  base.Put(Table::kSteps, "stored", "base overrides");
  OverlayTxn top(&base, fallback);
  top.Put(Table::kSteps, "b", "top b");
  top.Delete(Table::kSteps, "a");

  EXPECT_EQ(**top.Get(Table::kSteps, "b"), "top b");
  EXPECT_FALSE(top.Get(Table::kSteps, "a")->has_value());  // deleted over base
  EXPECT_EQ(**top.Get(Table::kSteps, "stored"), "base overrides");
  EXPECT_EQ(fallback_calls, 0);
  EXPECT_FALSE(top.Get(Table::kRuns, "b")->has_value());  // tables are apart
  EXPECT_EQ(fallback_calls, 1);
  top.DetachBase();
  EXPECT_EQ(**top.Get(Table::kSteps, "stored"), "from store");
  EXPECT_EQ(top.writes()[static_cast<int>(Table::kSteps)].size(), 2u);
}

TEST(OverlayTxnTest, BytesFollowEveryWrite) {
  OverlayTxn txn(nullptr, nullptr);
  auto counted = [&] {
    size_t bytes = 0;
    for (const auto& table : txn.writes()) {
      for (const auto& [key, value] : table) {
        bytes += key.size() + (value ? value->size() : 0) + OverlayTxn::kRowOverhead;
      }
    }
    return bytes;
  };
  EXPECT_EQ(txn.bytes(), 0u);
  txn.Put(Table::kSteps, "a", "12345");
  txn.Put(Table::kRuns, "a", "1");
  txn.Put(Table::kSteps, "a", "123456789");  // replaced by a longer value
  txn.Put(Table::kSteps, "b", "123");
  txn.Put(Table::kSteps, "b", "");  // and by a shorter one
  txn.Delete(Table::kRuns, "a");
  txn.Delete(Table::kIndex, "never written");
  txn.Put(Table::kIndex, "never written", "now");
  EXPECT_EQ(txn.bytes(), counted());
  EXPECT_EQ(txn.bytes(), (1 + 9) + 1 + (1 + 0) + (13 + 3) + 4 * OverlayTxn::kRowOverhead);
}

TEST(OverlayTxnTest, FallbackErrorsPassThrough) {
  OverlayTxn txn(nullptr, [](Table, std::string_view) -> absl::StatusOr<std::optional<std::string>> {
    return absl::DataLossError("bad record");
  });
  EXPECT_EQ(txn.Get(Table::kIndex, "x").status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ledger::projection
