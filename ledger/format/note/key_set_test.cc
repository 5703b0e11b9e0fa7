// CONTRACT section 5d through its golden vectors (tests/vectors/
// key_rotation.json, made from the contract's text with Python's
// cryptography): the statement, its signatures, key sets and the ranges a
// followed rotation leaves.
#include "ledger/format/note/key_set.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/util/status_matchers.h"

namespace ledger::note {
namespace {

using ::ledger::testing::StatusIs;
using ::testing::HasSubstr;

const nlohmann::json& Vectors() {
  static const nlohmann::json v = [] {
    const char* dir = std::getenv("LEDGER_VECTORS");
    std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/key_rotation.json");
    return nlohmann::json::parse(in);
  }();
  return v;
}

std::string SeedBytes(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

Signer KeyOf(const std::string& which) {
  const auto& v = Vectors();
  return *Signer::FromSeed(v["origin"].get<std::string>(), SeedBytes(v["keys"][which]["seed_hex"].get<std::string>()));
}

const nlohmann::json& RotationReceipt() {
  const auto& v = Vectors();
  return v["entries"][v["rotation_seq"].get<size_t>()]["entry"]["receipt"];
}

TEST(KeyRotationTest, TheStatementAndItsNoteAreTheVectors) {
  const auto& v = Vectors();
  Signer old_key = KeyOf("old"), new_key = KeyOf("new");
  ASSERT_EQ(old_key.VerifierKey(), v["keys"]["old"]["vkey"]);
  ASSERT_EQ(new_key.VerifierKey(), v["keys"]["new"]["vkey"]);
  const uint64_t seq = v["rotation_seq"];
  EXPECT_EQ(FormatKeyRotation(v["origin"].get<std::string>(), seq, old_key.VerifierKey(), new_key.VerifierKey()),
            v["statement_text"]);
  EXPECT_EQ(*SignKeyRotation(v["origin"].get<std::string>(), seq, old_key, new_key), v["statement_note"]);
  EXPECT_EQ(RotationReceipt()["note"], v["statement_note"]);
  EXPECT_TRUE(CheckKeyRotation(v["origin"].get<std::string>(), seq, old_key.VerifierKey(), new_key.VerifierKey(),
                               v["statement_note"].get<std::string>())
                  .ok());
}

TEST(KeyRotationTest, TheBadRotationsOfTheNoteAndKeysAreRefused) {
  const auto& v = Vectors();
  int checked = 0;
  for (const auto& bad : v["bad_rotations"]) {
    const std::string rule = bad["rule"];
    if (!rule.starts_with("note:") && !rule.starts_with("new_key:")) continue;  // the leaf's rules: the verifiers'
    auto leaf = nlohmann::json::parse(bad["leaf_bytes_utf8"].get<std::string>());
    const auto& r = leaf["receipt"];
    EXPECT_THAT(
        CheckKeyRotation(v["origin"].get<std::string>(), leaf["seq"].get<uint64_t>(), r["old_key"].get<std::string>(),
                         r["new_key"].get<std::string>(), r["note"].get<std::string>()),
        StatusIs(absl::StatusCode::kInvalidArgument))
        << rule;
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

TEST(KeyRotationTest, ACheckpointOfATransitionHasBothLinesNewFirst) {
  const auto& v = Vectors();
  const std::string& only_new = v["checkpoints"]["size5_new"].get_ref<const std::string&>();
  EXPECT_EQ(*AddSignature(only_new, KeyOf("old")), v["checkpoints"]["size5_new_then_old"]);
}

TEST(KeySetTest, EachKeySetOfTheVectorsTrustsWhatItSays) {
  const auto& v = Vectors();
  const auto& r = RotationReceipt();
  for (const auto& c : v["key_sets"]) {
    SCOPED_TRACE(c["about"].get<std::string>());
    auto set = KeySet::Parse(c["key_set"].get<std::string>());
    absl::Status followed = absl::OkStatus();
    if (set.ok() && c["history"].get<bool>()) {
      followed = set->Follow(v["rotation_seq"], r["old_key"].get<std::string>(), r["new_key"].get<std::string>(),
                             r["note"].get<std::string>());
    }
    if (!c["accepted"].get<bool>()) {
      absl::Status got = set.ok() ? followed : set.status();
      EXPECT_FALSE(got.ok());
      EXPECT_THAT(std::string(got.message()), HasSubstr(c["error"].get<std::string>()));
      continue;
    }
    ASSERT_TRUE(set.ok()) << set.status();
    ASSERT_TRUE(followed.ok()) << followed;
    ASSERT_EQ(set->ranges().size(), c["ranges"].size());
    for (size_t i = 0; i < set->ranges().size(); ++i) {
      const auto& want = c["ranges"][i];
      EXPECT_EQ(set->ranges()[i].vkey, want["key"]);
      EXPECT_EQ(set->ranges()[i].from, want["from"].get<uint64_t>());
      EXPECT_EQ(set->ranges()[i].until.has_value(), !want["until"].is_null());
      if (!want["until"].is_null()) {
        EXPECT_EQ(*set->ranges()[i].until, want["until"].get<uint64_t>());
      }
    }
    for (const auto& [name, passes] : c["checkpoints"].items()) {
      const std::string& note_text = v["checkpoints"][name].get_ref<const std::string&>();
      const uint64_t size = name.starts_with("size3") ? 3 : 5;
      auto opened = set->Open(note_text, size);
      EXPECT_EQ(opened.ok(), passes.get<bool>()) << name << ": " << opened.status();
      if (!opened.ok()) {
        EXPECT_THAT(opened.status(), StatusIs(absl::StatusCode::kPermissionDenied));
      }
    }
  }
}

TEST(KeySetTest, AMalformedLineIsNamedByItsNumber) {
  const std::string vkey = Vectors()["keys"]["old"]["vkey"];
  EXPECT_THAT(KeySet::Parse("# keys\n" + vkey + " since 4\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2")));
  EXPECT_THAT(KeySet::Parse(vkey + " from 04\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("from: want a decimal size")));
  EXPECT_THAT(KeySet::Parse("# nothing\n").status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no key")));
}

TEST(KeySetTest, TheOldKeysLineOfATransitionNeverStandsInForTheNewKey) {
  const auto& v = Vectors();
  const auto& r = RotationReceipt();
  auto set = *KeySet::Of(v["keys"]["old"]["vkey"].get<std::string>());
  ASSERT_TRUE(set.Follow(v["rotation_seq"], r["old_key"].get<std::string>(), r["new_key"].get<std::string>(),
                         r["note"].get<std::string>())
                  .ok());
  EXPECT_THAT(set.Open(v["checkpoints"]["size5_old"].get<std::string>(), 5),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("size 5: no valid signature by")));
  EXPECT_TRUE(set.Open(v["checkpoints"]["size5_new_then_old"].get<std::string>(), 5).ok());
}

}  // namespace
}  // namespace ledger::note
