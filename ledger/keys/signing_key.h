// The key a program signs notes with, as its operator names it: a key
// file's path, or an RFC 7512 PKCS#11 URI naming a key kept in a token
// (pkcs11.h). A program opens its key here once at start.
//
// Thread-safe: functions touch only the files and tokens they are given.
#ifndef LEDGER_KEYS_SIGNING_KEY_H_
#define LEDGER_KEYS_SIGNING_KEY_H_

#include <optional>
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

// Key rotation (CONTRACT section 5d). A key the ledger makes for a
// rotation is written beside the data directory's own key under this name,
// and replaces it once the rotation is committed.
inline constexpr char kNextKeyFile[] = "signing.key.next";

// The key a rotation moves the log to, named `origin`. `spec` a PKCS#11 URI
// or a key file's path: that key. `spec` empty: a new key, written to
// `<data_dir>/signing.key.next` (replacing one a rotation that never
// committed left there), only when the log's own key is the data
// directory's (`log_spec` empty): FAILED_PRECONDITION otherwise.
absl::StatusOr<note::Signer> OpenNextSigner(const std::string& data_dir, const std::string& log_spec,
                                            const std::string& spec, const std::string& origin);

// `<data_dir>/signing.key.next` when there is one.
absl::StatusOr<std::optional<note::Signer>> ReadNextKey(const std::string& data_dir, const std::string& origin);

// `<data_dir>/signing.key.next` replaces `<data_dir>/signing.key` (a
// rename, the directory synced): the old key is gone from the disk.
absl::Status PromoteNextKey(const std::string& data_dir);

// Removes `<data_dir>/signing.key.next` (a rotation that never committed).
absl::Status DropNextKey(const std::string& data_dir);

}  // namespace ledger::keys

#endif  // LEDGER_KEYS_SIGNING_KEY_H_
