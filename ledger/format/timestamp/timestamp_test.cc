// Time-stamp lines against CONTRACT section 5e's golden vectors
// (tests/vectors/timestamp.json: notes stamped by a real TSA, openssl ts).
#include "ledger/format/timestamp/timestamp.h"

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/note.h"
#include "nlohmann/json.hpp"

namespace ledger::timestamp {
namespace {

nlohmann::json Vectors() {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/timestamp.json");
  return nlohmann::json::parse(in);
}

int64_t NoteTime(const std::string& note) {
  auto time = note::ParseCheckpointTime(*NoteText(note));
  EXPECT_TRUE(time.ok()) << time.status();
  return time.ok() ? time->time_us : 0;
}

absl::StatusOr<Stamp> Check(const nlohmann::json& v, const std::string& note, const std::string& roots_pem,
                            int64_t max_delay_s) {
  auto roots = TsaRoots::Parse(roots_pem);
  EXPECT_TRUE(roots.ok()) << roots.status();
  return CheckNote(note, NoteTime(note), *roots, max_delay_s);
}

TEST(TimestampTest, TheStampIdAsTheContractWritesIt) {
  auto v = Vectors();
  std::array<uint8_t, 4> id = StampId(v["tsa_name"].get<std::string>());
  EXPECT_EQ(hash::Hex(std::string_view(reinterpret_cast<const char*>(id.data()), id.size())),
            v["stamp_id_hex"].get<std::string>());
}

TEST(TimestampTest, EveryCaseGivesItsVerdict) {
  auto v = Vectors();
  ASSERT_GE(v["cases"].size(), 10u);
  for (const auto& c : v["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    auto stamp =
        Check(v, c["note"].get<std::string>(), v["tsa_roots_pem"].get<std::string>(), v["max_delay_s"].get<int64_t>());
    if (c["want"] == "ok") {
      ASSERT_TRUE(stamp.ok()) << stamp.status();
      EXPECT_EQ(stamp->tsa, c["tsa"].get<std::string>());
      EXPECT_EQ(stamp->gen_time, c["gen_time"].get<std::string>());
    } else {
      ASSERT_FALSE(stamp.ok());
      EXPECT_NE(stamp.status().message().find(c["error"].get<std::string>()), std::string::npos)
          << stamp.status().message();
    }
  }
}

TEST(TimestampTest, AnotherTsasRootRefusesTheGoodStamp) {
  auto v = Vectors();
  const auto& good = v["cases"][0];
  ASSERT_EQ(good["want"], "ok");
  auto stamp = Check(v, good["note"].get<std::string>(), v["other_roots_pem"].get<std::string>(), 60);
  ASSERT_FALSE(stamp.ok());
  EXPECT_EQ(stamp.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(stamp.status().message().find("not signed by a TSA of --tsa-root"), std::string::npos);
}

TEST(TimestampTest, TheBoundIsASetting) {
  auto v = Vectors();
  for (const auto& c : v["cases"]) {
    if (c["name"].get<std::string>().find("within the bound") == std::string::npos) continue;
    std::string note = c["note"].get<std::string>();
    EXPECT_TRUE(Check(v, note, v["tsa_roots_pem"].get<std::string>(), 60).ok());
    auto tight = Check(v, note, v["tsa_roots_pem"].get<std::string>(), 10);
    ASSERT_FALSE(tight.ok());
    EXPECT_NE(tight.status().message().find("more than the bound of 10 s"), std::string::npos);
    return;
  }
  FAIL() << "no case within the bound";
}

TEST(TimestampTest, FindStampsTakesOnlyTheLinesOfTheirOwnName) {
  auto v = Vectors();
  std::string note = v["cases"][0]["note"].get<std::string>();
  ASSERT_EQ(FindStamps(note).size(), 1u);
  // The same data under another name is another key's line: its ID differs.
  std::string renamed = note;
  size_t at = renamed.find("\xe2\x80\x94 tsa ");
  ASSERT_NE(at, std::string::npos);
  renamed.replace(at, 8, "\xe2\x80\x94 tsb ");
  EXPECT_TRUE(FindStamps(renamed).empty());
}

TEST(TimestampTest, StampLineRoundTripsAndRefusesBadNames) {
  auto line = StampLine("tsa.example", std::string("\x30\x00", 2));
  ASSERT_TRUE(line.ok());
  auto found = FindStamps("text\n\n" + *line);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], std::string("\x30\x00", 2));
  EXPECT_FALSE(StampLine("a b", "x").ok());
  EXPECT_FALSE(StampLine("a+b", "x").ok());
}

TEST(TimestampTest, TheTokenOfAReplyIsTheTsasBytesWithItsNonce) {
  auto v = Vectors();
  auto reply = hash::Base64Decode(v["response_b64"].get<std::string>());
  ASSERT_TRUE(reply.ok());
  std::string nonce_hex = v["response_nonce_hex"].get<std::string>();
  if (nonce_hex.size() % 2) nonce_hex = "0" + nonce_hex;
  std::string nonce;
  for (size_t i = 0; i < nonce_hex.size(); i += 2) {
    nonce += static_cast<char>(std::stoi(nonce_hex.substr(i, 2), nullptr, 16));
  }
  Request request{.der = "", .nonce = nonce};
  auto token = TokenFromReply(*reply, request);
  ASSERT_TRUE(token.ok()) << token.status();
  // The good case carries this very token.
  EXPECT_EQ(FindStamps(v["cases"][0]["note"].get<std::string>()).at(0), *token);
  auto roots = TsaRoots::Parse(v["tsa_roots_pem"].get<std::string>());
  auto stamp = VerifyToken(*token, v["response_text"].get<std::string>(), *roots);
  EXPECT_TRUE(stamp.ok()) << stamp.status();

  request.nonce[request.nonce.size() - 1] ^= 1;
  auto replayed = TokenFromReply(*reply, request);
  ASSERT_FALSE(replayed.ok());
  EXPECT_EQ(replayed.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_FALSE(TokenFromReply(reply->substr(0, reply->size() - 1), request).ok());
}

TEST(TimestampTest, ARequestCarriesTheImprintANonceAndCertReq) {
  auto a = MakeRequest("some text\n");
  auto b = MakeRequest("some text\n", "1.2.3.4");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->nonce.size(), 8u);
  EXPECT_NE(a->nonce, b->nonce);
  hash::Hash digest = hash::Sha256("some text\n");
  EXPECT_NE(a->der.find(std::string(reinterpret_cast<const char*>(digest.data()), digest.size())), std::string::npos);
  EXPECT_NE(a->der.find(a->nonce), std::string::npos);
  EXPECT_GT(b->der.size(), a->der.size());  // the policy OID
  EXPECT_FALSE(MakeRequest("x", "not an oid").ok());
}

TEST(TimestampTest, DescribeReadsATokenWithoutJudgingIt) {
  auto v = Vectors();
  for (const auto& c : v["cases"]) {
    if (c["name"] != "stamped by a TSA not of the roots") continue;
    auto described = Describe(FindStamps(c["note"].get<std::string>()).at(0));
    ASSERT_TRUE(described.ok()) << described.status();
    EXPECT_EQ(described->tsa, "Other TSA");  // not a root's TSA: described all the same
    EXPECT_EQ(described->gen_time.size(), std::string("2026-12-05T08:14:19Z").size());
  }
  EXPECT_FALSE(Describe(std::string("\x30\x03\x02\x01\x01", 5)).ok());
}

TEST(TimestampTest, RootsMustBeCertificates) {
  EXPECT_FALSE(TsaRoots::Parse("").ok());
  EXPECT_FALSE(TsaRoots::Parse("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").ok());
  auto v = Vectors();
  auto both = TsaRoots::Parse(v["tsa_roots_pem"].get<std::string>() + v["other_roots_pem"].get<std::string>());
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->size(), 2u);
}

TEST(TimestampTest, TimeRuleComparesSecondsAndTheBound) {
  Stamp s{.tsa = "t", .gen_time_us = 1'000'000'000'000'000, .gen_time = "g"};
  EXPECT_TRUE(CheckTime(s.gen_time_us + 999'999, s, 60).ok());  // same second
  EXPECT_FALSE(CheckTime(s.gen_time_us + 1'000'000, s, 60).ok());
  EXPECT_TRUE(CheckTime(s.gen_time_us - 60'000'000, s, 60).ok());
  EXPECT_FALSE(CheckTime(s.gen_time_us - 60'000'001, s, 60).ok());
}

}  // namespace
}  // namespace ledger::timestamp
