#include "query/projector/projector.h"

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "query/projector/keys.h"
#include "tests/util/status_matchers.h"

namespace ledger::query {
namespace {

using ::ledger::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Pair;

using projection::Table;

// Applies receipts as the log would: dense seqs, a clock that moves 1 ms
// per entry.
class Log {
 public:
  uint64_t Add(const std::string& json) {
    auto r = receipt::FromJsonText(json);
    EXPECT_TRUE(r.ok()) << r.status() << " " << json;
    if (!r->has_attempt()) r->set_attempt(1);
    uint64_t seq = next_++;
    receipts_.push_back(*r);
    entries_.push_back({seq, 1'000'000 + static_cast<int64_t>(seq) * 1000, "test", &receipts_.back()});
    absl::Status s = projector_.Apply({&entries_.back(), 1}, txn_);
    EXPECT_TRUE(s.ok()) << s;
    return seq;
  }

  // What the log gives an upgrade (Projector::Replay): the entries Add
  // applied, `chunk` at a time, each chunk's writes stored into `stored`.
  projection::Projector::Replay Replay(size_t chunk, projection::OverlayTxn& stored) {
    return [this, chunk, &stored](projection::Projector::Chunk apply) -> absl::Status {
      for (size_t at = 0; at < entries_.size(); at += chunk) {
        projection::OverlayTxn txn(&stored, nullptr);
        if (auto s = apply(absl::MakeConstSpan(entries_).subspan(at, chunk), txn); !s.ok()) return s;
        for (int t = 0; t < projection::kTableCount; ++t) {
          for (const auto& [key, value] : txn.writes()[t]) {
            if (value.has_value()) {
              stored.Put(static_cast<Table>(t), key, *value);
            } else {
              stored.Delete(static_cast<Table>(t), key);
            }
          }
        }
      }
      return absl::OkStatus();
    };
  }

  // All of `jsons` in one Apply call, as one sequencer batch.
  void AddBatch(const std::vector<std::string>& jsons) {
    std::vector<pb::Receipt> receipts;
    for (const auto& json : jsons) {
      auto r = receipt::FromJsonText(json);
      EXPECT_TRUE(r.ok()) << r.status() << " " << json;
      if (!r->has_attempt()) r->set_attempt(1);
      receipts.push_back(*r);
    }
    std::vector<projection::Entry> entries;
    for (auto& r : receipts) {
      uint64_t seq = next_++;
      entries.push_back({seq, 1'000'000 + static_cast<int64_t>(seq) * 1000, "test", &r});
    }
    absl::Status s = projector_.Apply(entries, txn_);
    EXPECT_TRUE(s.ok()) << s;
  }

  // Whether `row` was written or deleted at all.
  bool Touched(const std::string& row) { return txn_.writes()[static_cast<int>(Table::kIndex)].contains(row); }

  pb::Step Step(const std::string& team, const std::string& run, const std::string& step, int64_t attempt = 1) {
    auto raw = txn_.Get(Table::kSteps, EncodeStepKey({team, run, step, attempt}));
    pb::Step s;
    EXPECT_TRUE(raw.ok() && raw->has_value()) << "no step " << step;
    if (raw.ok() && raw->has_value()) s.ParseFromString(**raw);
    return s;
  }

  pb::Run Run(const std::string& team, const std::string& run) {
    auto raw = txn_.Get(Table::kRuns, EncodeRunKey(team, run));
    pb::Run r;
    EXPECT_TRUE(raw.ok() && raw->has_value());
    if (raw.ok() && raw->has_value()) r.ParseFromString(**raw);
    return r;
  }

  bool HasRow(const std::string& row) { return txn_.Get(Table::kIndex, row)->has_value(); }
  const projection::OverlayTxn& txn() const { return txn_; }
  StepProjector& projector() { return projector_; }
  bool HasChange(uint64_t seq) { return txn_.Get(Table::kChanges, U64(seq))->has_value(); }
  size_t Rows(Table t) {
    size_t n = 0;
    for (const auto& [k, v] : txn_.writes()[static_cast<int>(t)]) n += v.has_value();
    return n;
  }

 private:
  StepProjector projector_;
  projection::OverlayTxn txn_{nullptr, nullptr};
  uint64_t next_ = 0;
  std::deque<pb::Receipt> receipts_;  // what entries_ point at
  std::vector<projection::Entry> entries_;
};

std::string Start(const std::string& id, const std::string& step, const std::string& extra = "") {
  return R"({"receipt_id":")" + id + R"(","kind":"agent_start","team":"t","run_id":"r","step_id":")" + step +
         R"(","occurred_at_us":1,"decision":"allow","timeout_ms":60000,"cost_reserved_micros":500)" + extra + "}";
}

std::string Deny(const std::string& id, const std::string& step) {
  return R"({"receipt_id":")" + id + R"(","kind":"agent_start","team":"t","run_id":"r","step_id":")" + step +
         R"(","occurred_at_us":1,"decision":"deny","reason":"policy"})";
}

std::string Exec(const std::string& id, const std::string& start, const std::string& step, const std::string& status,
                 int cost = 100, const std::string& team = "t") {
  return R"({"receipt_id":")" + id + R"(","kind":"agent_exec","team":")" + team + R"(","run_id":"r","step_id":")" +
         step + R"(","occurred_at_us":2,"start_receipt_id":")" + start + R"(","status":")" + status +
         R"(","cost_micros":)" + std::to_string(cost) + "}";
}

std::string Call(const std::string& id, const std::string& step, const std::string& decision, int cost,
                 const std::string& kind = "model_call") {
  std::string body = kind == "model_call" ? R"("route":"m","input_tokens":10,"output_tokens":5)" : R"("tool":"git")";
  return R"({"receipt_id":")" + id + R"(","kind":")" + kind + R"(","team":"t","run_id":"r","step_id":")" + step +
         R"(","occurred_at_us":3,"decision":")" + decision + R"(",)" + body + R"(,"cost_micros":)" +
         std::to_string(cost) + "}";
}

std::string Unknown(uint64_t start_seq, const std::string& start_id, const std::string& step) {
  return R"({"receipt_id":"ledger.unknown.)" + std::to_string(start_seq) +
         R"(","kind":"step_unknown","team":"t","run_id":"r","step_id":")" + step +
         R"(","occurred_at_us":4,"start_seq":)" + std::to_string(start_seq) + R"(,"start_receipt_id":")" + start_id +
         R"(","deadline_us":99})";
}

// `json` (a receipt) with the trace id `trace`.
std::string Traced(std::string json, const std::string& trace) {
  json.insert(json.size() - 1, R"(,"trace_id":")" + trace + "\"");
  return json;
}

constexpr char kTrace[] = "4bf92f3577b34da6a3ce929d0e0e4736";

std::vector<pb::Anomaly> Flags(const pb::Step& s) {
  std::vector<pb::Anomaly> out;
  for (int a : s.anomalies()) out.push_back(static_cast<pb::Anomaly>(a));
  return out;
}

TEST(ProjectorTest, PendingThenSucceeded) {
  Log log;
  uint64_t s0 = log.Add(Start("a", "s1"));
  pb::Step pending = log.Step("t", "r", "s1");
  EXPECT_EQ(pending.state(), pb::STEP_STATE_PENDING);
  EXPECT_EQ(pending.timeout_at_us(), 1'000'000 + 60'000'000);
  EXPECT_TRUE(log.HasRow(DeadlineRow(pending.timeout_at_us(), s0)));
  uint64_t s1 = log.Add(Exec("b", "a", "s1", "succeeded", 120));
  pb::Step done = log.Step("t", "r", "s1");
  EXPECT_EQ(done.state(), pb::STEP_STATE_SUCCEEDED);
  EXPECT_EQ(done.completion_seq(), s1);
  EXPECT_EQ(done.charged_cost_micros(), 120);  // succeeded: actual, not reserved
  EXPECT_EQ(std::vector<uint64_t>(done.seqs().begin(), done.seqs().end()), (std::vector<uint64_t>{0, 1}));
  EXPECT_FALSE(log.HasRow(DeadlineRow(pending.timeout_at_us(), s0)));
  EXPECT_TRUE(Flags(done).empty());
  pb::Run run = log.Run("t", "r");
  EXPECT_EQ(run.steps_succeeded(), 1);
  EXPECT_EQ(run.steps_pending(), 0);
  EXPECT_EQ(run.entries(), 2);
}

TEST(ProjectorTest, FailedKeepsExactStatusAndChargesTheReservation) {
  Log log;
  log.Add(Start("a", "s1"));
  log.Add(Exec("b", "a", "s1", "timed_out", 20));
  pb::Step s = log.Step("t", "r", "s1");
  EXPECT_EQ(s.state(), pb::STEP_STATE_FAILED);
  EXPECT_EQ(s.exec_status(), pb::EXEC_STATUS_TIMED_OUT);
  EXPECT_EQ(s.actual_cost_micros(), 20);
  EXPECT_EQ(s.charged_cost_micros(), 500);
  EXPECT_EQ(log.Run("t", "r").charged_cost_micros(), 500);
}

TEST(ProjectorTest, DeniedAndCompletionAfterDeny) {
  Log log;
  log.Add(Deny("a", "s1"));
  EXPECT_EQ(log.Step("t", "r", "s1").state(), pb::STEP_STATE_DENIED);
  log.Add(Exec("b", "a", "s1", "succeeded"));
  pb::Step s = log.Step("t", "r", "s1");
  EXPECT_EQ(s.state(), pb::STEP_STATE_DENIED);
  EXPECT_EQ(Flags(s), std::vector<pb::Anomaly>{pb::ANOMALY_COMPLETION_AFTER_DENY});
  EXPECT_EQ(log.Run("t", "r").steps_denied(), 1);
  EXPECT_EQ(log.Run("t", "r").anomalies(), 1);
}

TEST(ProjectorTest, UnknownThenLateCompletionStaysUnknown) {
  Log log;
  uint64_t start = log.Add(Start("a", "s1"));
  uint64_t unknown = log.Add(Unknown(start, "a", "s1"));
  pb::Step s = log.Step("t", "r", "s1");
  EXPECT_EQ(s.state(), pb::STEP_STATE_UNKNOWN);
  EXPECT_EQ(s.unknown_seq(), unknown);
  EXPECT_EQ(s.deadline_us(), 99);
  EXPECT_EQ(s.charged_cost_micros(), 500);  // unknown: the reservation at least
  EXPECT_FALSE(log.HasRow(DeadlineRow(s.timeout_at_us(), start)));
  log.Add(Exec("b", "a", "s1", "succeeded", 10));
  pb::Step late = log.Step("t", "r", "s1");
  EXPECT_EQ(late.state(), pb::STEP_STATE_UNKNOWN);
  EXPECT_TRUE(late.has_unknown());
  EXPECT_EQ(late.unknown_seq(), unknown);
  EXPECT_TRUE(late.has_completion());
  EXPECT_EQ(late.exec_status(), pb::EXEC_STATUS_SUCCEEDED);
  EXPECT_EQ(Flags(late), std::vector<pb::Anomaly>{pb::ANOMALY_LATE_COMPLETION});
  pb::Run run = log.Run("t", "r");
  EXPECT_EQ(run.steps_unknown(), 1);
  ASSERT_EQ(run.unknown_steps_size(), 1);
  EXPECT_EQ(run.unknown_steps(0).step_id(), "s1");
}

TEST(ProjectorTest, OrphanCompletion) {
  Log log;
  log.Add(Exec("b", "no-such-start", "s9", "failed"));
  pb::Step s = log.Step("t", "r", "s9");
  EXPECT_EQ(s.state(), pb::STEP_STATE_FAILED);
  EXPECT_FALSE(s.has_start());
  EXPECT_EQ(Flags(s), std::vector<pb::Anomaly>{pb::ANOMALY_ORPHAN_COMPLETION});
}

TEST(ProjectorTest, StartOfAnotherTeamIsAnOrphan) {
  Log log;
  log.Add(Start("a", "s1"));
  log.Add(Exec("b", "a", "s1", "succeeded", 1, "other-team"));
  EXPECT_EQ(log.Step("t", "r", "s1").state(), pb::STEP_STATE_PENDING);  // untouched
  EXPECT_EQ(Flags(log.Step("other-team", "r", "s1")), std::vector<pb::Anomaly>{pb::ANOMALY_ORPHAN_COMPLETION});
}

TEST(ProjectorTest, DuplicateAndConflictingCompletions) {
  Log log;
  log.Add(Start("a", "s1"));
  log.Add(Exec("b", "a", "s1", "succeeded"));
  log.Add(Exec("c", "a", "s1", "succeeded"));
  EXPECT_EQ(Flags(log.Step("t", "r", "s1")), std::vector<pb::Anomaly>{pb::ANOMALY_DUPLICATE_COMPLETION});
  log.Add(Exec("d", "a", "s1", "killed"));
  pb::Step s = log.Step("t", "r", "s1");
  EXPECT_EQ(s.state(), pb::STEP_STATE_SUCCEEDED);  // the first completion stands
  EXPECT_EQ(Flags(s), (std::vector<pb::Anomaly>{pb::ANOMALY_DUPLICATE_COMPLETION, pb::ANOMALY_CONFLICTING_COMPLETION}));
}

TEST(ProjectorTest, MismatchedCompletionDoesNotCompleteTheStart) {
  Log log;
  log.Add(Start("a", "s1"));
  log.Add(Exec("b", "a", "s2", "succeeded"));
  pb::Step s = log.Step("t", "r", "s1");
  EXPECT_EQ(s.state(), pb::STEP_STATE_PENDING);
  EXPECT_EQ(Flags(s), std::vector<pb::Anomaly>{pb::ANOMALY_MISMATCHED_COMPLETION});
  EXPECT_EQ(s.seqs_size(), 2);
}

TEST(ProjectorTest, DuplicateStart) {
  Log log;
  log.Add(Start("a", "s1"));
  log.Add(Start("a2", "s1"));
  pb::Step s = log.Step("t", "r", "s1");
  EXPECT_EQ(s.start_receipt_id(), "a");
  EXPECT_EQ(Flags(s), std::vector<pb::Anomaly>{pb::ANOMALY_DUPLICATE_START});
}

TEST(ProjectorTest, CallsAttachToTheirStepElseToTheRun) {
  Log log;
  log.Add(Call("c0", "s1", "allow", 7));  // before its step: the run's
  log.Add(Start("a", "s1"));
  log.Add(Call("c1", "s1", "allow", 30));
  log.Add(Call("c2", "s1", "deny", 0));
  log.Add(Call("c3", "s1", "allow", 5, "tool_call"));
  log.Add(Call("c4", "", "allow", 11));
  log.Add(Exec("b", "a", "s1", "succeeded", 100));
  pb::Step s = log.Step("t", "r", "s1");
  EXPECT_EQ(s.calls().model_calls_allowed(), 1);
  EXPECT_EQ(s.calls().model_calls_denied(), 1);
  EXPECT_EQ(s.calls().tool_calls_allowed(), 1);
  EXPECT_EQ(s.calls().input_tokens(), 20);
  EXPECT_EQ(s.calls().cost_micros(), 35);
  EXPECT_EQ(s.actual_cost_micros(), 135);
  pb::Run run = log.Run("t", "r");
  EXPECT_EQ(run.calls().model_calls_allowed(), 3);
  EXPECT_EQ(run.unattached_calls().model_calls_allowed(), 2);
  EXPECT_EQ(run.unattached_calls().cost_micros(), 18);
  EXPECT_EQ(run.actual_cost_micros(), 135 + 18);
  EXPECT_EQ(run.charged_cost_micros(), 135 + 18);
}

TEST(ProjectorTest, IndexesFollowTheState) {
  Log log;
  log.Add(Start("a", "s1"));
  pb::Step s = log.Step("t", "r", "s1");
  std::string key = EncodeStepKey({"t", "r", "s1", 1});
  uint64_t at = static_cast<uint64_t>(s.first_at_us());
  EXPECT_TRUE(log.HasRow(TeamTimeRow("t", at, key)));
  EXPECT_TRUE(log.HasRow(RunTimeRow(EncodeRunKey("t", "r"), at, key)));
  EXPECT_TRUE(log.HasRow(StateRow("t", pb::STEP_STATE_PENDING, at, key)));
  EXPECT_TRUE(log.HasRow(DeadlineRow(s.timeout_at_us(), 0)));
  log.Add(Exec("b", "a", "s1", "error"));
  EXPECT_FALSE(log.HasRow(DeadlineRow(s.timeout_at_us(), 0)));
  EXPECT_FALSE(log.HasRow(StateRow("t", pb::STEP_STATE_PENDING, at, key)));
  EXPECT_TRUE(log.HasRow(StateRow("t", pb::STEP_STATE_FAILED, at, key)));
  EXPECT_TRUE(log.HasRow(RunsRow("t", 1'000'000, EncodeRunKey("t", "r"))));
  EXPECT_EQ(log.Rows(Table::kChanges), 2u);
}

// The records of `from` in a Txn of their own, less the rows `drop` picks,
// with a scan over them in key order.
struct Stored {
  explicit Stored(const projection::OverlayTxn& from, const std::function<bool(Table, const std::string&)>& drop) {
    for (int t = 0; t < projection::kTableCount; ++t) {
      for (const auto& [key, value] : from.writes()[t]) {
        if (value.has_value() && !drop(static_cast<Table>(t), key)) {
          rows[t][key] = *value;
          txn.Put(static_cast<Table>(t), key, *value);
        }
      }
    }
  }
  projection::Projector::Scan Scan() {
    return [this](Table t, std::string_view prefix, absl::FunctionRef<bool(std::string_view, std::string_view)> row) {
      for (const auto& [key, value] : rows[static_cast<int>(t)]) {
        if (key.starts_with(prefix) && !row(key, value)) break;
      }
      return absl::OkStatus();
    };
  }
  std::map<std::string, std::string> Index() const {
    std::map<std::string, std::string> out;
    for (const auto& [key, value] : txn.writes()[static_cast<int>(Table::kIndex)]) {
      if (value.has_value()) out[key] = *value;
    }
    return out;
  }
  std::array<std::map<std::string, std::string>, projection::kTableCount> rows;
  projection::OverlayTxn txn{nullptr, nullptr};
};

TEST(ProjectorTest, UpgradeFromFormat1GivesPendingStepsTheStateRowsAndCallsTheTraceRowsApplyWrites) {
  Log log;
  log.Add(Start("a", "s1"));
  log.Add(Start("b", "s2"));
  log.Add(Exec("c", "a", "s1", "succeeded"));
  log.Add(Start("d", "s3"));
  log.Add(Deny("e", "s4"));
  log.Add(Traced(Call("f", "s2", "allow", 5), kTrace));
  const std::string pending_prefix = StatePrefix("t", pb::STEP_STATE_PENDING);
  Stored today(log.txn(), [](Table, const std::string&) { return false; });
  // What format 1 stored: the same, with no state row for a pending step
  // and no trace row for a call.
  Stored old(log.txn(), [&](Table t, const std::string& key) {
    return t == Table::kIndex && (key.starts_with(pending_prefix) || key.starts_with("C"));
  });
  ASSERT_EQ(today.Index().size(), old.Index().size() + 3);
  auto rows = log.projector().Upgrade(1, old.txn, old.Scan(), log.Replay(4, old.txn));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(*rows, 3u);
  EXPECT_EQ(old.Index(), today.Index());
  EXPECT_EQ(log.projector().Format(), 3u);
}

TEST(ProjectorTest, CallsThatCarryATraceIdAreFoundByItWithTheStepTheyNameInTheLogOrNot) {
  Log log;
  log.Add(Start("a", "s1", R"(,"trace_id":")" + std::string(kTrace) + "\""));
  uint64_t in_step = log.Add(Traced(Call("c1", "s1", "allow", 5), kTrace));
  // An OpenTelemetry span: a call naming a step that no start opened.
  uint64_t span = log.Add(Traced(Call("c2", "span-step", "deny", 0, "tool_call"), kTrace));
  log.Add(Call("c3", "s1", "allow", 5));  // no trace id
  std::map<std::string, std::string> rows;
  for (const auto& [key, value] : log.txn().writes()[static_cast<int>(Table::kIndex)]) {
    if (key.starts_with("C") && value.has_value()) rows[key] = *value;
  }
  EXPECT_THAT(rows, ElementsAre(Pair(CallTraceRow("t", kTrace, in_step), EncodeStepKey({"t", "r", "s1", 1})),
                                Pair(CallTraceRow("t", kTrace, span), EncodeStepKey({"t", "r", "span-step", 1}))));
  // The rows of one trace id share a prefix, in seq order.
  EXPECT_TRUE(CallTraceRow("t", kTrace, in_step).starts_with(CallTracePrefix("t", kTrace)));
  EXPECT_LT(CallTraceRow("t", kTrace, in_step), CallTraceRow("t", kTrace, span));
}

TEST(ProjectorTest, UpgradeFromFormat2WritesTheCallsTraceRowsApplyWritesFromTheLogAgainAfterACrash) {
  Log log;
  log.Add(Start("a", "s1"));
  log.Add(Traced(Call("b", "s1", "allow", 5), kTrace));
  log.Add(Call("c", "s1", "allow", 5));
  log.Add(Traced(Call("d", "span-step", "allow", 5), kTrace));
  log.Add(Exec("e", "a", "s1", "succeeded"));
  Stored today(log.txn(), [](Table, const std::string&) { return false; });
  // What format 2 stored: the same, with no trace row for a call.
  Stored old(log.txn(), [&](Table t, const std::string& key) { return t == Table::kIndex && key.starts_with("C"); });
  ASSERT_EQ(today.Index().size(), old.Index().size() + 2);
  auto rows = log.projector().Upgrade(2, old.txn, old.Scan(), log.Replay(2, old.txn));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(*rows, 2u);
  EXPECT_EQ(old.Index(), today.Index());
  // Done again (a crash came before the new format was recorded): the same.
  rows = log.projector().Upgrade(2, old.txn, old.Scan(), log.Replay(3, old.txn));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(*rows, 2u);
  EXPECT_EQ(old.Index(), today.Index());
}

TEST(ProjectorTest, UpgradeRefusesWhatItCannotRead) {
  Log log;
  log.Add(Start("a", "s1"));
  // A deadline row whose step record is gone.
  Stored damaged(log.txn(), [](Table t, const std::string&) { return t == Table::kSteps; });
  auto rows = log.projector().Upgrade(1, damaged.txn, damaged.Scan(), log.Replay(10, damaged.txn));
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(rows.status().message(), "projection: a deadline row names a step whose record is missing or malformed");
  // A log that cannot be read.
  auto unreadable = [](projection::Projector::Chunk) { return absl::DataLossError("entry 0: not JSON"); };
  rows = log.projector().Upgrade(2, damaged.txn, damaged.Scan(), unreadable);
  EXPECT_THAT(rows.status(), StatusIs(absl::StatusCode::kDataLoss, "entry 0: not JSON"));
  auto newer = log.projector().Upgrade(4, damaged.txn, damaged.Scan(), log.Replay(10, damaged.txn));
  EXPECT_EQ(newer.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(newer.status().message(),
            "projections: records of format 4 cannot be upgraded to format 3; stop the server and run ledgerctl "
            "rebuild");
}

TEST(ProjectorTest, DeadlineRowOfAStepStartedAndFinishedInOneBatchIsNeverWritten) {
  Log log;
  log.AddBatch({Start("a", "s1"), Call("c", "s1", "allow", 5), Exec("b", "a", "s1", "succeeded"), Start("d", "s2")});
  pb::Step s1 = log.Step("t", "r", "s1"), s2 = log.Step("t", "r", "s2");
  EXPECT_EQ(s1.state(), pb::STEP_STATE_SUCCEEDED);
  EXPECT_FALSE(log.Touched(DeadlineRow(s1.timeout_at_us(), 0)));
  // The step still open at the end of the batch keeps its row.
  EXPECT_TRUE(log.HasRow(DeadlineRow(s2.timeout_at_us(), 3)));
  // Finished in a later batch: the row goes then.
  log.AddBatch({Exec("e", "d", "s2", "succeeded")});
  EXPECT_TRUE(log.Touched(DeadlineRow(s2.timeout_at_us(), 3)));
  EXPECT_FALSE(log.HasRow(DeadlineRow(s2.timeout_at_us(), 3)));
}

TEST(ProjectorTest, CallsAreNotStepChangesButCompletionsAre) {
  Log log;
  uint64_t start = log.Add(Start("a", "s1"));
  uint64_t call = log.Add(Call("c1", "s1", "allow", 30));
  uint64_t exec = log.Add(Exec("b", "a", "s1", "succeeded"));
  EXPECT_TRUE(log.HasChange(start));
  EXPECT_FALSE(log.HasChange(call));
  EXPECT_TRUE(log.HasChange(exec));
  EXPECT_EQ(log.Step("t", "r", "s1").calls().cost_micros(), 30);
}

// A Txn that drops unread records (an evidence pack's outcomes) gets the
// same steps and runs, and the projector makes none of what it would drop.
TEST(ProjectorTest, OutcomesOnlyTxnGetsTheSameStepsAndRunsAndNoRows) {
  class Counting final : public projection::Sink {
   public:
    void PutProjection(Table, std::string_view, std::string_view) override { ++given; }
    void DeleteProjection(Table, std::string_view) override { ++given; }
    bool Keeps() const override { return keeps; }
    bool keeps = true;
    int given = 0;
  };
  std::vector<std::string> jsons = {Start("a", "s1"),
                                    Call("c", "s1", "allow", 5),
                                    Start("d", "s2"),
                                    Deny("x", "s3"),
                                    Exec("b", "a", "s1", "succeeded"),
                                    Exec("e", "d", "s2", "error"),
                                    Exec("y", "x", "s3", "succeeded"),
                                    Start("f", "s4"),
                                    Unknown(7, "f", "s4"),
                                    Exec("g", "f", "s4", "succeeded"),
                                    Exec("h", "nope", "s5", "failed")};
  std::vector<pb::Receipt> receipts;
  for (const auto& json : jsons) {
    auto r = receipt::FromJsonText(json);
    ASSERT_TRUE(r.ok()) << r.status();
    if (!r->has_attempt()) r->set_attempt(1);
    receipts.push_back(*r);
  }
  std::vector<projection::Entry> entries;
  for (size_t i = 0; i < receipts.size(); ++i) {
    entries.push_back({i, 1'000'000 + static_cast<int64_t>(i) * 1000, "test", &receipts[i]});
  }
  Counting kept, dropped;
  dropped.keeps = false;
  projection::OverlayTxn full(nullptr, nullptr, &kept), outcomes(nullptr, nullptr, &dropped);
  EXPECT_TRUE(full.KeepsUnread());
  EXPECT_FALSE(outcomes.KeepsUnread());
  StepProjector projector;
  // In two batches, so that a deadline row outlives the first.
  for (auto* txn : {&full, &outcomes}) {
    ASSERT_TRUE(projector.Apply(absl::MakeConstSpan(entries).first(3), *txn).ok());
    ASSERT_TRUE(projector.Apply(absl::MakeConstSpan(entries).subspan(3), *txn).ok());
  }
  EXPECT_GT(kept.given, 10);
  EXPECT_EQ(dropped.given, 0);
  for (Table t : {Table::kSteps, Table::kRuns}) {
    const auto& a = full.writes()[static_cast<int>(t)];
    const auto& b = outcomes.writes()[static_cast<int>(t)];
    EXPECT_EQ(a.size(), b.size());
    for (const auto& [key, value] : a) {
      auto it = b.find(key);
      ASSERT_NE(it, b.end()) << key;
      EXPECT_EQ(it->second, value) << key;
    }
  }
  EXPECT_EQ(full.writes()[static_cast<int>(Table::kSteps)].size(), 5u);
}

TEST(KeysTest, StepKeyRoundTripAndOrder) {
  StepKey k{"team-a", std::string("run\0x", 5), "step", 3};
  auto back = DecodeStepKey(EncodeStepKey(k));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, k);
  EXPECT_THAT(DecodeStepKey("\x05"
                            "ab"),
              StatusIs(absl::StatusCode::kDataLoss, "projection: malformed step key"));
  EXPECT_LT(TeamTimeRow("t", 5, "z"), TeamTimeRow("t", 6, "a"));  // time orders rows
  EXPECT_EQ(StateName(pb::STEP_STATE_UNKNOWN), "unknown");
  EXPECT_EQ(AnomalyName(pb::ANOMALY_LATE_COMPLETION), "late_completion");
}

// The store's memtable hints cut keys by projection::KeyPrefixLength: steps
// and runs by team and run, index rows by family and team, deadline rows
// by their family alone.
TEST(KeysTest, PrefixesTheStoreCutsAreTeamAndRunOrFamilyAndTeam) {
  const std::string run_key = EncodeRunKey("team-a", "run-1");
  const std::string step_key = EncodeStepKey({"team-a", "run-1", "step", 2});
  EXPECT_EQ(step_key.substr(0, projection::KeyPrefixLength(step_key, false, 2)), run_key);
  EXPECT_EQ(projection::KeyPrefixLength(run_key, false, 2), run_key.size());
  for (const std::string& row :
       {TeamTimeRow("team-a", 7, step_key), RunTimeRow(run_key, 7, step_key), StateRow("team-a", 3, 7, step_key),
        RunsRow("team-a", 7, run_key), StartRow("team-a", "r-1")}) {
    const std::string team_part = std::string(1, '\x06') + "team-a";
    EXPECT_EQ(row.substr(0, projection::KeyPrefixLength(row, true, 1)), row.substr(0, 1) + team_part) << row;
  }
  EXPECT_EQ(projection::KeyPrefixLength(DeadlineRow(7, 9), true, 1), 1u);
  EXPECT_EQ(DeadlineRow(7, 9).substr(0, 1), kDeadlinePrefix);
}

// AppendStepJson and AppendRunJson write what StepJson and RunJson dump,
// byte for byte, for records with every part present or absent, odd
// characters in their strings, and extreme numbers.
TEST(ProjectorJsonTest, DirectWritersMatchTheJsonTrees) {
  std::mt19937_64 rng(11);
  const std::vector<std::string> strings = {"",
                                            "run-1",
                                            "quote\" back\\slash",
                                            "tab\tnew\nline\r",
                                            std::string("nul\0ctl\x01\x1f\x7f", 11),
                                            "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x94\x91",
                                            "</script>&"};
  auto str = [&] { return strings[rng() % strings.size()]; };
  auto num = [&]() -> int64_t {
    switch (rng() % 4) {
      case 0:
        return 0;
      case 1:
        return INT64_MAX;
      case 2:
        return INT64_MIN;
      default:
        return static_cast<int64_t>(rng() % 100000) - 50000;
    }
  };
  auto calls = [&](pb::CallTotals* c) {
    c->set_model_calls_allowed(num());
    c->set_model_calls_denied(num());
    c->set_tool_calls_allowed(num());
    c->set_tool_calls_denied(num());
    c->set_input_tokens(num());
    c->set_output_tokens(num());
    c->set_cost_micros(num());
  };
  for (int i = 0; i < 2000; ++i) {
    pb::Step s;
    s.set_team(str());
    s.set_run_id(str());
    s.set_step_id(str());
    s.set_attempt(num());
    s.set_workflow(str());
    s.set_agent(str());
    s.set_state(static_cast<pb::StepState>(rng() % 6));
    s.set_first_at_us(num());
    s.set_last_seq(rng());
    calls(s.mutable_calls());
    s.set_actual_cost_micros(num());
    s.set_charged_cost_micros(num());
    if (rng() % 2) {
      s.set_has_start(true);
      s.set_start_seq(rng());
      s.set_start_receipt_id(str());
      s.set_started_at_us(num());
      s.set_decision(rng() % 2 ? pb::DECISION_DENY : pb::DECISION_ALLOW);
      s.set_reason(str());
      s.set_timeout_ms(num());
      s.set_timeout_at_us(num());
      s.set_cost_reserved_micros(num());
    }
    if (rng() % 2) {
      s.set_has_completion(true);
      s.set_completion_seq(rng());
      s.set_completion_receipt_id(str());
      s.set_completed_at_us(num());
      s.set_exec_status(static_cast<pb::ExecStatus>(rng() % 5));
      s.set_exit_code(num());
      s.set_duration_ms(num());
      s.set_exec_cost_micros(num());
    }
    if (rng() % 2) {
      s.set_has_unknown(true);
      s.set_unknown_seq(rng());
      s.set_unknown_at_us(num());
      s.set_deadline_us(num());
    }
    for (int a = static_cast<int>(rng() % 3); a > 0; --a) s.add_anomalies(static_cast<pb::Anomaly>(1 + rng() % 4));
    for (int q = static_cast<int>(rng() % 4); q > 0; --q) s.add_seqs(rng());
    std::string direct;
    AppendStepJson(s, &direct);
    ASSERT_EQ(direct, StepJson(s).dump()) << s.DebugString();

    pb::Run r;
    r.set_team(str());
    r.set_run_id(str());
    r.set_workflow(str());
    r.set_first_seq(rng());
    r.set_last_seq(rng());
    r.set_first_at_us(num());
    r.set_last_at_us(num());
    r.set_entries(num());
    r.set_steps_pending(num());
    r.set_steps_succeeded(num());
    r.set_steps_failed(num());
    r.set_steps_denied(num());
    r.set_steps_unknown(num());
    for (int u = static_cast<int>(rng() % 3); u > 0; --u) {
      auto* ref = r.add_unknown_steps();
      ref->set_step_id(str());
      ref->set_attempt(num());
    }
    calls(r.mutable_calls());
    calls(r.mutable_unattached_calls());
    r.set_actual_cost_micros(num());
    r.set_charged_cost_micros(num());
    r.set_anomalies(num());
    std::string run;
    AppendRunJson(r, &run);
    ASSERT_EQ(run, RunJson(r).dump()) << r.DebugString();
  }
}

}  // namespace
}  // namespace ledger::query
