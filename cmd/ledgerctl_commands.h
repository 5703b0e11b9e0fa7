// ledgerctl's commands as its help shows them: the table of commands, each
// with what it does, its synopsis, the flags it reads and examples; the
// flags of all of them; and the help texts made from them. ledgerctl runs
// only a command of this table (ledgerctl.cc aborts at start when its
// handlers and the table name different commands). No gRPC here: the table
// and its rules are tested alone (ledgerctl_commands_test).
#ifndef CMD_LEDGERCTL_COMMANDS_H_
#define CMD_LEDGERCTL_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cmd/flags.h"

namespace ledger::ctl {

// The groups of ledgerctl's flags: those of the commands (each command's
// help lists the ones it reads), where commands go, and the rest.
inline constexpr char kCommandOptions[] = "Command options";
inline constexpr char kConnectionOptions[] = "Connection options";
inline constexpr char kOtherOptions[] = "Options";

// Defines every flag of ledgerctl on `flags`, each in its group.
void DefineCtlFlags(cmd::Flags& flags);

// A flag a command reads, and what it means to that command ("": its
// defined help says it).
struct CommandFlag {
  std::string name;
  std::string help;
};

struct Command {
  std::string name;
  std::string summary;  // what it does, one line, lower case
  // The arguments and flags after "ledgerctl NAME", one form each (a
  // command run two ways has two); "\n" where help breaks a long one.
  std::vector<std::string> synopsis;
  // It asks a ledger: the connection options apply to it.
  bool connects;
  // The flags it reads besides the connection options, in help's order.
  std::vector<CommandFlag> flags;
  // Whole command lines, arguments separated by single spaces.
  std::vector<std::string> examples;
};

// Every command, in the order help lists them.
const std::vector<Command>& Commands();
// The command named `name`; nullptr when there is none.
const Command* FindCommand(const std::string& name);

// INVALID_ARGUMENT "unknown command 'NAME'", with "; did you mean 'X'?"
// when a command's name is a few edits away.
absl::Status UnknownCommand(const std::string& name);

// `ledgerctl --help`: the usage lines, the commands one a line (name and
// summary), the connection options and the other options.
std::string Overview(const cmd::Flags& flags);
// `ledgerctl help NAME`, `ledgerctl NAME --help`: its summary, synopsis,
// the flags it reads with their defaults, the connection options by name
// when it connects, and its examples.
std::string CommandHelp(const Command& command, const cmd::Flags& flags);

}  // namespace ledger::ctl

#endif  // CMD_LEDGERCTL_COMMANDS_H_
