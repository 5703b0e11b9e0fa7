// Entries: the leaf bytes of the log (CONTRACT §1, §2).
//
// Leaf grammar, keys in byte order, no white space:
//   leaf = '{"emitter":' string ',"logged_at_us":' integer ',"prev":' hex64
//          ',"receipt":' receipt [',"run_prev":' integer] ',"seq":' integer
//          tail
//   tail = ',"v":1}'                                 (format version 1)
//        | [',"team_prev":' integer] ',"v":2}'       (format version 2)
// where receipt is the canonical receipt of ledger/format/receipt/receipt.h and
// hex64 a quoted lowercase hex leaf hash. DO NOT CHANGE: every leaf hash,
// checkpoint and evidence pack depends on these bytes.
//
// Thread-safe: pure functions.
#ifndef LEDGER_FORMAT_RECEIPT_ENTRY_H_
#define LEDGER_FORMAT_RECEIPT_ENTRY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/receipt.h"

namespace ledger::receipt {

// The version the ledger appends (2: with team_prev). Version 1 leaves,
// written before, are read as well.
inline constexpr int kEntryFormatVersion = 2;

// The chain's genesis `prev`: 64 zeros.
inline constexpr hash::Hash kZeroHash{};

struct Entry {
  uint64_t seq = 0;
  hash::Hash prev{};
  std::optional<uint64_t> run_prev;
  // Version 2 only: the seq of the previous entry of the same team, absent
  // for the team's first entry.
  std::optional<uint64_t> team_prev;
  int version = kEntryFormatVersion;
  int64_t logged_at_us = 0;
  std::string emitter;
  Receipt receipt;
  // A skeleton read from an erased entry's redacted line (CONTRACT section
  // 8, receipt/redaction.h), not a leaf: ids, kind, place and chains only.
  bool erased = false;

  // Back to a default-constructed entry's values, keeping the memory its
  // strings and receipt hold (an entry read into again and again, as the
  // verifier's decoding does, allocates once).
  void Clear() {
    seq = 0;
    prev = hash::Hash{};
    run_prev.reset();
    team_prev.reset();
    version = kEntryFormatVersion;
    logged_at_us = 0;
    emitter.clear();
    receipt.Clear();
    erased = false;
  }
};

// `canonical_receipt` MUST be the output of Canonicalize or Encode, and
// `emitter` valid UTF-8. EncodeLeaf and EncodeLeafTo write version 1 (for
// tests and tools that make leaves of stores written before version 2).
std::string EncodeLeaf(uint64_t seq, const hash::Hash& prev, std::optional<uint64_t> run_prev, int64_t logged_at_us,
                       std::string_view emitter, std::string_view canonical_receipt);

// Appends the leaf to `out` (which the caller may reuse across leaves).
void EncodeLeafTo(std::string* out, uint64_t seq, const hash::Hash& prev, std::optional<uint64_t> run_prev,
                  int64_t logged_at_us, std::string_view emitter, std::string_view canonical_receipt);

// Version 2: version 1's fields and team_prev.
void EncodeLeafV2To(std::string* out, uint64_t seq, const hash::Hash& prev, std::optional<uint64_t> run_prev,
                    std::optional<uint64_t> team_prev, int64_t logged_at_us, std::string_view emitter,
                    std::string_view canonical_receipt);

// The leaf of `e` in its version; `canonical_receipt` is Encode(e.receipt).
std::string EncodeEntry(const Entry& e, std::string_view canonical_receipt);

// The run_prev of a leaf in canonical form, read from its fixed tail
// (',"run_prev":N,"seq":N' then the version's tail) without parsing the
// whole leaf: for walking a run chain quickly. Checks nothing else;
// INVALID_ARGUMENT when the tail is not of that form.
absl::StatusOr<std::optional<uint64_t>> RunPrevOf(std::string_view leaf);

// RunPrevOf, SeqOf, TeamLinkOf and TeamOf read a redacted line
// (redaction.h) as the leaf it stands for.
// The seq of a leaf, read from its tail the same way.
absl::StatusOr<uint64_t> SeqOf(std::string_view leaf);

// The version and team_prev of a leaf, read from its tail the same way.
struct TeamLink {
  int version = 0;
  std::optional<uint64_t> team_prev;  // version 2 only
};
absl::StatusOr<TeamLink> TeamLinkOf(std::string_view leaf);

// The team of a leaf's receipt, for access checks and team windows: reads
// the leaf (ReadLeaf, or else as canonical JSON) and returns receipt.team,
// checking nothing else. INVALID_ARGUMENT when there is none.
absl::StatusOr<std::string> TeamOf(std::string_view leaf);

// Parses leaf bytes. INVALID_ARGUMENT (DATA_LOSS is the caller's call) when
// the bytes are not an entry of version 1 or 2 or not exactly its canonical encoding.
// ReadLeaf first, then, if it declines, ParseLeafByTree: the results are
// ParseLeafByTree's either way.
absl::StatusOr<Entry> ParseLeaf(std::string_view leaf);

// The fast path: reads the leaf in place (receipt::ReadCanonical). True,
// with `out` (which MUST be default-constructed or cleared) filled, only when
// ParseLeafByTree would return the same entry; false on anything else and
// on the few leaves it leaves to the slow path. `out` is then unspecified.
bool ReadLeaf(std::string_view leaf, Entry* out);

// The reference reader: the leaf parsed as a canonical document, decoded,
// and re-encoded to prove it was exactly the canonical encoding. It names
// the rule a leaf breaks.
absl::StatusOr<Entry> ParseLeafByTree(std::string_view leaf);

}  // namespace ledger::receipt

#endif  // LEDGER_FORMAT_RECEIPT_ENTRY_H_
