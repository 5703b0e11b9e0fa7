#include "cmd/ledgerctl_commands.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace ledger::ctl {
namespace {

cmd::Flags CtlFlags() {
  cmd::Flags flags;
  DefineCtlFlags(flags);
  return flags;
}

TEST(LedgerctlFlagsTest, EveryFlagIsInAGroup) {
  cmd::Flags flags = CtlFlags();
  ASSERT_FALSE(flags.names().empty());
  for (const std::string& name : flags.names()) {
    EXPECT_NE(flags.GroupOf(name), "") << "--" << name << " is defined in no group";
  }
}

TEST(LedgerctlCommandsTest, EachHasASynopsisAnExampleAndFlagsThatAreDefined) {
  const cmd::Flags flags = CtlFlags();
  std::set<std::string> names;
  for (const Command& c : Commands()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name << " is in the table twice";
    EXPECT_FALSE(c.summary.empty()) << c.name;
    EXPECT_FALSE(c.synopsis.empty()) << c.name << " has no synopsis";
    EXPECT_FALSE(c.examples.empty()) << c.name << " has no example";
    std::set<std::string> listed;
    for (const CommandFlag& f : c.flags) {
      EXPECT_TRUE(flags.Defined(f.name)) << c.name << " lists --" << f.name << ", never defined";
      EXPECT_TRUE(listed.insert(f.name).second) << c.name << " lists --" << f.name << " twice";
    }
    EXPECT_EQ(FindCommand(c.name), &c);
  }
  EXPECT_EQ(FindCommand("nosuch"), nullptr);
}

// A flag of the commands' group that no command lists would be in no help.
TEST(LedgerctlCommandsTest, EveryCommandFlagIsReadBySomeCommand) {
  const cmd::Flags flags = CtlFlags();
  std::set<std::string> listed;
  for (const Command& c : Commands()) {
    for (const CommandFlag& f : c.flags) listed.insert(f.name);
  }
  for (const std::string& name : flags.names()) {
    if (flags.GroupOf(name) != kCommandOptions) continue;
    EXPECT_TRUE(listed.contains(name)) << "--" << name << " is listed by no command";
  }
}

// Each example parses with ledgerctl's flags, names its command first, and
// gives only flags its command lists or every command takes.
TEST(LedgerctlCommandsTest, ExamplesRunTheirCommandWithItsFlags) {
  for (const Command& c : Commands()) {
    std::set<std::string> allowed;
    for (const CommandFlag& f : c.flags) allowed.insert(f.name);
    for (const std::string& example : c.examples) {
      std::vector<std::string> args = absl::StrSplit(example, ' ');
      ASSERT_EQ(args.front(), "ledgerctl") << example;
      std::vector<char*> argv;
      for (std::string& a : args) {
        ASSERT_FALSE(a.empty()) << "two spaces in: " << example;
        argv.push_back(a.data());
      }
      cmd::Flags flags = CtlFlags();
      absl::Status parsed = flags.Parse(static_cast<int>(argv.size()), argv.data(), 1);
      ASSERT_TRUE(parsed.ok()) << example << ": " << parsed;
      ASSERT_FALSE(flags.positional().empty()) << example;
      EXPECT_EQ(flags.positional().front(), c.name) << example;
      for (const std::string& name : flags.names()) {
        if (!flags.Has(name) || flags.GroupOf(name) != kCommandOptions) continue;
        EXPECT_TRUE(allowed.contains(name)) << example << ": --" << name << " is not a flag of " << c.name;
      }
    }
  }
}

TEST(LedgerctlCommandsTest, AnUnknownCommandNamesTheNearest) {
  EXPECT_EQ(UnknownCommand("exprot").message(), "unknown command 'exprot'; did you mean 'export'?");
  EXPECT_EQ(UnknownCommand("nosuch").message(), "unknown command 'nosuch'");
  EXPECT_EQ(UnknownCommand("nosuch").code(), absl::StatusCode::kInvalidArgument);
}

TEST(LedgerctlCommandsTest, HelpOfACommandIsItsSynopsisFlagsAndExamples) {
  const cmd::Flags flags = CtlFlags();
  EXPECT_EQ(CommandHelp(*FindCommand("consistency"), flags),
            "ledgerctl consistency: print the consistency proof between two tree sizes\n"
            "\n"
            "usage: ledgerctl consistency --from A [--to B]\n"
            "\n"
            "Options:\n"
            "  --from (default: 0)\n"
            "      the old tree size\n"
            "  --to (default: 0)\n"
            "      the new tree size (0: the latest checkpoint)\n"
            "\n"
            "Connection options (ledgerctl --help): --server, --shard-map, --shard, --tls-ca, --cert, --key, "
            "--tls-server-name, --insecure\n"
            "\n"
            "Example:\n"
            "  ledgerctl consistency --from 100 --to 200\n");
  EXPECT_EQ(CommandHelp(*FindCommand("rebuild"), flags),
            "ledgerctl rebuild: replay a stopped ledger's log into fresh projections\n"
            "\n"
            "usage: ledgerctl rebuild --data DIR\n"
            "\n"
            "Options:\n"
            "  --data (default: none)\n"
            "      a stopped ledger's data directory\n"
            "\n"
            "Example:\n"
            "  ledgerctl rebuild --data /var/lib/ledger\n");
}

}  // namespace
}  // namespace ledger::ctl
