// The signature lines of a signed note in a pack, read strictly (CONTRACT
// section 5): every line "— <key name> <base64>\n" with a key name that is
// not empty and holds no '+' and no space, base64 in its canonical form
// (RFC 4648 padding, no stray bits) of a 4-byte key ID and at least one
// byte more; and the ledger's own key on one line at most, so that no two
// readers can open the note with two different signatures.
//
// Thread-safe: a pure function.
#ifndef EXPORT_VERIFY_CC_INTERNAL_SIGNATURE_LINES_H_
#define EXPORT_VERIFY_CC_INTERNAL_SIGNATURE_LINES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ledger::verify {

// What fails, "signature line N: malformed" (N from 1) or "signed twice by
// the ledger's key" (the key named `key_name` with `key_id`), or "". A
// note without a blank line is left to note::Verifier::Open to refuse.
std::string CheckSignatureLines(std::string_view note, std::string_view key_name, uint32_t key_id);

// "<key name>+<key id in 8 hex digits>", as a note's signature lines and
// verifier keys name a key.
std::string KeyNameAndId(std::string_view key_name, uint32_t key_id);

// The keys the signature lines of `note` name (KeyNameAndId), in order; the
// lines CheckSignatureLines calls malformed are left out.
std::vector<std::string> SignatureKeys(std::string_view note);

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_INTERNAL_SIGNATURE_LINES_H_
