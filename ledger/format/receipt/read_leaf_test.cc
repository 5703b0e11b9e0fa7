// ReadLeaf, the fast path of ParseLeaf, against ParseLeafByTree, the
// reference: on random leaves of every kind it must read them all and agree;
// on those leaves mutated, and on a list of near-canonical texts, it may
// decline but never accept what the reference refuses or read it otherwise.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/receipt/redaction.h"
#include "nlohmann/json.hpp"
#include "tests/util/status_matchers.h"

namespace ledger::receipt {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using ::ledger::testing::StatusIs;

class Random {
 public:
  explicit Random(uint32_t seed) : rng_(seed) {}

  size_t Below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool OneIn(size_t n) { return Below(n) == 0; }

  // Strings that exercise the escapes, multi-byte UTF-8 and the text the
  // fast path searches for.
  std::string String() {
    static const std::vector<std::string> kPieces = {"a",
                                                     "team-code",
                                                     "run-0042",
                                                     "0",
                                                     "\"",
                                                     "\\",
                                                     "\n",
                                                     "\t",
                                                     "\b",
                                                     "\f",
                                                     "\r",
                                                     "\x01",
                                                     "\x1f",
                                                     "\x7f",
                                                     "/",
                                                     "\xc3\xa9",
                                                     "\xe2\x82\xac",
                                                     "\xf0\x9f\x98\x80",
                                                     "\"kind\":\"model_call\"",
                                                     "kind",
                                                     " ",
                                                     "{",
                                                     "}",
                                                     ",",
                                                     ":",
                                                     "9f86d081884c7d65"};
    std::string s;
    for (size_t n = Below(6); n > 0; --n) s += kPieces[Below(kPieces.size())];
    return s;
  }

  int64_t Int() {
    static const std::vector<int64_t> kValues = {0, 1, -1, 200, 9007199254740991, -9007199254740991, 1767225600123456};
    return OneIn(2) ? kValues[Below(kValues.size())] : static_cast<int64_t>(Below(2'000'000'000)) - 1'000'000'000;
  }

  void Fill(Message* m) {
    const auto* d = m->GetDescriptor();
    const auto* rf = m->GetReflection();
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (f->real_containing_oneof() != nullptr || (!OneIn(2) && !OneIn(3))) continue;
      if (f->is_map()) {
        auto* r = static_cast<Receipt*>(m);
        for (size_t n = 1 + Below(3); n > 0; --n) {
          (*r->mutable_attributes())[OneIn(3) ? "kind" : String()] = OneIn(4) ? "model_call" : String();
        }
        continue;
      }
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_STRING:
          rf->SetString(m, f, String());
          break;
        case FieldDescriptor::CPPTYPE_INT64:
          rf->SetInt64(m, f, Int());
          break;
        case FieldDescriptor::CPPTYPE_ENUM:
          rf->SetEnumValue(m, f, 1 + static_cast<int>(Below(f->enum_type()->value_count() - 1)));
          break;
        default:
          break;
      }
    }
  }

  std::string Leaf() {
    Receipt r;
    Fill(&r);
    const auto* body = Receipt::descriptor()->FindOneofByName("body");
    Fill(r.GetReflection()->MutableMessage(&r, body->field(static_cast<int>(Below(body->field_count())))));
    hash::Hash prev;
    for (auto& b : prev) b = static_cast<uint8_t>(Below(256));
    std::optional<uint64_t> run_prev;
    if (OneIn(2)) run_prev = Below(1'000'000);
    return EncodeLeaf(Below(1'000'000), prev, run_prev, Int(), String(), Encode(r));
  }

  std::string Mutate(std::string leaf) {
    static const std::string kBytes = "\"\\{}:,-0159aAz \x01\x7f\x80\xc3\xff";
    size_t at = Below(leaf.size());
    switch (Below(5)) {
      case 0:
        leaf[at] = kBytes[Below(kBytes.size())];
        break;
      case 1:
        leaf.erase(at, 1 + Below(8));
        break;
      case 2:
        leaf.insert(at, 1, kBytes[Below(kBytes.size())]);
        break;
      case 3:
        leaf.insert(at, leaf.substr(Below(leaf.size()), Below(24)));
        break;
      default:
        leaf[at] = static_cast<char>(leaf[at] ^ (1 << Below(8)));
        break;
    }
    return leaf;
  }

 private:
  std::mt19937 rng_;
};

// "" when equal, else what differs.
std::string Diff(const Entry& a, const Entry& b) {
  if (a.seq != b.seq) return "seq";
  if (a.prev != b.prev) return "prev";
  if (a.run_prev != b.run_prev) return "run_prev";
  if (a.logged_at_us != b.logged_at_us) return "logged_at_us";
  if (a.emitter != b.emitter) return "emitter";
  if (!google::protobuf::util::MessageDifferencer::Equals(a.receipt, b.receipt)) {
    return "receipt: " + a.receipt.ShortDebugString() + " vs " + b.receipt.ShortDebugString();
  }
  return "";
}

TEST(ReadLeafTest, ReadsEveryCanonicalLeafAsTheReferenceDoes) {
  Random random(7);
  for (int i = 0; i < 3000; ++i) {
    std::string leaf = random.Leaf();
    Entry fast;
    ASSERT_TRUE(ReadLeaf(leaf, &fast)) << leaf;
    auto reference = ParseLeafByTree(leaf);
    ASSERT_TRUE(reference.ok()) << reference.status() << "\n" << leaf;
    ASSERT_EQ(Diff(fast, *reference), "") << leaf;
    auto team = TeamOf(leaf);
    if (reference->receipt.team().empty()) {
      EXPECT_THAT(team, StatusIs(absl::StatusCode::kInvalidArgument, "leaf: no receipt.team")) << leaf;
    } else {
      EXPECT_EQ(team.value_or(""), reference->receipt.team()) << leaf;
    }
  }
}

// The "leaf_bytes_utf8" and "line_utf8" strings anywhere in `j`.
void CollectLines(const nlohmann::json& j, const std::string& file,
                  std::vector<std::pair<std::string, std::string>>* lines) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      if ((key == "leaf_bytes_utf8" || key == "line_utf8") && value.is_string()) {
        lines->emplace_back(file, value.get<std::string>());
      }
      CollectLines(value, file, lines);
    }
  } else if (j.is_array()) {
    for (const auto& value : j) CollectLines(value, file, lines);
  }
}

// Every leaf and redacted line of tests/vectors (every kind of receipt is
// among them), with the name of its file.
std::vector<std::pair<std::string, std::string>> VectorLines() {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::vector<std::pair<std::string, std::string>> lines;
  for (const auto& file : std::filesystem::directory_iterator(dir ? dir : "tests/vectors")) {
    if (file.path().extension() != ".json") continue;
    std::ifstream in(file.path());
    CollectLines(nlohmann::json::parse(in, nullptr, false), file.path().filename().string(), &lines);
  }
  return lines;
}

// The vectors' leaves, read in place and by the reference, and each of
// them mutated: the fast path reads every leaf as the reference does,
// declines the lines that are not leaves (redacted and pruned lines), and
// never accepts a text the reference refuses; ParseLeaf's refusals are the
// reference's.
TEST(ReadLeafTest, ReadsTheVectorsAsTheReferenceDoes) {
  std::vector<std::pair<std::string, std::string>> lines = VectorLines();
  std::set<std::string> kinds;
  int leaves = 0, redacted = 0;
  Random random(17);
  for (const auto& [file, line] : lines) {
    SCOPED_TRACE(file + ": " + line);
    Entry fast;
    bool read = ReadLeaf(line, &fast);
    auto reference = ParseLeafByTree(line);
    if (!reference.ok()) {
      // A redacted line, or a retention pass's pruned line: not a leaf.
      if (LooksRedacted(line)) ++redacted;
      EXPECT_FALSE(read);
      EXPECT_EQ(ParseLeaf(line).status(), reference.status());
      continue;
    }
    ++leaves;
    ASSERT_TRUE(read);
    ASSERT_EQ(Diff(fast, *reference), "");
    kinds.insert(std::string(KindName(fast.receipt)));
    for (int k = 0; k < 200; ++k) {
      std::string mutated = random.Mutate(line);
      Entry m;
      bool m_read = ReadLeaf(mutated, &m);
      auto m_reference = ParseLeafByTree(mutated);
      if (m_read) {
        ASSERT_TRUE(m_reference.ok()) << m_reference.status() << "\n" << mutated;
        ASSERT_EQ(Diff(m, *m_reference), "") << mutated;
      }
      ASSERT_EQ(ParseLeaf(mutated).status(), m_reference.status()) << mutated;
    }
  }
  EXPECT_GT(leaves, 20);
  EXPECT_GT(redacted, 0);
  const auto* body = Receipt::descriptor()->FindOneofByName("body");
  for (int i = 0; i < body->field_count(); ++i) {
    EXPECT_TRUE(kinds.contains(body->field(i)->name())) << "no vector leaf of the kind " << body->field(i)->name();
  }
}

// The verifier reads every line of a pack into the same few entries,
// cleared in between: what a cleared entry reads is what a new one reads,
// whatever it held before (a longer receipt of another kind, a run_prev
// and team_prev the next leaf lacks, a half-read leaf that was refused).
TEST(ReadLeafTest, AClearedEntryReadsAsANewOne) {
  Random random(13);
  Entry reused;
  int v2 = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string leaf = random.Leaf();
    if (i % 2 == 1) {
      // The same entry as version 2, with a team_prev every other time.
      auto parsed = ParseLeaf(leaf);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      std::optional<uint64_t> team_prev;
      if (i % 4 == 1) team_prev = parsed->seq / 2;
      leaf.clear();
      EncodeLeafV2To(&leaf, parsed->seq, parsed->prev, parsed->run_prev, team_prev, parsed->logged_at_us,
                     parsed->emitter, Encode(parsed->receipt));
      ++v2;
    }
    if (i % 7 == 3) {
      reused.Clear();
      ReadLeaf(random.Mutate(leaf), &reused);  // read or refused: left as it may be
    }
    reused.Clear();
    Entry fresh;
    ASSERT_TRUE(ReadLeaf(leaf, &fresh)) << leaf;
    ASSERT_TRUE(ReadLeaf(leaf, &reused)) << leaf;
    ASSERT_EQ(Diff(reused, fresh), "") << leaf;
    EXPECT_EQ(reused.version, fresh.version) << leaf;
    EXPECT_EQ(reused.team_prev, fresh.team_prev) << leaf;
  }
  EXPECT_EQ(v2, 1500);
}

TEST(ReadLeafTest, NeverAcceptsWhatTheReferenceRefuses) {
  Random random(11);
  int accepted = 0, declined = 0;
  for (int i = 0; i < 600; ++i) {
    std::string leaf = random.Leaf();
    for (int k = 0; k < 100; ++k) {
      std::string mutated = random.Mutate(k % 10 == 9 ? random.Mutate(leaf) : leaf);
      Entry fast;
      bool read = ReadLeaf(mutated, &fast);
      auto reference = ParseLeafByTree(mutated);
      if (read) {
        ++accepted;
        ASSERT_TRUE(reference.ok()) << reference.status() << "\n" << mutated;
        ASSERT_EQ(Diff(fast, *reference), "") << mutated;
      } else {
        ++declined;
      }
      // ParseLeaf's answer is the reference's either way.
      auto parsed = ParseLeaf(mutated);
      ASSERT_EQ(parsed.status(), reference.status()) << mutated;
    }
  }
  // Both branches ran: some mutations keep a leaf canonical (a digit for a
  // digit inside a string), most do not.
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(declined, 30000);
}

// Texts one step from canonical, each refused by the reference for a rule
// the fast path must enforce itself.
TEST(ReadLeafTest, DeclinesEachNearCanonicalText) {
  auto r = FromJsonText(R"({"kind":"model_call","receipt_id":"r-1","team":"t","run_id":"run","step_id":"s",)"
                        R"("attempt":2,"model":"m","decision":"allow","input_tokens":0,)"
                        R"("attributes":{"a":"1","b":""}})");
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string good = EncodeLeaf(5, hash::Sha256("p"), 3, 17, "e", Encode(*r));
  Entry e;
  ASSERT_TRUE(ReadLeaf(good, &e));
  auto edit = [&](std::string_view from, std::string_view to) {
    std::string s = good;
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? good : s.replace(at, from.size(), to);
  };
  const std::string kNotCanonical = "leaf: not in canonical form";
  const std::string kDecision = "leaf: receipt.decision: must be one of allow, deny";
  const std::string kKind =
      "leaf: receipt.kind: required, one of agent_start, agent_exec, model_call, tool_call, step_unknown, "
      "leader_epoch, key_rotation, redaction, retention";
  // Each text and the reference's refusal of it.
  const std::pair<std::string, std::string> cases[] = {
      {edit("\"model\":\"m\"", "\"model\":\"\""), kNotCanonical},  // an empty string
      {edit("\"attempt\":2,", ""), kNotCanonical},                 // attempt left out
      {edit("\"attributes\":{\"a\":\"1\",\"b\":\"\"}", "\"attributes\":{}"), kNotCanonical},
      {edit("{\"a\":\"1\",\"b\":\"\"}", "{\"b\":\"\",\"a\":\"1\"}"), kNotCanonical},    // attributes unsorted
      {edit("{\"a\":\"1\",\"b\":\"\"}", "{\"a\":\"1\",\"a\":\"\"}"), kNotCanonical},    // an attribute twice
      {edit("\"b\":\"\"", "\"b\":2"), "leaf: receipt.attributes.b: must be a string"},  // an attribute not a string
      {edit("\"decision\":\"allow\"", "\"decision\":\"unspecified\""), kDecision},
      {edit("\"decision\":\"allow\"", "\"decision\":1"), kDecision},
      {edit("\"input_tokens\":0", "\"input_tokens\":-0"), kNotCanonical},
      {edit("\"input_tokens\":0", "\"input_tokens\":00"), kNotCanonical},
      {edit("\"input_tokens\":0", "\"input_tokens\":\"0\""), "leaf: receipt.input_tokens: must be an integer"},
      {edit("\"input_tokens\":0", "\"input_tokens\":9007199254740992"), kNotCanonical},
      {edit("\"kind\":\"model_call\"", "\"kind\":\"tool_call\""),
       "leaf: receipt.input_tokens: not a field of tool_call receipts"},
      {edit("\"kind\":\"model_call\",", ""), kKind},                                // no kind
      {edit("\"model\":\"m\"", "\"model\":\"m\",\"model\":\"n\""), kNotCanonical},  // a key twice
      {edit("\"model\":\"m\"", "\"model\":\"m\",\"mode\":\"n\""), kNotCanonical},   // keys unsorted
      {edit("\"model\":\"m\"", "\"model\":\"m\",\"tool\":\"n\""), kNotCanonical},   // another kind's field
      {edit("\"model\":\"m\"", "\"model\":\"m\",\"zzz\":\"n\""), kNotCanonical},    // an unknown field
      {edit("\"model\":\"m\"", "\"model\":\"\\u006d\""), kNotCanonical},            // an escape not written
      {edit("\"model\":\"m\"", "\"model\":\"\\/\""), kNotCanonical},
      {edit("\"model\":\"m\"", "\"model\":\"\x01\""), kNotCanonical},     // a raw control character
      {edit("\"model\":\"m\"", "\"model\":\"\xc3\""), kNotCanonical},     // not UTF-8
      {edit("\"model\":\"m\"", "\"model\": \"m\""), kNotCanonical},       // white space
      {edit("\"model\":\"m\"", "\"mod\\u0065l\":\"m\""), kNotCanonical},  // an escaped key
      {edit("\"run_prev\":3", "\"run_prev\":-3"), "leaf: run_prev: want an integer >= 0"},
      {edit("\"seq\":5", "\"seq\":-5"), "leaf: seq: want an integer >= 0"},
      {edit("\"v\":1}", "\"v\":3}"), "leaf: v: want format version 1 or 2"},
      {edit("\"v\":1}", "\"team_prev\":4,\"v\":1}"),
       "leaf: team_prev: not a field of version 1"},  // team_prev in version 1
      {edit(",\"v\":1}", ",\"team_prev\":-4,\"v\":2}"), "leaf: team_prev: want an integer >= 0"},
      {edit(",\"v\":1}", ",\"team_prev\":04,\"v\":2}"), kNotCanonical},
      {edit(",\"v\":1}", ",\"v\":2,\"team_prev\":4}"), kNotCanonical},  // keys unsorted
      {edit("\"v\":1}", "\"v\":1} "), kNotCanonical},
      {edit("\"emitter\":\"e\"", "\"emitter\":1"), "leaf: emitter: want a string"},
      {good.substr(0, good.find("\"prev\":\"") + 8) + "A" + good.substr(good.find("\"prev\":\"") + 9),
       "leaf: prev: want 64 lowercase hex digits"},
      {good.substr(0, good.size() - 1), kNotCanonical},
  };
  // The kind's text in an attribute only: the guess it makes is refused.
  auto tricky =
      FromJsonText(R"({"kind":"model_call","receipt_id":"r-1","attempt":1,"attributes":{"kind":"model_call"}})");
  ASSERT_TRUE(tricky.ok()) << tricky.status();
  std::string no_kind = EncodeLeaf(5, hash::Sha256("p"), 3, 17, "e", Encode(*tricky));
  ASSERT_TRUE(ReadLeaf(no_kind, &e));
  no_kind.erase(no_kind.find(",\"kind\":\"model_call\""), 20);
  std::vector<std::pair<std::string, std::string>> all(std::begin(cases), std::end(cases));
  all.push_back({no_kind, kKind});
  for (const auto& [text, refusal] : all) {
    Entry fast;
    EXPECT_FALSE(ReadLeaf(text, &fast)) << text;
    EXPECT_THAT(ParseLeafByTree(text), StatusIs(absl::StatusCode::kInvalidArgument, refusal)) << text;
  }
}

}  // namespace
}  // namespace ledger::receipt
