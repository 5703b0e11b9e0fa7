#include "query/service/sweeper.h"

#include <pthread.h>

#include <future>
#include <vector>

#include "absl/strings/str_cat.h"
#include "query/projector/keys.h"
#include "query/projector/projector.h"

namespace ledger::query {

Sweeper::Sweeper(log::Log* log, Options options) : log_(log), options_(std::move(options)) {
  if (options_.interval_ms > 0) thread_ = std::thread([this] { Run(); });
}

Sweeper::~Sweeper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Sweeper::Run() {
  pthread_setname_np(pthread_self(), "ledger-sweeper");
  std::unique_lock<std::mutex> lock(mu_);
  do {
    lock.unlock();
    SweepNow().IgnoreError();  // the projection keeps the work: the next sweep retries
    lock.lock();
  } while (!cv_.wait_for(lock, std::chrono::milliseconds(options_.interval_ms),
                         [&] { return stopping_; }));
}

absl::StatusOr<int> Sweeper::SweepNow() {
  std::lock_guard<std::mutex> sweeping(sweep_mu_);
  const int64_t now = options_.clock();
  const int64_t grace_us = options_.grace_ms * 1000;
  // Rows of steps whose timeout_at_us + grace <= now.
  const int64_t due = now - grace_us;
  if (due < 0) return 0;
  const store::Store& store = log_->store();
  std::vector<receipt::Receipt> receipts;
  absl::Status read;
  absl::Status scanned = store.ScanProjection(
      projection::Table::kIndex, kDeadlinePrefix, DeadlineRow(static_cast<uint64_t>(due) + 1, 0),
      false, [&](std::string_view row, std::string_view step_key) {
        auto step_raw = store.GetProjection(projection::Table::kSteps, step_key);
        pb::Step step;
        if (!step_raw.ok() || !step_raw->has_value() || !step.ParseFromString(**step_raw)) {
          read = absl::DataLossError("sweeper: a pending step's record is missing or malformed");
          return false;
        }
        receipt::Receipt r;
        r.set_receipt_id(absl::StrCat("ledger.unknown.", step.start_seq()));
        r.set_team(step.team());
        r.set_run_id(step.run_id());
        r.set_step_id(step.step_id());
        r.set_attempt(step.attempt());
        r.set_workflow(step.workflow());
        r.set_agent(step.agent());
        r.set_occurred_at_us(now);
        auto* u = r.mutable_step_unknown();
        u->set_start_seq(static_cast<int64_t>(step.start_seq()));
        u->set_start_receipt_id(step.start_receipt_id());
        u->set_deadline_us(step.timeout_at_us() + grace_us);
        receipts.push_back(std::move(r));
        return receipts.size() < 10'000;
      });
  if (!scanned.ok()) return scanned;
  if (!read.ok()) return read;
  int declared = 0;
  for (size_t from = 0; from < receipts.size(); from += log::kMaxReceiptsPerAppend) {
    size_t to = std::min(receipts.size(), from + log::kMaxReceiptsPerAppend);
    std::vector<const receipt::Receipt*> chunk;
    for (size_t i = from; i < to; ++i) chunk.push_back(&receipts[i]);
    std::promise<std::vector<sequencer::Outcome>> done;
    auto outcomes = done.get_future();
    absl::Status s = log_->AppendAsLedger(std::move(chunk), [&](std::vector<sequencer::Outcome> o) {
      done.set_value(std::move(o));
    });
    if (!s.ok()) return s;
    for (const auto& o : outcomes.get()) {
      if (!o.status.ok()) return o.status;
      if (!o.duplicate) {
        ++declared;
        declared_.Add();
      }
    }
  }
  return declared;
}

}  // namespace ledger::query
