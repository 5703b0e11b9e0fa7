#include "cmd/flags.h"

#include "gtest/gtest.h"

namespace ledger::cmd {
namespace {

absl::Status ParseArgs(Flags& f, std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return f.Parse(static_cast<int>(argv.size()), argv.data(), 0);
}

Flags Make() {
  Flags f;
  f.Define("seq", "0", "a number");
  f.Define("name", "x", "a name");
  f.Define("json", "", "a switch", true);
  return f;
}

TEST(FlagsTest, ValuesPositionalsAndDefaults) {
  Flags f = Make();
  ASSERT_TRUE(ParseArgs(f, {"prove", "--seq", "7", "--json", "file", "--name=y"}).ok());
  EXPECT_EQ(*f.Int("seq"), 7);
  EXPECT_EQ(f.Get("name"), "y");
  EXPECT_TRUE(f.Bool("json"));
  EXPECT_TRUE(f.Has("seq"));
  EXPECT_EQ(f.positional(), (std::vector<std::string>{"prove", "file"}));
  Flags g = Make();
  ASSERT_TRUE(ParseArgs(g, {}).ok());
  EXPECT_EQ(*g.Int("seq"), 0);
  EXPECT_FALSE(g.Bool("json"));
  EXPECT_FALSE(g.Has("seq"));
}

TEST(FlagsTest, ErrorsNameTheFlag) {
  Flags f = Make();
  EXPECT_EQ(ParseArgs(f, {"--nope", "1"}).message(), "--nope: unknown option");
  Flags g = Make();
  EXPECT_EQ(ParseArgs(g, {"--seq"}).message(), "--seq: needs a value");
  Flags h = Make();
  ASSERT_TRUE(ParseArgs(h, {"--seq", "12x"}).ok());
  EXPECT_EQ(h.Int("seq").status().message(), "--seq: '12x' is not an integer");
}

TEST(FlagsTest, UsageListsDefaults) {
  EXPECT_EQ(Make().Usage(),
            "  --seq (default: 0)\n      a number\n"
            "  --name (default: x)\n      a name\n"
            "  --json\n      a switch\n");
}

}  // namespace
}  // namespace ledger::cmd
