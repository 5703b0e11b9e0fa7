// A monitor's map cosignature (CONTRACT section 5c, docs/contract/monitors.md;
// DO NOT CHANGE: signed data depends on it): its statement that the
// run-head and team-head map roots of a version 4 checkpoint-time note are
// those of the log's first `size` entries, which it replayed. Formats,
// byte for byte:
//
//   type            = 0xff || "evidence-ledger/map-cosignature/v1"     ; 35 bytes
//   key-id          = SHA-256(key-name || 0x0A || type || public-key[32])[0:4]
//   verifier key    = key-name "+" hex8(key-id) "+" base64(type || public-key)
//   signer key      = "PRIVATE+KEY+" key-name "+" hex8(key-id) "+"
//                     base64(type || ed25519-seed[32])
//   signed message  = "evidence-ledger/map-cosignature/v1\n" "time " decimal(time) "\n" note-text
//   map cosignature = "— " key-name " " base64(key-id[4] || u64be(time) ||
//                     ed25519-signature[64]) "\n"
//
// `note-text` is the whole text of the checkpoint-time note (every line,
// final newline included; no signature lines). `time` is POSIX seconds,
// 1 <= time <= 2^63-1, never before the note's own time.
//
// Thread-safe: MapCosigner and MapCosignatureVerifier are immutable after
// construction.
#ifndef LEDGER_FORMAT_COSIGN_MAPCOSIGN_H_
#define LEDGER_FORMAT_COSIGN_MAPCOSIGN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ledger/format/note/note.h"

namespace ledger::cosign {

inline constexpr char kMapHeader[] = "evidence-ledger/map-cosignature/v1";

// The 35 type bytes: 0xff and the header.
std::string MapKeyType();
uint32_t MapKeyId(std::string_view name, const note::PublicKey& key);
// The message a map cosignature signs: header, time line, then `note_text`.
std::string MapSignedMessage(std::string_view note_text, uint64_t time);

class MapCosigner {
 public:
  // INVALID_ARGUMENT for a bad key name or no key.
  static absl::StatusOr<MapCosigner> FromKey(std::string_view name, std::shared_ptr<const note::Ed25519Key> key);
  static absl::StatusOr<MapCosigner> Generate(std::string_view name);
  // The signer-key form above; INVALID_ARGUMENT when malformed or when its
  // key id does not match its key.
  static absl::StatusOr<MapCosigner> ParseKeyFile(std::string_view text);

  // FAILED_PRECONDITION for a key kept in a token.
  absl::StatusOr<std::string> KeyFileText() const;
  std::string VerifierKey() const;
  const std::string& name() const { return name_; }
  uint32_t key_id() const { return key_id_; }

  // The map cosignature line (ending in "\n") over `note_text`, which MUST
  // be the text of a checkpoint-time note of version 4 (INVALID_ARGUMENT
  // otherwise, or for a time of 0 or above 2^63-1, or one before the
  // note's own time). The caller states by it that it replayed the log and
  // found the note's roots (section 5c, "What it states"); this function
  // checks only the note's form.
  absl::StatusOr<std::string> Cosign(std::string_view note_text, uint64_t time) const;

 private:
  MapCosigner() = default;
  std::string name_;
  std::shared_ptr<const note::Ed25519Key> key_;
  uint32_t key_id_ = 0;
};

class MapCosignatureVerifier {
 public:
  // The verifier-key form above; INVALID_ARGUMENT otherwise, naming a log
  // key (0x01) or a witness key (0x04) given in its place.
  static absl::StatusOr<MapCosignatureVerifier> Parse(std::string_view vkey);

  // This monitor's map cosignature on the cosigned checkpoint-time note
  // `note`, verified: its time. NOT_FOUND when no line carries this key's
  // name and id (lines of other keys are ignored); INVALID_ARGUMENT for a
  // malformed note or two lines by this key; PERMISSION_DENIED, the
  // message starting "map cosignature: ", for a note not of version 4, a
  // line not of 76 bytes, a time of 0 or above 2^63-1 or before the note's
  // own time, or a signature that does not verify. The note's own
  // signature by the log is the caller's to check.
  absl::StatusOr<uint64_t> Verify(std::string_view note) const;

  const std::string& name() const { return name_; }
  uint32_t key_id() const { return key_id_; }
  const note::PublicKey& public_key() const { return public_key_; }
  std::string vkey() const;

 private:
  MapCosignatureVerifier() = default;
  std::string name_;
  note::PublicKey public_key_{};
  uint32_t key_id_ = 0;
};

}  // namespace ledger::cosign

#endif  // LEDGER_FORMAT_COSIGN_MAPCOSIGN_H_
