// Node against a real PostgreSQL (tests/replication/with_pg.py gives its URI
// in LEDGER_TEST_PG_URI): a node that takes the lead begins its epoch with
// its leader_epoch entry, and no emitter's append comes before it.
#include "ledger/storage/replication/node.h"

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"
#include "tests/util/temp_dir.h"

namespace ledger::replication {
namespace {

using ::testing::HasSubstr;

std::string Uri() {
  const char* uri = std::getenv("LEDGER_TEST_PG_URI");
  return uri != nullptr ? uri : "";
}

receipt::Receipt Call(const std::string& id) {
  auto r = *receipt::FromJsonText(R"({"kind":"tool_call","occurred_at_us":1,"tool":"git","decision":"allow"})");
  r.set_receipt_id(id);
  r.set_team("team-a");
  r.set_run_id("run-1");
  return r;
}

TEST(NodeTest, AnEpochBeginsWithItsLeaderEpochEntryBeforeAnyEmittersAppend) {
  if (Uri().empty()) GTEST_SKIP() << "LEDGER_TEST_PG_URI is not set (run through tests/replication/with_pg.py)";
  const std::string origin = "node-test/epoch-entry";
  ::ledger::testing::TempDir dir;
  // As the node takes the lead, an emitter's append arrives.
  log::Log* opened = nullptr;
  receipt::Receipt early = Call("early-1");
  absl::Status early_status = absl::OkStatus();
  bool early_called = false;
  Node::Options o;
  o.db = {Uri(), "", origin, std::chrono::milliseconds(5000)};
  o.node_id = "node-a";
  o.address = "127.0.0.1:1";
  o.lease = std::chrono::milliseconds(1000);
  o.poll = std::chrono::milliseconds(50);
  o.before_epoch_entry = [&] {
    early_called = true;
    std::promise<void> appended;
    early_status =
        opened->Append("uri:gateway", {&early}, [&](std::vector<sequencer::Outcome>) { appended.set_value(); });
    if (early_status.ok()) appended.get_future().wait();
  };
  auto node = Node::Create(o);
  ASSERT_TRUE(node.ok()) << node.status();
  log::Log::Options lo;
  lo.data_dir = dir.path();
  lo.origin = origin;
  lo.sequencer.replicate = (*node)->ReplicateHook();
  lo.replicated = (*node)->LogHooks();
  auto log = log::Log::Open(lo, *note::Signer::Generate(origin));
  ASSERT_TRUE(log.ok()) << log.status();
  opened = log->get();
  ASSERT_TRUE((*node)->Start(opened).ok());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!(*node)->state().open && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE((*node)->state().open) << (*node)->state().failure;
  ASSERT_TRUE(early_called);
  EXPECT_TRUE(absl::IsUnavailable(early_status)) << early_status;
  EXPECT_THAT(std::string(early_status.message()), HasSubstr("is taking the lead (epoch 1)"));
  // The log's first entry is the epoch's, naming the empty tree. The epoch
  // opens when its entry is committed in the database, a moment before the
  // local store has it.
  while (opened->head().size < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string first;
  ASSERT_TRUE(opened
                  ->ScanEntries(0, 1,
                                [&](uint64_t, std::string_view leaf) {
                                  first = std::string(leaf);
                                  return absl::OkStatus();
                                })
                  .ok());
  auto entry = receipt::ParseLeaf(first);
  ASSERT_TRUE(entry.ok()) << entry.status();
  ASSERT_TRUE(entry->receipt.has_leader_epoch()) << first;
  EXPECT_EQ(entry->receipt.leader_epoch().epoch(), 1);
  EXPECT_EQ(entry->receipt.leader_epoch().node(), "node-a");
  EXPECT_EQ(entry->receipt.leader_epoch().previous_size(), 0);
  EXPECT_EQ(entry->receipt.leader_epoch().previous_root(), hash::Hex(hash::Sha256("")));
  // Now emitters' appends go in, after it.
  receipt::Receipt later = Call("later-1");
  std::promise<std::vector<sequencer::Outcome>> done;
  ASSERT_TRUE(opened
                  ->Append("uri:gateway", {&later},
                           [&](std::vector<sequencer::Outcome> out) { done.set_value(std::move(out)); })
                  .ok());
  auto out = done.get_future().get();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].status.ok()) << out[0].status;
  EXPECT_EQ(out[0].seq, 1u);
  (*node)->Stop();
  (*node)->Release();
}

}  // namespace
}  // namespace ledger::replication
