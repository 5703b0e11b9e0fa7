#include "ledger/format/canonical/canonical.h"

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
  EXPECT_EQ(Str("/\x7f\xe2\x80\xa8"
                "caf\xc3\xa9"),
            "\"/\x7f\xe2\x80\xa8"
            "caf\xc3\xa9\"");
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

TEST(CanonicalParseTest, ReadsBackEveryStringTheEncoderWrites) {
  // Every byte value that may appear in UTF-8 text, alone and in a run.
  std::string all;
  for (int c = 0; c < 0x80; ++c) all.push_back(static_cast<char>(c));
  all += "caf\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80";
  for (size_t i = 0; i <= all.size(); ++i) {
    std::string one = i < all.size() ? all.substr(i, 1) : all;
    if (i >= 0x80 && i < all.size()) continue;  // partial UTF-8 sequences
    auto v = Parse(Str(one));
    ASSERT_TRUE(v.ok()) << i << ": " << v.status();
    EXPECT_EQ(v->type, Value::Type::kString);
    EXPECT_EQ(v->str, one) << i;
  }
}

TEST(CanonicalParseTest, ReadsObjectsAndIntegers) {
  auto v = Parse(R"({"a":-9007199254740991,"b":{"":"x","c":0},"d":9007199254740991,"e":"y"})");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->members.size(), 4u);
  EXPECT_EQ(v->Find("a")->num, -kMaxSafeInteger);
  EXPECT_EQ(v->Find("b")->Find("")->str, "x");
  EXPECT_EQ(v->Find("b")->Find("c")->num, 0);
  EXPECT_EQ(v->Find("d")->num, kMaxSafeInteger);
  EXPECT_EQ(v->Find("e")->str, "y");
  EXPECT_EQ(v->Find("f"), nullptr);
  EXPECT_TRUE(Parse("{}").ok());
}

TEST(CanonicalParseTest, RefusesWhatTheEncoderNeverWrites) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({ "a":1})", "at byte 1: want '\"' opening a key"},
      {R"({"a": 1})", "at byte 5: want a string, an integer or an object"},
      {R"({"b":1,"a":2})", "at byte 10: want keys in strictly ascending byte order"},
      {R"({"a":1,"a":2})", "at byte 10: want keys in strictly ascending byte order"},
      {R"("\/")", "at byte 1: want only the escapes \\\" \\\\ \\b \\f \\n \\r \\t \\u00xx"},
      {R"("\u0041")", "at byte 1: want \\u00xx only for control characters without a short escape"},
      {R"("\u000a")", "at byte 1: want \\u00xx only for control characters without a short escape"},
      {R"("\u001F")", "at byte 1: want \\u00xx with lowercase hex"},
      {"\"\x01\"", "at byte 1: want control characters escaped"},
      {"\"\xc3\"", "at byte 3: want strings of valid UTF-8"},
      {"\"\xed\xa0\x80\"", "at byte 5: want strings of valid UTF-8"},
      {"01", "at byte 0: want integers without leading zeros or -0"},
      {"-0", "at byte 1: want integers without leading zeros or -0"},
      {"9007199254740992", "at byte 15: want integers within +-(2^53-1)"},
      {"1.5", "at byte 1: want the end of the text"},
      {"true", "at byte 0: want a string, an integer or an object"},
      {"null", "at byte 0: want a string, an integer or an object"},
      {"[1]", "at byte 0: want a string, an integer or an object"},
      {R"({"a":1}x)", "at byte 7: want the end of the text"},
      {R"({"a":1)", "at byte 6: want ',' or '}'"},
      {R"("abc)", "at byte 4: want '\"' closing the string"},
      {"", "at byte 0: want a value"},
      {R"({"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":1}}}}}}}}})", "at byte 40: want objects nested at most 8 deep"},
  };
  for (const auto& [text, why] : cases) {
    auto v = Parse(text);
    EXPECT_EQ(v.status().message(), "canonical JSON: " + why) << text;
  }
}

}  // namespace
}  // namespace ledger::canonical
