// The ledger's signing key on disk: one line in the signer-key form of
// ledger/format/note/note.h (Go's note.NewSigner reads it too), file mode 0600.
//
// Thread-safe: functions touch only the files they are given.
#ifndef LEDGER_KEYS_KEY_FILE_H_
#define LEDGER_KEYS_KEY_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "ledger/format/note/note.h"

namespace ledger::keys {

// Writes a new key named `origin` to `path`, which MUST NOT exist
// (ALREADY_EXISTS otherwise): an existing key is never overwritten.
absl::StatusOr<note::Signer> CreateKeyFile(const std::string& path, const std::string& origin);

// Reads a key file. FAILED_PRECONDITION when the key's name is not `origin`:
// checkpoints are signed with the origin as key name.
absl::StatusOr<note::Signer> ReadKeyFile(const std::string& path, const std::string& origin);

// The name of the key in `path` (its origin): NOT_FOUND when there is no
// file, INVALID_ARGUMENT when it is not a key file.
absl::StatusOr<std::string> KeyFileName(const std::string& path);

// `explicit_path` when non-empty; otherwise `<data_dir>/signing.key`,
// created on first use.
absl::StatusOr<note::Signer> LoadOrCreateKey(const std::string& data_dir, const std::string& explicit_path,
                                             const std::string& origin);

}  // namespace ledger::keys

#endif  // LEDGER_KEYS_KEY_FILE_H_
