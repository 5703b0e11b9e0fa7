// Following a log's key history (CONTRACT section 5d) from the keys an
// auditor trusts: each key_rotation entry of `ledgerctl key-history`'s
// JSON checked (its leaf, its statement both keys signed, its inclusion in
// the history's checkpoint) and followed, then the history's checkpoint
// opened with the key of its size.
//
// Thread-safe: a pure function.
#ifndef EXPORT_VERIFY_CC_KEY_HISTORY_H_
#define EXPORT_VERIFY_CC_KEY_HISTORY_H_

#include <string_view>

#include "absl/status/status.h"
#include "ledger/format/note/key_set.h"

namespace ledger::verify {

// Follows every rotation of `json` in `keys`. INVALID_ARGUMENT naming the
// rotation (`key history: rotations[0] (seq 3): ...`) or the field when a
// rule of section 5d does not hold; `keys` is then unspecified.
absl::Status FollowKeyHistory(std::string_view json, note::KeySet* keys);

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_KEY_HISTORY_H_
