// The key a program signs notes with, as its operator names it: a key
// file's path, or an RFC 7512 PKCS#11 URI naming a key kept in a token
// (pkcs11.h). A program opens its key here once at start.
//
// Thread-safe: functions touch only the files and tokens they are given.
#ifndef LEDGER_KEYS_SIGNING_KEY_H_
#define LEDGER_KEYS_SIGNING_KEY_H_

#include <string>

#include "absl/status/statusor.h"
#include "ledger/format/note/note.h"

namespace ledger::keys {

// The ledger's signer. `spec` a PKCS#11 URI: the token's key, signing as
// `origin` (required then: a token's label is not the origin), and
// nothing is written to `data_dir`. `spec` a path: that key file, named
// `origin`. `spec` empty: `<data_dir>/signing.key`, created on first use.
absl::StatusOr<note::Signer> OpenLogSigner(const std::string& data_dir, const std::string& spec,
                                           const std::string& origin);

}  // namespace ledger::keys

#endif  // LEDGER_KEYS_SIGNING_KEY_H_
