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
#ifndef LEDGER_FORMAT_MERKLE_MERKLE_H_
#define LEDGER_FORMAT_MERKLE_MERKLE_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ledger/format/hash/hash.h"

namespace ledger::merkle {

using hash::Hash;

// Returns the node (level, index). Called only for nodes inside the tree the
// caller asked about; an error is passed through unchanged.
using NodeFn = absl::FunctionRef<absl::StatusOr<Hash>(int level, uint64_t index)>;

// MTH of the first `size` leaves; EmptyRoot() for size 0.
absl::StatusOr<Hash> RootHash(uint64_t size, NodeFn node);

// Hashes of a tree's right-edge ranges [begin, size), keyed by begin: they
// are not stored nodes, and the proofs of many leaves of one tree size share
// them. One cache MUST serve one tree size only.
using EdgeCache = std::map<uint64_t, Hash>;

// MTH(D[begin:begin+n]) for a subtree of RFC 9162's recursion in a tree of
// `size` (begin a multiple of the largest power of two not above n, and
// begin + n <= size; only a right-edge range, ending at `size`, is not a
// perfect subtree). With `edges`, right-edge hashes are taken from and
// added to it. INVALID_ARGUMENT for any other range.
absl::StatusOr<Hash> SubtreeHash(uint64_t begin, uint64_t n, uint64_t size, NodeFn node, EdgeCache* edges = nullptr);

// RFC 9162 §2.1.3.1 audit path for leaf `index` in the tree of `size`,
// leaf-to-root order. INVALID_ARGUMENT unless index < size. With `edges`,
// right-edge hashes are taken from and added to it.
absl::StatusOr<std::vector<Hash>> InclusionProof(uint64_t index, uint64_t size, NodeFn node,
                                                 EdgeCache* edges = nullptr);

// RFC 9162 §2.1.4.1 proof that the tree of size `from` is a prefix of the
// tree of size `to`. Empty when from == to or from == 0.
// INVALID_ARGUMENT unless from <= to.
absl::StatusOr<std::vector<Hash>> ConsistencyProof(uint64_t from, uint64_t to, NodeFn node);

// RFC 9162 §2.1.3.2. OK only when `proof` leads from `leaf_hash` at `index`
// to `root` in a tree of `size`; otherwise an error that says why (the
// computed root when the path is well-formed but leads elsewhere).
absl::Status VerifyInclusion(uint64_t index, uint64_t size, const Hash& leaf_hash, absl::Span<const Hash> proof,
                             const Hash& root);

// RFC 9162 §2.1.4.2. OK only when `proof` shows the tree (from, from_root)
// is a prefix of (to, to_root).
absl::Status VerifyConsistency(uint64_t from, uint64_t to, const Hash& from_root, const Hash& to_root,
                               absl::Span<const Hash> proof);

// Verifies many inclusion proofs against one tree, with exactly the result
// of VerifyInclusion, but remembers the last proof it accepted: when a new
// proof reaches the state (fn, sn, hash) the last one reached after the same
// step, and its remaining hashes equal the last one's, the rest would repeat
// a verified computation, so it stops there. Neighbouring leaves' proofs
// share all but their lowest hashes, so a run of proofs costs a few node
// hashes each instead of log2(size). Not thread-safe.
class InclusionVerifier {
 public:
  InclusionVerifier(uint64_t size, const Hash& root) : size_(size), root_(root) {}

  absl::Status Verify(uint64_t index, const Hash& leaf_hash, absl::Span<const Hash> proof);

  // Node hashes computed so far.
  uint64_t nodes_hashed() const { return nodes_hashed_; }

 private:
  struct Step {
    uint64_t fn, sn;
    Hash r;
  };
  uint64_t size_;
  Hash root_;
  std::vector<Step> trace_;  // the state after each hash of proof_
  std::vector<Hash> proof_;  // the last accepted proof
  uint64_t nodes_hashed_ = 0;
};

// Proves many leaves of one tree, with exactly InclusionProof's result, but
// keeps the last proof: the audit path of leaf m holds one hash per level l
// at which the sibling of m's ancestor, the range [((m >> l) ^ 1) << l,
// that + 2^l) cut at the tree's size, starts inside the tree. Two leaves
// with the same ancestor at level h (h = bit_width(m ^ last)) have the same
// hashes from level h up, so only the levels below h are read. Neighbouring
// leaves then cost about two nodes each instead of log2(size). Right-edge
// ranges are kept in its own EdgeCache. Not thread-safe.
class InclusionProver {
 public:
  explicit InclusionProver(uint64_t size) : size_(size) {}

  // Sets `out` to leaf `index`'s audit path, leaf-to-root.
  // INVALID_ARGUMENT unless index < size, as InclusionProof.
  absl::Status Prove(uint64_t index, NodeFn node, std::vector<Hash>* out);

  // Nodes and right-edge ranges read so far.
  uint64_t nodes_read() const { return nodes_read_; }

 private:
  uint64_t size_;
  EdgeCache edges_;
  bool proved_ = false;
  uint64_t last_ = 0;        // the leaf of proof_, when proved_
  std::vector<Hash> proof_;  // its audit path
  uint64_t nodes_read_ = 0;
};

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
  void Append(const Hash& leaf_hash, absl::FunctionRef<void(int level, uint64_t index, const Hash&)> emit);

  Hash Root() const;
  uint64_t size() const { return size_; }
  // The perfect subtrees' hashes, largest first (what Load reads back).
  const std::vector<Hash>& nodes() const { return nodes_; }

 private:
  uint64_t size_ = 0;
  std::vector<Hash> nodes_;
};

}  // namespace ledger::merkle

#endif  // LEDGER_FORMAT_MERKLE_MERKLE_H_
