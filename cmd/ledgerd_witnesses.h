// ledgerd's witnessing from its flags (--witness-policy and the TLS flags
// beside it; CONTRACT section 5b).
#ifndef CMD_LEDGERD_WITNESSES_H_
#define CMD_LEDGERD_WITNESSES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/replication/node.h"
#include "witness/client/witnesses.h"

namespace ledger::cmd {

// Submits each checkpoint to the witnesses of the tlog-policy in `path`;
// https:// witnesses are verified with --witness-tls-ca, and given
// --witness-tls-cert and --witness-tls-key when they ask for a certificate.
// In a replicated shard (`node`) only the leader submits, and the nodes
// share what each witness last cosigned through the shard's database.
absl::StatusOr<std::unique_ptr<ledger::witnesses::Witnesses>> StartWitnesses(const ledger::cmd::Flags& flags,
                                                                             const ledger::log::Log* log,
                                                                             const std::string& data_dir,
                                                                             ledger::replication::Node* node);

}  // namespace ledger::cmd

#endif  // CMD_LEDGERD_WITNESSES_H_
