// Ed25519 keys kept in a PKCS#11 token (an HSM, a cloud KMS's PKCS#11
// library, SoftHSM2): the ledger, the witness and the monitor sign through
// the token with CKM_EDDSA, and the private key never leaves it.
//
// What a key must be: one CKO_PRIVATE_KEY of type CKK_EC_EDWARDS on
// edwards25519 (CKA_EC_PARAMS the PrintableString "edwards25519" or the
// OID 1.3.101.112) that may sign, matched by the URI's object label and/or
// id, beside its CKO_PUBLIC_KEY (same id, else same label) whose
// CKA_EC_POINT holds the 32-byte key (raw, or as a DER OCTET STRING). On
// open the key signs a test message and the signature is checked against
// that public key, and so is every signature after: a token that answers
// with a wrong signature fails the signing instead of spreading notes no
// verifier accepts.
//
// A session lost under the key (the token restarted, a network HSM's
// connection dropped) is opened again and logged into once per signing;
// if that fails too, the signing fails with UNAVAILABLE and nothing is
// signed.
//
// Thread-safe: a key signs on one session under its own lock (PKCS#11
// sessions are not to be shared between threads at once).
#ifndef LEDGER_KEYS_PKCS11_H_
#define LEDGER_KEYS_PKCS11_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ledger/format/note/note.h"
#include "ledger/keys/pkcs11_uri.h"

namespace ledger::keys {

// What a token says of a key it holds, for the log line a program prints
// when it starts signing with it.
struct Pkcs11KeyInfo {
  std::string token_label;
  std::string token_model;
  // CKA_EXTRACTABLE: the token would let the key out (wrapped). A key made
  // by `ledgerctl keygen --pkcs11` never is.
  bool extractable = false;
  // CKA_SENSITIVE: the token never shows the key in the clear.
  bool sensitive = true;
};

class Pkcs11Key : public note::Ed25519Key {
 public:
  // Loads the module, finds the one token and key the URI names, logs in
  // with the PIN from its pin-source and checks the key signs. Errors name
  // what did not match: NOT_FOUND for no such token or key,
  // INVALID_ARGUMENT for a key that is not Ed25519 or a URI that matches
  // several, PERMISSION_DENIED for a refused PIN, UNAVAILABLE for a
  // module or token that fails.
  static absl::StatusOr<std::shared_ptr<const Pkcs11Key>> Open(const Pkcs11Uri& uri);

  // Makes a new Ed25519 key pair in the token the URI names, labelled with
  // its object (required) and id (when given), private, sensitive and not
  // extractable, and opens it. ALREADY_EXISTS when the token holds a key of
  // that label or id: a key is never replaced.
  static absl::StatusOr<std::shared_ptr<const Pkcs11Key>> Generate(const Pkcs11Uri& uri);

  virtual const Pkcs11KeyInfo& info() const = 0;
};

// A key's spec as an operator writes it for a note signer: a PKCS#11 URI
// opens the token's key; anything else is not this function's (the caller
// reads key files). INVALID_ARGUMENT from the URI's parse.
absl::StatusOr<std::shared_ptr<const Pkcs11Key>> OpenPkcs11Key(std::string_view uri);

}  // namespace ledger::keys

#endif  // LEDGER_KEYS_PKCS11_H_
