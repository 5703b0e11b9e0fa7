// The loopback rule of the programs: plain text (no TLS) is served by
// ledgerd and ledger-witness, and dialed by ledgerctl, without --insecure
// only on a loopback address, where nothing off this machine reads or
// forges it. Thread-safe: a pure function.
#ifndef CMD_LOOPBACK_H_
#define CMD_LOOPBACK_H_

#include <string>

namespace ledger::cmd {

// Whether an address HOST:PORT is on loopback (localhost, ::1,
// 127.0.0.0/8).
bool IsLoopback(const std::string& address);

}  // namespace ledger::cmd

#endif  // CMD_LOOPBACK_H_
