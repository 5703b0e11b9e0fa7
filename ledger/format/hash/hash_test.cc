#include "ledger/format/hash/hash.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace ledger::hash {
namespace {

using ::ledger::testing::StatusIs;

TEST(HashTest, Sha256OfEmptyIsTheEmptyRoot) {
  EXPECT_EQ(Hex(EmptyRoot()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(HashTest, LeafHashPrefixesZeroByte) {
  // RFC 6962 test leaf "" at index 0: the size-1 root of the vectors.
  EXPECT_EQ(Hex(LeafHash("")), "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d");
  EXPECT_EQ(LeafHash("abc"), Sha256(std::string("\0abc", 4)));
}

TEST(HashTest, NodeHashPrefixesOneByte) {
  Hash l = LeafHash(""), r = LeafHash(std::string(1, '\0'));
  std::string joined = std::string(1, '\1') + std::string(AsBytes(l)) + std::string(AsBytes(r));
  EXPECT_EQ(NodeHash(l, r), Sha256(joined));
  // The size-2 root of the RFC 6962 vectors.
  EXPECT_EQ(Hex(NodeHash(l, r)), "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125");
}

TEST(HashTest, StreamEqualsOneShot) {
  Sha256Stream s;
  s.Update("hello ");
  s.Update("");
  s.Update("world");
  EXPECT_EQ(s.Final(), Sha256("hello world"));
}

TEST(HashTest, HexRoundTrip) {
  Hash h = Sha256("x");
  auto parsed = ParseHex(Hex(h));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, h);
  std::string appended = "[";
  AppendHex(h, &appended);
  AppendHex(EmptyRoot(), &appended);
  EXPECT_EQ(appended, "[" + Hex(h) + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(HashTest, ParseHexRejectsUppercaseAndWrongLength) {
  std::string upper(64, 'A');
  EXPECT_EQ(ParseHex(upper).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseHex("00").status().message(), "hash: want 64 lowercase hex digits, got 2 characters");
}

TEST(HashTest, Base64KnownValues) {
  EXPECT_EQ(Base64(""), "");
  EXPECT_EQ(Base64("f"), "Zg==");
  EXPECT_EQ(Base64("fo"), "Zm8=");
  EXPECT_EQ(Base64("foo"), "Zm9v");
  EXPECT_EQ(Base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(*Base64Decode("Zm9vYmFy"), "foobar");
  EXPECT_EQ(*Base64Decode("Zg=="), "f");
  EXPECT_EQ(*Base64Decode("Zm8="), "fo");
}

TEST(HashTest, Base64DecodeIsStrict) {
  const auto refused = StatusIs(absl::StatusCode::kInvalidArgument, "base64: not canonical standard base64");
  EXPECT_THAT(Base64Decode("Zg"), refused);      // missing padding
  EXPECT_THAT(Base64Decode("Zh=="), refused);    // non-zero dropped bits
  EXPECT_THAT(Base64Decode("Zm9v\n"), refused);  // whitespace
  EXPECT_THAT(Base64Decode("Zm-v"), refused);    // URL alphabet
  EXPECT_THAT(Base64Decode("Z==="), refused);
}

}  // namespace
}  // namespace ledger::hash
