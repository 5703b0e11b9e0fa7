#include "ledger/format/cosign/cosign.h"

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"
#include "ledger/format/hash/hash.h"
#include "nlohmann/json.hpp"

namespace ledger::cosign {
namespace {

nlohmann::json LoadVector() {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/cosignature.json");
  return nlohmann::json::parse(in);
}

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

constexpr char kBody[] = "example.org/log\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";
constexpr char kLogSig[] =
    "\xe2\x80\x94 example.org/log "
    "AAAAAQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\n";

Cosigner Key() { return *Cosigner::FromSeed("witness.example/w1", std::string(32, '\x07')); }

TEST(CosignTest, GoldenVectorKeyIdVerifierKeyAndCosignatureLine) {
  auto vec = LoadVector();
  auto c = Cosigner::FromSeed(vec["name"].get<std::string>(), Unhex(vec["seed_hex"].get<std::string>()));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->VerifierKey(), vec["vkey"].get<std::string>());
  EXPECT_EQ(*c->KeyFileText(), vec["signer_key"].get<std::string>() + "\n");
  EXPECT_EQ(hash::Hex(std::string_view(reinterpret_cast<const char*>(c->public_key().data()), 32)),
            vec["public_key_hex"].get<std::string>());
  const std::string body = vec["checkpoint"].get<std::string>();
  const uint64_t time = vec["time"].get<uint64_t>();
  EXPECT_EQ(SignedMessage(body, time), vec["signed_message"].get<std::string>());
  EXPECT_EQ(*c->Cosign(body, time), vec["cosignature"].get<std::string>());
}

TEST(CosignTest, KeyIdIsSha256OfNameNewlineTypeFourAndKey) {
  Cosigner c = Key();
  std::string pre = "witness.example/w1\n\x04" + std::string(reinterpret_cast<const char*>(c.public_key().data()), 32);
  hash::Hash h = hash::Sha256(pre);
  EXPECT_EQ(c.key_id(), uint32_t{h[0]} << 24 | uint32_t{h[1]} << 16 | uint32_t{h[2]} << 8 | h[3]);
}

TEST(CosignTest, ACosignatureVerifiesWithItsTimeBesideOtherSignatures) {
  Cosigner c = Key();
  auto line = c.Cosign(kBody, 1700000000);
  ASSERT_TRUE(line.ok()) << line.status();
  auto v = CosignatureVerifier::Parse(c.VerifierKey());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->vkey(), c.VerifierKey());
  auto t = v->Verify(std::string(kBody) + "\n" + kLogSig + *line);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, 1700000000u);
}

TEST(CosignTest, AnotherBodyOrAnotherTimeIsRefused) {
  Cosigner c = Key();
  auto v = *CosignatureVerifier::Parse(c.VerifierKey());
  std::string line = *c.Cosign(kBody, 1700000000);
  std::string other = "example.org/log\n6\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";
  auto t = v.Verify(other + "\n" + line);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(t.status().message(),
            "cosignature by witness.example/w1+" + std::string(v.vkey()).substr(19, 8) + ": does not verify");
  // The time is signed: moving it to another second breaks the signature.
  std::string data = *hash::Base64Decode(line.substr(line.rfind(' ') + 1, line.size() - line.rfind(' ') - 2));
  data[11] ^= 1;
  std::string moved = line.substr(0, line.rfind(' ') + 1) + hash::Base64(data) + "\n";
  EXPECT_EQ(v.Verify(std::string(kBody) + "\n" + moved).status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(CosignTest, NoLineByTheWitnessIsNotFound) {
  auto v = *CosignatureVerifier::Parse(Key().VerifierKey());
  auto t = v.Verify(std::string(kBody) + "\n" + kLogSig);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  // A line by another witness of the same name is not this witness's.
  Cosigner other = *Cosigner::FromSeed("witness.example/w1", std::string(32, '\x08'));
  EXPECT_EQ(v.Verify(std::string(kBody) + "\n" + *other.Cosign(kBody, 5)).status().code(), absl::StatusCode::kNotFound);
}

TEST(CosignTest, TimeZeroAndTimeAbove2To63AreRefused) {
  Cosigner c = Key();
  EXPECT_EQ(c.Cosign(kBody, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Cosign(kBody, uint64_t{1} << 63).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(c.Cosign(kBody, (uint64_t{1} << 63) - 1).ok());
}

TEST(CosignTest, KeyFileRoundTripsAndALogKeyIsNotAWitnessKey) {
  Cosigner c = Key();
  auto back = Cosigner::ParseKeyFile(*c.KeyFileText());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->VerifierKey(), c.VerifierKey());
  auto log = *note::Signer::FromSeed("example.org/log", std::string(32, '\x07'));
  auto refused = CosignatureVerifier::Parse(log.VerifierKey());
  EXPECT_EQ(refused.status().message(),
            "witness verifier key: key data must be base64 of 0x04 (cosignature/v1) and 32 bytes");
}

TEST(CosignTest, MalformedNotesAreInvalidArgument) {
  auto v = *CosignatureVerifier::Parse(Key().VerifierKey());
  EXPECT_EQ(v.Verify(kBody).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(v.Verify(std::string(kBody) + "\nnot a signature\n").status().code(), absl::StatusCode::kInvalidArgument);
  std::string line = *Key().Cosign(kBody, 9);
  EXPECT_EQ(v.Verify(std::string(kBody) + "\n" + line + line).status().message(),
            "signed note: two signatures by " + v.vkey());
}

}  // namespace
}  // namespace ledger::cosign
