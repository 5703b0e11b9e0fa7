// A small command-line parser for ledgerd and ledgerctl: "--name value" or
// "--name=value" options, declared with a default, a help line and a group
// (the heading help shows them under), and positional arguments. Unknown
// options and bad integers are errors that name the flag.
#ifndef CMD_FLAGS_H_
#define CMD_FLAGS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ledger::cmd {

// The candidate nearest to `name` in edits (insert, delete, replace, swap
// two neighbours), when it is close: at most a quarter of `name`'s length
// away (at least one edit); else "". For "did you mean" in messages.
std::string Nearest(const std::string& name, const std::vector<std::string>& candidates);

class Flags {
 public:
  // The options defined after this call belong to the group `heading`,
  // until the next call; Group("") ends the group. Options defined outside
  // a group are in none (GroupOf gives ""): a program whose help is grouped
  // MUST define none such, and its test checks it.
  void Group(const std::string& heading);

  // Declares an option (without the leading dashes), in the current group.
  // A boolean flag takes no value and is "true" when present.
  void Define(const std::string& name, const std::string& default_value, const std::string& help, bool boolean = false);

  // Parses argv[first..argc). Options may come before or after positional
  // arguments; "--" ends the options.
  absl::Status Parse(int argc, char** argv, int first);

  // Applies a JSON config file: one object whose keys are option names
  // (without dashes) and whose values are strings or integers, or JSON
  // booleans for the options whose values are true and false (boolean
  // flags, and options defaulting to "true" or "false"). Options given on
  // the command line win. INVALID_ARGUMENT naming the file and the key for
  // an unknown option (with the nearest option's name when one is close)
  // or a value of another type; NOT_FOUND when the file cannot be read.
  absl::Status LoadConfig(const std::string& path);

  const std::string& Get(const std::string& name) const;
  bool Has(const std::string& name) const;  // given on the command line or in the config
  bool Bool(const std::string& name) const { return Get(name) == "true"; }
  // INVALID_ARGUMENT naming the flag when the value is not an integer.
  absl::StatusOr<int64_t> Int(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // The options' names in the order defined, and whether one is defined.
  const std::vector<std::string>& names() const { return order_; }
  bool Defined(const std::string& name) const { return options_.contains(name); }
  // The heading of the group `name` was defined in; "" for none. Aborts
  // for an option never defined.
  const std::string& GroupOf(const std::string& name) const;
  // The groups' headings, in the order first named.
  const std::vector<std::string>& groups() const { return groups_; }

  // Two lines per option, in the order defined:
  // "  --name (default: x)\n      help\n" (no default for a boolean flag).
  std::string Usage() const;
  // The option `name` as Usage prints it, with `help` in place of its own
  // when not empty (what the option means to one command). Aborts for an
  // option never defined.
  std::string Usage(const std::string& name, const std::string& help) const;
  // "heading:\n" and the options of that group as Usage prints them.
  std::string GroupUsage(const std::string& heading) const;

 private:
  // The defined option nearest to `name` in edits, when it is close; "".
  std::string Nearest(const std::string& name) const;

  struct Option {
    std::string value;
    std::string default_value;
    std::string help;
    bool boolean = false;
    bool given = false;
    std::string source;  // "" (command line) or the config file's path
    std::string group;   // its heading, "" for none
  };
  std::map<std::string, Option> options_;
  std::vector<std::string> order_;
  std::vector<std::string> groups_;
  std::string group_;  // of the options defined next
  std::vector<std::string> positional_;
};

}  // namespace ledger::cmd

#endif  // CMD_FLAGS_H_
