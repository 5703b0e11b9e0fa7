#include "ledger/format/merkle/merkle.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <optional>

#include "absl/strings/str_cat.h"

namespace ledger::merkle {
namespace {

// Largest power of two strictly below n (n >= 2): RFC 9162's split point k.
uint64_t SplitPoint(uint64_t n) { return std::bit_floor(n - 1); }

// MTH(D[begin:begin+n]) for a range the RFC recursion can produce: begin is a
// multiple of the largest power of two not above n, so perfect sub-ranges are
// stored nodes.
// Ranges that are not perfect subtrees are right-edge ranges (they end at
// the tree's size), so `edges`, when given, caches them by begin.
absl::StatusOr<Hash> RangeHash(uint64_t begin, uint64_t n, NodeFn node, EdgeCache* edges = nullptr) {
  if (std::has_single_bit(n)) {
    int level = std::countr_zero(n);
    if (begin % n != 0) std::abort();  // unreachable from the RFC recursion
    return node(level, begin >> level);
  }
  if (edges != nullptr) {
    if (auto it = edges->find(begin); it != edges->end()) return it->second;
  }
  uint64_t k = SplitPoint(n);
  auto left = RangeHash(begin, k, node);
  if (!left.ok()) return left.status();
  auto right = RangeHash(begin + k, n - k, node, edges);
  if (!right.ok()) return right.status();
  Hash h = hash::NodeHash(*left, *right);
  if (edges != nullptr) edges->emplace(begin, h);
  return h;
}

absl::Status Path(uint64_t m, uint64_t begin, uint64_t n, NodeFn node, std::vector<Hash>* out, EdgeCache* edges) {
  if (n == 1) return absl::OkStatus();
  uint64_t k = SplitPoint(n);
  absl::StatusOr<Hash> sibling;
  if (m < k) {
    if (auto s = Path(m, begin, k, node, out, nullptr); !s.ok()) return s;
    sibling = RangeHash(begin + k, n - k, node, edges);
  } else {
    if (auto s = Path(m - k, begin + k, n - k, node, out, edges); !s.ok()) return s;
    sibling = RangeHash(begin, k, node);
  }
  if (!sibling.ok()) return sibling.status();
  out->push_back(*sibling);
  return absl::OkStatus();
}

absl::Status SubProof(uint64_t m, uint64_t begin, uint64_t n, bool whole, NodeFn node, std::vector<Hash>* out) {
  if (m == n) {
    if (whole) return absl::OkStatus();
    auto h = RangeHash(begin, n, node);
    if (!h.ok()) return h.status();
    out->push_back(*h);
    return absl::OkStatus();
  }
  uint64_t k = SplitPoint(n);
  absl::StatusOr<Hash> h;
  if (m <= k) {
    if (auto s = SubProof(m, begin, k, whole, node, out); !s.ok()) return s;
    h = RangeHash(begin + k, n - k, node);
  } else {
    if (auto s = SubProof(m - k, begin + k, n - k, false, node, out); !s.ok()) {
      return s;
    }
    h = RangeHash(begin, k, node);
  }
  if (!h.ok()) return h.status();
  out->push_back(*h);
  return absl::OkStatus();
}

bool Lsb(uint64_t x) { return (x & 1) != 0; }

// One step of RFC 9162's verification loops, the only place it is written:
// §2.1.3.2 step 5 (inclusion; the caching verifier replays the same) and
// §2.1.4.2 step 6 (consistency). At position (fn, sn), with sn > 0, the next
// proof hash is the left sibling when fn is odd or fn == sn, and then the
// position first climbs past the levels where the node is a left child on
// the tree's right edge (no sibling there); else the proof hash is the right
// sibling. Moves (fn, sn) one level up and returns whether the proof hash
// is the left sibling (the new node is H(proof hash, node)).
bool Climb(uint64_t* fn, uint64_t* sn) {
  bool left = Lsb(*fn) || *fn == *sn;
  if (left) {
    while (!Lsb(*fn) && *fn != 0) {
      *fn >>= 1;
      *sn >>= 1;
    }
  }
  *fn >>= 1;
  *sn >>= 1;
  return left;
}

}  // namespace

absl::StatusOr<Hash> RootHash(uint64_t size, NodeFn node) {
  if (size == 0) return hash::EmptyRoot();
  return RangeHash(0, size, node);
}

absl::StatusOr<Hash> SubtreeHash(uint64_t begin, uint64_t n, uint64_t size, NodeFn node, EdgeCache* edges) {
  bool perfect = std::has_single_bit(n) && begin % n == 0;
  bool edge = n > 0 && begin + n == size && begin % std::bit_floor(n) == 0;
  if (n == 0 || begin + n > size || !(perfect || edge)) {
    return absl::InvalidArgumentError(
        absl::StrCat("subtree: [", begin, ", ", begin + n, ") is not a subtree of the tree of size ", size));
  }
  return RangeHash(begin, n, node, perfect ? nullptr : edges);
}

absl::StatusOr<std::vector<Hash>> InclusionProof(uint64_t index, uint64_t size, NodeFn node, EdgeCache* edges) {
  if (index >= size) {
    return absl::InvalidArgumentError(absl::StrCat("seq: ", index, " is not in a tree of size ", size));
  }
  std::vector<Hash> out;
  if (auto s = Path(index, 0, size, node, &out, edges); !s.ok()) return s;
  return out;
}

absl::StatusOr<std::vector<Hash>> ConsistencyProof(uint64_t from, uint64_t to, NodeFn node) {
  if (from > to) {
    return absl::InvalidArgumentError(absl::StrCat("from_size: ", from, " is larger than to_size ", to));
  }
  std::vector<Hash> out;
  if (from == 0 || from == to) return out;
  if (auto s = SubProof(from, 0, to, true, node, &out); !s.ok()) return s;
  return out;
}

absl::Status VerifyInclusion(uint64_t index, uint64_t size, const Hash& leaf_hash, absl::Span<const Hash> proof,
                             const Hash& root) {
  if (index >= size) {
    return absl::InvalidArgumentError(absl::StrCat("inclusion: index ", index, " is not below tree size ", size));
  }
  uint64_t fn = index, sn = size - 1;
  Hash r = leaf_hash;
  for (const Hash& p : proof) {
    if (sn == 0) {
      return absl::InvalidArgumentError(absl::StrCat("inclusion: proof has ", proof.size(),
                                                     " hashes, too many for index ", index, " in size ", size));
    }
    r = Climb(&fn, &sn) ? hash::NodeHash(p, r) : hash::NodeHash(r, p);
  }
  if (sn != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("inclusion: proof has ", proof.size(), " hashes, too few for index ", index, " in size ", size));
  }
  if (r != root) {
    return absl::InvalidArgumentError(absl::StrCat("inclusion: proof for index ", index, " leads to root ",
                                                   hash::Hex(r), ", expected ", hash::Hex(root)));
  }
  return absl::OkStatus();
}

absl::Status InclusionVerifier::Verify(uint64_t index, const Hash& leaf_hash, absl::Span<const Hash> proof) {
  if (index >= size_) return VerifyInclusion(index, size_, leaf_hash, proof, root_);
  uint64_t fn = index, sn = size_ - 1;
  Hash r = leaf_hash;
  std::vector<Step> trace;
  trace.reserve(proof.size());
  for (size_t i = 0; i < proof.size(); ++i) {
    if (sn == 0) break;  // too many hashes: VerifyInclusion words it
    ++nodes_hashed_;
    r = Climb(&fn, &sn) ? hash::NodeHash(proof[i], r) : hash::NodeHash(r, proof[i]);
    trace.push_back({fn, sn, r});
    if (i < trace_.size() && proof.size() == proof_.size() && trace_[i].fn == fn && trace_[i].sn == sn &&
        trace_[i].r == r && std::equal(proof.begin() + i + 1, proof.end(), proof_.data() + i + 1)) {
      // The same state and the same remaining hashes as an accepted proof.
      std::copy(trace.begin(), trace.end(), trace_.begin());
      std::copy(proof.begin(), proof.begin() + i + 1, proof_.begin());
      return absl::OkStatus();
    }
  }
  nodes_hashed_ += proof.size();
  if (auto s = VerifyInclusion(index, size_, leaf_hash, proof, root_); !s.ok()) return s;
  trace_ = std::move(trace);
  proof_.assign(proof.begin(), proof.end());
  return absl::OkStatus();
}

absl::Status InclusionProver::Prove(uint64_t index, NodeFn node, std::vector<Hash>* out) {
  if (index >= size_) {
    return absl::InvalidArgumentError(absl::StrCat("seq: ", index, " is not in a tree of size ", size_));
  }
  // The sibling of `leaf`'s ancestor at `level`, when it starts inside the tree.
  auto sibling = [this](uint64_t leaf, int level) -> std::optional<uint64_t> {
    uint64_t begin = ((leaf >> level) ^ 1) << level;
    return begin < size_ ? std::optional(begin) : std::nullopt;
  };
  const int levels = static_cast<int>(std::bit_width(size_ - 1));  // the root's level
  // From level `shared` up, the last proof's hashes are this one's.
  const int shared = proved_ ? std::min(static_cast<int>(std::bit_width(index ^ last_)), levels) : levels;
  size_t kept = 0;  // the last proof's hashes below `shared`
  if (proved_) {
    for (int l = 0; l < shared; ++l) kept += sibling(last_, l).has_value();
  }
  std::vector<Hash> path;
  path.reserve(proof_.size() + 1);
  for (int l = 0; l < shared; ++l) {
    std::optional<uint64_t> begin = sibling(index, l);
    if (!begin) continue;
    ++nodes_read_;
    auto h = RangeHash(*begin, std::min(uint64_t{1} << l, size_ - *begin), node, &edges_);
    if (!h.ok()) return h.status();
    path.push_back(*h);
  }
  if (proved_) path.insert(path.end(), proof_.begin() + static_cast<ptrdiff_t>(kept), proof_.end());
  proof_ = path;
  last_ = index;
  proved_ = true;
  *out = std::move(path);
  return absl::OkStatus();
}

absl::Status VerifyConsistency(uint64_t from, uint64_t to, const Hash& from_root, const Hash& to_root,
                               absl::Span<const Hash> proof) {
  if (from > to) {
    return absl::InvalidArgumentError(absl::StrCat("consistency: from size ", from, " is larger than to size ", to));
  }
  if (from == to || from == 0) {
    if (!proof.empty()) {
      return absl::InvalidArgumentError("consistency: proof must be empty from an empty or equal tree");
    }
    if (from == to && from_root != to_root) {
      return absl::InvalidArgumentError(absl::StrCat("consistency: trees of equal size ", from, " have roots ",
                                                     hash::Hex(from_root), " and ", hash::Hex(to_root)));
    }
    if (from == 0 && from_root != hash::EmptyRoot()) {
      return absl::InvalidArgumentError("consistency: the root of size 0 must be the empty root");
    }
    return absl::OkStatus();
  }
  if (proof.empty()) {
    return absl::InvalidArgumentError("consistency: proof is empty");
  }
  std::vector<Hash> path;
  path.reserve(proof.size() + 1);
  if (std::has_single_bit(from)) path.push_back(from_root);
  path.insert(path.end(), proof.begin(), proof.end());
  uint64_t fn = from - 1, sn = to - 1;
  while (Lsb(fn)) {
    fn >>= 1;
    sn >>= 1;
  }
  Hash fr = path[0], sr = path[0];
  for (size_t i = 1; i < path.size(); ++i) {
    const Hash& c = path[i];
    if (sn == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("consistency: proof has too many hashes for sizes ", from, " -> ", to));
    }
    if (Climb(&fn, &sn)) {
      fr = hash::NodeHash(c, fr);
      sr = hash::NodeHash(c, sr);
    } else {
      sr = hash::NodeHash(sr, c);
    }
  }
  if (sn != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("consistency: proof has too few hashes for sizes ", from, " -> ", to));
  }
  if (fr != from_root) {
    return absl::InvalidArgumentError(
        absl::StrCat("consistency: proof leads to old root ", hash::Hex(fr), ", expected ", hash::Hex(from_root)));
  }
  if (sr != to_root) {
    return absl::InvalidArgumentError(
        absl::StrCat("consistency: proof leads to new root ", hash::Hex(sr), ", expected ", hash::Hex(to_root)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Frontier> Frontier::Load(uint64_t size, NodeFn node) {
  Frontier f;
  f.size_ = size;
  uint64_t begin = 0;
  for (int level = 63; level >= 0; --level) {
    uint64_t width = uint64_t{1} << level;
    if ((size & width) == 0) continue;
    auto h = node(level, begin >> level);
    if (!h.ok()) return h.status();
    f.nodes_.push_back(*h);
    begin += width;
  }
  return f;
}

void Frontier::Append(const Hash& leaf_hash, absl::FunctionRef<void(int level, uint64_t index, const Hash&)> emit) {
  uint64_t index = size_;
  int level = 0;
  Hash h = leaf_hash;
  emit(0, index, h);
  while (Lsb(index)) {
    h = hash::NodeHash(nodes_.back(), h);
    nodes_.pop_back();
    index >>= 1;
    ++level;
    emit(level, index, h);
  }
  nodes_.push_back(h);
  ++size_;
}

Hash Frontier::Root() const {
  if (nodes_.empty()) return hash::EmptyRoot();
  Hash r = nodes_.back();
  for (size_t i = nodes_.size() - 1; i-- > 0;) r = hash::NodeHash(nodes_[i], r);
  return r;
}

}  // namespace ledger::merkle
