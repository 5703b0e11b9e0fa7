// Erasure (CONTRACT section 8): the ledger's `redaction` entry, the
// skeleton of an erased entry it states, and the redacted line that stands
// for an erased entry in entry bundles and packs.
//
// The redacted line (CONTRACT section 8, "The redacted line"): canonical
// JSON, '{"redacted":' skeleton '}', where skeleton is the erased leaf's
// object without "emitter", its receipt cut to its ids and kind (and an
// agent_exec's start_receipt_id), with "by" (the redaction's seq) and
// "leaf_hash" added. A leaf begins '{"emitter":', so the two never
// collide; the line ends with the leaf's tail and one more '}'.
//
// Thread-safe: pure functions.
#ifndef LEDGER_FORMAT_RECEIPT_REDACTION_H_
#define LEDGER_FORMAT_RECEIPT_REDACTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"

namespace ledger::receipt {

// The redaction entry of `erased`, whose leaf hash is `leaf_hash`, asked
// for by `requested_by` and approved by `approved_by` for `reason`, at the
// ledger's clock `now_us`. Validation is Canonicalize's (receipt.cc).
Receipt Redaction(const Entry& erased, const hash::Hash& leaf_hash, std::string_view reason,
                  std::string_view requested_by, std::string_view approved_by, int64_t now_us);

// The erased entry as a redaction states it: its seq, prev, chains, time,
// version, and a receipt holding only its ids and kind (the body of that
// kind empty but an agent_exec's start_receipt_id); no emitter. `r` MUST
// be a valid redaction.
Entry SkeletonOf(const Receipt& r);
// The erased entry's leaf hash a valid redaction states.
hash::Hash ErasedLeafHash(const Receipt& r);

// The redacted line of the entry that the redaction `r`, of seq `by`,
// erased. `r` MUST be a valid redaction.
std::string RedactedLine(uint64_t by, const Receipt& r);

// A redacted line read back: its redaction's seq, the erased leaf hash and
// the skeleton (SkeletonOf's form).
struct Redacted {
  uint64_t by = 0;
  hash::Hash leaf_hash{};
  Entry skeleton;
};
// INVALID_ARGUMENT unless `line` is exactly a redacted line (its bytes
// re-encoded).
absl::StatusOr<Redacted> ParseRedacted(std::string_view line);
// The bytes of the redacted line `r` was read from.
std::string EncodeRedacted(const Redacted& r);
// Whether `line` starts like a redacted line (and so is no leaf).
bool LooksRedacted(std::string_view line);

// What the store holds at a seq: a leaf (ParseLeaf), or a redacted line
// read as its skeleton (ParseRedacted's), for readers that need only an
// entry's place, ids and chains.
absl::StatusOr<Entry> ParseStored(std::string_view line);

}  // namespace ledger::receipt

#endif  // LEDGER_FORMAT_RECEIPT_REDACTION_H_
