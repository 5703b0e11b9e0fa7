#include "ops/tiles/tiles.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "gtest/gtest.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/retention/pruned.h"
#include "ledger/format/runmap/proof_json.h"
#include "ledger/storage/log/log_testing.h"
#include "ledger/storage/store/testing.h"
#include "nlohmann/json.hpp"
#include "tests/util/temp_dir.h"

namespace ledger::ops::tiles {
namespace {

using hash::Hash;

std::string Bytes(const Hash& h) { return std::string(reinterpret_cast<const char*>(h.data()), h.size()); }

// RFC 9162's MTH over leaf hashes, written out without the stored nodes.
Hash Mth(const std::vector<Hash>& leaves, size_t begin, size_t end) {
  if (end - begin == 1) return leaves[begin];
  size_t k = 1;
  while (k * 2 < end - begin) k *= 2;
  return hash::NodeHash(Mth(leaves, begin, begin + k), Mth(leaves, begin + k, end));
}

std::string Leaf(uint64_t seq) { return "{\"entry\":" + std::to_string(seq) + std::string(seq % 7, ' ') + "}"; }

// A store holding kSize leaves and their nodes, written as the sequencer
// writes them: 18 full level-0 tiles and a partial one of 92; a partial
// level-1 tile of 18.
class TilesTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kSize = 18 * 256 + 92;

  void SetUp() override {
    store_ = *store::Store::Open(dir_.Sub("db"));
    store::Batch batch = store_->NewBatch();
    merkle::Frontier frontier;
    for (uint64_t seq = 0; seq < kSize; ++seq) {
      batch.PutEntry(seq, Leaf(seq));
      leaves_.push_back(hash::LeafHash(Leaf(seq)));
      frontier.Append(leaves_.back(),
                      [&](int level, uint64_t index, const Hash& h) { batch.PutNode(level, index, h); });
    }
    ASSERT_TRUE(store_->Commit(batch).ok());
  }

  // The log as a view at `size` shows it, though the store may hold more
  // (or less).
  log::LogView At(uint64_t size) const {
    log::SignedCheckpoint cp;
    cp.size = size;
    return log::LogView(*store_, cp);
  }

  std::string LeafHashes(uint64_t begin, uint64_t end) const {
    std::string out;
    for (uint64_t i = begin; i < end; ++i) out += Bytes(leaves_[i]);
    return out;
  }

  testing::TempDir dir_;
  std::unique_ptr<store::Store> store_;
  std::vector<Hash> leaves_;
};

TEST(TilePath, ParsesTheCanonicalFormsAndPrintsThemBack) {
  struct Case {
    std::string path;
    Tile tile;
  };
  for (const Case& c : std::vector<Case>{
           {"0/000", {false, 0, 0, 256}},
           {"0/067", {false, 0, 67, 256}},
           {"1/x001/234", {false, 1, 1234, 256}},
           {"2/x001/x234/067.p/8", {false, 2, 1234067, 8}},
           {"0/001.p/255", {false, 0, 1, 255}},
           {"63/000.p/1", {false, 63, 0, 1}},
           {"entries/x001/000", {true, 0, 1000, 256}},
           {"entries/273.p/112", {true, 0, 273, 112}},
           {"0/x072/x057/x594/x037/x927/935", {false, 0, 72057594037927935ull, 256}},
       }) {
    auto parsed = ParseTilePath(c.path);
    ASSERT_TRUE(parsed.ok()) << c.path << ": " << parsed.status();
    EXPECT_EQ(*parsed, c.tile) << c.path;
    EXPECT_EQ(TilePath(c.tile), c.path);
  }
}

TEST(TilePath, RefusesEveryOtherFormNamingTheRule) {
  const std::string index_rule =
      "tile index: groups of three digits, all but the last prefixed 'x', without a leading x000";
  struct Case {
    std::string path;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"0", "tile path: <L>/<N>[.p/<W>] or entries/<N>[.p/<W>]"},
           {"0/67", index_rule},
           {"0/0067", index_rule},
           {"0/x000/067", index_rule},
           {"0/001/234", index_rule},
           {"0/x001", index_rule},
           {"0/x001/x234", index_rule},
           {"0/067/", index_rule},
           {"0/06a", index_rule},
           {"0/067.p", index_rule},
           {"0/x001.p/5", index_rule},
           {"0/067.p/256", "tile width: at most 255, got 256"},
           {"0/067.p/0", "tile width: from 1 to 255"},
           {"0/067.p/08", "tile width: a decimal number without leading zeros, got '08'"},
           {"0/067.p/", "tile width: a decimal number without leading zeros, got ''"},
           {"01/067", "tile level: a decimal number without leading zeros, got '01'"},
           {"64/067", "tile level: at most 63, got 64"},
           {"-1/067", "tile level: a decimal number without leading zeros, got '-1'"},
           {"data/067", "tile level: a decimal number without leading zeros, got 'data'"},
           {"8/0/067", index_rule},
           {"0/x072/x057/x594/x037/x927/936", "tile index: at most 72057594037927935"},
           {"0/x999/x999/x999/x999/x999/x999/x999/999", "tile index: at most 72057594037927935"},
       }) {
    auto parsed = ParseTilePath(c.path);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.path;
    EXPECT_EQ(std::string(parsed.status().message()), c.message) << c.path;
  }
}

TEST_F(TilesTest, HashTilesHoldTheNodesOfTheirLevelUpToTheTreeSize) {
  EXPECT_EQ(*HashTile(At(kSize), {false, 0, 0, 256}), LeafHashes(0, 256));
  EXPECT_EQ(*HashTile(At(kSize), {false, 0, 17, 256}), LeafHashes(17 * 256, 18 * 256));
  EXPECT_EQ(*HashTile(At(kSize), {false, 0, 18, 92}), LeafHashes(18 * 256, kSize));
  // A narrower width, as an older checkpoint gives it, is its prefix.
  EXPECT_EQ(*HashTile(At(kSize), {false, 0, 18, 5}), LeafHashes(18 * 256, 18 * 256 + 5));
  // Level 1 holds the roots of the perfect subtrees of 256 leaves.
  std::string level1;
  for (uint64_t i = 0; i < 18; ++i) level1 += Bytes(Mth(leaves_, i * 256, (i + 1) * 256));
  EXPECT_EQ(*HashTile(At(kSize), {false, 1, 0, 18}), level1);
  // What the tree does not hold.
  for (const Tile& t : std::vector<Tile>{{false, 0, 18, 93},
                                         {false, 0, 18, 256},
                                         {false, 0, 19, 1},
                                         {false, 1, 0, 19},
                                         {false, 1, 0, 256},
                                         {false, 2, 0, 1},
                                         {false, 63, 0, 1}}) {
    auto got = HashTile(At(kSize), t);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << TilePath(t);
  }
  EXPECT_EQ(std::string(HashTile(At(kSize), {false, 0, 18, 93}).status().message()),
            "tile/0/018.p/93: beyond the latest checkpoint (tree size 4700)");
}

TEST_F(TilesTest, NothingBeyondTheGivenTreeSizeIsServedThoughTheStoreHoldsIt) {
  EXPECT_EQ(*HashTile(At(1000), {false, 0, 3, 232}), LeafHashes(768, 1000));
  EXPECT_EQ(HashTile(At(1000), {false, 0, 3, 233}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(HashTile(At(1000), {false, 0, 4, 1}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(EntryBundle(At(1000), {true, 0, 3, 233}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(HashTile(At(255), {false, 0, 0, 256}).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TilesTest, AStoreThatLacksANodeItShouldHoldIsDataLoss) {
  auto got = HashTile(At(kSize + 300), {false, 0, 19, 136});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(std::string(got.status().message()), "tile/0/019.p/136: the store holds 0 of its 136 nodes of level 0");
}

TEST_F(TilesTest, EntryBundlesHoldTheLeavesLengthPrefixed) {
  auto bundle = EntryBundle(At(kSize), {true, 0, 18, 92});
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  std::string want;
  for (uint64_t seq = 18 * 256; seq < kSize; ++seq) {
    std::string leaf = Leaf(seq);
    want += std::string{static_cast<char>(leaf.size() >> 8), static_cast<char>(leaf.size() & 0xFF)} + leaf;
  }
  EXPECT_EQ(*bundle, want);
  EXPECT_EQ(EntryBundle(At(kSize), {true, 0, 0, 256})->substr(0, 2 + Leaf(0).size()),
            std::string("\0\x0b", 2) + "{\"entry\":0}");
}

// Retention (CONTRACT section 9): a pruned entry is its pruned line in its
// bundle, made of the level-0 hash; a bundle all of whose entries are
// pruned is 410 Gone; hash tiles stay whole.
TEST_F(TilesTest, PrunedEntriesArePrunedLinesAndAWhollyPrunedBundleIsGone) {
  const uint64_t below = 2 * 256 + 10;  // bundles 0 and 1 whole, 10 entries of bundle 2
  store::Batch batch = store_->NewBatch();
  batch.PutPruning({below, 1});
  for (uint64_t seq = 0; seq < below; ++seq) {
    if (seq != 300) batch.DeleteEntry(seq);  // one entry of bundle 1 kept
  }
  ASSERT_TRUE(store_->Commit(batch).ok());
  const log::LogView view = At(kSize);
  auto get = [&](const std::string& path) {
    http::HttpRequest r;
    r.method = "GET";
    r.path = path;
    r.identity = "local";
    return Serve(r, view, "checkpoint note\n", Access{nullptr, false});
  };
  http::HttpResponse gone = get("/tlog/tile/entries/000");
  EXPECT_EQ(gone.status, 410);
  EXPECT_EQ(gone.body,
            "tile/entries/000: every entry of the bundle (seqs 0 to 255) was pruned under the retention policy "
            "(CONTRACT section 9)\n");
  auto mixed = EntryBundle(view, {true, 0, 1, 256});
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  std::string want;
  for (uint64_t seq = 256; seq < 512; ++seq) {
    std::string line = seq == 300 ? Leaf(seq) : retention::PrunedLine(seq, leaves_[seq]);
    want += std::string{static_cast<char>(line.size() >> 8), static_cast<char>(line.size() & 0xFF)} + line;
  }
  EXPECT_EQ(*mixed, want);
  EXPECT_EQ(get("/tlog/tile/entries/002").status, 200);
  EXPECT_EQ(get("/tlog/tile/0/000").body, LeafHashes(0, 256));  // hash tiles stay whole
  // A row missing at or above the pruning floor is still damage.
  store::Batch lost = store_->NewBatch();
  lost.DeleteEntry(below + 5);
  ASSERT_TRUE(store_->Commit(lost).ok());
  EXPECT_EQ(EntryBundle(view, {true, 0, 2, 256}).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(TilesTest, ServesTheAuditorsOfEveryTeamOrEveryoneWhenPublic) {
  auto policy = *auth::Policy::Parse(R"({"identities": [
      {"identity": "cn:auditor-a", "roles": ["auditor"], "teams": ["team-a"]},
      {"identity": "cn:reader-all", "roles": ["reader"], "teams": ["*"]},
      {"identity": "cn:auditor-all", "roles": ["auditor"], "teams": ["*"]},
      {"identity": "cn:admin", "roles": ["admin"]}]})");
  const log::LogView view = At(kSize);
  auto get = [&](const std::string& identity, const std::string& path, const Access& access) {
    http::HttpRequest r;
    r.method = "GET";
    r.path = path;
    r.identity = identity;
    return Serve(r, view, "checkpoint note\n", access);
  };
  const Access tls{&policy, false}, open{&policy, true}, plain{nullptr, false};
  const std::string tile = "/tlog/tile/0/018.p/92";
  for (const char* who : {"cn:auditor-all", "cn:admin"}) {
    http::HttpResponse r = get(who, tile, tls);
    EXPECT_EQ(r.status, 200) << who;
    EXPECT_EQ(r.body, LeafHashes(18 * 256, kSize));
    EXPECT_EQ(r.content_type, "application/octet-stream");
    EXPECT_EQ(r.headers["Cache-Control"], "private, max-age=60");
  }
  for (const char* who : {"cn:auditor-a", "cn:reader-all", "cn:stranger"}) {
    http::HttpResponse r = get(who, tile, tls);
    EXPECT_EQ(r.status, 403) << who;
    EXPECT_EQ(r.body, absl::StrCat("identity '", who,
                                   "' may not read the log's tiles: they hold every team's entries (an auditor of "
                                   "every team or an admin may; or the operator makes the log public with "
                                   "--tlog-public)\n"));
    EXPECT_EQ(get(who, "/tlog/tile/entries/000", tls).status, 403) << who;
    // The checkpoint is for every caller with an identity.
    EXPECT_EQ(get(who, "/tlog/checkpoint", tls).body, "checkpoint note\n");
  }
  EXPECT_EQ(get("", "/tlog/checkpoint", tls).status, 403);
  EXPECT_EQ(get("", "/tlog/checkpoint", tls).body, "client certificate: names no identity\n");
  http::HttpResponse pub = get("cn:auditor-a", "/tlog/tile/0/000", open);
  EXPECT_EQ(pub.status, 200);
  EXPECT_EQ(pub.headers["Cache-Control"], "public, max-age=31536000, immutable");
  http::HttpResponse bundle = get("", "/tlog/tile/entries/000", plain);
  EXPECT_EQ(bundle.status, 200);
  // An erasure rewrites a bundle (CONTRACT section 8): cached an hour, not for good.
  EXPECT_EQ(bundle.headers["Cache-Control"], "public, max-age=3600");
  http::HttpResponse cp = get("", "/tlog/checkpoint", plain);
  EXPECT_EQ(cp.status, 200);
  EXPECT_EQ(cp.headers["Cache-Control"], "no-cache");
  http::HttpResponse bad = get("", "/tlog/tile/0/x000/018", plain);
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body, "tile index: groups of three digits, all but the last prefixed 'x', without a leading x000\n");
  http::HttpResponse beyond = get("", "/tlog/tile/1/000", plain);
  EXPECT_EQ(beyond.status, 404);
  EXPECT_EQ(beyond.body, "tile/1/000: beyond the latest checkpoint (tree size 4700)\n");
  EXPECT_EQ(get("", "/tlog/other", plain).status, 404);
}

// Any key's path in either map, against the latest checkpoint's note, for
// those who may read the tiles.
TEST(MapProofs, AnyKeysPathAgainstTheLatestTimeNote) {
  testing::TempDir dir;
  log::Log::Options o;
  o.data_dir = dir.Sub("data");
  o.origin = "tiles.test/log";
  o.checkpoint_interval_ms = 60'000;
  const note::Signer signer = *note::Signer::Generate(o.origin);
  auto log = log::Log::Open(o, signer);
  ASSERT_TRUE(log.ok()) << log.status();
  log::AppendAll(**log, {log::InRun("a1", "run-a"), log::InRun("b1", "run-b"), log::OfTeam("c1", "team-c")});
  ASSERT_TRUE((*log)->SignCheckpoint().ok());
  const auto key = *note::Verifier::Parse((*log)->verifier_key());
  auto policy = *auth::Policy::Parse(R"({"identities": [
      {"identity": "cn:auditor-a", "roles": ["auditor"], "teams": ["team-a"]},
      {"identity": "cn:auditor-all", "roles": ["auditor"], "teams": ["*"]}]})");
  auto get = [&](const std::string& identity, const std::string& path) {
    http::HttpRequest r;
    r.method = "GET";
    r.path = path;
    r.identity = identity;
    return ServeMapProof(r, **log, {&policy, false});
  };
  const runmap::Key run = runmap::RunKeyOf("team-a", "run-a", runmap::KeyVersion::kV2);
  const runmap::Key team = runmap::TeamKeyOf("team-c");
  for (const auto& [path, k, teams] : {std::tuple{"/map/runs/", run, false}, std::tuple{"/map/teams/", team, true}}) {
    http::HttpResponse r = get("cn:auditor-all", path + hash::Hex(k));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_EQ(r.headers["Cache-Control"], "no-cache");
    auto body = nlohmann::json::parse(r.body);
    EXPECT_EQ(body["tree_size"], 3);
    auto t = *note::ParseCheckpointTime(*key.Open(body["time_note"].get<std::string>()));
    EXPECT_EQ(t.checkpoint.size, 3u);
    auto proof = *runmap::ParseProof(body["proof"].dump());
    ASSERT_TRUE(proof.path.found.has_value()) << path;
    EXPECT_EQ(proof.path.found->head.count, 1u);
    EXPECT_TRUE(runmap::VerifyProof(teams ? *t.team_map_root : *t.run_map_root, k, proof).ok()) << path;
  }
  // A key no run has: its absence, whoever's run its path ends at.
  runmap::Key none{};
  http::HttpResponse absent = get("cn:auditor-all", "/map/runs/" + hash::Hex(none));
  ASSERT_EQ(absent.status, 200);
  auto absence = *runmap::ParseProof(nlohmann::json::parse(absent.body)["proof"].dump());
  EXPECT_FALSE(absence.path.found.has_value());
  // Refusals, each naming its rule.
  http::HttpResponse team_a = get("cn:auditor-a", "/map/runs/" + hash::Hex(run));
  EXPECT_EQ(team_a.status, 403);
  EXPECT_EQ(team_a.body,
            "identity 'cn:auditor-a' may not read the log's tiles: they hold every team's entries (an "
            "auditor of every team or an admin may; or the operator makes the log public with "
            "--tlog-public)\n");
  EXPECT_EQ(get("", "/map/runs/" + hash::Hex(run)).status, 403);
  for (const std::string& bad :
       std::vector<std::string>{hash::Hex(run).substr(1), absl::AsciiStrToUpper(hash::Hex(run)), hash::Hex(run) + "0",
                                std::string(64, 'g')}) {
    http::HttpResponse r = get("cn:auditor-all", "/map/runs/" + bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(r.body, "key: 64 lowercase hex digits, a run key v2 or a team key\n");
  }
  EXPECT_EQ(get("cn:auditor-all", "/map/other/" + hash::Hex(run)).status, 404);
}

}  // namespace
}  // namespace ledger::ops::tiles
