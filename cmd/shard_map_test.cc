#include "cmd/shard_map.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace ledger::cmd {
namespace {

using ::ledger::testing::StatusIs;

TEST(ShardMap, PinnedTeamsThenHash) {
  auto m = ShardMap::Parse(R"({"version": 1, "shards": [{"shard": 1, "address": "b:1"}, {"shard": 0, "address": "a:1"},
                                {"shard": 2, "address": "c:1"}], "teams": {"team-pinned": 2}})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->For("team-pinned").address, "c:1");
  EXPECT_EQ(Fnv1a64(""), 14695981039346656037ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(m->For("team-a").shard, static_cast<int>(Fnv1a64("team-a") % 3));
  EXPECT_EQ(m->Get(0)->address, "a:1");
  EXPECT_EQ(m->Get(3).status().code(), absl::StatusCode::kNotFound);
}

TEST(ShardMap, ErrorsNameTheField) {
  struct Case {
    const char* json;
    const char* message;
  } cases[] = {
      {R"({"version": 2, "shards": []})", "shard map: version: must be 1"},
      {R"({"version": 1, "shards": []})", "shard map: shards: a non-empty array is required"},
      {R"({"version": 1, "shards": [{"shard": 1, "address": "a"}]})",
       "shard map: shards[0].shard: shards are numbered 0 to 0, each once"},
      {R"({"version": 1, "shards": [{"shard": 0}]})", "shard map: shards[0].address: HOST:PORT is required"},
      {R"({"version": 1, "shards": [{"shard": 0, "address": "a"}], "teams": {"t": 1}})",
       "shard map: teams.t: not a shard of this map"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ShardMap::Parse(c.json), StatusIs(absl::StatusCode::kInvalidArgument, c.message)) << c.json;
  }
}

}  // namespace
}  // namespace ledger::cmd
