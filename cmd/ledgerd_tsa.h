// ledgerd's time-stamping from its flags (--tsa and the flags beside it;
// CONTRACT section 5e): the stamper of checkpoint-time notes.
#ifndef CMD_LEDGERD_TSA_H_
#define CMD_LEDGERD_TSA_H_

#include <memory>

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "cmd/ledgerd_config.h"
#include "ledger/storage/log/log.h"
#include "tsa/client/stamper.h"

namespace ledger::cmd {

// The stamper of `log`'s time notes, its tokens kept in the log's store;
// null without --tsa. INVALID_ARGUMENT or NOT_FOUND naming the flag for a
// CA file that cannot be read or holds no certificate, a bad name or
// policy, or TLS files that do not go together.
absl::StatusOr<std::unique_ptr<tsa::Stamper>> StartStamper(const Flags& flags, const LedgerdConfig& config,
                                                           log::Log* log);

}  // namespace ledger::cmd

#endif  // CMD_LEDGERD_TSA_H_
