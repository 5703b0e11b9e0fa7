// A run's pack read through the store's run index (`run_seqs`): the same
// entries whether the index holds all of the run, only its later part (a
// store written before the index was kept), or none of it; and a damaged
// index is DATA_LOSS, never a pack that leaves an entry out or takes in
// another run's.
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "export/exporter/exporter.h"
#include "export/pack/pack.h"
#include "export/verify/cc/pack_test_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/store/testing.h"
#include "tests/util/status_matchers.h"

namespace ledger {
namespace {

using ::ledger::testing::StatusIs;
using ::testing::HasSubstr;

class RunIndexTest : public PackTest {
 protected:
  // Runs ra and rb of team-a take turns, a receipt at a time: ra's entries
  // are the even seqs 0 to 22, rb's the odd ones.
  void Populate() override {
    std::vector<std::string> json;
    for (int step = 0; step < 4; ++step) {
      for (const char* part : {"start", "m", "x"}) {
        for (const char* run : {"ra", "rb"}) {
          std::string base =
              absl::StrCat(R"("team":"team-a","run_id":")", run, R"(","step_id":"s)", step, R"(","occurred_at_us":5)");
          std::string id = absl::StrCat(run, "s", step);
          if (part == std::string("start")) {
            json.push_back(absl::StrCat(R"({"receipt_id":")", id, R"(-start","kind":"agent_start",)", base,
                                        R"(,"decision":"allow","timeout_ms":60000})"));
          } else if (part == std::string("m")) {
            json.push_back(absl::StrCat(R"({"receipt_id":")", id, R"(-m","kind":"model_call",)", base,
                                        R"(,"route":"m","decision":"allow","input_tokens":3})"));
          } else {
            json.push_back(absl::StrCat(R"({"receipt_id":")", id, R"(-x","kind":"agent_exec",)", base,
                                        R"(,"start_receipt_id":")", id, R"(-start","status":"succeeded"})"));
          }
        }
      }
    }
    Append(json);
  }

  // Closes the log, edits its store as `edit` says, and opens it again.
  void EditStore(const std::function<void(store::Batch&)>& edit) {
    log_.reset();
    {
      auto s = *store::Store::Open(dir_.Sub("data") + "/db");
      store::Batch b = s->NewBatch();
      edit(b);
      ASSERT_TRUE(s->Commit(b).ok());
    }
    log::Log::Options o;
    o.data_dir = dir_.Sub("data");
    o.origin = "ledger.test/packs";
    o.checkpoint_interval_ms = 60'000;
    o.sequencer.projector = &projector_;
    log_ = *log::Log::Open(o, signer_);
  }

  std::vector<uint64_t> IndexedSeqs(const std::string& run) {
    std::vector<uint64_t> seqs;
    absl::Status s = log_->View().ScanRunSeqs("team-a", run, [&](uint64_t seq) {
      seqs.push_back(seq);
      return absl::OkStatus();
    });
    EXPECT_TRUE(s.ok()) << s;
    return seqs;
  }

  // The entries and the multiproof of the pack of run `run`, verified.
  std::map<std::string, std::string> Proven(const std::string& run) {
    std::string pack = Export({"team-a", run}, absl::StrCat(run, "-", ++exports_, ".tar.gz"));
    verify::Result r = Verify(pack);
    EXPECT_TRUE(r.ok) << r.Summary();
    EXPECT_EQ(r.entries, 12u);
    std::string dir = dir_.Sub(absl::StrCat("x", exports_));
    std::filesystem::create_directories(dir);
    auto files = *pack::ExtractArchive(pack, dir, pack::Limits());
    return {{pack::kEntries, Read(files[pack::kEntries])}, {pack::kMultiproof, Read(files[pack::kMultiproof])}};
  }

  absl::Status ExportStatus(const std::string& run) {
    return exporter::ExportPack(*log_, {"team-a", run}, dir_.Sub(absl::StrCat("bad-", ++exports_, ".tar.gz")), {});
  }

  int exports_ = 0;
};

TEST_F(RunIndexTest, TheLedgerIndexesEachRunsEntriesAsItAppendsThem) {
  EXPECT_EQ(IndexedSeqs("ra"), (std::vector<uint64_t>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22}));
  EXPECT_EQ(IndexedSeqs("rb"), (std::vector<uint64_t>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}));
  EXPECT_EQ(IndexedSeqs("rc"), std::vector<uint64_t>{});
}

TEST_F(RunIndexTest, ARunsPackHoldsTheSameEntriesWhateverPartOfTheRunIsIndexed) {
  const auto whole = Proven("ra");
  // A store whose index began after ra's first three entries: they are found
  // by walking back from the first indexed one.
  EditStore([](store::Batch& b) {
    for (uint64_t seq : {0, 2, 4}) store::Testing::DeleteRunSeq(b, "team-a", "ra", seq);
  });
  ASSERT_EQ(IndexedSeqs("ra").front(), 6u);
  EXPECT_EQ(Proven("ra"), whole);
  // A store whose index holds nothing of ra: the whole chain is walked.
  EditStore([](store::Batch& b) {
    for (uint64_t seq = 6; seq <= 22; seq += 2) store::Testing::DeleteRunSeq(b, "team-a", "ra", seq);
  });
  ASSERT_TRUE(IndexedSeqs("ra").empty());
  EXPECT_EQ(Proven("ra"), whole);
}

TEST_F(RunIndexTest, AnIndexThatLeavesOutOrTakesInAnEntryIsDataLoss) {
  // A row lost in the middle of the run: entry 12's run_prev is 10.
  EditStore([](store::Batch& b) { store::Testing::DeleteRunSeq(b, "team-a", "ra", 10); });
  EXPECT_THAT(ExportStatus("ra"),
              StatusIs(absl::StatusCode::kDataLoss,
                       "entry 12: run_prev 10, the run's entry before it is 8: the store's run index or run chain "
                       "is damaged"));
  // rb is whole.
  EXPECT_EQ(ExportStatus("rb"), absl::OkStatus());
  // A row of rb's entry 13 under ra (and ra's row back): 13's run_prev is 11.
  EditStore([](store::Batch& b) {
    b.PutRunSeq("team-a", "ra", 10);
    b.PutRunSeq("team-a", "ra", 13);
  });
  EXPECT_THAT(ExportStatus("ra"), StatusIs(absl::StatusCode::kDataLoss,
                                           HasSubstr("entry 13: run_prev 11, the run's entry before it is 12")));
  // The run's last row lost: the chain ends before the head.
  EditStore([](store::Batch& b) {
    store::Testing::DeleteRunSeq(b, "team-a", "ra", 13);
    store::Testing::DeleteRunSeq(b, "team-a", "ra", 22);
  });
  EXPECT_THAT(ExportStatus("ra"),
              StatusIs(absl::StatusCode::kDataLoss,
                       "run: the run-head map counts 12 entries ending at seq 22; the store's run index and chain "
                       "give 11 ending at seq 20"));
}

}  // namespace
}  // namespace ledger
