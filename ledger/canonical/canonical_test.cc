#include "ledger/canonical/canonical.h"

#include "gtest/gtest.h"

namespace ledger::canonical {
namespace {

std::string Str(std::string_view s) {
  std::string out;
  AppendString(s, &out);
  return out;
}

TEST(CanonicalTest, EscapesOnlyWhatTheContractNames) {
  EXPECT_EQ(Str("plain"), "\"plain\"");
  EXPECT_EQ(Str("q\"b\\"), "\"q\\\"b\\\\\"");
  EXPECT_EQ(Str("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
  EXPECT_EQ(Str(std::string("\x00\x01\x1f", 3)), "\"\\u0000\\u0001\\u001f\"");
  // Not escaped: slash, DEL, U+2028, non-ASCII.
  EXPECT_EQ(Str("/\x7f\xe2\x80\xa8" "caf\xc3\xa9"), "\"/\x7f\xe2\x80\xa8" "caf\xc3\xa9\"");
}

TEST(CanonicalTest, IntegersAtTheSafeBounds) {
  std::string out;
  AppendInt(kMaxSafeInteger, &out);
  out += ',';
  AppendInt(-kMaxSafeInteger, &out);
  out += ',';
  AppendInt(0, &out);
  EXPECT_EQ(out, "9007199254740991,-9007199254740991,0");
}

TEST(CanonicalTest, Utf8Validation) {
  EXPECT_TRUE(IsUtf8("caf\xc3\xa9 \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsUtf8("\xc3"));              // truncated
  EXPECT_FALSE(IsUtf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(IsUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsUtf8("\xff"));
}

}  // namespace
}  // namespace ledger::canonical
