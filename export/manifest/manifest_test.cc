#include "export/manifest/manifest.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace ledger::manifest {
namespace {

using ::ledger::testing::StatusIs;

const std::string kRoot(64, 'a');
const std::string kSha(64, 'b');

Manifest RunManifest() {
  Manifest m;
  m.format = 1;
  m.origin = "example.test/log";
  m.scope = {"team-a", "run-1"};
  m.tree_size = 12;
  m.root = kRoot;
  m.entries = 3;
  m.files = {{"checkpoint", kSha}, {"entries.jsonl", kSha}};
  return m;
}

// Parse(text) fails with exactly `message`.
void ExpectRefused(const std::string& text, const std::string& message) {
  EXPECT_THAT(Parse(text), StatusIs(absl::StatusCode::kInvalidArgument, message)) << text;
}

TEST(ManifestTest, EncodesTheBytesTheExporterHasAlwaysWritten) {
  EXPECT_EQ(Encode(RunManifest()),
            "{\"counts\":{\"entries\":3},\"files\":{\"checkpoint\":\"" + kSha + "\",\"entries.jsonl\":\"" + kSha +
                "\"},\"format\":1,\"origin\":\"example.test/log\",\"root\":\"" + kRoot +
                "\",\"scope\":{\"kind\":\"run\",\"run_id\":\"run-1\",\"team\":\"team-a\"},\"tree_size\":12}\n");
  for (int format : {2, kFormatVersion}) {
    Manifest now = RunManifest();
    now.format = format;
    now.unknown_grace_ms = 30000;
    EXPECT_EQ(Encode(now),
              "{\"counts\":{\"entries\":3},\"files\":{\"checkpoint\":\"" + kSha + "\",\"entries.jsonl\":\"" + kSha +
                  "\"},\"format\":" + std::to_string(format) + ",\"origin\":\"example.test/log\",\"root\":\"" + kRoot +
                  "\",\"scope\":{\"kind\":\"run\",\"run_id\":\"run-1\",\"team\":\"team-a\"},\"tree_size\":12,"
                  "\"unknown_grace_ms\":30000}\n");
  }
  EXPECT_EQ(kFormatVersion, 7);
  Manifest team = RunManifest();
  team.scope = {"team-a", "", 4, 9, 100, 200};
  EXPECT_EQ(ScopeJson(team.scope),
            "{\"from_seq\":4,\"from_us\":100,\"kind\":\"team\",\"team\":\"team-a\",\"to_seq\":9,\"to_us\":200}");
  EXPECT_EQ(ScopeJson(Scope{"", "", 5, 40}), "{\"from_seq\":5,\"kind\":\"seq\",\"to_seq\":40}");
}

// Format 9 (CONTRACT section 9): a run scope from the retention line, in
// format 9 only and always there.
TEST(ManifestTest, AFormat9RunScopeStartsAtItsLine) {
  Manifest m = RunManifest();
  m.format = 9;
  m.unknown_grace_ms = 30000;
  m.scope.from_seq = 1875;
  const std::string text = Encode(m);
  EXPECT_NE(text.find("\"scope\":{\"from_seq\":1875,\"kind\":\"run\",\"run_id\":\"run-1\",\"team\":\"team-a\"}"),
            std::string::npos)
      << text;
  auto parsed = Parse(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->scope.is_run_from());
  EXPECT_EQ(parsed->scope.from_seq, 1875u);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  ExpectRefused(with("\"format\":9", "\"format\":8"), "scope.from_seq: only a run pack of format 9 starts at a seq");
  ExpectRefused(with("\"from_seq\":1875,", ""), "scope: a pack of format 9 is a run pack from a seq (from_seq)");
  ExpectRefused(with("\"from_seq\":1875", "\"from_seq\":0"), "scope.from_seq: want at least 1");
  ExpectRefused(with("\"from_seq\":1875", "\"from_seq\":-1"), "scope.from_seq: want an unsigned integer");
}

TEST(ManifestTest, ParsesWhatItEncodes) {
  for (Scope scope : {Scope{"team-a", "run-1"}, Scope{"team-a", "", 4, 9, 100, 200}, Scope{"", "", 5, 40}}) {
    Manifest m = RunManifest();
    m.scope = scope;
    for (std::optional<uint64_t> grace : {std::optional<uint64_t>(), std::optional<uint64_t>(30000)}) {
      m.format = grace ? 2 : 1;
      m.unknown_grace_ms = grace;
      auto parsed = Parse(Encode(m));
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      EXPECT_EQ(Encode(*parsed), Encode(m));
      EXPECT_EQ(parsed->scope.kind(), scope.kind());
      EXPECT_EQ(parsed->unknown_grace_ms, grace);
    }
  }
}

TEST(ManifestTest, RefusesEachBrokenRuleNamingTheField) {
  const std::string good = Encode(RunManifest());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  ExpectRefused("[]", "manifest: not a JSON object");
  ExpectRefused("{", "manifest: not a JSON object");
  ExpectRefused(with("\"format\":1", "\"format\":10"), "format: want 1, 2, 3, 4, 5, 6, 7, 8 or 9, found 10");
  ExpectRefused(with("\"format\":1", "\"format\":\"1\""), "format: want 1, 2, 3, 4, 5, 6, 7, 8 or 9, found \"1\"");
  ExpectRefused(with(",\"format\":1", ""), "format: want 1, 2, 3, 4, 5, 6, 7, 8 or 9, found none");
  ExpectRefused(with("\"format\":1", "\"format\":1,\"note\":\"x\""), "note: not a field of the manifest");
  ExpectRefused(with("\"format\":1", "\"format\":1,\"unknown_grace_ms\":5"),
                "unknown_grace_ms: not a field of the manifest");
  ExpectRefused(with("\"format\":1", "\"format\":2"), "unknown_grace_ms: missing");
  ExpectRefused(with("\"format\":1", "\"format\":2,\"unknown_grace_ms\":-5"),
                "unknown_grace_ms: want an unsigned integer");
  ExpectRefused(with("\"origin\":\"example.test/log\"", "\"origin\":\"\""), "origin: want a non-empty string");
  ExpectRefused(with(",\"root\":\"" + kRoot + "\"", ""), "root: missing");
  ExpectRefused(with(kRoot, std::string(64, 'A')), "root: want 64 lower-case hex digits");
  ExpectRefused(with(kRoot, std::string(63, 'a')), "root: want 64 lower-case hex digits");
  ExpectRefused(with("\"tree_size\":12", "\"tree_size\":-12"), "tree_size: want an unsigned integer");
  ExpectRefused(with("\"tree_size\":12", "\"tree_size\":1.5"), "tree_size: want an unsigned integer");
  ExpectRefused(with("{\"entries\":3}", "{\"entries\":3,\"proofs\":3}"), "counts.proofs: not a field of the manifest");
  ExpectRefused(with("{\"entries\":3}", "{}"), "counts.entries: missing");
  ExpectRefused(with("\"checkpoint\":\"" + kSha, "\"checkpoint\":\"" + kSha.substr(1)),
                "files.checkpoint: want 64 lower-case hex digits");
  ExpectRefused(with("\"kind\":\"run\"", "\"kind\":\"all\""), "scope.kind: want \"run\", \"team\" or \"seq\"");
  ExpectRefused(with("\"run_id\":\"run-1\"", "\"run_id\":\"\""), "scope.run_id: want a non-empty string");
  // A run scope's from_seq is format 9's (CONTRACT section 9).
  ExpectRefused(with("\"kind\":\"run\",", "\"from_seq\":0,\"kind\":\"run\","), "scope.from_seq: want at least 1");
  ExpectRefused(with("\"kind\":\"run\",", "\"from_seq\":5,\"kind\":\"run\","),
                "scope.from_seq: only a run pack of format 9 starts at a seq");
  ExpectRefused(with("{\"kind\":\"run\",\"run_id\":\"run-1\",\"team\":\"team-a\"}",
                     "{\"from_us\":1,\"kind\":\"team\",\"team\":\"team-a\",\"to_us\":2}"),
                "scope: a team window names its seqs (from_seq, to_seq)");
  ExpectRefused(with("{\"kind\":\"run\",\"run_id\":\"run-1\",\"team\":\"team-a\"}",
                     "{\"from_seq\":0,\"from_us\":2,\"kind\":\"team\",\"team\":\"team-a\",\"to_seq\":1,\"to_us\":2}"),
                "scope.from_us: want less than to_us");
  ExpectRefused(with("{\"kind\":\"run\",\"run_id\":\"run-1\",\"team\":\"team-a\"}",
                     "{\"from_seq\":7,\"kind\":\"seq\",\"to_seq\":7}"),
                "scope.to_seq: want from_seq < to_seq");
  // Valid JSON, valid fields, but not the one form: spaces, a key twice.
  ExpectRefused(with("\"format\":1", "\"format\": 1"),
                "manifest: not in the one form the exporter writes (keys sorted, each once, no spaces, one newline "
                "at the end)");
  ExpectRefused(with("\"format\":1", "\"format\":2,\"format\":1"),
                "manifest: not in the one form the exporter writes (keys sorted, each once, no spaces, one newline "
                "at the end)");
  ExpectRefused(good.substr(0, good.size() - 1),
                "manifest: not in the one form the exporter writes (keys sorted, each once, no spaces, one newline "
                "at the end)");
}

}  // namespace
}  // namespace ledger::manifest
