#include "ledger/format/merkle/multiproof.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/merkle/merkle.h"
#include "nlohmann/json.hpp"

namespace ledger::merkle {
namespace {

using hash::Hash;

nlohmann::json Vectors(const std::string& name) {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/" + name);
  return nlohmann::json::parse(in);
}

Hash FromHex(const std::string& hex) {
  Hash h;
  EXPECT_TRUE(hash::ParseHexTo(hex, &h)) << hex;
  return h;
}

std::vector<std::string> Leaves(const nlohmann::json& c, const nlohmann::json& merkle) {
  std::vector<std::string> out;
  for (uint64_t i = 0; i < c["tree_size"].get<uint64_t>(); ++i) {
    if (c["leaves"] == "merkle.json") {
      std::string hex = merkle["leaves_hex"][i];
      std::string bytes;
      for (size_t k = 0; k < hex.size(); k += 2) bytes.push_back(static_cast<char>(std::stoi(hex.substr(k, 2), 0, 16)));
      out.push_back(bytes);
    } else {
      out.push_back("leaf " + std::to_string(i));
    }
  }
  return out;
}

// The walk of `seqs` over `leaves`, the ranges' hashes read from `nodes` in
// order: the root, or the first error. *used counts the hashes read.
absl::StatusOr<Hash> Walk(const std::vector<std::string>& leaves, const std::vector<uint64_t>& seqs,
                          const std::vector<Hash>& nodes, size_t* used, std::optional<uint64_t> watch = std::nullopt,
                          std::vector<Hash>* path = nullptr) {
  MultiproofWalk walk(leaves.size(), watch);
  *used = 0;
  auto next = [&](uint64_t, uint64_t) -> absl::StatusOr<Hash> {
    if (*used == nodes.size()) return absl::NotFoundError("ends early");
    return nodes[(*used)++];
  };
  for (uint64_t s : seqs) {
    if (auto st = walk.Add(s, hash::LeafHash(leaves[s]), next); !st.ok()) return st;
  }
  auto root = walk.Finish(next);
  if (root.ok() && path != nullptr) *path = walk.watched_path();
  return root;
}

TEST(Multiproof, EveryGoldenCaseLeadsToItsRootAndGivesItsInclusionProofs) {
  nlohmann::json v = Vectors("multiproof.json"), merkle = Vectors("merkle.json");
  ASSERT_GT(v["cases"].size(), 40u);
  for (const auto& c : v["cases"]) {
    SCOPED_TRACE(c.dump().substr(0, 120));
    std::vector<std::string> leaves = Leaves(c, merkle);
    std::vector<uint64_t> seqs = c["seqs"];
    std::vector<Hash> nodes;
    for (const auto& h : c["nodes"]) nodes.push_back(FromHex(h));
    size_t used = 0;
    auto root = Walk(leaves, seqs, nodes, &used);
    ASSERT_TRUE(root.ok()) << root.status();
    EXPECT_EQ(hash::Hex(*root), c["root"]);
    EXPECT_EQ(used, nodes.size());
    for (const auto& [seq, want] : c["inclusion"].items()) {
      std::vector<Hash> path;
      ASSERT_TRUE(Walk(leaves, seqs, nodes, &used, std::stoull(seq), &path).ok());
      std::vector<std::string> got;
      for (const Hash& h : path) got.push_back(hash::Hex(h));
      EXPECT_EQ(got, want.get<std::vector<std::string>>()) << "seq " << seq;
    }
  }
}

TEST(Multiproof, EveryBrokenGoldenListIsRefusedAsTheVectorsSay) {
  nlohmann::json v = Vectors("multiproof.json"), merkle = Vectors("merkle.json");
  const nlohmann::json* base = nullptr;
  for (const auto& c : v["cases"]) {
    if (c["tree_size"] == 37 && c["seqs"] == std::vector<uint64_t>{1, 2, 3, 17, 31, 32, 33}) base = &c;
  }
  ASSERT_NE(base, nullptr);
  std::vector<std::string> leaves = Leaves(*base, merkle);
  ASSERT_FALSE(v["broken"].empty());
  for (const auto& b : v["broken"]) {
    SCOPED_TRACE(b["why"].get<std::string>());
    std::vector<uint64_t> seqs = b.contains("seqs") ? b["seqs"] : (*base)["seqs"];
    std::vector<Hash> nodes;
    for (const auto& h : b["nodes"]) nodes.push_back(FromHex(h));
    size_t used = 0;
    auto root = Walk(leaves, seqs, nodes, &used);
    std::string refusal = b["refusal"];
    if (refusal == "ends early") {
      EXPECT_TRUE(absl::IsNotFound(root.status())) << root.status();
    } else if (refusal == "left over") {
      ASSERT_TRUE(root.ok());
      EXPECT_LT(used, nodes.size());
    } else {
      ASSERT_EQ(refusal, "root");
      // Another root, or (with other seqs) a list used up or left over.
      EXPECT_TRUE(!root.ok() || used != nodes.size() || hash::Hex(*root) != (*base)["root"]);
    }
  }
}

// The walk's ranges asked of the tree, against RFC 9162 proofs built by
// InclusionProof, for random trees and sets.
TEST(Multiproof, ItsRangesComeFromTheTreeAndItsPathsAreTheRfcPaths) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    uint64_t size = 1 + rng() % 300;
    std::vector<Hash> leaves;
    for (uint64_t i = 0; i < size; ++i) leaves.push_back(hash::LeafHash("x" + std::to_string(i)));
    // Nodes of the tree, by (level, index).
    std::map<std::pair<int, uint64_t>, Hash> tree;
    for (uint64_t i = 0; i < size; ++i) tree[{0, i}] = leaves[i];
    for (int level = 1; (uint64_t{1} << level) <= size; ++level) {
      for (uint64_t i = 0; (i + 1) << level <= size; ++i) {
        tree[{level, i}] = hash::NodeHash(tree[{level - 1, 2 * i}], tree[{level - 1, 2 * i + 1}]);
      }
    }
    auto node = [&](int level, uint64_t index) -> absl::StatusOr<Hash> {
      auto it = tree.find({level, index});
      if (it == tree.end()) return absl::NotFoundError(absl::StrCat("node ", level, "/", index));
      return it->second;
    };
    std::vector<uint64_t> seqs;
    int mode = round % 3;
    for (uint64_t i = 0; i < size; ++i) {
      if (mode == 0 ? rng() % 4 == 0 : mode == 1 ? (i >= size / 3 && i < size / 2) : rng() % 50 == 0) {
        seqs.push_back(i);
      }
    }
    std::optional<uint64_t> watch;
    if (!seqs.empty()) watch = seqs[rng() % seqs.size()];
    MultiproofWalk walk(size, watch);
    size_t asked = 0;
    auto range = [&](uint64_t begin, uint64_t end) {
      ++asked;
      return SubtreeHash(begin, end - begin, size, node);
    };
    for (uint64_t s : seqs) ASSERT_TRUE(walk.Add(s, leaves[s], range).ok());
    auto root = walk.Finish(range);
    ASSERT_TRUE(root.ok()) << root.status();
    EXPECT_EQ(*root, *RootHash(size, node)) << "size " << size;
    EXPECT_LE(asked, std::max<size_t>(1, seqs.size() * std::bit_width(size)));
    if (watch) {
      EXPECT_EQ(walk.watched_path(), *InclusionProof(*watch, size, node)) << "size " << size << " seq " << *watch;
    }
  }
}

TEST(Multiproof, SeqsOutOfOrderOrOutsideTheTreeAreRefused) {
  auto range = [](uint64_t, uint64_t) -> absl::StatusOr<Hash> { return Hash{}; };
  MultiproofWalk walk(10);
  ASSERT_TRUE(walk.Add(4, Hash{}, range).ok());
  EXPECT_THAT(std::string(walk.Add(4, Hash{}, range).message()), testing::HasSubstr("not above the last seq, 4"));
  EXPECT_THAT(std::string(walk.Add(10, Hash{}, range).message()), testing::HasSubstr("not in the tree of size 10"));
  ASSERT_TRUE(walk.Finish(range).ok());
  EXPECT_THAT(std::string(walk.Add(7, Hash{}, range).message()), testing::HasSubstr("after the walk's end"));
}

TEST(Multiproof, AnEmptySetIsTheRootAloneAndAWholeTreeNeedsNoHash) {
  std::vector<std::string> leaves = {"a", "b", "c", "d", "e"};
  std::vector<Hash> hashes;
  for (const auto& l : leaves) hashes.push_back(hash::LeafHash(l));
  size_t asked = 0;
  MultiproofWalk none(5);
  auto root = none.Finish([&](uint64_t b, uint64_t e) -> absl::StatusOr<Hash> {
    ++asked;
    EXPECT_EQ(b, 0u);
    EXPECT_EQ(e, 5u);
    return Hash{1};
  });
  EXPECT_EQ(asked, 1u);
  EXPECT_EQ(*root, Hash{1});
  MultiproofWalk all(5);
  auto never = [](uint64_t, uint64_t) -> absl::StatusOr<Hash> { return absl::InternalError("asked"); };
  for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(all.Add(i, hashes[i], never).ok());
  auto whole = all.Finish(never);
  ASSERT_TRUE(whole.ok()) << whole.status();
  Hash want = hash::NodeHash(hash::NodeHash(hash::NodeHash(hashes[0], hashes[1]), hash::NodeHash(hashes[2], hashes[3])),
                             hashes[4]);
  EXPECT_EQ(*whole, want);
}

}  // namespace
}  // namespace ledger::merkle
