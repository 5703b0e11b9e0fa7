#include "ledger/format/runmap/runmap.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/util/status_matchers.h"

namespace ledger::runmap {
namespace {

using hash::Hex;
using ::ledger::testing::StatusIs;
using nlohmann::json;
using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::Matcher;
using ::testing::StartsWith;

Key RandomKey(std::mt19937_64& rng) {
  Key k;
  for (auto& b : k) b = static_cast<uint8_t>(rng());
  return k;
}

Head RandomHead(std::mt19937_64& rng) {
  Head h;
  h.count = 1 + rng() % 1000;
  h.last_seq = h.count - 1 + rng() % 1000000;
  for (auto& b : h.last_leaf_hash) b = static_cast<uint8_t>(rng());
  return h;
}

// The definition in CONTRACT.md written as literally as possible, over the
// sorted leaves, to check the cached implementation against.
Hash NaiveSubtree(const std::vector<Leaf>& leaves, int depth) {
  if (leaves.empty()) return EmptyHash();
  if (leaves.size() == 1) return LeafHash(leaves[0].key, leaves[0].head);
  std::vector<Leaf> left, right;
  for (const Leaf& l : leaves) (Bit(l.key, depth) == 0 ? left : right).push_back(l);
  return NodeHash(depth, NaiveSubtree(left, depth + 1), NaiveSubtree(right, depth + 1));
}

Hash NaiveRoot(const std::map<Key, Head>& m) {
  std::vector<Leaf> leaves;
  for (const auto& [k, h] : m) leaves.push_back({k, h});
  return NaiveSubtree(leaves, 0);
}

// The v1 key (notes of versions 2 and 3; runmap.json's vectors).
absl::StatusOr<Key> RunKey1(std::string_view team, std::string_view run_id) {
  return RunKey(team, run_id, KeyVersion::kV1);
}

TEST(RunKey, IsTheHashOfTheTaggedTeamAndRun) {
  std::string in = std::string("evidence-ledger/run-key/v1") + '\0' + '\x05' + "alphar-1";
  EXPECT_EQ(*RunKey1("alpha", "r-1"), hash::Sha256(in));
  // The team's length keeps ("ab", "c") and ("a", "bc") apart.
  EXPECT_NE(*RunKey1("ab", "c"), *RunKey1("a", "bc"));
}

TEST(RunKey, Version2IsTheTeamKeysFirst8BytesThenTheTaggedHash) {
  std::string in = std::string("evidence-ledger/run-key/v2") + '\0' + '\x05' + "alphar-1";
  Key expected;
  Hash team = *TeamKey("alpha"), run = hash::Sha256(in);
  std::copy(team.begin(), team.begin() + 8, expected.begin());
  std::copy(run.begin(), run.begin() + 24, expected.begin() + 8);
  EXPECT_EQ(*RunKey("alpha", "r-1", KeyVersion::kV2), expected);
  EXPECT_NE(*RunKey("ab", "c", KeyVersion::kV2), *RunKey("a", "bc", KeyVersion::kV2));
  EXPECT_EQ(RunKey("Alpha", "r", KeyVersion::kV2).status().message(), "team: must be 1-63 bytes of [a-z0-9-]");
  EXPECT_EQ(RunKey("alpha", "", KeyVersion::kV2).status().message(), "run_id: must be 1-128 bytes");
}

TEST(RunKey, TheNoteVersionSaysWhichKeys) {
  EXPECT_EQ(KeysOfNote(1), std::nullopt);
  EXPECT_EQ(KeysOfNote(2), KeyVersion::kV1);
  EXPECT_EQ(KeysOfNote(3), KeyVersion::kV1);
  EXPECT_EQ(KeysOfNote(4), KeyVersion::kV2);
  EXPECT_EQ(KeysOfNote(5), std::nullopt);
}

// What CONTRACT section 6a, "What a proof reveals", rests on: under v2 keys
// the absence proof of any made-up run of a team that has runs ends at a run
// of that team, while under v1 keys an identity reading one team can choose
// run ids whose proofs show another team's run.
TEST(RunKey, AnAbsenceProofUnderV2KeysShowsOnlyRunsOfItsTeam) {
  for (KeyVersion keys : {KeyVersion::kV1, KeyVersion::kV2}) {
    RunMap m;
    std::map<Key, std::string> team_of;
    for (int i = 0; i < 200; ++i) {
      for (const char* team : {"team-a", "team-b", "team-c"}) {
        if (std::string(team) == "team-b" && i >= 2) continue;  // team-b has two runs
        Key k = *RunKey(team, absl::StrCat("run-", i), keys);
        ASSERT_TRUE(m.Set(k, Head{1, static_cast<uint64_t>(i), {}}).ok());
        team_of[k] = team;
      }
    }
    int foreign = 0;
    for (int guess = 0; guess < 2000; ++guess) {
      auto proof = m.ProveAbsence(*RunKey("team-b", absl::StrCat("made-up-", guess), keys));
      ASSERT_TRUE(proof.ok());
      if (proof->leaf.has_value() && team_of.at(proof->leaf->key) != "team-b") ++foreign;
    }
    if (keys == KeyVersion::kV1) {
      EXPECT_GT(foreign, 1000);  // the oracle: most proofs show a run of team-a or team-c
    } else {
      EXPECT_EQ(foreign, 0);
    }
  }
}

TEST(RunKey, RefusesATeamOrRunOutsideTheContract) {
  EXPECT_EQ(RunKey1("", "r").status(), absl::InvalidArgumentError("team: must be 1-63 bytes of [a-z0-9-]"));
  EXPECT_EQ(RunKey1("Alpha", "r").status(), absl::InvalidArgumentError("team: must be 1-63 bytes of [a-z0-9-]"));
  EXPECT_EQ(RunKey1(std::string(64, 'a'), "r").status(),
            absl::InvalidArgumentError("team: must be 1-63 bytes of [a-z0-9-]"));
  EXPECT_TRUE(RunKey1(std::string(63, 'a'), std::string(128, 'r')).ok());
  EXPECT_EQ(RunKey1("alpha", "").status(), absl::InvalidArgumentError("run_id: must be 1-128 bytes"));
  EXPECT_EQ(RunKey1("alpha", std::string(129, 'r')).status(),
            absl::InvalidArgumentError("run_id: must be 1-128 bytes"));
}

TEST(HeadBytes, ReadBackGivesTheHeadAndOtherLengthsAreRefused) {
  Head head{3, 0x0102030405060708, {}};
  head.last_leaf_hash[0] = 0xab;
  head.last_leaf_hash[31] = 0xcd;
  std::string bytes = HeadBytes(head);
  ASSERT_EQ(bytes.size(), 48u);
  EXPECT_EQ(bytes.substr(8, 8), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  EXPECT_EQ(HeadOfBytes(bytes), head);
  EXPECT_EQ(HeadOfBytes(bytes.substr(1)), std::nullopt);
  EXPECT_EQ(HeadOfBytes(bytes + "x"), std::nullopt);
}

TEST(RunMap, SetRefusesAnImpossibleHeadAndChangesNothing) {
  RunMap m;
  Key k = *RunKey1("alpha", "r");
  EXPECT_EQ(m.Set(k, Head{0, 5, {}}), absl::InvalidArgumentError("count: must be at least 1"));
  EXPECT_EQ(m.Set(k, Head{7, 5, {}}), absl::InvalidArgumentError("count: must be at most last_seq + 1"));
  EXPECT_EQ(m.Set(k, Head{1, uint64_t{1} << 53, {}}), absl::InvalidArgumentError("last_seq: must be at most 2^53 - 2"));
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.Root(), EmptyHash());
}

TEST(RunMap, EmptyMapAndOneRunHaveTheStatedRoots) {
  RunMap m;
  EXPECT_EQ(m.Root(), hash::Sha256(std::string("\x05") + "evidence-ledger/run-map/v1"));
  Key k = *RunKey1("alpha", "r");
  Head h{3, 9, hash::Sha256("x")};
  ASSERT_TRUE(m.Set(k, h).ok());
  EXPECT_EQ(m.Root(), LeafHash(k, h));
  auto proof = m.ProveInclusion(k);
  ASSERT_TRUE(proof.ok());
  EXPECT_TRUE(proof->siblings.empty());
  EXPECT_TRUE(VerifyInclusion(m.Root(), k, h, proof->siblings).ok());
}

TEST(RunMap, CachedRootEqualsTheDefinitionAfterEveryInsertAndUpdate) {
  std::mt19937_64 rng(7);
  RunMap m;
  std::map<Key, Head> ref;
  std::vector<Key> keys;
  for (int i = 0; i < 400; ++i) {
    Key k = (i % 3 == 2) ? keys[rng() % keys.size()] : RandomKey(rng);
    if (i % 3 != 2) keys.push_back(k);
    Head h = RandomHead(rng);
    ASSERT_TRUE(m.Set(k, h).ok());
    ref[k] = h;
    if (i % 7 == 0) {
      ASSERT_EQ(m.Root(), NaiveRoot(ref)) << i;
    }
  }
  EXPECT_EQ(m.Root(), NaiveRoot(ref));
}

TEST(RunMap, RootIsIndependentOfInsertionOrder) {
  std::mt19937_64 rng(11);
  std::vector<Leaf> leaves;
  for (int i = 0; i < 3000; ++i) leaves.push_back({RandomKey(rng), RandomHead(rng)});
  RunMap a;
  for (const Leaf& l : leaves) ASSERT_TRUE(a.Set(l.key, l.head).ok());
  for (int round = 0; round < 3; ++round) {
    std::shuffle(leaves.begin(), leaves.end(), rng);
    RunMap b;
    // Interleaved Roots fill the cache at different moments.
    for (size_t i = 0; i < leaves.size(); ++i) {
      ASSERT_TRUE(b.Set(leaves[i].key, leaves[i].head).ok());
      if (i % 500 == 0) b.Root();
    }
    EXPECT_EQ(a.Root(), b.Root());
  }
}

TEST(RunMap, AnUpdateRehashesOnlyThePathOfTheChangedRun) {
  std::mt19937_64 rng(3);
  RunMap m;
  std::vector<Key> keys;
  for (int i = 0; i < 1 << 14; ++i) {
    keys.push_back(RandomKey(rng));
    ASSERT_TRUE(m.Set(keys.back(), RandomHead(rng)).ok());
  }
  m.Root();
  for (int i = 0; i < 20; ++i) {
    const Key& k = keys[rng() % keys.size()];
    size_t depth = m.ProveInclusion(k)->siblings.size();
    uint64_t before = m.nodes_hashed();
    ASSERT_TRUE(m.Set(k, RandomHead(rng)).ok());
    m.Root();
    EXPECT_EQ(m.nodes_hashed() - before, depth);
  }
}

// A Source with no node cache at all (the reference path) and one whose
// leaf reads fail (fault injection), over the same sorted leaves.
class PlainSource {
 public:
  explicit PlainSource(const std::map<Key, Head>& leaves) : leaves_(leaves) {}
  absl::StatusOr<int> Leaves(const NodeId& n, Leaf* first) {
    if (fail_after_ >= 0 && reads_++ >= fail_after_) return absl::UnavailableError("store: read failed");
    std::vector<Leaf> under;
    for (const auto& [k, h] : leaves_) {
      if (NodeOf(k, n.depth) == n) under.push_back({k, h});
    }
    if (!under.empty()) *first = under[0];
    return static_cast<int>(std::min<size_t>(under.size(), 2));
  }
  void FailAfter(int reads) { fail_after_ = reads, reads_ = 0; }
  template <typename F>
  auto With(F f) {
    auto leaves = [this](const NodeId& n, Leaf* first) { return Leaves(n, first); };
    auto node = [](const NodeId&) -> absl::StatusOr<std::optional<Hash>> { return std::nullopt; };
    auto put = [](const NodeId&, const Hash&) {};
    return f(Source{leaves, node, put});
  }

 private:
  const std::map<Key, Head>& leaves_;
  int fail_after_ = -1, reads_ = 0;
};

TEST(Source, WithoutACacheGivesTheSameRootAndProofs) {
  std::mt19937_64 rng(5);
  std::map<Key, Head> ref;
  RunMap m;
  for (int i = 0; i < 200; ++i) {
    Key k = RandomKey(rng);
    ref[k] = RandomHead(rng);
    ASSERT_TRUE(m.Set(k, ref[k]).ok());
  }
  PlainSource plain(ref);
  EXPECT_EQ(*plain.With([](const Source& s) { return SubtreeHash(NodeId{}, s); }), m.Root());
  for (const auto& [k, h] : ref) {
    absl::StatusOr<Path> path = plain.With([&k = k](const Source& s) { return ProvePath(k, s); });
    ASSERT_TRUE(path.ok());
    ASSERT_TRUE(path->found.has_value());
    EXPECT_EQ(path->siblings, m.ProveInclusion(k)->siblings);
  }
}

TEST(Source, AnErrorFromTheSourceIsPassedThroughUnchanged) {
  std::mt19937_64 rng(6);
  std::map<Key, Head> ref;
  for (int i = 0; i < 50; ++i) ref[RandomKey(rng)] = RandomHead(rng);
  PlainSource plain(ref);
  for (int after : {0, 1, 5, 20}) {
    plain.FailAfter(after);
    EXPECT_EQ(plain.With([](const Source& s) { return SubtreeHash(NodeId{}, s); }).status(),
              absl::UnavailableError("store: read failed"));
    plain.FailAfter(after);
    EXPECT_EQ(plain.With([&](const Source& s) { return ProvePath(ref.begin()->first, s); }).status(),
              absl::UnavailableError("store: read failed"));
  }
}

class RandomMap : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(42);
    for (int i = 0; i < 5000; ++i) {
      Leaf l{RandomKey(rng), RandomHead(rng)};
      present_.push_back(l);
      ASSERT_TRUE(map_.Set(l.key, l.head).ok());
    }
    for (int i = 0; i < 1000; ++i) absent_.push_back(RandomKey(rng));
    root_ = map_.Root();
  }
  RunMap map_;
  std::vector<Leaf> present_;
  std::vector<Key> absent_;
  Hash root_;
};

TEST_F(RandomMap, EveryPresentRunsInclusionProofVerifies) {
  size_t longest = 0;
  for (const Leaf& l : present_) {
    auto proof = map_.ProveInclusion(l.key);
    ASSERT_TRUE(proof.ok());
    ASSERT_TRUE(VerifyInclusion(root_, l.key, l.head, proof->siblings).ok());
    longest = std::max(longest, proof->siblings.size());
    EXPECT_EQ(map_.ProveAbsence(l.key).status(), absl::FailedPreconditionError("key: the run is in the map"));
  }
  EXPECT_LE(longest, 40u);
}

TEST_F(RandomMap, EveryAbsentKeysAbsenceProofVerifies) {
  int with_leaf = 0;
  for (const Key& k : absent_) {
    auto proof = map_.ProveAbsence(k);
    ASSERT_TRUE(proof.ok());
    ASSERT_TRUE(VerifyAbsence(root_, k, *proof).ok());
    with_leaf += proof->leaf.has_value();
    EXPECT_EQ(map_.ProveInclusion(k).status(), absl::NotFoundError("key: no run with this key in the map"));
  }
  // Both shapes of absence occur.
  EXPECT_GT(with_leaf, 0);
  EXPECT_LT(with_leaf, static_cast<int>(absent_.size()));
}

void FlipBit(uint8_t* bytes, int bit) { bytes[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8)); }

// The refusal of a proof that is well formed but leads to another root
// than `root`.
Matcher<absl::Status> LeadsElsewhere(const Hash& root) {
  return StatusIs(absl::StatusCode::kFailedPrecondition,
                  AllOf(StartsWith("proof: leads to root "), EndsWith(", expected " + Hex(root))));
}

// How a proof of `head` is refused (CheckHead's contract: 1 <= count <=
// last_seq + 1 <= 2^53 - 1), or, for a head that keeps it, by the root it
// leads to.
Matcher<absl::Status> RefusedHead(const Head& head, const Hash& root) {
  if (head.count < 1) return StatusIs(absl::StatusCode::kInvalidArgument, "count: must be at least 1");
  if (head.last_seq > (uint64_t{1} << 53) - 2) {
    return StatusIs(absl::StatusCode::kInvalidArgument, "last_seq: must be at most 2^53 - 2");
  }
  if (head.count > head.last_seq + 1) {
    return StatusIs(absl::StatusCode::kInvalidArgument, "count: must be at most last_seq + 1");
  }
  return LeadsElsewhere(root);
}

// How an absence proof whose leaf is `leaf`, at depth `depth`, is refused
// for `key`: the leaf must be another key sharing the key's first `depth`
// bits; past those rules, by the root it leads to.
Matcher<absl::Status> RefusedAbsence(const Key& key, const Key& leaf, int depth, const Hash& root) {
  if (leaf == key) {
    return StatusIs(absl::StatusCode::kInvalidArgument, "leaf.key: is the key whose absence is claimed");
  }
  int shared = 0;
  while (shared < depth && Bit(leaf, shared) == Bit(key, shared)) ++shared;
  if (shared < depth) {
    return StatusIs(absl::StatusCode::kInvalidArgument,
                    absl::StrCat("leaf.key: must share the first ", depth, " bits of the key (the leaf's depth)"));
  }
  return LeadsElsewhere(root);
}

TEST_F(RandomMap, AnySingleBitFlipInAnInclusionProofOrValueFails) {
  const Matcher<absl::Status> elsewhere = LeadsElsewhere(root_);
  for (int i = 0; i < 10; ++i) {
    const Leaf& l = present_[i * 97];
    std::vector<Hash> sib = map_.ProveInclusion(l.key)->siblings;
    for (size_t s = 0; s < sib.size(); ++s) {
      for (int b = 0; b < 256; ++b) {
        std::vector<Hash> bad = sib;
        FlipBit(bad[s].data(), b);
        ASSERT_THAT(VerifyInclusion(root_, l.key, l.head, bad), elsewhere) << s << " " << b;
      }
    }
    for (int b = 0; b < 256; ++b) {
      Key key = l.key;
      FlipBit(key.data(), b);
      ASSERT_THAT(VerifyInclusion(root_, key, l.head, sib), elsewhere) << b;
      Head head = l.head;
      FlipBit(head.last_leaf_hash.data(), b);
      ASSERT_THAT(VerifyInclusion(root_, l.key, head, sib), elsewhere) << b;
      Hash root = root_;
      FlipBit(root.data(), b);
      ASSERT_THAT(VerifyInclusion(root, l.key, l.head, sib),
                  StatusIs(absl::StatusCode::kFailedPrecondition,
                           "proof: leads to root " + Hex(root_) + ", expected " + Hex(root)))
          << b;
    }
    for (int b = 0; b < 64; ++b) {
      Head head = l.head;
      head.count ^= uint64_t{1} << b;
      ASSERT_THAT(VerifyInclusion(root_, l.key, head, sib), RefusedHead(head, root_)) << b;
      head = l.head;
      head.last_seq ^= uint64_t{1} << b;
      ASSERT_THAT(VerifyInclusion(root_, l.key, head, sib), RefusedHead(head, root_)) << b;
    }
    std::vector<Hash> shorter(sib.begin() + 1, sib.end());
    EXPECT_THAT(VerifyInclusion(root_, l.key, l.head, shorter), elsewhere);
    std::vector<Hash> longer = sib;
    longer.insert(longer.begin(), EmptyHash());
    EXPECT_THAT(VerifyInclusion(root_, l.key, l.head, longer), elsewhere);
  }
}

TEST_F(RandomMap, AnySingleBitFlipInAnAbsenceProofFails) {
  const Matcher<absl::Status> elsewhere = LeadsElsewhere(root_);
  int checked_leaf = 0, checked_empty = 0;
  for (const Key& k : absent_) {
    AbsenceProof proof = *map_.ProveAbsence(k);
    int& checked = proof.leaf ? checked_leaf : checked_empty;
    if (checked >= 5) continue;
    ++checked;
    for (size_t s = 0; s < proof.siblings.size(); ++s) {
      for (int b = 0; b < 256; ++b) {
        AbsenceProof bad = proof;
        FlipBit(bad.siblings[s].data(), b);
        ASSERT_THAT(VerifyAbsence(root_, k, bad), elsewhere) << s << " " << b;
      }
    }
    const int depth = static_cast<int>(proof.siblings.size());
    if (proof.leaf) {
      for (int b = 0; b < 256; ++b) {
        AbsenceProof bad = proof;
        FlipBit(bad.leaf->key.data(), b);
        ASSERT_THAT(VerifyAbsence(root_, k, bad), RefusedAbsence(k, bad.leaf->key, depth, root_)) << b;
        bad = proof;
        FlipBit(bad.leaf->value_hash.data(), b);
        ASSERT_THAT(VerifyAbsence(root_, k, bad), elsewhere) << b;
      }
      AbsenceProof bad = proof;
      bad.leaf.reset();
      EXPECT_THAT(VerifyAbsence(root_, k, bad), elsewhere);
      // The occupying leaf's own key: refused before any hashing.
      EXPECT_EQ(VerifyAbsence(root_, proof.leaf->key, proof),
                absl::InvalidArgumentError("leaf.key: is the key whose absence is claimed"));
    }
    // A present key never has a verifying absence proof, whichever path is
    // offered.
    for (const Leaf& l : present_) {
      ASSERT_THAT(VerifyAbsence(root_, l.key, proof),
                  proof.leaf ? RefusedAbsence(l.key, proof.leaf->key, depth, root_) : elsewhere)
          << Hex(l.key);
    }
  }
  EXPECT_EQ(checked_leaf, 5);
  EXPECT_EQ(checked_empty, 5);
}

// The golden vectors: tests/vectors/runmap.json.
json ReadVectors(const std::string& name = "runmap.json") {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/" + name);
  return json::parse(in);
}

Hash H(const json& j) { return *hash::ParseHex(j.get<std::string>()); }

Head HeadOf(const json& j) {
  return Head{j.at("count").get<uint64_t>(), j.at("last_seq").get<uint64_t>(), H(j.at("last_leaf_hash"))};
}

json HeadJson(const Head& h) {
  return {{"count", h.count}, {"last_seq", h.last_seq}, {"last_leaf_hash", Hex(h.last_leaf_hash)}};
}

std::vector<Hash> Hashes(const json& j) {
  std::vector<Hash> out;
  for (const auto& h : j) out.push_back(H(h));
  return out;
}

json HexList(const std::vector<Hash>& hs) {
  json out = json::array();
  for (const Hash& h : hs) out.push_back(Hex(h));
  return out;
}

AbsenceProof AbsenceOf(const json& j) {
  AbsenceProof p{Hashes(j.at("siblings")), std::nullopt};
  if (j.contains("leaf")) p.leaf = AbsenceProof::Other{H(j["leaf"]["key"]), H(j["leaf"]["value_hash"])};
  return p;
}

json AbsenceJson(const Key& key, const AbsenceProof& p) {
  json j = {{"key", Hex(key)}, {"siblings", HexList(p.siblings)}};
  if (p.leaf) j["leaf"] = {{"key", Hex(p.leaf->key)}, {"value_hash", Hex(p.leaf->value_hash)}};
  return j;
}

// A run's key, or in the team-head map's vectors (no run_id) a team's.
Key KeyOf(const json& j, KeyVersion keys = KeyVersion::kV1) {
  if (!j.contains("run_id")) return *TeamKey(j.at("team").get<std::string>());
  return *RunKey(j.at("team").get<std::string>(), j.at("run_id").get<std::string>(), keys);
}

// runmap.json and teammap.json (the team-head map: the same map keyed by
// team, CONTRACT section 6a), made from the contract's text.
class GoldenVectors : public ::testing::TestWithParam<const char*> {
 protected:
  Key KeyOf(const json& j) const {
    return ::ledger::runmap::KeyOf(j, std::string(GetParam()) == "runmap_v2.json" ? KeyVersion::kV2 : KeyVersion::kV1);
  }
};

TEST_P(GoldenVectors, RootsAndProofsAreReproduced) {
  json v = ReadVectors(GetParam());
  EXPECT_EQ(Hex(EmptyHash()), v["empty_root"]);
  RunMap m;
  for (const json& step : v["steps"]) {
    Key k = KeyOf(step);
    ASSERT_EQ(Hex(k), step["key"]);
    Head h = HeadOf(step["head"]);
    EXPECT_EQ(Hex(ValueHash(h)), step["value_hash"]);
    EXPECT_EQ(Hex(LeafHash(k, h)), step["leaf_hash"]);
    ASSERT_TRUE(m.Set(k, h).ok());
    EXPECT_EQ(Hex(m.Root()), step["root"]);
  }
  Hash root = H(v["root"]);
  EXPECT_EQ(m.Root(), root);
  for (const json& p : v["inclusion"]) {
    Key k = KeyOf(p);
    EXPECT_EQ(HexList(m.ProveInclusion(k)->siblings), p["siblings"]);
    EXPECT_TRUE(VerifyInclusion(root, k, HeadOf(p["head"]), Hashes(p["siblings"])).ok());
  }
  for (const json& p : v["absence"]) {
    Key k = KeyOf(p);
    json expected = {{"key", p["key"]}, {"siblings", p["siblings"]}};
    if (p.contains("leaf")) expected["leaf"] = p["leaf"];
    EXPECT_EQ(AbsenceJson(k, *m.ProveAbsence(k)), expected);
    EXPECT_TRUE(VerifyAbsence(root, k, AbsenceOf(p)).ok());
  }
  for (const json& t : v["tampered"]) {
    Key k = *hash::ParseHex(t["key"].get<std::string>());
    absl::Status s = t["kind"] == "inclusion" ? VerifyInclusion(root, k, HeadOf(t["head"]), Hashes(t["siblings"]))
                                              : VerifyAbsence(root, k, AbsenceOf(t));
    // The vectors give the message; its code follows from it: a proof that
    // leads to another root is FAILED_PRECONDITION, one that breaks a rule
    // of proofs or heads INVALID_ARGUMENT.
    const std::string error = t["error"];
    absl::StatusCode code = error.starts_with("proof: leads to root ") ? absl::StatusCode::kFailedPrecondition
                                                                       : absl::StatusCode::kInvalidArgument;
    EXPECT_THAT(s, StatusIs(code, error)) << t["reason"];
  }
}

INSTANTIATE_TEST_SUITE_P(Maps, GoldenVectors, ::testing::Values("runmap.json", "runmap_v2.json", "teammap.json"));

TEST(GoldenVectors, TeamKeysAreNotRunKeys) {
  EXPECT_EQ(Hex(*TeamKey("alpha")), Hex(hash::Sha256(std::string("evidence-ledger/team-key/v1\0\x05"
                                                                 "alpha",
                                                                 34))));
  EXPECT_NE(*TeamKey("alpha"), RunKeyOf("alpha", "", KeyVersion::kV1));
  EXPECT_EQ(TeamKey("Alpha").status().message(), "team: must be 1-63 bytes of [a-z0-9-]");
}

// Writes tests/vectors/runmap.json:
//   runmap_test --gtest_also_run_disabled_tests --gtest_filter='*WriteVectors'
TEST(GoldenVectors, DISABLED_WriteVectors) {
  // Two runs of one team whose keys share the longest prefix among 2^18.
  std::vector<std::pair<Key, std::string>> cands;
  for (int i = 0; i < (1 << 18); ++i) {
    std::string id = "run-" + std::to_string(i);
    cands.push_back({*RunKey1("alpha", id), id});
  }
  std::sort(cands.begin(), cands.end());
  size_t best = 0;
  int best_bits = -1;
  for (size_t i = 0; i + 1 < cands.size(); ++i) {
    int bits = 0;
    while (Bit(cands[i].first, bits) == Bit(cands[i + 1].first, bits)) ++bits;
    if (bits > best_bits) best_bits = bits, best = i;
  }
  struct Run {
    std::string team, run_id;
    Head head;
  };
  auto hh = [](std::string_view s) { return hash::Sha256(s); };
  std::vector<Run> runs = {
      {"alpha", "run-checkout-42", {3, 17, hh("a")}},
      {"beta", "run-checkout-42", {1, 4, hh("b")}},
      {"alpha", cands[best].second, {2, 30, hh("c")}},
      {"alpha", cands[best + 1].second, {5, 31, hh("d")}},
      {"gamma-2", "nightly/\xc3\xa9t\xc3\xa9 #7", {4096, 9000, hh("e")}},
      {"alpha", "run-checkout-42", {4, 33, hh("f")}},  // the update
  };
  json v;
  v["empty_root"] = Hex(EmptyHash());
  v["long_prefix"] = {
      {"team", "alpha"}, {"run_ids", {cands[best].second, cands[best + 1].second}}, {"common_bits", best_bits}};
  RunMap m;
  v["steps"] = json::array();
  for (const Run& r : runs) {
    Key k = *RunKey1(r.team, r.run_id);
    ASSERT_TRUE(m.Set(k, r.head).ok());
    v["steps"].push_back({{"team", r.team},
                          {"run_id", r.run_id},
                          {"key", Hex(k)},
                          {"head", HeadJson(r.head)},
                          {"value_hash", Hex(ValueHash(r.head))},
                          {"leaf_hash", Hex(LeafHash(k, r.head))},
                          {"root", Hex(m.Root())}});
  }
  Hash root = m.Root();
  v["root"] = Hex(root);
  v["inclusion"] = json::array();
  for (size_t i = 1; i < runs.size(); ++i) {
    Key k = *RunKey1(runs[i].team, runs[i].run_id);
    json p = {{"team", runs[i].team},
              {"run_id", runs[i].run_id},
              {"key", Hex(k)},
              {"head", HeadJson(runs[i].head)},
              {"siblings", HexList(m.ProveInclusion(k)->siblings)}};
    v["inclusion"].push_back(p);
  }
  // Absent runs: one whose path ends in an empty subtree, one that ends in
  // another run's leaf, and the run of another team with a present run_id.
  v["absence"] = json::array();
  auto add_absent = [&](const std::string& team, const std::string& id) {
    Key k = *RunKey1(team, id);
    json p = AbsenceJson(k, *m.ProveAbsence(k));
    p["team"] = team;
    p["run_id"] = id;
    v["absence"].push_back(p);
    return *m.ProveAbsence(k);
  };
  bool have_leaf = false, have_empty = false;
  for (int i = 0; !(have_leaf && have_empty); ++i) {
    std::string id = "run-absent-" + std::to_string(i);
    bool leaf = m.ProveAbsence(*RunKey1("alpha", id))->leaf.has_value();
    if (leaf ? have_leaf : have_empty) continue;
    (leaf ? have_leaf : have_empty) = true;
    add_absent("alpha", id);
  }
  add_absent("delta", "run-checkout-42");
  // Tampered proofs, each with the reason it must fail.
  v["tampered"] = json::array();
  auto tamper = [&](json t, const std::string& reason) {
    t["reason"] = reason;
    Key k = *hash::ParseHex(t["key"].get<std::string>());
    absl::Status s = t["kind"] == "inclusion" ? VerifyInclusion(root, k, HeadOf(t["head"]), Hashes(t["siblings"]))
                                              : VerifyAbsence(root, k, AbsenceOf(t));
    ASSERT_FALSE(s.ok()) << reason;
    t["error"] = std::string(s.message());
    v["tampered"].push_back(t);
  };
  json inc = v["inclusion"][2];  // the second long-prefix run
  inc["kind"] = "inclusion";
  inc.erase("team"), inc.erase("run_id");
  json t = inc;
  t["head"]["count"] = 4;
  tamper(t, "a shorter count than committed (the run's last entry dropped)");
  t = inc;
  t["head"]["last_seq"] = 30;
  tamper(t, "another last_seq than committed");
  t = inc;
  t["siblings"].erase(0);
  tamper(t, "the deepest sibling dropped: the leaf is placed one level too high");
  t = inc;
  std::swap(t["siblings"][0], t["siblings"][1]);
  tamper(t, "two siblings swapped");
  t = v["inclusion"][4];  // the updated run, with its head before the update
  t["kind"] = "inclusion";
  t.erase("team"), t.erase("run_id");
  t["head"] = v["steps"][0]["head"];
  tamper(t, "the head of an older state presented as current");
  t = json{{"kind", "inclusion"},
           {"key", v["absence"][2]["key"]},
           {"head", v["steps"][5]["head"]},
           {"siblings", v["inclusion"][4]["siblings"]}};
  tamper(t, "a run that is not in the map claimed with another run's proof");
  for (const json& a : v["absence"]) {
    if (!a.contains("leaf")) continue;
    t = a;
    t["kind"] = "absence";
    t.erase("team"), t.erase("run_id");
    t.erase("leaf");
    tamper(t, "the leaf that occupies the key's position replaced by an empty subtree");
    t = a;
    t["kind"] = "absence";
    t.erase("team"), t.erase("run_id");
    t["key"] = t["leaf"]["key"];
    tamper(t, "absence claimed for the key of the occupying leaf, a present run");
    break;
  }
  for (const json& a : v["absence"]) {
    if (a.contains("leaf")) continue;
    Key k = KeyOf(v["steps"][2]);  // present: the first long-prefix run
    t = {{"kind", "absence"}, {"key", Hex(k)}, {"siblings", HexList(m.ProveInclusion(k)->siblings)}};
    tamper(t, "absence of a present run claimed by an empty subtree in its place");
    Key other = KeyOf(v["steps"][3]);
    t["leaf"] = {{"key", Hex(other)}, {"value_hash", v["steps"][3]["value_hash"]}};
    tamper(t, "absence of a present run claimed with its neighbour's leaf in its place");
    break;
  }
  std::ofstream out(std::string(std::getenv("LEDGER_VECTORS")) + "/runmap.json");
  out << v.dump(2) << "\n";
}

}  // namespace
}  // namespace ledger::runmap
