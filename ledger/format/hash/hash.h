// SHA-256 and the two RFC 9162 hash constructions the log is built on, plus
// the hex and base64 spellings the contract uses for hashes and keys.
//
// Thread-safe: every function is pure.
#ifndef LEDGER_FORMAT_HASH_HASH_H_
#define LEDGER_FORMAT_HASH_HASH_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ledger::hash {

using Hash = std::array<uint8_t, 32>;

Hash Sha256(std::string_view data);

// SHA-256 of data given in pieces (a file read in chunks).
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void Update(std::string_view data);
  Hash Final();

 private:
  void* ctx_;  // EVP_MD_CTX
};

// RFC 9162 §2.1.1: SHA-256(0x00 || leaf).
Hash LeafHash(std::string_view leaf);

// RFC 9162 §2.1.1: SHA-256(0x01 || left || right).
Hash NodeHash(const Hash& left, const Hash& right);

// The root of the tree with no leaves: SHA-256("").
Hash EmptyRoot();

std::string_view AsBytes(const Hash& h);

// Lowercase hex.
std::string Hex(std::string_view bytes);
std::string Hex(const Hash& h);
// The same appended to `out`, for hot loops.
void AppendHex(const Hash& h, std::string* out);

// Accepts exactly 64 lowercase hex digits.
absl::StatusOr<Hash> ParseHex(std::string_view hex);
// The same without a status, for hot loops: false on anything else, with
// `out` unspecified.
bool ParseHexTo(std::string_view hex, Hash* out);

// Accepts exactly 32 bytes.
absl::StatusOr<Hash> FromBytes(std::string_view bytes);

// Standard base64 (RFC 4648 §4) with padding.
std::string Base64(std::string_view bytes);

// Strict: standard alphabet, canonical padding, no whitespace.
absl::StatusOr<std::string> Base64Decode(std::string_view text);

}  // namespace ledger::hash

#endif  // LEDGER_FORMAT_HASH_HASH_H_
