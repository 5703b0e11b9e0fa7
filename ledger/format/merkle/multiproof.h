// Multiproofs (CONTRACT section 6, "Multiproofs",
// docs/contract/proofs-and-maps.md): one list of hashes that proves the
// inclusion of a set S of seqs in the tree of size N, NODES(0, N):
//
//   NODES(lo, hi) = [MTH(D[lo:hi])]                    no seq of S in [lo, hi)
//                 = []                                 hi - lo = 1 (a seq of S)
//                 = NODES(lo, lo + k) ++ NODES(lo + k, hi)   otherwise,
//                   k the largest power of two below hi - lo
//
// and ROOT(lo, hi), the same recursion that takes the list's next hash for a
// range without a seq of S, the leaf's hash for a seq of S, and H(0x01 ||
// left || right) otherwise. ROOT(0, N) is the tree's root.
//
// MultiproofWalk evaluates ROOT for the seqs of S given one at a time in
// ascending order, holding one pending hash per level: the exporter (which
// gets each range's hash from the tree's nodes and writes it) and the
// verifiers (which read it from the pack) walk alike, and both end with the
// root. It can also keep the RFC 9162 audit path of one seq of S, each
// sibling as ROOT computed it (`ledgerctl pack-proof`).
//
// Thread-compatible: a walk is a value with no locking.
#ifndef LEDGER_FORMAT_MERKLE_MULTIPROOF_H_
#define LEDGER_FORMAT_MERKLE_MULTIPROOF_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"

namespace ledger::merkle {

// Returns MTH(D[begin:end]) of a range of the walk that holds no seq of S:
// the multiproof's next hash. An error is passed through unchanged.
using RangeFn = absl::FunctionRef<absl::StatusOr<hash::Hash>(uint64_t begin, uint64_t end)>;

class MultiproofWalk {
 public:
  // A walk of the tree of `size`; with `watch`, the audit path of that seq
  // is kept (it MUST be one of the seqs added).
  explicit MultiproofWalk(uint64_t size, std::optional<uint64_t> watch = std::nullopt);

  // The next seq of S and its leaf hash: the ranges left of it that hold no
  // seq of S are asked of `range` first, left to right. INVALID_ARGUMENT
  // when `seq` is not above the last one or not below the size, or after
  // Finish.
  absl::Status Add(uint64_t seq, const hash::Hash& leaf_hash, RangeFn range);

  // The ranges right of the last seq; then the root, ROOT(0, size). The
  // empty tree's root for size 0.
  absl::StatusOr<hash::Hash> Finish(RangeFn range);

  // After Finish, with a watched seq that was added: its audit path, leaf
  // to root.
  std::vector<hash::Hash> watched_path() const;

 private:
  // A range [lo, hi) being computed, split at mid; its left half's hash
  // once known.
  struct Frame {
    uint64_t lo, hi, mid;
    bool left_done;
    hash::Hash left;
  };
  // Walks the ranges before `target` (size: all of them), asking `range`
  // for those without a seq of S; stops at target's leaf.
  absl::Status Advance(uint64_t target, RangeFn range);
  // The range [lo, hi) now has hash `h`: it goes to the frame above.
  void Complete(uint64_t lo, uint64_t hi, const hash::Hash& h);

  uint64_t size_;
  std::optional<uint64_t> watch_;
  std::vector<Frame> stack_;
  bool started_ = false;
  std::optional<hash::Hash> root_;
  std::optional<uint64_t> last_;
  // The watched seq's siblings, by depth (the root's children at depth 1).
  std::vector<std::pair<size_t, hash::Hash>> siblings_;
};

}  // namespace ledger::merkle

#endif  // LEDGER_FORMAT_MERKLE_MULTIPROOF_H_
