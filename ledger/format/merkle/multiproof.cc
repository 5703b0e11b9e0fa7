#include "ledger/format/merkle/multiproof.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"

namespace ledger::merkle {

MultiproofWalk::MultiproofWalk(uint64_t size, std::optional<uint64_t> watch) : size_(size), watch_(watch) {}

void MultiproofWalk::Complete(uint64_t lo, uint64_t hi, const hash::Hash& h) {
  hash::Hash done = h;
  while (true) {
    if (stack_.empty()) {
      root_ = done;
      return;
    }
    Frame& f = stack_.back();
    // A child of a range that holds the watched seq, but not holding it
    // itself, is a sibling on the seq's path.
    if (watch_ && f.lo <= *watch_ && *watch_ < f.hi && !(lo <= *watch_ && *watch_ < hi)) {
      siblings_.emplace_back(stack_.size(), done);
    }
    if (!f.left_done) {
      f.left_done = true;
      f.left = done;
      return;
    }
    done = hash::NodeHash(f.left, done);
    lo = f.lo;
    hi = f.hi;
    stack_.pop_back();
  }
}

absl::Status MultiproofWalk::Advance(uint64_t target, RangeFn range) {
  while (!root_) {
    // The next range of the walk: the whole tree, or the top frame's next
    // half.
    uint64_t a = 0, b = size_;
    if (started_) {
      const Frame& f = stack_.back();
      a = f.left_done ? f.mid : f.lo;
      b = f.left_done ? f.hi : f.mid;
    }
    started_ = true;
    if (target >= b) {
      auto h = range(a, b);
      if (!h.ok()) return h.status();
      Complete(a, b, *h);
      continue;
    }
    if (b - a == 1) return absl::OkStatus();  // target's leaf
    stack_.push_back(Frame{a, b, a + std::bit_floor(b - a - 1), false, {}});
  }
  return absl::OkStatus();
}

absl::Status MultiproofWalk::Add(uint64_t seq, const hash::Hash& leaf_hash, RangeFn range) {
  if (root_) return absl::InvalidArgumentError(absl::StrCat("multiproof: seq ", seq, " after the walk's end"));
  if (seq >= size_) {
    return absl::InvalidArgumentError(absl::StrCat("multiproof: seq ", seq, " is not in the tree of size ", size_));
  }
  if (last_ && seq <= *last_) {
    return absl::InvalidArgumentError(absl::StrCat("multiproof: seq ", seq, " is not above the last seq, ", *last_));
  }
  last_ = seq;
  if (auto s = Advance(seq, range); !s.ok()) return s;
  Complete(seq, seq + 1, leaf_hash);
  return absl::OkStatus();
}

absl::StatusOr<hash::Hash> MultiproofWalk::Finish(RangeFn range) {
  if (size_ == 0) return hash::EmptyRoot();
  if (auto s = Advance(size_, range); !s.ok()) return s;
  return *root_;
}

std::vector<hash::Hash> MultiproofWalk::watched_path() const {
  std::vector<std::pair<size_t, hash::Hash>> by_depth = siblings_;
  std::stable_sort(by_depth.begin(), by_depth.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<hash::Hash> out;
  for (const auto& [depth, h] : by_depth) out.push_back(h);
  return out;
}

}  // namespace ledger::merkle
