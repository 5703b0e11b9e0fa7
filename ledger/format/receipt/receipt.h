// Receipts: validation against CONTRACT §3, the canonical JSON that goes into
// a leaf, and strict decoding from the contract's JSON.
//
// Canonical receipt grammar (CONTRACT §2, §3; format version 1):
//   receipt = canonical object of the common fields, "kind", and the fields
//             of the body that is set, flattened into one object;
//   a string field is present when non-empty; an optional integer when set
//   (0 included); an enum when not UNSPECIFIED, as its lowercase JSON name;
//   "attributes" is an object of strings, present when non-empty.
// The JSON names are the proto field names, so the format is pinned by
// proto/receipt.proto's names and by the golden vectors in tests/vectors.
//
// Thread-safe: pure functions.
#ifndef LEDGER_FORMAT_RECEIPT_RECEIPT_H_
#define LEDGER_FORMAT_RECEIPT_RECEIPT_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ledger/format/canonical/canonical.h"
#include "nlohmann/json_fwd.hpp"
#include "receipt.pb.h"

namespace ledger::receipt {

using Receipt = evidence::ledger::v1::Receipt;

inline constexpr size_t kMaxReceiptBytes = 16 * 1024;

// Who wrote the receipt: only the ledger may write step_unknown, and only
// the ledger may use receipt ids in its namespace (kLedgerIdPrefix).
enum class Author { kEmitter, kLedger };

// Receipt ids starting with this are the ledger's (e.g. a step_unknown's
// "ledger.unknown.<start seq>"): refused to every emitter.
inline constexpr std::string_view kLedgerIdPrefix = "ledger.";
// The emitter the ledger's own entries carry. No caller appends as it.
inline constexpr std::string_view kLedgerEmitter = "ledger";
// The team and run of a replicated shard's leader_epoch entries (CONTRACT
// §3, "Leader epochs").
inline constexpr std::string_view kLedgerTeam = "ledger";
inline constexpr std::string_view kEpochsRun = "ledger.epochs";

// The leader_epoch entry a node appends when it takes the lead of epoch
// `epoch` over a committed tree of `previous_size` with `previous_root`.
Receipt LeaderEpoch(int64_t epoch, std::string_view node, uint64_t previous_size, std::string_view previous_root_hex,
                    int64_t now_us);

// The run of a log's key_rotation entries (CONTRACT section 5d), in the
// team kLedgerTeam, and their ids: kKeyRotationIdPrefix + the rotation's
// number (1 for the log's first).
inline constexpr std::string_view kKeysRun = "ledger.keys";
inline constexpr std::string_view kKeyRotationIdPrefix = "ledger.key.";

// The key_rotation entry of the log's `number`th rotation: `note` is the
// rotation statement signed by both keys (note::FormatKeyRotation).
Receipt KeyRotation(uint64_t number, std::string_view old_key, std::string_view new_key, std::string_view note,
                    int64_t now_us);

// The run of the ledger's redaction entries (CONTRACT section 8), in the
// team kLedgerTeam, and their ids: kRedactionIdPrefix + the erased seq.
inline constexpr std::string_view kRedactionsRun = "ledger.redactions";
inline constexpr std::string_view kRedactionIdPrefix = "ledger.redaction.";

// The rule of an erasure's reason (CONTRACT section 8): 1-1024 bytes of
// UTF-8 without a control or bidi character; INVALID_ARGUMENT naming
// `reason` otherwise.
absl::Status CheckErasureReason(std::string_view reason);

// Checks every rule of CONTRACT §3 and returns the canonical JSON, with the
// defaults applied (an absent attempt is written as 1). INVALID_ARGUMENT
// with "<field>: <rule>" on the first broken rule: "required, ..." only for
// a field that is absent; a value that is there is quoted ("'<value>' is
// not ...") or named ("must be ..., not <value>").
absl::StatusOr<std::string> Canonicalize(const Receipt& r, Author author);

// The team rule of CONTRACT §3, for every field that names a team (a
// receipt's, a query's filter, a command-line flag): OK for 1-63 bytes of
// [a-z0-9-]; else INVALID_ARGUMENT "<field>: required, 1-63 bytes of
// [a-z0-9-]" when `team` is empty, and "<field>: '<team>' is not 1-63 bytes
// of [a-z0-9-]" when it is there (escaped for terminals, its first 64 bytes).
absl::Status CheckTeam(std::string_view field, std::string_view team);

// The trace id rule of CONTRACT §3 (W3C trace context), for every field
// that names one: OK for 32 lowercase hex digits, not all zero; else
// INVALID_ARGUMENT "<field>: must be 32 lowercase hex digits, not all zero
// (W3C trace context)". An empty `trace_id` is the caller's to allow.
absl::Status CheckTraceId(std::string_view field, std::string_view trace_id);

// The canonical JSON of a receipt, defaults applied, without validation.
std::string Encode(const Receipt& r);

// The JSON name of the receipt's kind ("agent_start", ...), "" if none.
std::string_view KindName(const Receipt& r);

// Decodes the contract's JSON form (field names as in CONTRACT §3, "kind"
// selecting the body). Strict: unknown fields, nulls, floats and wrong types
// are INVALID_ARGUMENT naming the field. Does not validate values.
absl::StatusOr<Receipt> FromJson(const nlohmann::json& j);
absl::StatusOr<Receipt> FromJsonText(std::string_view text);
// The same, from a parsed canonical document (a leaf's "receipt").
absl::StatusOr<Receipt> FromCanonical(const canonical::Value& v);

// Reads the canonical receipt that starts at *p in place, with no document
// tree: the fast path of leaf decoding. True, with `out` (which MUST be
// empty) filled and *p moved past the receipt, only when the text there is
// exactly Encode(*out), so FromCanonical(canonical::Parse(text)) would give
// the same receipt. False on anything else, and on the few canonical texts
// it leaves to that slow path (keys with escapes); `out` is then
// unspecified, and the slow path names the rule broken.
bool ReadCanonical(const char** p, const char* end, Receipt* out);

}  // namespace ledger::receipt

#endif  // LEDGER_FORMAT_RECEIPT_RECEIPT_H_
