// A log's keys over its sizes (CONTRACT section 5d): the rotation
// statement both keys sign, and the key set that says which key signs the
// checkpoints of which sizes. Formats, byte for byte:
//
//   statement = "evidence-ledger/key-rotation/v1\n" origin "\n"
//               "seq " decimal(s) "\n" "old " vkey "\n" "new " vkey "\n"
//   rotation  = signed note of `statement`, exactly two signature lines:
//               the old key's, then the new key's
//   key set   = *(line "\n"); line = "" / "#" comment /
//               vkey [" from " decimal] [" until " decimal]
//
// After a rotation at seq s the old key signs sizes <= s and the new key
// sizes > s. A verifier trusts, for each size, one key: a note about a
// tree of that size counts only with that key's signature.
//
// Thread-safe: a KeySet is a value; const methods may be called
// concurrently.
#ifndef LEDGER_FORMAT_NOTE_KEY_SET_H_
#define LEDGER_FORMAT_NOTE_KEY_SET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ledger/format/note/note.h"

namespace ledger::note {

inline constexpr char kKeyRotationHeader[] = "evidence-ledger/key-rotation/v1";

// The statement's text for a rotation at `seq` from `old_vkey` to
// `new_vkey`.
std::string FormatKeyRotation(std::string_view origin, uint64_t seq, std::string_view old_vkey,
                              std::string_view new_vkey);

// The lines of a rotation statement, from a rotation note's text (its
// signatures unchecked): INVALID_ARGUMENT when it is not the grammar above.
struct KeyRotationStatement {
  std::string origin;
  uint64_t seq = 0;
  std::string old_vkey, new_vkey;
};
absl::StatusOr<KeyRotationStatement> ParseKeyRotation(std::string_view note);

// The checkpoint a signed note's text claims, its signatures unchecked: the
// size that says which key of a KeySet must have signed it. As
// ParseCheckpoint's errors (for a note without a blank line, of its empty
// text).
absl::StatusOr<Checkpoint> ClaimedCheckpoint(std::string_view signed_note);

// The rotation note: the statement signed by `old_key` then `new_key`.
absl::StatusOr<std::string> SignKeyRotation(std::string_view origin, uint64_t seq, const Signer& old_key,
                                            const Signer& new_key);

// `signed_note` with `signer`'s signature line of its text appended (a
// checkpoint of a transition, signed by the new key and then the old).
absl::StatusOr<std::string> AddSignature(std::string_view signed_note, const Signer& signer);

// Rules 1 and 2 of a key_rotation entry (CONTRACT section 5d), and that the
// keys differ and are named `origin`: INVALID_ARGUMENT naming the field
// (`note: ...`, `new_key: ...`) otherwise.
absl::Status CheckKeyRotation(std::string_view origin, uint64_t seq, std::string_view old_vkey,
                              std::string_view new_vkey, std::string_view note);

class KeySet {
 public:
  struct Range {
    std::string vkey;
    Verifier verifier;
    uint64_t from = 0;
    std::optional<uint64_t> until;  // unset: unbounded
    bool Covers(uint64_t size) const { return size >= from && (!until.has_value() || size <= *until); }
  };

  // One key trusted for every size.
  static absl::StatusOr<KeySet> Of(std::string_view vkey);
  // A key set file; INVALID_ARGUMENT naming the line and the rule
  // ("key set: line 3: ...", "key set: the ranges of two keys overlap at
  // size 4", "key set: a key is listed twice", "key set: from 5 is above
  // until 4", keys of different names, no key at all).
  static absl::StatusOr<KeySet> Parse(std::string_view text);

  // The key trusted at `size`, or nullptr.
  const Range* At(uint64_t size) const;
  const std::vector<Range>& ranges() const { return ranges_; }
  const std::string& name() const { return ranges_.front().verifier.name(); }

  // Follows a rotation at `seq` from `old_vkey` to `new_vkey` whose
  // statement `note` was checked by CheckKeyRotation here: `old_vkey` MUST
  // be the key trusted at `seq` (FAILED_PRECONDITION "its old key is not
  // trusted at size <seq>" otherwise). The old key's range then ends at
  // `seq` and the new key is trusted from seq + 1 up to the old key's
  // until; a key the set already has at those sizes must be the new key.
  absl::Status Follow(uint64_t seq, std::string_view old_vkey, std::string_view new_vkey, std::string_view note);

  // The text of `signed_note` about a tree of `size`, when the key trusted
  // at `size` signed it. PERMISSION_DENIED naming the size and the key when
  // no key is trusted there or that key's signature is missing or fails
  // (other keys' lines never count); INVALID_ARGUMENT for a malformed note.
  absl::StatusOr<std::string> Open(std::string_view signed_note, uint64_t size) const;

 private:
  // Sorts by `from` and refuses overlaps and repeated keys.
  static absl::StatusOr<KeySet> Of(std::vector<Range> ranges);
  std::vector<Range> ranges_;
};

}  // namespace ledger::note

#endif  // LEDGER_FORMAT_NOTE_KEY_SET_H_
