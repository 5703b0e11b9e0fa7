#include "export/verify/cc/proof_line.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ledger::verify {
namespace {

hash::Hash Nth(int n) { return hash::Sha256(std::to_string(n)); }

// A proof line as the exporter writes it, or with a space after each comma.
std::string Line(int64_t seq, const hash::Hash& leaf, const std::vector<hash::Hash>& path, bool spaced = false) {
  std::string sep = spaced ? ", " : ",";
  std::string out =
      "{\"seq\":" + std::to_string(seq) + sep + "\"leaf_hash\":\"" + hash::Hex(leaf) + "\"" + sep + "\"inclusion\":[";
  for (size_t i = 0; i < path.size(); ++i) out += (i ? sep : "") + "\"" + hash::Hex(path[i]) + "\"";
  return out + "]}";
}

std::vector<std::string> Hex(const std::vector<hash::Hash>& path) {
  std::vector<std::string> out;
  for (const auto& h : path) out.push_back(hash::Hex(h));
  return out;
}

// Each line through one parser, in order, against the reference alone.
void ExpectSameAsReference(const std::vector<std::string>& lines) {
  ProofLineParser parser;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::optional<ProofLine> want = ParseProofLine(lines[i]);
    int64_t seq = -1;
    std::string_view leaf_hash;
    bool ok = parser.Parse(lines[i], &seq, &leaf_hash);
    ASSERT_EQ(ok, want.has_value()) << "line " << i << ": " << lines[i];
    if (!ok) continue;
    EXPECT_EQ(seq, want->seq) << "line " << i << ": " << lines[i];
    EXPECT_EQ(leaf_hash, want->leaf_hash) << "line " << i << ": " << lines[i];
    EXPECT_EQ(Hex(parser.path()), Hex(want->path)) << "line " << i << ": " << lines[i];
  }
}

TEST(ProofLineTest, ALineReadByTheReferenceLeavesNoHashesForTheNextLine) {
  std::vector<std::string> lines = {Line(1, Nth(1), {Nth(10), Nth(11), Nth(12)}, /*spaced=*/true),
                                    Line(2, Nth(2), {Nth(20), Nth(21), Nth(12)})};
  ExpectSameAsReference(lines);
  ProofLineParser parser;
  int64_t seq;
  std::string_view leaf_hash;
  ASSERT_TRUE(parser.Parse(lines[0], &seq, &leaf_hash));
  ASSERT_TRUE(parser.Parse(lines[1], &seq, &leaf_hash));
  EXPECT_EQ(Hex(parser.path()), Hex({Nth(20), Nth(21), Nth(12)}));
}

TEST(ProofLineTest, TheFastFormNeedsACommaBetweenHashes) {
  std::string line = Line(3, Nth(3), {Nth(30), Nth(31)});
  line.erase(line.find("\",\"", line.find("inclusion")) + 1, 1);
  EXPECT_FALSE(ParseProofLine(line).has_value());
  ExpectSameAsReference({Line(2, Nth(2), {Nth(30), Nth(31)}), line});
}

TEST(ProofLineTest, ReadsWhatTheReferenceReadsAndRefusesWhatItRefuses) {
  std::string good = Line(7, Nth(7), {Nth(70), Nth(71)});
  std::string upper = good;
  upper[upper.find("\"leaf_hash\":\"") + 13] = 'A';
  std::vector<std::string> lines = {
      good,
      Line(7, Nth(7), {}),
      R"({"inclusion":[],"leaf_hash":")" + hash::Hex(Nth(7)) + R"(","seq":7})",
      good.substr(0, good.size() - 2) + ",]}",
      good.substr(0, good.size() - 1) + ",\"more\":1}",
      upper,
      "{\"seq\":07" + good.substr(8),
      "{\"seq\":-7" + good.substr(8),
      "{\"seq\":12345678901234567" + good.substr(8),
      "{\"seq\":99999999999999999999" + good.substr(8),
      good + " ",
      "",
      "[]",
  };
  ExpectSameAsReference(lines);
}

// Neighbours' paths share their upper hashes, in every form the parser
// meets, one after another: each line is read as the reference reads it.
TEST(ProofLineTest, RandomSequencesOfLinesMatchTheReference) {
  std::mt19937 rng(8);
  std::vector<std::string> lines;
  std::vector<hash::Hash> path;
  for (int i = 0; i < 5000; ++i) {
    size_t depth = rng() % 12;
    path.resize(depth);
    for (size_t k = 0; k < depth; ++k) {
      if (rng() % 3 == 0) path[k] = Nth(static_cast<int>(rng() % 50));
    }
    std::string line = Line(i, Nth(i), path, rng() % 5 == 0);
    if (rng() % 20 == 0) line[rng() % line.size()] ^= static_cast<char>(1 + rng() % 127);
    lines.push_back(line);
  }
  ExpectSameAsReference(lines);
}

}  // namespace
}  // namespace ledger::verify
