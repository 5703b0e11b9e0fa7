#include "util/text/terminal.h"

#include <string>

#include "gtest/gtest.h"

namespace ledger::text {
namespace {

TEST(TerminalEscapeTest, AStepIdThatRewritesTheLineIsShownAsEscapes) {
  EXPECT_EQ(TerminalEscape("step\r\x1b[2KOK: verified..."), "step\\x0d\\x1b[2KOK: verified...");
}

TEST(TerminalEscapeTest, ControlsAndDeleteAreTwoLowerCaseHexDigits) {
  EXPECT_EQ(TerminalEscape(std::string("\0\x01\n\t\x1f\x7f", 6)), "\\x00\\x01\\x0a\\x09\\x1f\\x7f");
  // C1 controls, U+0080 to U+009F, written in UTF-8 as two bytes each.
  EXPECT_EQ(TerminalEscape("a\xc2\x80z\xc2\x9b\xc2\x9f"), "a\\x80z\\x9b\\x9f");
}

TEST(TerminalEscapeTest, BidiControlsAreFourLowerCaseHexDigitsInBraces) {
  // U+061C, U+200E, U+200F, U+202A, U+202E, U+2066, U+2069.
  EXPECT_EQ(TerminalEscape("\xd8\x9c\xe2\x80\x8e\xe2\x80\x8f\xe2\x80\xaa\xe2\x80\xae\xe2\x81\xa6\xe2\x81\xa9"),
            "\\u{061c}\\u{200e}\\u{200f}\\u{202a}\\u{202e}\\u{2066}\\u{2069}");
}

TEST(TerminalEscapeTest, EverythingElseIsKeptTheBackslashIncluded) {
  // A backslash, U+00A0, U+200D (a joiner, not a bidi control), U+1F600, U+00E9.
  const std::string kept = "team-a/run 1 \\x1b \xc2\xa0 \xe2\x80\x8d \xf0\x9f\x98\x80 \xc3\xa9";
  EXPECT_EQ(TerminalEscape(kept), kept);
  EXPECT_EQ(TerminalEscape(""), "");
}

TEST(TerminalEscapeTest, InvalidUtf8IsEachOfItsBytes) {
  EXPECT_EQ(TerminalEscape(std::string("a\xff") + "b"), "a\\xffb");
  EXPECT_EQ(TerminalEscape("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(TerminalEscape("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(TerminalEscape("\xe2\x80"), "\\xe2\\x80");                    // cut short
  EXPECT_EQ(TerminalEscape("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}

TEST(FindUnsafeCharacterTest, NamesTheFirstOneByCodePointAndByteOffset) {
  auto found = FindUnsafeCharacter("step\x1b[2K\r");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->code_point, 0x1bu);
  EXPECT_EQ(found->byte_offset, 4u);
  EXPECT_FALSE(found->invalid_utf8);
  EXPECT_EQ(DescribeUnsafe(*found), "control or bidi character U+001B at byte 4");

  auto bidi = FindUnsafeCharacter("\xc3\xa9x\xe2\x80\xae");
  ASSERT_TRUE(bidi.has_value());
  EXPECT_EQ(bidi->code_point, 0x202eu);
  EXPECT_EQ(bidi->byte_offset, 3u);
  EXPECT_EQ(DescribeUnsafe(*bidi), "control or bidi character U+202E at byte 3");

  auto bad = FindUnsafeCharacter("ab\xfe");
  ASSERT_TRUE(bad.has_value());
  EXPECT_TRUE(bad->invalid_utf8);
  EXPECT_EQ(DescribeUnsafe(*bad), "invalid UTF-8 byte 0xfe at byte 2");
}

TEST(FindUnsafeCharacterTest, FindsNothingInWhatPrintsAsItIs) {
  for (const char* ok : {"", "team-a", "run_0007", "a\\b", "\xc3\xa9t\xc3\xa9", "\xf0\x9f\x98\x80", "\xc2\xa0"}) {
    EXPECT_FALSE(FindUnsafeCharacter(ok).has_value()) << ok;
    EXPECT_EQ(TerminalEscape(ok), ok);
  }
}

}  // namespace
}  // namespace ledger::text
