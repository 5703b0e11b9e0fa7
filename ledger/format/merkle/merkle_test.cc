#include "ledger/format/merkle/merkle.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/util/status_matchers.h"

namespace ledger::merkle {
namespace {

using hash::Hex;
using ::ledger::testing::StatusIs;
using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::Matcher;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

// VerifyInclusion's refusal of a proof of the right length for `index`
// that leads to another root than `root` (which it names).
Matcher<absl::Status> LeadsElsewhere(uint64_t index, const Hash& root) {
  return StatusIs(absl::StatusCode::kInvalidArgument,
                  AllOf(StartsWith(absl::StrCat("inclusion: proof for index ", index, " leads to root ")),
                        EndsWith(", expected " + Hex(root))));
}

// VerifyInclusion's refusal of a proof of `got` hashes for `index` in a
// tree of `size`, whose proofs have `want`.
Matcher<absl::Status> WrongLength(uint64_t index, uint64_t size, size_t got, size_t want) {
  return StatusIs(absl::StatusCode::kInvalidArgument,
                  absl::StrCat("inclusion: proof has ", got, " hashes, too ", got < want ? "few" : "many",
                               " for index ", index, " in size ", size));
}

// A node store filled the way the sequencer fills RocksDB: by Frontier.
class MemoryTree {
 public:
  void Append(const Hash& leaf) {
    frontier_.Append(leaf, [&](int level, uint64_t index, const Hash& h) { nodes_[{level, index}] = h; });
    leaves_.push_back(leaf);
  }
  absl::StatusOr<Hash> Node(int level, uint64_t index) const {
    auto it = nodes_.find({level, index});
    if (it == nodes_.end()) return absl::NotFoundError("node");
    return it->second;
  }
  // A callable, not a NodeFn: the FunctionRef a proof function takes must
  // not outlive it, and a temporary lives to the end of the call.
  auto fn() const {
    return [this](int l, uint64_t i) { return Node(l, i); };
  }
  const std::vector<Hash>& leaves() const { return leaves_; }
  const Frontier& frontier() const { return frontier_; }
  size_t node_count() const { return nodes_.size(); }

 private:
  Frontier frontier_;
  std::map<std::pair<int, uint64_t>, Hash> nodes_;
  std::vector<Hash> leaves_;
};

// The RFC 9162 definitions written as literally as possible, over leaf
// hashes, to check the stored-node implementation against.
Hash NaiveRoot(const std::vector<Hash>& d, size_t begin, size_t end) {
  size_t n = end - begin;
  if (n == 0) return hash::EmptyRoot();
  if (n == 1) return d[begin];
  size_t k = 1;
  while (k * 2 < n) k *= 2;
  return hash::NodeHash(NaiveRoot(d, begin, begin + k), NaiveRoot(d, begin + k, end));
}

std::vector<Hash> NaivePath(size_t m, const std::vector<Hash>& d, size_t begin, size_t end) {
  size_t n = end - begin;
  if (n == 1) return {};
  size_t k = 1;
  while (k * 2 < n) k *= 2;
  std::vector<Hash> out;
  if (m < k) {
    out = NaivePath(m, d, begin, begin + k);
    out.push_back(NaiveRoot(d, begin + k, end));
  } else {
    out = NaivePath(m - k, d, begin + k, end);
    out.push_back(NaiveRoot(d, begin, begin + k));
  }
  return out;
}

std::vector<Hash> NaiveSubProof(size_t m, const std::vector<Hash>& d, size_t begin, size_t end, bool b) {
  size_t n = end - begin;
  if (m == n) {
    if (b) return {};
    return {NaiveRoot(d, begin, end)};
  }
  size_t k = 1;
  while (k * 2 < n) k *= 2;
  std::vector<Hash> out;
  if (m <= k) {
    out = NaiveSubProof(m, d, begin, begin + k, b);
    out.push_back(NaiveRoot(d, begin + k, end));
  } else {
    out = NaiveSubProof(m - k, d, begin + k, end, false);
    out.push_back(NaiveRoot(d, begin, begin + k));
  }
  return out;
}

nlohmann::json LoadVectors() {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/merkle.json");
  return nlohmann::json::parse(in);
}

std::vector<Hash> ParseHashes(const nlohmann::json& list) {
  std::vector<Hash> out;
  for (const auto& h : list) out.push_back(*hash::ParseHex(h.get<std::string>()));
  return out;
}

MemoryTree VectorTree(const nlohmann::json& v) {
  MemoryTree t;
  for (const auto& hex : v["leaves_hex"]) {
    std::string s = hex.get<std::string>();
    std::string bytes;
    for (size_t i = 0; i < s.size(); i += 2) {
      bytes += static_cast<char>(std::stoi(s.substr(i, 2), nullptr, 16));
    }
    t.Append(hash::LeafHash(bytes));
  }
  return t;
}

TEST(MerkleVectorsTest, EmptyRoot) {
  auto v = LoadVectors();
  MemoryTree t;
  EXPECT_EQ(Hex(*RootHash(0, t.fn())), v["empty_root"].get<std::string>());
  EXPECT_EQ(Hex(t.frontier().Root()), v["empty_root"].get<std::string>());
}

TEST(MerkleVectorsTest, RootsForEverySize) {
  auto v = LoadVectors();
  MemoryTree t = VectorTree(v);
  for (auto& [size, root] : v["roots"].items()) {
    EXPECT_EQ(Hex(*RootHash(std::stoull(size), t.fn())), root.get<std::string>()) << "size " << size;
  }
}

TEST(MerkleVectorsTest, InclusionProofs) {
  auto v = LoadVectors();
  MemoryTree t = VectorTree(v);
  ASSERT_EQ(v["inclusion"].size(), 36u);
  for (const auto& c : v["inclusion"]) {
    uint64_t index = c["index"], size = c["tree_size"];
    auto want = ParseHashes(c["path"]);
    auto got = InclusionProof(index, size, t.fn());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want) << "index " << index << " size " << size;
    Hash root = *hash::ParseHex(v["roots"][std::to_string(size)].get<std::string>());
    EXPECT_TRUE(VerifyInclusion(index, size, t.leaves()[index], want, root).ok());
  }
}

TEST(MerkleVectorsTest, ConsistencyProofs) {
  auto v = LoadVectors();
  MemoryTree t = VectorTree(v);
  ASSERT_EQ(v["consistency"].size(), 36u);
  for (const auto& c : v["consistency"]) {
    uint64_t from = c["old_size"], to = c["new_size"];
    auto want = ParseHashes(c["proof"]);
    auto got = ConsistencyProof(from, to, t.fn());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want) << from << " -> " << to;
    Hash r1 = *hash::ParseHex(v["roots"][std::to_string(from)].get<std::string>());
    Hash r2 = *hash::ParseHex(v["roots"][std::to_string(to)].get<std::string>());
    EXPECT_TRUE(VerifyConsistency(from, to, r1, r2, want).ok());
  }
}

TEST(MerkleNaiveTest, EverySizeUpTo300) {
  MemoryTree t;
  for (uint64_t n = 1; n <= 300; ++n) {
    t.Append(hash::LeafHash("leaf " + std::to_string(n - 1)));
    const auto& d = t.leaves();
    Hash root = NaiveRoot(d, 0, n);
    ASSERT_EQ(*RootHash(n, t.fn()), root) << "size " << n;
    ASSERT_EQ(t.frontier().Root(), root) << "size " << n;
    for (uint64_t m = 0; m < n; ++m) {
      auto proof = InclusionProof(m, n, t.fn());
      ASSERT_TRUE(proof.ok());
      ASSERT_EQ(*proof, NaivePath(m, d, 0, n)) << m << " in " << n;
      ASSERT_TRUE(VerifyInclusion(m, n, d[m], *proof, root).ok());
    }
    EdgeCache edges;  // one per size; every proof twice, from an empty and a full cache
    for (int pass = 0; pass < 2; ++pass) {
      for (uint64_t m = 0; m < n; ++m) {
        ASSERT_EQ(*InclusionProof(m, n, t.fn(), &edges), NaivePath(m, d, 0, n)) << m << " in " << n;
      }
    }
    for (uint64_t m = 1; m <= n; ++m) {
      auto proof = ConsistencyProof(m, n, t.fn());
      ASSERT_TRUE(proof.ok());
      ASSERT_EQ(*proof, NaiveSubProof(m, d, 0, n, true)) << m << " -> " << n;
      ASSERT_TRUE(VerifyConsistency(m, n, NaiveRoot(d, 0, m), root, *proof).ok());
    }
  }
}

TEST(MerkleNaiveTest, RandomLargerTrees) {
  std::mt19937_64 rng(20261129);
  MemoryTree t;
  const uint64_t kMax = 5000;
  for (uint64_t i = 0; i < kMax; ++i) {
    t.Append(hash::LeafHash("big " + std::to_string(i)));
  }
  const auto& d = t.leaves();
  for (int trial = 0; trial < 60; ++trial) {
    uint64_t n = 301 + rng() % (kMax - 300);
    uint64_t m = rng() % n;
    Hash root = NaiveRoot(d, 0, n);
    ASSERT_EQ(*RootHash(n, t.fn()), root);
    auto inc = InclusionProof(m, n, t.fn());
    ASSERT_EQ(*inc, NaivePath(m, d, 0, n));
    ASSERT_TRUE(VerifyInclusion(m, n, d[m], *inc, root).ok());
    uint64_t from = 1 + rng() % n;
    auto cons = ConsistencyProof(from, n, t.fn());
    ASSERT_EQ(*cons, NaiveSubProof(from, d, 0, n, true));
    ASSERT_TRUE(VerifyConsistency(from, n, NaiveRoot(d, 0, from), root, *cons).ok());
  }
}

TEST(MerkleTest, StoredNodesAreTwoPerLeaf) {
  MemoryTree t;
  for (int i = 0; i < 1024; ++i) t.Append(hash::LeafHash(std::to_string(i)));
  EXPECT_EQ(t.node_count(), 2047u);
}

TEST(MerkleTest, FrontierLoadMatchesAppended) {
  MemoryTree t;
  for (uint64_t n = 1; n <= 100; ++n) {
    t.Append(hash::LeafHash(std::to_string(n)));
    auto loaded = Frontier::Load(n, t.fn());
    ASSERT_TRUE(loaded.ok());
    EXPECT_EQ(loaded->Root(), t.frontier().Root());
    EXPECT_EQ(loaded->size(), n);
  }
}

TEST(MerkleTest, MissingNodeIsReported) {
  MemoryTree t;
  t.Append(hash::LeafHash("a"));
  auto r = RootHash(2, t.fn());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
}

TEST(MerkleTest, InclusionRejectsTampering) {
  MemoryTree t;
  for (int i = 0; i < 13; ++i) t.Append(hash::LeafHash(std::to_string(i)));
  Hash root = *RootHash(13, t.fn());
  auto proof = *InclusionProof(5, 13, t.fn());
  EXPECT_TRUE(VerifyInclusion(5, 13, t.leaves()[5], proof, root).ok());
  // Wrong leaf.
  EXPECT_THAT(VerifyInclusion(5, 13, t.leaves()[6], proof, root), LeadsElsewhere(5, root));
  // Wrong index.
  EXPECT_THAT(VerifyInclusion(4, 13, t.leaves()[5], proof, root), LeadsElsewhere(4, root));
  // Flipped proof hash.
  auto bad = proof;
  bad[1][0] ^= 1;
  auto s = VerifyInclusion(5, 13, t.leaves()[5], bad, root);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("expected " + Hex(root)), std::string::npos);
  // Truncated and extended proofs.
  ASSERT_EQ(proof.size(), 4u);
  auto shorter = proof;
  shorter.pop_back();
  EXPECT_THAT(
      VerifyInclusion(5, 13, t.leaves()[5], shorter, root),
      StatusIs(absl::StatusCode::kInvalidArgument, "inclusion: proof has 3 hashes, too few for index 5 in size 13"));
  auto longer = proof;
  longer.push_back(root);
  EXPECT_THAT(
      VerifyInclusion(5, 13, t.leaves()[5], longer, root),
      StatusIs(absl::StatusCode::kInvalidArgument, "inclusion: proof has 5 hashes, too many for index 5 in size 13"));
  // Index out of range.
  EXPECT_THAT(VerifyInclusion(13, 13, t.leaves()[5], proof, root),
              StatusIs(absl::StatusCode::kInvalidArgument, "inclusion: index 13 is not below tree size 13"));
}

// The caching verifier gives exactly VerifyInclusion's answer: on every
// proof of every leaf (ascending, then in a random order), and on every
// tampered variant checked right after its neighbour was accepted.
TEST(MerkleTest, InclusionVerifierAgreesWithVerifyInclusion) {
  MemoryTree t;
  std::mt19937_64 rng(7);
  for (uint64_t n = 1; n <= 140; ++n) {
    t.Append(hash::LeafHash("v " + std::to_string(n - 1)));
    const auto& d = t.leaves();
    Hash root = *RootHash(n, t.fn());
    InclusionVerifier v(n, root);
    std::vector<uint64_t> order(n);
    for (uint64_t m = 0; m < n; ++m) order[m] = m;
    for (int pass = 0; pass < 2; ++pass) {
      for (uint64_t m : order) {
        auto proof = *InclusionProof(m, n, t.fn());
        ASSERT_TRUE(v.Verify(m, d[m], proof).ok()) << m << " in " << n;
        for (size_t k = 0; k < proof.size(); ++k) {
          auto bad = proof;
          bad[k][31] ^= 0x40;
          ASSERT_THAT(v.Verify(m, d[m], bad), LeadsElsewhere(m, root)) << m << " in " << n << " hash " << k;
        }
        ASSERT_THAT(v.Verify(m, hash::LeafHash("other"), proof), LeadsElsewhere(m, root));
        if (m + 1 < n) {
          // Leaf m's proof given for leaf m + 1: refused for its length
          // where m + 1's proofs have another (at the right edge), else for
          // the root it leads to.
          size_t want = InclusionProof(m + 1, n, t.fn())->size();
          ASSERT_THAT(v.Verify(m + 1, d[m], proof),
                      want == proof.size() ? LeadsElsewhere(m + 1, root) : WrongLength(m + 1, n, proof.size(), want));
        }
        auto longer = proof;
        longer.push_back(root);
        ASSERT_EQ(v.Verify(m, d[m], longer).message(), VerifyInclusion(m, n, d[m], longer, root).message());
        if (!proof.empty()) {
          auto shorter = proof;
          shorter.pop_back();
          ASSERT_EQ(v.Verify(m, d[m], shorter).message(), VerifyInclusion(m, n, d[m], shorter, root).message());
        }
      }
      std::shuffle(order.begin(), order.end(), rng);
    }
    EXPECT_THAT(v.Verify(n, d[0], {}), StatusIs(absl::StatusCode::kInvalidArgument,
                                                absl::StrCat("inclusion: index ", n, " is not below tree size ", n)));
  }
}

TEST(MerkleTest, InclusionVerifierHashesFewNodesForNeighbours) {
  MemoryTree t;
  const uint64_t n = 4096 + 77;
  for (uint64_t i = 0; i < n; ++i) t.Append(hash::LeafHash(std::to_string(i)));
  InclusionVerifier v(n, *RootHash(n, t.fn()));
  for (uint64_t m = 0; m < n; ++m) {
    ASSERT_TRUE(v.Verify(m, t.leaves()[m], *InclusionProof(m, n, t.fn())).ok());
  }
  // log2(n) = 13 per proof without the cache; about 2 with it.
  EXPECT_LT(v.nodes_hashed(), 3 * n);
  EXPECT_GT(v.nodes_hashed(), n);
}

// The prover's paths are InclusionProof's, whatever the order of the
// leaves: ascending, descending, shuffled, and a leaf proved twice in a row.
TEST(MerkleTest, InclusionProverAgreesWithInclusionProof) {
  std::mt19937_64 rng(7);
  MemoryTree t;
  std::vector<uint64_t> sizes;
  for (uint64_t n = 1; n <= 70; ++n) sizes.push_back(n);
  for (uint64_t n : {127, 128, 129, 1000, 4096 + 77}) sizes.push_back(n);
  for (uint64_t n : sizes) {
    while (t.leaves().size() < n) t.Append(hash::LeafHash(std::to_string(t.leaves().size())));
    std::vector<uint64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::vector<uint64_t> shuffled = order;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    std::vector<uint64_t> descending(order.rbegin(), order.rend());
    std::vector<uint64_t> twice = {n / 2, n / 2, n - 1, n - 1, 0, 0};
    for (const auto* leaves : {&order, &descending, &shuffled, &twice}) {
      InclusionProver prover(n);
      for (uint64_t m : *leaves) {
        std::vector<Hash> path;
        ASSERT_TRUE(prover.Prove(m, t.fn(), &path).ok());
        ASSERT_EQ(path, *InclusionProof(m, n, t.fn())) << "leaf " << m << " of " << n;
      }
    }
  }
  InclusionProver prover(5);
  std::vector<Hash> path;
  EXPECT_EQ(prover.Prove(5, t.fn(), &path).code(), absl::StatusCode::kInvalidArgument);
}

TEST(MerkleTest, InclusionProverReadsFewNodesForNeighbours) {
  MemoryTree t;
  const uint64_t n = 4096 + 77;
  for (uint64_t i = 0; i < n; ++i) t.Append(hash::LeafHash(std::to_string(i)));
  InclusionProver prover(n);
  std::vector<Hash> path;
  for (uint64_t m = 0; m < n; ++m) ASSERT_TRUE(prover.Prove(m, t.fn(), &path).ok());
  // log2(n) = 13 per proof without the last one kept; about 2 with it.
  EXPECT_LT(prover.nodes_read(), 3 * n);
  EXPECT_GE(prover.nodes_read(), n);
}

TEST(MerkleTest, ConsistencyRejectsTampering) {
  MemoryTree t;
  for (int i = 0; i < 21; ++i) t.Append(hash::LeafHash(std::to_string(i)));
  Hash r7 = *RootHash(7, t.fn()), r21 = *RootHash(21, t.fn());
  auto proof = *ConsistencyProof(7, 21, t.fn());
  EXPECT_TRUE(VerifyConsistency(7, 21, r7, r21, proof).ok());
  EXPECT_THAT(VerifyConsistency(7, 21, r21, r21, proof),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat("consistency: proof leads to old root ", Hex(r7), ", expected ", Hex(r21))));
  // The proof of 7 -> 21 given for 8 -> 21: 8 is a power of two, so its
  // root comes first, and the hashes are too many.
  EXPECT_THAT(VerifyConsistency(8, 21, r7, r21, proof),
              StatusIs(absl::StatusCode::kInvalidArgument, "consistency: proof has too many hashes for sizes 8 -> 21"));
  auto bad = proof;
  bad[0][31] ^= 0x80;
  EXPECT_THAT(VerifyConsistency(7, 21, r7, r21, bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       MatchesRegex("consistency: proof leads to old root [0-9a-f]{64}, expected " + Hex(r7))));
  EXPECT_THAT(VerifyConsistency(7, 21, r7, r21, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, "consistency: proof is empty"));
  EXPECT_THAT(VerifyConsistency(21, 7, r21, r7, proof),
              StatusIs(absl::StatusCode::kInvalidArgument, "consistency: from size 21 is larger than to size 7"));
  EXPECT_TRUE(VerifyConsistency(0, 21, hash::EmptyRoot(), r21, {}).ok());
  EXPECT_THAT(
      VerifyConsistency(21, 21, r21, r21, proof),
      StatusIs(absl::StatusCode::kInvalidArgument, "consistency: proof must be empty from an empty or equal tree"));
}

TEST(MerkleTest, ProofArgumentsOutOfRange) {
  MemoryTree t;
  t.Append(hash::LeafHash("x"));
  EXPECT_EQ(InclusionProof(1, 1, t.fn()).status().message(), "seq: 1 is not in a tree of size 1");
  EXPECT_EQ(ConsistencyProof(2, 1, t.fn()).status().message(), "from_size: 2 is larger than to_size 1");
  EXPECT_TRUE(ConsistencyProof(0, 1, t.fn())->empty());
}

}  // namespace
}  // namespace ledger::merkle
