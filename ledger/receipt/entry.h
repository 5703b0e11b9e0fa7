// Entries: the leaf bytes of the log (CONTRACT §1, §2).
//
// Leaf grammar (format version 1), keys in byte order, no white space:
//   leaf = '{"emitter":' string ',"logged_at_us":' integer ',"prev":' hex64
//          ',"receipt":' receipt [',"run_prev":' integer] ',"seq":' integer
//          ',"v":1}'
// where receipt is the canonical receipt of ledger/receipt/receipt.h and
// hex64 a quoted lowercase hex leaf hash. DO NOT CHANGE: every leaf hash,
// checkpoint and evidence pack depends on these bytes.
//
// Thread-safe: pure functions.
#ifndef LEDGER_RECEIPT_ENTRY_H_
#define LEDGER_RECEIPT_ENTRY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ledger/hash/hash.h"
#include "ledger/receipt/receipt.h"

namespace ledger::receipt {

inline constexpr int kEntryFormatVersion = 1;

// The chain's genesis `prev`: 64 zeros.
inline constexpr hash::Hash kZeroHash{};

struct Entry {
  uint64_t seq = 0;
  hash::Hash prev{};
  std::optional<uint64_t> run_prev;
  int64_t logged_at_us = 0;
  std::string emitter;
  Receipt receipt;
};

// `canonical_receipt` MUST be the output of Canonicalize or Encode, and
// `emitter` valid UTF-8.
std::string EncodeLeaf(uint64_t seq, const hash::Hash& prev, std::optional<uint64_t> run_prev, int64_t logged_at_us,
                       std::string_view emitter, std::string_view canonical_receipt);

// Appends the leaf to `out` (which the caller may reuse across leaves).
void EncodeLeafTo(std::string* out, uint64_t seq, const hash::Hash& prev, std::optional<uint64_t> run_prev,
                  int64_t logged_at_us, std::string_view emitter, std::string_view canonical_receipt);

// The run_prev of a leaf in canonical form, read from its fixed tail
// (',"run_prev":N,"seq":N,"v":1}') without parsing the whole leaf: for
// walking a run chain quickly. Checks nothing else; INVALID_ARGUMENT when
// the tail is not of that form.
absl::StatusOr<std::optional<uint64_t>> RunPrevOf(std::string_view leaf);

// The seq of a leaf, read from its tail the same way (",\"seq\":N,\"v\":1}").
absl::StatusOr<uint64_t> SeqOf(std::string_view leaf);

// The team of a leaf's receipt, for access checks and team windows: reads
// the leaf (ReadLeaf, or else as canonical JSON) and returns receipt.team,
// checking nothing else. INVALID_ARGUMENT when there is none.
absl::StatusOr<std::string> TeamOf(std::string_view leaf);

// Parses leaf bytes. INVALID_ARGUMENT (DATA_LOSS is the caller's call) when
// the bytes are not a version-1 entry or not exactly its canonical encoding.
// ReadLeaf first, then, if it declines, ParseLeafByTree: the results are
// ParseLeafByTree's either way.
absl::StatusOr<Entry> ParseLeaf(std::string_view leaf);

// The fast path: reads the leaf in place (receipt::ReadCanonical). True,
// with `out` (which MUST be default-constructed) filled, only when
// ParseLeafByTree would return the same entry; false on anything else and
// on the few leaves it leaves to the slow path. `out` is then unspecified.
bool ReadLeaf(std::string_view leaf, Entry* out);

// The reference reader: the leaf parsed as a canonical document, decoded,
// and re-encoded to prove it was exactly the canonical encoding. It names
// the rule a leaf breaks.
absl::StatusOr<Entry> ParseLeafByTree(std::string_view leaf);

}  // namespace ledger::receipt

#endif  // LEDGER_RECEIPT_ENTRY_H_
