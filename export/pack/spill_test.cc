#include "export/pack/spill.h"

#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "export/pack/pack.h"
#include "gtest/gtest.h"
#include "receipt.pb.h"

namespace ledger::pack {
namespace {

using projection::OverlayTxn;
using projection::Table;

TEST(SpillRuns, NewestValueWinsAndDeletionsHide) {
  ScratchDir dir("spill-test");
  ASSERT_FALSE(dir.path().empty());
  SpillRuns runs(dir.path());
  std::map<std::string, std::optional<std::string>> truth;  // kSteps only
  std::mt19937 rng(7);
  OverlayTxn::Writes writes;
  // More rounds than kMaxRuns: the newer half of the runs are merged once
  // on the way, with their deletions kept over the older half.
  constexpr int kRounds = SpillRuns::kMaxRuns + 4;
  for (int round = 0; round < kRounds; ++round) {
    writes = OverlayTxn::Writes();
    for (int i = 0; i < 3000; ++i) {
      std::string key = absl::StrCat("k", rng() % 5000);
      std::optional<std::string> value;
      if (rng() % 10 != 0) value = absl::StrCat("v", round, "-", i, std::string(rng() % 200, 'x'));
      writes[static_cast<int>(Table::kSteps)][key] = value;
      truth[key] = value;
      // Another table with the same keys must not leak into kSteps.
      writes[static_cast<int>(Table::kIndex)][key] = std::string("index");
    }
    if (round < kRounds - 1) {
      ASSERT_TRUE(runs.Add(writes).ok());
    }
  }
  // 19 runs written: at the 17th, runs 8-16 became one (9 runs), then two more.
  EXPECT_EQ(runs.runs(), 11u);
  // The last round stays in memory, as the newest.
  const OverlayTxn::TableWrites& memory = writes[static_cast<int>(Table::kSteps)];
  for (const auto& [key, value] : truth) {
    if (memory.contains(key)) continue;
    auto got = runs.Get(Table::kSteps, key);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, value) << key;
  }
  EXPECT_EQ(*runs.Get(Table::kSteps, "absent"), std::nullopt);
  EXPECT_EQ(*runs.Get(Table::kRuns, "k1"), std::nullopt);
  std::vector<std::pair<std::string, std::string>> merged;
  ASSERT_TRUE(runs.ForEach(Table::kSteps, memory,
                           [&](std::string_view k, std::string_view v) {
                             merged.emplace_back(std::string(k), std::string(v));
                             return absl::OkStatus();
                           })
                  .ok());
  std::vector<std::pair<std::string, std::string>> want;
  for (const auto& [key, value] : truth) {
    if (value) want.emplace_back(key, *value);
  }
  EXPECT_EQ(merged, want);
}

// Receipts of `steps` steps, each a start, two model calls and an exec,
// interleaved so that steps straddle the projector's batches; every 97th
// step never completes.
std::vector<receipt::Entry> Workload(int steps) {
  namespace pb = evidence::ledger::v1;
  std::vector<receipt::Entry> out;
  uint64_t seq = 0;
  auto add = [&](int step, int part) {
    receipt::Entry e;
    e.seq = seq++;
    e.logged_at_us = 1767225600000000 + static_cast<int64_t>(e.seq);
    e.emitter = "test";
    pb::Receipt& r = e.receipt;
    r.set_receipt_id(absl::StrCat("r-", step, "-", part));
    r.set_team("team-a");
    r.set_run_id(absl::StrCat("run-", step % 3));
    r.set_step_id(absl::StrCat("step-", step));
    r.set_occurred_at_us(e.logged_at_us);
    if (part == 0) {
      r.mutable_agent_start()->set_decision(pb::DECISION_ALLOW);
      r.mutable_agent_start()->set_timeout_ms(86'400'000);
    } else if (part == 3) {
      r.mutable_agent_exec()->set_start_receipt_id(absl::StrCat("r-", step, "-0"));
      r.mutable_agent_exec()->set_status(step % 5 ? pb::EXEC_STATUS_SUCCEEDED : pb::EXEC_STATUS_FAILED);
    } else {
      auto* m = r.mutable_model_call();
      m->set_route("openai/demo");
      m->set_decision(part == 1 ? pb::DECISION_ALLOW : pb::DECISION_DENY);
      m->set_input_tokens(100 + step);
      m->set_cost_micros(7);
    }
    out.push_back(std::move(e));
  };
  // Step i starts at round i and finishes 4,000 rounds later.
  constexpr int kLag = 4000;
  for (int round = 0; round < steps + kLag; ++round) {
    if (round < steps) add(round, 0);
    int s = round - kLag / 2;
    if (s >= 0 && s < steps) {
      add(s, 1);
      add(s, 2);
    }
    int done = round - kLag;
    if (done >= 0 && done < steps && done % 97 != 0) add(done, 3);
  }
  return out;
}

TEST(Outcomes, SpilledAndInMemoryAgreeByteForByte) {
  std::vector<receipt::Entry> entries = Workload(12000);
  ASSERT_GT(entries.size(), 40000u);
  Outcomes in_memory, spilled(/*spill_bytes=*/64 << 10);
  for (const auto& e : entries) {
    ASSERT_TRUE(in_memory.Add(e).ok());
    ASSERT_TRUE(spilled.Add(e).ok());
  }
  std::string a, b;
  ASSERT_TRUE(in_memory.Write([&](std::string_view piece) { a.append(piece); }).ok());
  ASSERT_TRUE(spilled.Write([&](std::string_view piece) { b.append(piece); }).ok());
  EXPECT_EQ(in_memory.spilled_runs(), 0u);
  EXPECT_GE(spilled.spilled_runs(), 4u);
  EXPECT_EQ(a, b);
  // The document says what the workload did: unknown-free, but with pending
  // steps (no completion) and failed ones.
  EXPECT_NE(a.find("\"failed\""), std::string::npos);
  EXPECT_NE(a.find("\"pending\""), std::string::npos);
  // Written twice, the same.
  std::string c;
  ASSERT_TRUE(spilled.Write([&](std::string_view piece) { c.append(piece); }).ok());
  EXPECT_EQ(b, c);
}

// Project in batches of every size, mixed with Add, spilled or not: the
// same document as Add alone.
TEST(Outcomes, ProjectInBatchesEqualsAddOneByOne) {
  std::vector<receipt::Entry> entries = Workload(3000);
  Outcomes one_by_one;
  for (const auto& e : entries) ASSERT_TRUE(one_by_one.Add(e).ok());
  std::string want;
  ASSERT_TRUE(one_by_one.Write([&](std::string_view piece) { want.append(piece); }).ok());
  for (size_t spill : {Outcomes::kSpillBytes, size_t{32} << 10}) {
    Outcomes batched(spill);
    size_t at = 0, size = 1;
    while (at < entries.size()) {
      size_t n = std::min(size, entries.size() - at);
      if (size % 3 == 0) {
        for (size_t k = at; k < at + n; ++k) ASSERT_TRUE(batched.Add(entries[k]).ok());
      } else {
        ASSERT_TRUE(batched.Project(absl::MakeConstSpan(entries).subspan(at, n)).ok());
      }
      at += n;
      size = size * 7 % 2003 + 1;
    }
    std::string got;
    ASSERT_TRUE(batched.Write([&](std::string_view piece) { got.append(piece); }).ok());
    EXPECT_EQ(got, want) << "spill at " << spill;
    if (spill != Outcomes::kSpillBytes) {
      EXPECT_GT(batched.spilled_runs(), 0u);
    }
  }
}

}  // namespace
}  // namespace ledger::pack
