#include "cmd/ledgerd_config.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace ledger::cmd {
namespace {

Flags LedgerdFlags() {
  Flags flags;
  DefineLedgerdFlags(flags);
  return flags;
}

TEST(LedgerdFlagsTest, EveryFlagIsInAGroupOfTheHelp) {
  Flags flags = LedgerdFlags();
  ASSERT_FALSE(flags.names().empty());
  for (const std::string& name : flags.names()) {
    EXPECT_NE(flags.GroupOf(name), "") << "--" << name << " is defined in no group: define it in a Define*Flags";
  }
  const std::string help = LedgerdHelp(flags);
  for (const std::string& group : flags.groups()) {
    EXPECT_NE(help.find("\n" + group + ":\n"), std::string::npos) << group;
  }
  for (const std::string& name : flags.names()) {
    const bool shown = help.find("\n  --" + name + " ") != std::string::npos ||  // "(default: ...)"
                       help.find("\n  --" + name + "\n") != std::string::npos;   // a boolean flag
    EXPECT_TRUE(shown) << "--" << name << " is not in the help";
  }
}

// Each example is a command line ledgerd would start with: its flags parse
// and their values pass ParseLedgerdConfig.
TEST(LedgerdFlagsTest, TheHelpsExamplesAreValidCommandLines) {
  ASSERT_GE(LedgerdExamples().size(), 3u);
  for (const LedgerdExample& e : LedgerdExamples()) {
    std::vector<std::string> args = absl::StrSplit(e.command, absl::ByAnyChar(" \n"));
    ASSERT_EQ(args.front(), "ledgerd") << e.command;
    std::vector<char*> argv;
    for (std::string& a : args) {
      ASSERT_FALSE(a.empty()) << "two spaces in: " << e.command;
      argv.push_back(a.data());
    }
    Flags flags = LedgerdFlags();
    absl::Status parsed = flags.Parse(static_cast<int>(argv.size()), argv.data(), 1);
    ASSERT_TRUE(parsed.ok()) << e.command << ": " << parsed;
    EXPECT_TRUE(flags.positional().empty()) << e.command;
    EXPECT_TRUE(ParseLedgerdConfig(flags).ok()) << e.command << ": " << ParseLedgerdConfig(flags).status();
  }
}

}  // namespace
}  // namespace ledger::cmd
