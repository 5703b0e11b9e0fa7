#include "monitor/server/locate.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "ledger/format/hash/hash.h"

namespace ledger::monitor {
namespace {

using runmap::Hash;
using runmap::Key;
using runmap::KeyedPath;
using runmap::NodeId;

// The subtree beside `key`'s path at depth j + 1: its first j bits, then
// the opposite of bit j.
NodeId SiblingOf(const Key& key, int j) {
  NodeId n = runmap::NodeOf(key, j + 1);
  n.prefix[j / 8] ^= static_cast<uint8_t>(0x80u >> (j % 8));
  return n;
}

// A key under `node`: its prefix followed by zero bits.
Key ZeroKeyUnder(const NodeId& node) { return node.prefix; }

}  // namespace

absl::StatusOr<Located> LocateDifference(runmap::RunMap& ours, const Hash& root, AskPath ask) {
  if (ours.Root() == root) return absl::NotFoundError("the map's root is the replay's");
  Located out;
  // The ledger's path of `key`, checked against the signed root.
  auto path_of = [&](const Key& key) -> absl::StatusOr<KeyedPath> {
    ++out.proofs_asked;
    auto proof = ask(key);
    if (!proof.ok()) return proof.status();
    if (absl::Status s = runmap::VerifyProof(root, key, *proof); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("the ledger's path of key ", hash::Hex(key),
                                                        " does not lead to its signed root: ", s.message()));
    }
    return proof;
  };
  NodeId q;  // a subtree whose hashes differ: the root first
  for (int round = 0; round <= runmap::kKeyBits; ++round) {
    const Key k = ours.FirstKeyUnder(q).value_or(ZeroKeyUnder(q));
    auto proof = path_of(k);
    if (!proof.ok()) return proof.status();
    const std::vector<Hash>& siblings = proof->path.siblings;
    const int depth = static_cast<int>(siblings.size());
    std::optional<NodeId> deeper;
    for (int j = q.depth; j < depth && !deeper.has_value(); ++j) {
      const NodeId sibling = SiblingOf(k, j);
      if (siblings[depth - 1 - j] != ours.HashAt(sibling)) deeper = sibling;
    }
    if (deeper.has_value()) {
      q = *deeper;
      continue;
    }
    // The path's end decides: a leaf the replay does not hold as the
    // ledger does, else a key of the replay's that the ledger lacks.
    std::optional<Key> key;
    std::optional<Key> end_leaf;
    if (proof->path.found.has_value()) {
      end_leaf = k;
      auto mine = ours.Get(k);
      if (!mine.has_value() || runmap::ValueHash(*mine) != runmap::ValueHash(proof->path.found->head)) key = k;
    } else if (proof->path.other.has_value()) {
      end_leaf = proof->path.other->key;
      auto mine = ours.Get(*end_leaf);
      if (!mine.has_value() || runmap::ValueHash(*mine) != proof->path.other->value_hash) key = end_leaf;
    }
    if (!key.has_value()) {
      const NodeId end = runmap::NodeOf(k, depth);
      for (auto it = ours.leaves().lower_bound(end.prefix);
           it != ours.leaves().end() && runmap::CommonBits(it->first, end.prefix) >= depth; ++it) {
        if (it->first != end_leaf) {
          key = it->first;
          break;
        }
      }
    }
    if (!key.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat("the ledger's map holds the replay's heads on the path of key ",
                                                        hash::Hex(k), " in another shape (depth ", depth, ")"));
    }
    if (*key != k) {
      proof = path_of(*key);
      if (!proof.ok()) return proof.status();
    }
    out.key = *key;
    out.proof = *std::move(proof);
    if (out.proof.path.found.has_value()) out.ledger_head = out.proof.path.found->head;
    out.replayed_head = ours.Get(*key);
    return out;
  }
  return absl::FailedPreconditionError("the descent went deeper than a key's bits");
}

}  // namespace ledger::monitor
