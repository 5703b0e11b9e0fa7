// ledgerd's retention passes from its flags (--retention-policy,
// --retention-interval-s; CONTRACT section 9): one at start, then one each
// interval, on a thread of their own.
#ifndef CMD_LEDGERD_RETENTION_H_
#define CMD_LEDGERD_RETENTION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "cmd/ledgerd_config.h"
#include "ledger/storage/log/log.h"

namespace ledger::cmd {

class Retention;  // ledgerd_retention.cc

// Reads --retention-policy and starts the passes over `log`, which MUST
// outlive the result; null without the flag. INVALID_ARGUMENT naming the
// flag and the policy's line for a policy that breaks a rule; the file's
// error for one that cannot be read.
absl::StatusOr<std::shared_ptr<Retention>> StartRetention(const Flags& flags, const LedgerdConfig& config,
                                                          log::Log* log);

}  // namespace ledger::cmd

#endif  // CMD_LEDGERD_RETENTION_H_
