// The RFC 9162 §2.1 Merkle tree: roots, inclusion and consistency proofs,
// their verification, and the frontier that appends leaves one at a time.
//
// Everything here is a pure function over a NodeFn that returns stored
// perfect-subtree hashes; there is no I/O of its own. A "node" (level, index)
// is the hash of the perfect subtree over leaves
// [index * 2^level, (index + 1) * 2^level); level 0 nodes are leaf hashes.
// Any root or proof of a tree of size n needs O(log n) such nodes.
//
// Thread-safe: free functions are pure; a Frontier is a value with no locking.
#ifndef LEDGER_MERKLE_MERKLE_H_
#define LEDGER_MERKLE_MERKLE_H_

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ledger/hash/hash.h"

namespace ledger::merkle {

using hash::Hash;

// Returns the node (level, index). Called only for nodes inside the tree the
// caller asked about; an error is passed through unchanged.
using NodeFn = absl::FunctionRef<absl::StatusOr<Hash>(int level, uint64_t index)>;

// MTH of the first `size` leaves; EmptyRoot() for size 0.
absl::StatusOr<Hash> RootHash(uint64_t size, NodeFn node);

// RFC 9162 §2.1.3.1 audit path for leaf `index` in the tree of `size`,
// leaf-to-root order. INVALID_ARGUMENT unless index < size.
absl::StatusOr<std::vector<Hash>> InclusionProof(uint64_t index, uint64_t size,
                                                 NodeFn node);

// RFC 9162 §2.1.4.1 proof that the tree of size `from` is a prefix of the
// tree of size `to`. Empty when from == to or from == 0.
// INVALID_ARGUMENT unless from <= to.
absl::StatusOr<std::vector<Hash>> ConsistencyProof(uint64_t from, uint64_t to,
                                                   NodeFn node);

// RFC 9162 §2.1.3.2. OK only when `proof` leads from `leaf_hash` at `index`
// to `root` in a tree of `size`; otherwise an error that says why (the
// computed root when the path is well-formed but leads elsewhere).
absl::Status VerifyInclusion(uint64_t index, uint64_t size,
                             const Hash& leaf_hash,
                             absl::Span<const Hash> proof, const Hash& root);

// RFC 9162 §2.1.4.2. OK only when `proof` shows the tree (from, from_root)
// is a prefix of (to, to_root).
absl::Status VerifyConsistency(uint64_t from, uint64_t to,
                               const Hash& from_root, const Hash& to_root,
                               absl::Span<const Hash> proof);

// The right edge of a growing tree: the hashes of the perfect subtrees that
// make up the first size() leaves, largest (leftmost) first. Appending a leaf
// reports every node it completes, which is exactly what a store must keep
// for RootHash and the proofs above to find their nodes.
class Frontier {
 public:
  Frontier() = default;

  // Rebuilds the frontier of a tree of `size` from its stored nodes.
  static absl::StatusOr<Frontier> Load(uint64_t size, NodeFn node);

  // Appends one leaf; calls emit(level, index, hash) for the leaf itself and
  // for each node the leaf completes, bottom-up.
  void Append(const Hash& leaf_hash,
              absl::FunctionRef<void(int level, uint64_t index, const Hash&)>
                  emit);

  Hash Root() const;
  uint64_t size() const { return size_; }

 private:
  uint64_t size_ = 0;
  std::vector<Hash> nodes_;
};

}  // namespace ledger::merkle

#endif  // LEDGER_MERKLE_MERKLE_H_
