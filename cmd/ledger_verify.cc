// ledger-verify: the offline verifier of evidence packs, and nothing else.
//
//   ledger-verify PACK (--vkey FILE | --vkey-string S | --trust-pack-key) [--policy FILE]
//                 [--since CHECKPOINT] [--expect-scope SCOPE]
//                 [--not-older-than SIZE|CHECKPOINT] [--expect-grace-ms N] [--report-by-digest]
//                 [--json]
//
// The same flags, output and exit codes as `ledgerctl verify` (both call
// cmd/verify_options). It links the verifier's libraries only: hashing,
// Merkle verification, signed notes, JSON, the archive reader and the step
// projector; no RocksDB, no gRPC, no network (tests/ledger_verify_test.sh
// checks its linked libraries and symbols).
#include <iostream>

#include "absl/status/status.h"
#include "cmd/flags.h"
#include "cmd/verify_options.h"
#include "util/text/terminal.h"

namespace {

constexpr char kUsage[] =
    "usage: ledger-verify PACK (--vkey FILE | --vkey-string S | --trust-pack-key) [--policy FILE]\n"
    "                     [--since OLD_CHECKPOINT_FILE] [--expect-scope run:TEAM/RUN|seq:A:B|team:TEAM,FROM,TO]\n"
    "                     [--not-older-than SIZE|CHECKPOINT_FILE] [--expect-grace-ms N] [--tsa-root FILE]\n"
    "                     [--report-by-digest] [--json]\n"
    "Exit 0 when the pack holds, 1 (naming the first failing item) when it does not, 2 for bad usage,\n"
    "3 when the pack cannot be read (nothing was judged).\n\n"
    "options:\n";

int Usage(const absl::Status& s) {
  std::cerr << "ledger-verify: " << ledger::text::TerminalEscape(std::string(s.message())) << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ledger::cmd::Flags flags;
  ledger::cmd::DefineVerifyFlags(flags);
  flags.Define("help", "", "print this help", true);
  if (auto s = flags.Parse(argc, argv, 1); !s.ok()) return Usage(s);
  if (flags.Bool("help")) {
    std::cout << kUsage << flags.Usage();
    return 0;
  }
  if (flags.positional().size() != 1) return Usage(absl::InvalidArgumentError("verify: give one PACK"));
  return ledger::cmd::RunVerify(flags, flags.positional()[0], "ledger-verify");
}
