// The options of `ledgerctl verify` from its flags, for every command that
// verifies packs: --vkey FILE | --vkey-string S | --trust-pack-key,
// --since CHECKPOINT, --expect-scope SCOPE, --not-older-than
// SIZE|CHECKPOINT, --expect-grace-ms N. The caller defines the flags.
//
// Bad usage is INVALID_ARGUMENT naming the flag: a key given but empty or
// malformed (never a fall back to the key inside the pack), no key and no
// --trust-pack-key, a key and --trust-pack-key, a checkpoint file that is
// not a checkpoint the key signed, a malformed scope.
#ifndef CMD_VERIFY_OPTIONS_H_
#define CMD_VERIFY_OPTIONS_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "export/verify/cc/verify.h"

namespace ledger::cmd {

absl::StatusOr<verify::Options> VerifyOptions(const Flags& flags);

// Defines the flags of verification (--vkey, --vkey-string,
// --trust-pack-key, --since, --expect-scope, --not-older-than,
// --expect-grace-ms, --json), for
// a program that only verifies.
void DefineVerifyFlags(Flags& flags);

// Verifies the pack at `pack_path` with the options of `flags`: the result
// on stdout (JSON with --json, else its summary), an error on stderr as
// "PROGRAM: message". Returns the exit code: 0 the pack holds, 1 it does
// not (the pack is refused), 2 bad usage, 3 the pack cannot be read (or
// examined: no temporary directory), so nothing of it was judged.
int RunVerify(const Flags& flags, const std::string& pack_path, std::string_view program);

}  // namespace ledger::cmd

#endif  // CMD_VERIFY_OPTIONS_H_
