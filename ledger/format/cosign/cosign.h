// C2SP tlog-cosignature, the Ed25519 type (signature type 0x04,
// "cosignature/v1"): the statement of a witness that, as of a time, the
// checkpoint is the largest consistent tree it has observed for its origin.
// Formats, byte for byte (CONTRACT section 5b; DO NOT CHANGE: signed data
// depends on them):
//
//   key-id          = SHA-256(key-name || 0x0A || 0x04 || public-key[32])[0:4]
//   verifier key    = key-name "+" hex8(key-id) "+" base64(0x04 || public-key)
//   signer key      = "PRIVATE+KEY+" key-name "+" hex8(key-id) "+"
//                     base64(0x04 || ed25519-seed[32])
//   signed message  = "cosignature/v1\n" "time " decimal(time) "\n" body
//   cosignature     = "— " key-name " " base64(key-id[4] || u64be(time) ||
//                     ed25519-signature[64]) "\n"
//
// `body` is the whole note text of the checkpoint (every line, extension
// lines included, ending in "\n"; no signature lines). `time` is POSIX
// seconds, 1 <= time <= 2^63-1, decimal without leading zeros. A
// cosignature is an ordinary note signature line: a reader that does not
// know the witness's key (Go's note.Open) skips it.
//
// Thread-safe: Cosigner and CosignatureVerifier are immutable after
// construction; the free functions are pure.
#ifndef LEDGER_FORMAT_COSIGN_COSIGN_H_
#define LEDGER_FORMAT_COSIGN_COSIGN_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger/format/note/note.h"

namespace ledger::cosign {

inline constexpr uint8_t kCosignatureV1 = 0x04;
inline constexpr char kHeader[] = "cosignature/v1";

uint32_t KeyId(std::string_view name, const note::PublicKey& key);

// The message a cosignature v1 signs: header, time line, then `body`.
std::string SignedMessage(std::string_view body, uint64_t time);

// A signed note split at its last blank line: `text` ends in "\n",
// `signatures` are the signature lines without their "\n".
struct NoteParts {
  std::string text;
  std::vector<std::string> signatures;
};

// INVALID_ARGUMENT when `note` is not text, a blank line, then one or more
// lines each starting with "— ", a key name, a space and base64 data.
absl::StatusOr<NoteParts> SplitNote(std::string_view note);

// A signature line's key name and decoded data (key id first).
struct SignatureLine {
  std::string name;
  std::string data;
  uint32_t key_id() const;
};
absl::StatusOr<SignatureLine> ParseSignatureLine(std::string_view line);

class Cosigner {
 public:
  // INVALID_ARGUMENT for a bad key name or a seed that is not 32 bytes.
  static absl::StatusOr<Cosigner> FromSeed(std::string_view name, std::string_view seed);
  // Cosigns with `key` (a token's, say) as `name`. INVALID_ARGUMENT for a
  // bad name or no key.
  static absl::StatusOr<Cosigner> FromKey(std::string_view name, std::shared_ptr<const note::Ed25519Key> key);
  static absl::StatusOr<Cosigner> Generate(std::string_view name);
  // The signer-key form above; INVALID_ARGUMENT when malformed or when its
  // key id does not match its key.
  static absl::StatusOr<Cosigner> ParseKeyFile(std::string_view text);

  // FAILED_PRECONDITION for a key kept in a token.
  absl::StatusOr<std::string> KeyFileText() const;
  std::string VerifierKey() const;
  const std::string& name() const { return name_; }
  uint32_t key_id() const { return key_id_; }
  const note::PublicKey& public_key() const { return key_->public_key(); }
  const note::Ed25519Key& key() const { return *key_; }

  // The cosignature line (ending in "\n") over `body`, which MUST be note
  // text (non-empty, lines ending in "\n", no blank line);
  // INVALID_ARGUMENT for a bad body or a time of 0 or above 2^63-1; a
  // token's failure to sign as it is.
  absl::StatusOr<std::string> Cosign(std::string_view body, uint64_t time) const;

 private:
  Cosigner() = default;
  std::string name_;
  std::shared_ptr<const note::Ed25519Key> key_;
  uint32_t key_id_ = 0;
};

class CosignatureVerifier {
 public:
  // The verifier-key form above (type 0x04); INVALID_ARGUMENT otherwise.
  static absl::StatusOr<CosignatureVerifier> Parse(std::string_view vkey);

  // This witness's cosignature on `note`, verified: its time. NOT_FOUND when
  // no signature line carries this key's name and id; PERMISSION_DENIED
  // when the one that does fails to verify (or is not 76 bytes, or its
  // time is 0 or above 2^63-1); INVALID_ARGUMENT for a malformed note or two
  // lines by this key.
  absl::StatusOr<uint64_t> Verify(std::string_view note) const;

  // The same for a note already split.
  absl::StatusOr<uint64_t> Verify(const NoteParts& note) const;

  const std::string& name() const { return name_; }
  uint32_t key_id() const { return key_id_; }
  const note::PublicKey& public_key() const { return public_key_; }
  std::string vkey() const;

 private:
  CosignatureVerifier() = default;
  std::string name_;
  note::PublicKey public_key_{};
  uint32_t key_id_ = 0;
};

}  // namespace ledger::cosign

#endif  // LEDGER_FORMAT_COSIGN_COSIGN_H_
