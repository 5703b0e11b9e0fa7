// ledgerd's options: the flags it defines and what their values must be,
// parsed once at start into a Config (the rest of ledgerd reads the Config
// or the flags' strings, never re-parses a number).
#ifndef CMD_LEDGERD_CONFIG_H_
#define CMD_LEDGERD_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "util/http/http.h"

namespace ledger::cmd {

// Defines every flag of ledgerd on `flags`, each in its group (the
// headings of --help).
void DefineLedgerdFlags(Flags& flags);

// A command line of --help's examples: what it runs, and the command, whose
// arguments are separated by single spaces, with "\n" where help breaks
// the line. Each is valid for the flags (ledgerd_config_test parses them).
struct LedgerdExample {
  const char* what;
  const char* command;
};
const std::vector<LedgerdExample>& LedgerdExamples();

// What `ledgerd --help` prints: the usage line, every flag with its
// default under its group's heading, and the examples.
std::string LedgerdHelp(const Flags& flags);

// The numbers and switches of ledgerd's flags, checked.
struct LedgerdConfig {
  int64_t checkpoint_interval_ms = 0;
  int64_t unknown_grace_ms = 0;
  int64_t sweep_interval_ms = 0;
  bool projections = true;
  int64_t export_staging_bytes = 0;
  int64_t max_queued = 0;
  int64_t witness_quorum_wait_ms = 0;
  int64_t monitor_quorum_wait_ms = 0;
  int64_t tsa_every = 1;
  int64_t tsa_max_delay_s = 60;
  int64_t tsa_wait_ms = 0;
  int64_t retention_interval_s = 3600;
  http::HttpOptions http;
  std::string trace_url;  // --trace-url: "" or a URL with {trace_id}
};

// INVALID_ARGUMENT naming the flag and its rule: --data missing, a number
// that does not parse or is out of its range, --projections not true or
// false, --witness-quorum-required without --witness-policy, --tsa without
// --tsa-ca, --tsa-required without --tsa, a --trace-url
// that is not an http(s) URL with {trace_id}.
absl::StatusOr<LedgerdConfig> ParseLedgerdConfig(const Flags& flags);

}  // namespace ledger::cmd

#endif  // CMD_LEDGERD_CONFIG_H_
