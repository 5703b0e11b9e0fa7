// Retention (CONTRACT section 9) through the log, the query service, the
// exporter and the audit, on the ledger's injected clock over simulated
// months: what a pass prunes and keeps, the pruned line, every proof and
// checkpoint unchanged, the projections of runs gone whole, exports refused
// at the line, the audit of the pruned store, and a pass stopped midway.
#include <filesystem>
#include <fstream>
#include <iterator>

#include "export/exporter/exporter.h"
#include "export/verify/cc/verify.h"
#include "gtest/gtest.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/retention/pruned.h"
#include "ledger/storage/log/audit.h"
#include "ledger/storage/store/testing.h"
#include "query/service/query_test_fixture.h"
#include "tests/util/status_matchers.h"

namespace ledger::query {
namespace {

using namespace ::ledger::query::test;  // NOLINT: the fixture and its receipts
using ::ledger::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int64_t kDay = int64_t{86400} * 1000000;

exporter::Scope RunScope(const std::string& team, const std::string& run) {
  exporter::Scope s;
  s.team = team;
  s.run_id = run;
  return s;
}
exporter::Scope SeqScope(uint64_t from, uint64_t to) {
  exporter::Scope s;
  s.from_seq = from;
  s.to_seq = to;
  return s;
}
exporter::Scope WindowScope(const std::string& team, int64_t from_us, int64_t to_us) {
  exporter::Scope s;
  s.team = team;
  s.from_us = from_us;
  s.to_us = to_us;
  return s;
}

std::string ToolOf(const std::string& team, const std::string& run, const std::string& id, const std::string& target) {
  return R"({"receipt_id":")" + id + R"(","kind":"tool_call","team":")" + team + R"(","run_id":")" + run +
         R"(","occurred_at_us":3,"tool":"crm","target":")" + target + R"(","decision":"allow"})";
}

// What the view of `log` reads at `seq`, or the error.
std::string TestingLeaf(const log::Log& log, uint64_t seq) {
  auto leaf = log.View().GetLeaf(seq);
  return leaf.ok() ? *leaf : leaf.status().ToString();
}

class RetentionTest : public QueryTest {
 protected:
  // 100 days: each day team acme appends to its run "daily-<d/10>" and to
  // the run "long" (days 0 to 99), team globex to "g-<d/10>", team keep to
  // "k", and team sparse on days 5 and 50 only; a checkpoint is signed at
  // the end of each day.
  void Fill(int days = 100) {
    for (int d = 0; d < days; ++d) {
      const std::string day = std::to_string(d);
      std::vector<std::string> receipts = {
          ToolOf("acme", "daily-" + std::to_string(d / 10), "a-" + day, "MARK-acme-" + day),
          ToolOf("acme", "long", "l-" + day, "MARK-long-" + day),
          ToolOf("globex", "g-" + std::to_string(d / 10), "g-" + day, "MARK-globex-" + day),
          ToolOf("keep", "k", "k-" + day, "MARK-keep-" + day)};
      if (d == 5 || d == 50) receipts.push_back(ToolOf("sparse", "s", "s-" + day, "MARK-sparse-" + day));
      seqs_.push_back(Append(receipts));
      now_ += kDay - 1000;
      ASSERT_TRUE(log_->SignCheckpoint().ok());
    }
  }
  retention::Policy Policy(const std::string& text) {
    auto p = retention::Policy::Parse(text);
    EXPECT_TRUE(p.ok()) << p.status();
    return *p;
  }
  grpc::Status Run(const std::string& team, const std::string& run) {
    pb::GetRunRequest req;
    req.set_team(team);
    req.set_run_id(run);
    pb::Run out;
    grpc::ClientContext ctx;
    return steps_->GetRun(&ctx, req, &out);
  }
  absl::Status Export(const exporter::Scope& scope) {
    return exporter::ExportPack(*log_, scope, dir_.Sub("pack.tar.gz"));
  }
  std::vector<std::vector<uint64_t>> seqs_;  // by day: acme daily, acme long, globex, keep
};

TEST_F(RetentionTest, APassPrunesWhatItsRulesSayAndEveryProofStays) {
  Fill();
  const auto before = log_->Checkpoint(0);
  ASSERT_TRUE(before.ok());
  const uint64_t acme_old = seqs_[5][0], globex_old = seqs_[5][2], globex_kept = seqs_[50][2], keep_old = seqs_[0][3];
  auto proof_before = log_->ProveInclusion(acme_old, before->size);
  ASSERT_TRUE(proof_before.ok());
  const std::string leaf_before = Stored(acme_old);

  // At day 100: acme keeps 30 days, others 90, team keep for good.
  auto done = log_->Prune(Policy("default 90d\nteam acme 30d\nteam keep forever\n"));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->pass, 1u);
  ASSERT_EQ(done->rules.size(), 3u);
  EXPECT_EQ(done->rules[2].team, "keep");
  EXPECT_EQ(done->rules[2].keep_s, 0);  // kept for good: line 0
  // The lines are the sizes of the checkpoints signed at the end of days 69
  // and 9: the latest at or before each cutoff.
  EXPECT_EQ(done->rules[0].team, "");
  EXPECT_EQ(done->rules[0].below_seq, seqs_[9][3] + 1);
  EXPECT_EQ(done->rules[1].team, "acme");
  EXPECT_EQ(done->rules[1].below_seq, seqs_[69][3] + 1);
  // acme: 70 days of 2 entries; globex: 10 days of 1.
  EXPECT_EQ(done->pruned, 70u * 2 + 10 + 1);

  // Pruned: its pruned line, the leaf hash its proof was made of.
  const std::string line = Stored(acme_old);
  EXPECT_EQ(line, retention::PrunedLine(acme_old, proof_before->leaf_hash));
  EXPECT_TRUE(retention::LooksPruned(Stored(globex_old)));
  // Kept: a team past the default's line, team keep, the ledger's own.
  EXPECT_TRUE(receipt::ParseLeaf(Stored(globex_kept)).ok());
  EXPECT_TRUE(receipt::ParseLeaf(Stored(keep_old)).ok());
  EXPECT_TRUE(receipt::ParseLeaf(Stored(seqs_[75][0])).ok());
  // The bodies are gone from every file of the data directory.
  EXPECT_THAT(FilesHolding(dir_.Sub("data"), "MARK-acme-5\""), ::testing::IsEmpty());
  EXPECT_THAT(FilesHolding(dir_.Sub("data"), "MARK-globex-5\""), ::testing::IsEmpty());

  // The tree, the checkpoints and the proofs are what they were.
  auto same = log_->Checkpoint(before->size);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->note, before->note);
  auto proof_after = log_->ProveInclusion(acme_old, before->size);
  ASSERT_TRUE(proof_after.ok());
  EXPECT_EQ(proof_after->path, proof_before->path);
  EXPECT_EQ(proof_after->leaf_hash, proof_before->leaf_hash);
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  auto consistency = log_->ProveConsistency(before->size, 0);
  EXPECT_TRUE(consistency.ok()) << consistency.status();

  // The pass's entries: the ledger's, in the policy's order, after the
  // entries they prune.
  auto pass = log_->View().Retention();
  ASSERT_TRUE(pass.ok());
  ASSERT_EQ(pass->seqs.size(), 3u);
  auto entry = receipt::ParseLeaf(Stored(pass->seqs[1]));
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(entry->emitter, receipt::kLedgerEmitter);
  EXPECT_EQ(entry->receipt.receipt_id(), "ledger.retention.1.team.acme");
  EXPECT_EQ(entry->receipt.retention().keep_s(), 30 * 86400);

  // Projections: runs all of whose entries are pruned are gone; a run
  // with entries kept keeps its records.
  EXPECT_EQ(Run("acme", "daily-0").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Run("globex", "g-0").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(Run("acme", "long").ok());
  EXPECT_TRUE(Run("acme", "daily-9").ok());
  EXPECT_TRUE(Run("globex", "g-1").ok());

  // A receipt id pruned is free again: a new receipt, a new seq.
  auto again = Append({ToolOf("acme", "daily-0", "a-5", "again")});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_GT(again[0], pass->seqs[1]);

  // Nothing moved: no pass, nothing appended.
  const uint64_t size = log_->head().size;
  auto idle = log_->Prune(Policy("default 90d\nteam acme 30d\nteam keep forever\n"));
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(idle->pass, 0u);
  EXPECT_EQ(log_->head().size, size);

  auto report = AuditNow();
  EXPECT_TRUE(report.ok) << report.Summary();
  EXPECT_EQ(report.pruned, 70u * 2 + 10 + 1);
  EXPECT_THAT(report.Summary(), HasSubstr("151 entries pruned under the retention policy"));

  // A body that a finished pass pruned, stored again: the audit finds it.
  Close();
  {
    auto store = store::Store::Open(dir_.Sub("data") + "/db");
    ASSERT_TRUE(store.ok()) << store.status();
    store::Batch batch = (*store)->NewBatch();
    batch.PutEntry(acme_old, leaf_before);
    ASSERT_TRUE((*store)->Commit(batch).ok());
    auto found = log::Audit(**store, *note::Verifier::Parse(signer_.VerifierKey()));
    ASSERT_TRUE(found.ok());
    EXPECT_FALSE(found->ok);
    EXPECT_EQ(found->check, "retention");
    EXPECT_EQ(found->seq, static_cast<int64_t>(acme_old));
    EXPECT_EQ(found->found, "its body, still stored");
  }
  Open();
}

TEST_F(RetentionTest, ExportsAtTheLineAreRefusedAndSaySo) {
  Fill();
  ASSERT_TRUE(log_->Prune(Policy("default 90d\nteam acme 30d\n")).ok());
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  const uint64_t line = seqs_[69][3] + 1;

  // A run with a pruned entry, asked for in format 8.
  exporter::ExportOptions eight;
  eight.pack_format = 8;
  EXPECT_THAT(exporter::ExportPack(*log_, RunScope("acme", "long"), dir_.Sub("eight.tar.gz"), eight),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("export: run long of team acme: entry " + std::to_string(seqs_[69][1]) +
                                 " was pruned under the retention policy (pass 1, rule team acme: entries below "
                                 "seq " +
                                 std::to_string(line) + "): its pack would not hold the whole run: ask for format 9")));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("eight.tar.gz")));
  // A run every entry of which was pruned (days 60 to 69).
  EXPECT_THAT(Export(RunScope("acme", "daily-6")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("its pack would not hold the whole run, and no entry of it is kept")));
  // A seq range holding one.
  EXPECT_THAT(Export(SeqScope(seqs_[10][0], seqs_[80][0])),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("export: seq " + std::to_string(seqs_[10][0]) +
                                 " was pruned under the retention policy (pass 1): ask for seqs from " +
                                 std::to_string(line))));
  // A team window from before the cutoff.
  EXPECT_THAT(Export(WindowScope("acme", kT0, kT0 + 95 * kDay)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("export: team acme: its entries below seq " + std::to_string(line) + " were pruned")));
  // A window of the team's first entries kept: its bound before is pruned.
  // At the cutoff itself (day 70): an entry below the line may be logged then.
  EXPECT_THAT(Export(WindowScope("acme", kT0 + 70 * kDay, kT0 + 95 * kDay)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("a window must start after the cutoff " + std::to_string(kT0 + 70 * kDay))));
  // Just after it: the team's entry before the window (day 70's) is kept.
  EXPECT_TRUE(Export(WindowScope("acme", kT0 + 70 * kDay + 1, kT0 + 95 * kDay)).ok());
  // A team whose entry before the window is below its line: that bound is
  // pruned, and a bound is shown by its leaf.
  EXPECT_THAT(Export(WindowScope("sparse", kT0 + 20 * kDay, kT0 + 95 * kDay)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("export: team sparse: its entry " + std::to_string(seqs_[5][4]) +
                                 ", the window's bound before it, was pruned")));
  // What the line leaves whole exports.
  EXPECT_TRUE(Export(RunScope("acme", "daily-9")).ok());
  EXPECT_TRUE(Export(SeqScope(line, seqs_[90][0])).ok());
  EXPECT_TRUE(Export(WindowScope("acme", kT0 + 80 * kDay, kT0 + 95 * kDay)).ok());
  // globex's window crosses acme's pruned entries, which are not its own.
  EXPECT_TRUE(Export(WindowScope("globex", kT0 + 20 * kDay, kT0 + 95 * kDay)).ok());
}

// A run across the line is a pack of format 9 (CONTRACT section 9): its
// entries from the line, the pass's retention entry and the policy, which
// the verifier holds to each other.
TEST_F(RetentionTest, ARunAcrossTheLineIsAPackFromTheLine) {
  Fill();
  const std::string policy = "default 90d\nteam acme 30d\nteam keep forever\n";
  ASSERT_TRUE(log_->Prune(Policy(policy)).ok());
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  const uint64_t line = seqs_[69][3] + 1;
  ASSERT_TRUE(Export(RunScope("acme", "long")).ok());
  verify::Options o;
  o.vkey = log_->verifier_key();
  o.expect_scope = RunScope("acme", "long");
  auto r = verify::VerifyPack(dir_.Sub("pack.tar.gz"), o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->ok) << r->Summary();
  ASSERT_TRUE(r->pruned_before.has_value()) << r->Summary();
  EXPECT_EQ(r->pruned_before->from_seq, line);
  EXPECT_EQ(r->pruned_before->count, 70u);  // days 0 to 69
  EXPECT_EQ(r->entries, 30u);               // days 70 to 99
  EXPECT_EQ(r->pruned_before->rule, "team acme");
  EXPECT_EQ(r->pruned_before->pass, 1u);
  EXPECT_EQ(r->pruned_before->cutoff_us, now_ - 30 * kDay) << "the pass's now is the clock's";
  EXPECT_EQ(r->pruned_before->policy_sha256, hash::Hex(hash::Sha256(policy)));
  EXPECT_THAT(r->Summary(), HasSubstr("complete from seq " + std::to_string(line) +
                                      ": every entry of the run from seq " + std::to_string(line)));
  EXPECT_THAT(r->Summary(),
              HasSubstr("(run-head proof, 30 of its 100 entries); the 70 before seq " + std::to_string(line) +
                        " were pruned under the retention policy (pass 1, "
                        "rule team acme, cutoff "));
}

// A pass made by a version that kept no policy bytes: its runs across the
// line are refused as they were, until a pass keeps its policy again.
TEST_F(RetentionTest, APassThatKeptNoPolicyLeavesItsRunsRefused) {
  Fill();
  const std::string policy = "default 90d\nteam acme 30d\n";
  ASSERT_TRUE(log_->Prune(Policy(policy)).ok());
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  Close();
  {
    auto store = store::Store::Open(dir_.Sub("data") + "/db");
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_TRUE((*store)->RetentionPolicy(hash::Sha256(policy)).ok()) << "the pass kept its policy";
    store::Batch batch = (*store)->NewBatch();
    store::Testing::DeleteRetentionPolicy(batch, hash::Sha256(policy));
    ASSERT_TRUE((*store)->Commit(batch).ok());
  }
  Open();
  EXPECT_THAT(Export(RunScope("acme", "long")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("was pruned under the retention policy (pass 1, rule team acme: entries below seq " +
                                 std::to_string(seqs_[69][3] + 1) + "): its pack would not hold the whole run")));
  // A later pass that moves the line keeps its policy: the run exports.
  now_ += 2 * kDay;
  Append({ToolOf("acme", "long", "l-late", "MARK-late")});
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  auto pass = log_->Prune(Policy(policy));
  ASSERT_TRUE(pass.ok()) << pass.status();
  ASSERT_EQ(pass->pass, 2u);
  ASSERT_TRUE(log_->SignCheckpoint().ok());
  EXPECT_TRUE(Export(RunScope("acme", "long")).ok());
}

TEST_F(RetentionTest, APassStoppedMidwayIsFinishedAtTheNextStart) {
  Fill(40);
  Close();
  // The commits after the pass's first two (its entries, the pruning
  // floor) fail: the pass stops with every row left to delete.
  store::Faults faults;
  {
    log::Log::Options o = LogOptions();
    o.faults = &faults;
    auto log = log::Log::Open(o, signer_);
    ASSERT_TRUE(log.ok()) << log.status();
    // The pass's entries and its floor are committed; its deletions fail.
    faults.commits_before_failing = 2;
    auto done = (*log)->Prune(Policy("team acme 10d\n"));
    EXPECT_THAT(done.status(), StatusIs(absl::StatusCode::kUnavailable));
    faults.commits_before_failing = -1;
    EXPECT_FALSE(retention::LooksPruned(TestingLeaf(**log, seqs_[0][0])));
  }
  Open();
  auto report = AuditNow();
  EXPECT_TRUE(report.ok) << report.Summary();
  EXPECT_EQ(report.pruned, 30u * 2);
  EXPECT_TRUE(retention::LooksPruned(Stored(seqs_[0][0])));
}

}  // namespace
}  // namespace ledger::query
