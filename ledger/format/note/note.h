// C2SP signed notes with Ed25519 keys, and the C2SP tlog-checkpoint body
// they carry. Formats (CONTRACT §5), byte for byte:
//
//   signed note   = text "\n" 1*sigline
//   text          = 1*(line "\n")           ; never contains "\n\n"
//   sigline       = "— " key-name " " base64(key-id[4] || signature[64]) "\n"
//   key-id        = SHA-256(key-name || 0x0A || 0x01 || public-key[32])[0:4]
//   verifier key  = key-name "+" hex8(key-id) "+" base64(0x01 || public-key)
//   signer key    = "PRIVATE+KEY+" key-name "+" hex8(key-id) "+"
//                   base64(0x01 || ed25519-seed[32])
//   checkpoint    = origin "\n" decimal(tree-size) "\n" base64(root) "\n"
//
// The signer-key form is the one Go's golang.org/x/mod/sumdb/note.NewSigner
// reads, so an auditor's own tools accept the ledger's key files.
//
// Thread-safe: Signer and Verifier are immutable after construction (a
// Signer's key is thread-safe, see Ed25519Key).
#ifndef LEDGER_FORMAT_NOTE_NOTE_H_
#define LEDGER_FORMAT_NOTE_NOTE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"

namespace ledger::note {

using PublicKey = std::array<uint8_t, 32>;

// Key names follow Go's note package: non-empty UTF-8, no white space, no '+'.
bool IsValidKeyName(std::string_view name);

uint32_t KeyId(std::string_view name, const PublicKey& key);

using Signature = std::array<uint8_t, 64>;

// An Ed25519 private key, wherever it lives: a seed in this process
// (SeedKey below, read from a key file), or a token that signs without
// ever letting the key out (ledger/keys/pkcs11.h). Signer and Cosigner
// sign through it, so a note is the same bytes whichever holds the key.
//
// Implementations MUST be thread-safe: a Log's checkpointer and a
// witness's request threads sign at once.
class Ed25519Key {
 public:
  virtual ~Ed25519Key() = default;

  virtual const PublicKey& public_key() const = 0;
  // The RFC 8032 Ed25519 signature of `message`. A token's failure is
  // UNAVAILABLE (or what the token said); nothing is signed then.
  virtual absl::StatusOr<Signature> Sign(std::string_view message) const = 0;
  // The 32-byte seed when this process holds it, so a key file can be
  // written; nullptr for a key kept in a token.
  virtual const std::array<uint8_t, 32>* seed() const { return nullptr; }
  // Where the key is, for logs and errors, with no secret in it: "a seed
  // in memory", or the token's URI without its PIN.
  virtual std::string where() const = 0;
};

// A key held in this process. INVALID_ARGUMENT for a seed that is not 32
// bytes.
absl::StatusOr<std::shared_ptr<const Ed25519Key>> SeedKey(std::string_view seed);

class Signer {
 public:
  // INVALID_ARGUMENT for a bad name or a seed that is not 32 bytes.
  static absl::StatusOr<Signer> FromSeed(std::string_view name, std::string_view seed);
  // Signs with `key` as `name`. INVALID_ARGUMENT for a bad name or no key.
  static absl::StatusOr<Signer> FromKey(std::string_view name, std::shared_ptr<const Ed25519Key> key);
  // A new random key.
  static absl::StatusOr<Signer> Generate(std::string_view name);
  // Parses the signer-key form above; INVALID_ARGUMENT when malformed or
  // when its key id does not match its key.
  static absl::StatusOr<Signer> ParseKeyFile(std::string_view text);

  // The signer-key form; FAILED_PRECONDITION for a key kept in a token,
  // whose seed this process never sees.
  absl::StatusOr<std::string> KeyFileText() const;
  std::string VerifierKey() const;
  const std::string& name() const { return name_; }
  uint32_t key_id() const { return key_id_; }
  const PublicKey& public_key() const { return key_->public_key(); }
  const Ed25519Key& key() const { return *key_; }

  // Signs `text`, which MUST be non-empty, end in "\n" and not contain
  // "\n\n"; returns the whole signed note. A token's failure to sign is
  // returned as it is.
  absl::StatusOr<std::string> Sign(std::string_view text) const;

 private:
  Signer() = default;

  std::string name_;
  std::shared_ptr<const Ed25519Key> key_;
  uint32_t key_id_ = 0;
};

class Verifier {
 public:
  // Parses the verifier-key form above.
  static absl::StatusOr<Verifier> Parse(std::string_view vkey);

  // Returns the note's text when `note` is a well-formed signed note with a
  // valid signature by this key. Signatures by other keys are ignored.
  // INVALID_ARGUMENT for a malformed note; PERMISSION_DENIED when no
  // signature by this key is present or the one present does not verify.
  absl::StatusOr<std::string> Open(std::string_view note) const;

  const std::string& name() const { return name_; }
  uint32_t key_id() const { return key_id_; }
  // The verifier-key form it was parsed from.
  std::string VerifierKey() const;

 private:
  Verifier() = default;

  std::string name_;
  PublicKey public_key_{};
  uint32_t key_id_ = 0;
};

struct Checkpoint {
  std::string origin;
  uint64_t size = 0;
  hash::Hash root{};
};

std::string FormatCheckpoint(const Checkpoint& c);

// Parses exactly the three-line body above (no extension lines).
absl::StatusOr<Checkpoint> ParseCheckpoint(std::string_view text);

// The ledger's second signed note, signed with the same key with every
// checkpoint: when the ledger signed it. It is a note of its own, not an
// extension line of the checkpoint, so that every reader of C2SP
// checkpoints (Go's sumdb, witnesses) reads the checkpoint unchanged, and
// its first line can never parse as a checkpoint's origin-size-root.
// Body, format version 1 (CONTRACT section 5; DO NOT CHANGE: signed data
// depends on it):
//
//   evidence-ledger/checkpoint-time/v1\n
//   <origin>\n
//   <tree size, decimal, no leading zeros>\n
//   <root hash, standard base64>\n
//   time <microseconds since the Unix epoch, decimal, no leading zeros>\n
//
// It states: at `time_us` the ledger's latest checkpoint was the tree of
// `size` leaves with `root`. Times never decrease along a ledger's
// checkpoints.
//
// Format version 2 adds the root of the run-head map (runmap.h, CONTRACT
// section 6a) of the same `size` entries, before the time:
//
//   evidence-ledger/checkpoint-time/v2\n
//   <origin>\n
//   <tree size>\n
//   <root hash, standard base64>\n
//   runs <run-head map root, standard base64>\n
//   time <microseconds since the Unix epoch>\n
inline constexpr char kCheckpointTimeHeader[] = "evidence-ledger/checkpoint-time/v1";
//
// Format version 3 adds the root of the team-head map (CONTRACT section 6a,
// "The team-head map") after the runs line:
//
//   ...
//   runs <run-head map root, standard base64>\n
//   teams <team-head map root, standard base64>\n
//   time <microseconds since the Unix epoch>\n
inline constexpr char kCheckpointTimeHeaderV2[] = "evidence-ledger/checkpoint-time/v2";
inline constexpr char kCheckpointTimeHeaderV3[] = "evidence-ledger/checkpoint-time/v3";
//
// Format version 4 has the lines of version 3; its `runs` root is the map's
// under run keys of version 2 (CONTRACT section 6a, "Which run key").
inline constexpr char kCheckpointTimeHeaderV4[] = "evidence-ledger/checkpoint-time/v4";

struct CheckpointTime {
  Checkpoint checkpoint;
  int64_t time_us = 0;
  // Set: format 2 or 3.
  std::optional<hash::Hash> run_map_root;
  // Set (with run_map_root): format 3 or 4.
  std::optional<hash::Hash> team_map_root;
  // With both roots: run_map_root is under run keys of version 2 (format 4)
  // rather than 1 (format 3).
  bool runs_keyed_by_team = false;
  // 1, 2, 3 or 4 by the roots set and their keys.
  int version() const {
    return !run_map_root.has_value() ? 1 : !team_map_root.has_value() ? 2 : runs_keyed_by_team ? 4 : 3;
  }
};

// Format 4 or 3 when both roots are set (by runs_keyed_by_team), 2 when only
// the run map's, else 1.
std::string FormatCheckpointTime(const CheckpointTime& t);

// Parses exactly the body of format 1, 2, 3 or 4 above; INVALID_ARGUMENT naming
// the line and the rule otherwise.
absl::StatusOr<CheckpointTime> ParseCheckpointTime(std::string_view text);

}  // namespace ledger::note

#endif  // LEDGER_FORMAT_NOTE_NOTE_H_
