// The RFC 7512 PKCS#11 URIs that name a signing key kept in a token:
//
//   pkcs11:token=ledger;object=ledger-key?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/pin
//
//   uri        = "pkcs11:" path [ "?" query ]
//   path       = [ attr *( ";" attr ) ]       ; which token, which object
//   query      = [ attr *( "&" attr ) ]       ; how to reach them
//   attr       = name "=" value               ; value percent-decoded
//
// Path attributes taken: token, manufacturer, model, serial (of the
// token, matched against its CK_TOKEN_INFO), slot-id (decimal), object
// (the key's CKA_LABEL), id (its CKA_ID, usually percent-encoded bytes),
// type (only "private"). Query attributes taken: module-path (the PKCS#11
// library to load; required) and pin-source (a file holding the user PIN,
// "file:/path" or "/path"; a trailing newline is not part of the PIN).
//
// Refused, each with the attribute named: pin-value (a PIN on a command
// line is visible to every user of the machine), module-name (give the
// library's path), any other or repeated attribute, a malformed
// percent-escape, and a URI that names no object (neither object nor id):
// a key is named, never guessed.
//
// Thread-safe: pure functions.
#ifndef LEDGER_KEYS_PKCS11_URI_H_
#define LEDGER_KEYS_PKCS11_URI_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ledger::keys {

struct Pkcs11Uri {
  // Token attributes; unset matches any token.
  std::optional<std::string> token;
  std::optional<std::string> manufacturer;
  std::optional<std::string> model;
  std::optional<std::string> serial;
  std::optional<uint64_t> slot_id;
  // The key: its label and/or its id (raw bytes).
  std::optional<std::string> object;
  std::optional<std::string> id;
  std::string module_path;
  // The file holding the PIN; empty when the token needs no login.
  std::string pin_file;
};

// True when `spec` is meant as a PKCS#11 URI (it starts with "pkcs11:"),
// so a caller tells a URI from a key file's path before parsing either.
bool IsPkcs11Uri(std::string_view spec);

// INVALID_ARGUMENT naming the attribute and the rule it breaks.
absl::StatusOr<Pkcs11Uri> ParsePkcs11Uri(std::string_view uri);

// The URI again, canonical and without secrets (the PIN's file is named,
// never read): for logs and errors.
std::string Describe(const Pkcs11Uri& uri);

}  // namespace ledger::keys

#endif  // LEDGER_KEYS_PKCS11_URI_H_
