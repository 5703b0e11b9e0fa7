// What submission needs of the log (witnesses::Source), from a log::Log:
// its signed checkpoints and consistency proofs.
//
// Thread-safe, as the log is. `log` MUST outlive the source.
#ifndef WITNESS_CLIENT_LOG_SOURCE_H_
#define WITNESS_CLIENT_LOG_SOURCE_H_

#include "ledger/storage/log/log.h"
#include "witness/client/witnesses.h"

namespace ledger::witnesses {

Source LogSource(const log::Log* log);

}  // namespace ledger::witnesses

#endif  // WITNESS_CLIENT_LOG_SOURCE_H_
