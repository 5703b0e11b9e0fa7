// Helpers shared by the log's tests: receipts, appending, and a fixture
// that opens a log in a temporary directory.
#ifndef LEDGER_STORAGE_LOG_LOG_TESTING_H_
#define LEDGER_STORAGE_LOG_LOG_TESTING_H_

#include <atomic>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/storage/log/log.h"
#include "tests/util/temp_dir.h"

namespace ledger::log {

// The store behind `log`, whose rows the log's tests read and plant.
inline const store::Store& TestingStoreOf(const Log& log) { return *log.store_; }

inline receipt::Receipt Model(const std::string& id) {
  auto r = receipt::FromJsonText(R"({"kind":"model_call","team":"team-a","run_id":"run-1","occurred_at_us":1,)"
                                 R"("route":"r","decision":"allow"})");
  r->set_receipt_id(id);
  return *r;
}

inline std::vector<const receipt::Receipt*> Pointers(const std::vector<receipt::Receipt>& rs) {
  std::vector<const receipt::Receipt*> out;
  for (const auto& r : rs) out.push_back(&r);
  return out;
}

// Appends and waits: the receipts live until the outcomes are in.
inline std::vector<sequencer::Outcome> AppendAll(Log& log, std::vector<receipt::Receipt> rs) {
  std::promise<std::vector<sequencer::Outcome>> p;
  auto f = p.get_future();
  absl::Status s =
      log.Append("tester", Pointers(rs), [&](std::vector<sequencer::Outcome> o) { p.set_value(std::move(o)); });
  EXPECT_TRUE(s.ok()) << s;
  return f.get();
}

class LogTest : public ::testing::Test {
 protected:
  std::unique_ptr<Log> OpenLog() {
    auto log = TryOpen(false);
    EXPECT_TRUE(log.ok()) << log.status();
    return log.ok() ? *std::move(log) : nullptr;
  }
  absl::StatusOr<std::unique_ptr<Log>> TryOpen(bool accept_rollback) {
    Log::Options o;
    o.data_dir = dir_.Sub("data");
    o.origin = "ledger.test/log";
    o.checkpoint_interval_ms = 60'000;  // tests sign explicitly
    o.accept_rollback = accept_rollback;
    return Log::Open(o, signer_);
  }
  // The options of OpenLog's log, its clock read from `now`.
  Log::Options ClockedOptions(std::atomic<int64_t>* now) {
    Log::Options o;
    o.data_dir = dir_.Sub("data");
    o.origin = "ledger.test/log";
    o.checkpoint_interval_ms = 60'000;  // tests sign explicitly
    o.sequencer.clock = [now] { return now->load(); };
    return o;
  }
  std::string Guard() {
    std::ifstream in(dir_.Sub("data") + "/" + Log::kGuardFile);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  testing::TempDir dir_;
  note::Signer signer_ = *note::Signer::Generate("ledger.test/log");
};

inline receipt::Receipt InRun(const std::string& id, const std::string& run) {
  receipt::Receipt r = Model(id);
  r.set_run_id(run);
  return r;
}

inline receipt::Receipt OfTeam(const std::string& id, const std::string& team) {
  receipt::Receipt r = Model(id);
  r.set_team(team);
  return r;
}

}  // namespace ledger::log

#endif  // LEDGER_STORAGE_LOG_LOG_TESTING_H_
