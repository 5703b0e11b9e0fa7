#include "export/verify/cc/key_history.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"
#include "nlohmann/json.hpp"

namespace ledger::verify {
namespace {

absl::Status Bad(std::string_view where, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("key history: ", std::string(where), ": ", std::string(why)));
}

}  // namespace

absl::Status FollowKeyHistory(std::string_view json, note::KeySet* keys) {
  nlohmann::json h = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (h.is_discarded() || !h.is_object()) return Bad("file", "not a JSON object");
  for (const auto& [key, value] : h.items()) {
    if (key != "checkpoint" && key != "rotations") return Bad(key, "not a field of a key history");
  }
  if (!h.contains("checkpoint") || !h["checkpoint"].is_string()) return Bad("checkpoint", "want a signed checkpoint");
  if (!h.contains("rotations") || !h["rotations"].is_array()) return Bad("rotations", "want a list");
  const std::string& checkpoint = h["checkpoint"].get_ref<const std::string&>();
  // The checkpoint's claim first: the proofs lead to its root, and once
  // every rotation is followed its signature is checked by its size's key.
  auto claimed = note::ClaimedCheckpoint(checkpoint);
  if (!claimed.ok()) return Bad("checkpoint", std::string(claimed.status().message()));
  if (claimed->origin != keys->name()) {
    return Bad("checkpoint", absl::StrCat("of '", claimed->origin, "', the keys are named '", keys->name(), "'"));
  }
  uint64_t number = 0;
  for (const auto& r : h["rotations"]) {
    const std::string where = absl::StrCat("rotations[", number, "]");
    ++number;
    if (!r.is_object()) return Bad(where, "want an object");
    for (const auto& [key, value] : r.items()) {
      if (key != "inclusion" && key != "leaf" && key != "seq") return Bad(where, absl::StrCat(key, ": not a field"));
    }
    if (!r.contains("seq") || !r["seq"].is_number_unsigned()) return Bad(where, "seq: want a seq");
    if (!r.contains("leaf") || !r["leaf"].is_string()) return Bad(where, "leaf: want the leaf bytes");
    if (!r.contains("inclusion") || !r["inclusion"].is_array()) return Bad(where, "inclusion: want a list of hashes");
    const uint64_t seq = r["seq"].get<uint64_t>();
    const std::string at = absl::StrCat(where, " (seq ", seq, ")");
    const std::string& leaf = r["leaf"].get_ref<const std::string&>();
    auto entry = receipt::ParseLeaf(leaf);
    if (!entry.ok()) return Bad(at, absl::StrCat("leaf: ", std::string(entry.status().message())));
    const receipt::Receipt& k = entry->receipt;
    if (entry->seq != seq) return Bad(at, absl::StrCat("leaf: its seq is ", entry->seq));
    if (!k.has_key_rotation()) return Bad(at, "leaf: not a key_rotation");
    if (entry->emitter != receipt::kLedgerEmitter) {
      return Bad(at, absl::StrCat("leaf: emitter '", entry->emitter, "': a key_rotation is the ledger's"));
    }
    if (k.team() != receipt::kLedgerTeam || k.run_id() != receipt::kKeysRun ||
        k.receipt_id() != absl::StrCat(std::string(receipt::kKeyRotationIdPrefix), number)) {
      return Bad(at, absl::StrCat("leaf: want receipt_id ", std::string(receipt::kKeyRotationIdPrefix), number,
                                  " of team ledger, run ledger.keys"));
    }
    if (seq >= claimed->size) {
      return Bad(at, absl::StrCat("not in the history's checkpoint of size ", claimed->size));
    }
    std::vector<hash::Hash> path;
    for (const auto& x : r["inclusion"]) {
      hash::Hash parsed;
      if (!x.is_string() || !hash::ParseHexTo(x.get_ref<const std::string&>(), &parsed)) {
        return Bad(at, "inclusion: not a list of hex hashes");
      }
      path.push_back(parsed);
    }
    if (auto s = merkle::VerifyInclusion(seq, claimed->size, hash::LeafHash(leaf), path, claimed->root); !s.ok()) {
      return Bad(at, absl::StrCat("inclusion: ", std::string(s.message())));
    }
    const auto& rot = k.key_rotation();
    if (auto s = keys->Follow(seq, rot.old_key(), rot.new_key(), rot.note()); !s.ok()) {
      return Bad(at, std::string(s.message()));
    }
  }
  auto opened = keys->Open(checkpoint, claimed->size);
  if (!opened.ok()) return Bad("checkpoint", std::string(opened.status().message()));
  return absl::OkStatus();
}

}  // namespace ledger::verify
