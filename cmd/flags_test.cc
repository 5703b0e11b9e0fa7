#include "cmd/flags.h"

#include <fstream>

#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace ledger::cmd {
namespace {

absl::Status ParseArgs(Flags& f, std::vector<std::string> args) {
  std::vector<char*> argv;
  argv.reserve(args.size());
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
  Flags near = Make();
  EXPECT_EQ(ParseArgs(near, {"--nmae", "1"}).message(), "--nmae: unknown option; did you mean --name?");
  Flags g = Make();
  EXPECT_EQ(ParseArgs(g, {"--seq"}).message(), "--seq: needs a value");
  Flags h = Make();
  ASSERT_TRUE(ParseArgs(h, {"--seq", "12x"}).ok());
  EXPECT_EQ(h.Int("seq").status().message(), "--seq: '12x' is not an integer");
}

// In a directory of this process's own: test binaries of several build
// trees may run at once.
std::string WriteConfig(const std::string& text) {
  static const ledger::testing::TempDir dir;
  std::string path = dir.Sub("flags_test_config.json");
  std::ofstream(path) << text;
  return path;
}

TEST(FlagsTest, ConfigFileSetsOptionsTheCommandLineOverrides) {
  Flags f = Make();
  ASSERT_TRUE(ParseArgs(f, {"--name", "cli"}).ok());
  std::string path = WriteConfig(R"({"seq": 42, "name": "file", "json": true})");
  ASSERT_TRUE(f.LoadConfig(path).ok());
  EXPECT_EQ(*f.Int("seq"), 42);
  EXPECT_EQ(f.Get("name"), "cli");
  EXPECT_TRUE(f.Bool("json"));
  EXPECT_TRUE(f.Has("seq"));
}

TEST(FlagsTest, ConfigFileErrorsNameTheFileAndKey) {
  struct Case {
    const char* text;
    std::string message;
  } cases[] = {
      {R"({"sequence": 1})", "'sequence' is not an option"},
      {R"({"seq": [1]})", "'seq' must be a string or an integer"},
      {R"({"seq": true})", "'seq' must be a string or an integer"},
      {R"({"json": "yes"})", "'json' must be true or false (a JSON boolean, without quotes)"},
      {R"({"json": "true"})", "'json' must be true or false (a JSON boolean, without quotes)"},
      {R"({"jsno": true})", "'jsno' is not an option; did you mean 'json'?"},
      {R"([1])", "must hold one JSON object"},
  };
  for (const Case& c : cases) {
    Flags f = Make();
    std::string path = WriteConfig(c.text);
    absl::Status s = f.LoadConfig(path);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
  }
  Flags f = Make();
  std::string path = WriteConfig(R"({"seq": "12x"})");
  ASSERT_TRUE(f.LoadConfig(path).ok());
  EXPECT_EQ(f.Int("seq").status().message(), "--seq (in " + path + "): '12x' is not an integer");
  EXPECT_EQ(f.LoadConfig("/nonexistent.json").code(), absl::StatusCode::kNotFound);
}

TEST(FlagsTest, UsageListsDefaults) {
  EXPECT_EQ(Make().Usage(),
            "  --seq (default: 0)\n      a number\n"
            "  --name (default: x)\n      a name\n"
            "  --json\n      a switch\n");
}

TEST(FlagsTest, GroupsHoldTheOptionsDefinedAfterThem) {
  Flags f;
  f.Define("loose", "", "defined before any group");
  f.Group("Storage");
  f.Define("data", "", "a directory");
  f.Group("Network");
  f.Define("listen", "127.0.0.1:1", "an address");
  f.Group("Storage");
  f.Define("sync", "", "a switch", true);
  f.Group("");
  f.Define("stray", "", "defined after the groups ended");
  EXPECT_EQ(f.GroupOf("loose"), "");
  EXPECT_EQ(f.GroupOf("stray"), "");
  EXPECT_EQ(f.GroupOf("data"), "Storage");
  EXPECT_EQ(f.GroupOf("sync"), "Storage");
  EXPECT_EQ(f.groups(), (std::vector<std::string>{"Storage", "Network"}));
  EXPECT_EQ(f.names(), (std::vector<std::string>{"loose", "data", "listen", "sync", "stray"}));
  EXPECT_EQ(f.GroupUsage("Storage"),
            "Storage:\n"
            "  --data (default: none)\n      a directory\n"
            "  --sync\n      a switch\n");
  EXPECT_EQ(f.GroupUsage("Network"), "Network:\n  --listen (default: 127.0.0.1:1)\n      an address\n");
}

TEST(FlagsTest, UsageOfOneOptionTakesAHelpOfItsOwn) {
  Flags f = Make();
  EXPECT_EQ(f.Usage("seq", ""), "  --seq (default: 0)\n      a number\n");
  EXPECT_EQ(f.Usage("seq", "the entry's seq"), "  --seq (default: 0)\n      the entry's seq\n");
  EXPECT_TRUE(f.Defined("json"));
  EXPECT_FALSE(f.Defined("jsno"));
}

TEST(NearestTest, TheCandidateAFewEditsAwayOrNone) {
  const std::vector<std::string> states = {"pending", "succeeded", "failed", "denied", "unknown"};
  EXPECT_EQ(Nearest("unknwn", states), "unknown");
  EXPECT_EQ(Nearest("sucseeded", states), "succeeded");
  EXPECT_EQ(Nearest("lost", states), "");
  EXPECT_EQ(Nearest("", states), "");
}

}  // namespace
}  // namespace ledger::cmd
