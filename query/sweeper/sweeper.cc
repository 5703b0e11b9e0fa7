#include "query/sweeper/sweeper.h"

#include <pthread.h>

#include <future>
#include <vector>

#include "absl/strings/str_cat.h"
#include "query/projector/keys.h"
#include "query/projector/projector.h"
#include "util/jsonlog/jsonlog.h"

namespace ledger::query {

Sweeper::Sweeper(log::Log* log, Options options) : log_(log), options_(std::move(options)) {
  // Failures are counted (and retried at every sweep); the log hears how
  // many were declared.
  log_->SetBeforeSign([this](int64_t now_us) { return SweepAt(now_us).value_or(0); });
  if (options_.interval_ms > 0) thread_ = std::thread([this] { Run(); });
}

Sweeper::~Sweeper() {
  log_->SetBeforeSign(nullptr);
  {
    sync::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void Sweeper::Run() {
  pthread_setname_np(pthread_self(), "ledger-sweeper");
  sync::MutexLock lock(&mu_);
  while (true) {
    mu_.Unlock();
    if (!options_.active || options_.active()) {
      SweepNow().IgnoreError();  // the projection keeps the work: the next sweep retries
    }
    mu_.Lock();
    const auto deadline = sync::CondVar::Clock::now() + std::chrono::milliseconds(options_.interval_ms);
    while (!stopping_ && cv_.WaitUntil(&mu_, deadline)) {
    }
    if (stopping_) return;
  }
}

void Sweeper::Failed(uint64_t start_seq, const absl::Status& why) {
  failures_.Add();
  if (logged_.size() >= 10'000 || !logged_.insert(start_seq).second) return;
  jsonlog::Error("step_unknown_not_declared")
      .Int("start_seq", static_cast<int64_t>(start_seq))
      .Str("code", absl::StatusCodeToString(why.code()))
      .Msg(absl::StrCat(
          "sweeper: the step started at seq ", start_seq,
          " is due but could not be declared unknown (logged once; retried at every sweep): ", why.message()))
      .Emit();
}

absl::StatusOr<int> Sweeper::SweepAt(int64_t now) {
  sync::MutexLock sweeping(&sweep_mu_);
  const int64_t grace_us = options_.grace_ms * 1000;
  // Rows of steps whose timeout_at_us + grace <= now.
  const int64_t due = now - grace_us;
  if (due < 0) return 0;
  const std::string end = DeadlineRow(static_cast<uint64_t>(due) + 1, 0);
  int declared = 0;
  uint64_t undeclared = 0;
  // In rounds of at most kMaxPerSweep steps; a round resumes after the last
  // row of the one before, so steps that keep failing at the front never
  // hide the ones behind them.
  std::string from = kDeadlinePrefix;
  for (bool more = true; more;) {
    std::vector<receipt::Receipt> receipts;
    std::string last;
    const log::LogView view = log_->View();
    absl::Status scanned = view.ScanProjection(
        projection::Table::kIndex, from, end, false,
        // Called by ScanProjection before it returns, under sweep_mu_.
        [&](std::string_view row, std::string_view step_key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sweep_mu_) {
          last = row;
          auto r = UnknownOf(view, step_key, now, grace_us);
          if (!r.ok()) {
            ++undeclared;
            Failed(row.size() >= 17 ? ReadU64(row.substr(9)) : 0, r.status());
          } else {
            receipts.push_back(*std::move(r));
          }
          return receipts.size() < kMaxPerSweep;
        });
    if (!scanned.ok()) return scanned;
    more = receipts.size() == kMaxPerSweep;
    from = last + '\0';
    for (size_t at = 0; at < receipts.size(); at += log::kMaxReceiptsPerAppend) {
      std::span<const receipt::Receipt> chunk(receipts.data() + at,
                                              std::min(receipts.size() - at, log::kMaxReceiptsPerAppend));
      for (const auto& [i, status] : Declare(chunk, &declared)) {
        ++undeclared;
        Failed(static_cast<uint64_t>(chunk[i].step_unknown().start_seq()), status);
      }
    }
  }
  overdue_.store(undeclared, std::memory_order_relaxed);
  return declared;
}

absl::StatusOr<receipt::Receipt> Sweeper::UnknownOf(const log::LogView& view, std::string_view step_key, int64_t now,
                                                    int64_t grace_us) const {
  auto step_raw = view.GetProjection(projection::Table::kSteps, step_key);
  pb::Step step;
  if (!step_raw.ok() || !step_raw->has_value() || !step.ParseFromString(**step_raw)) {
    return absl::DataLossError("the pending step's record is missing or malformed");
  }
  receipt::Receipt r;
  r.set_receipt_id(absl::StrCat(std::string(receipt::kLedgerIdPrefix), "unknown.", step.start_seq()));
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
  return r;
}

std::vector<std::pair<size_t, absl::Status>> Sweeper::Declare(std::span<const receipt::Receipt> chunk, int* declared) {
  std::vector<const receipt::Receipt*> items;
  for (const auto& r : chunk) items.push_back(&r);
  std::promise<std::vector<sequencer::Outcome>> done;
  auto outcomes = done.get_future();
  absl::Status s =
      log_->AppendAsLedger(std::move(items), [&](std::vector<sequencer::Outcome> o) { done.set_value(std::move(o)); });
  std::vector<std::pair<size_t, absl::Status>> failed;
  if (!s.ok()) {
    for (size_t i = 0; i < chunk.size(); ++i) failed.emplace_back(i, s);
    return failed;
  }
  std::vector<sequencer::Outcome> results = outcomes.get();
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].status.ok()) {
      failed.emplace_back(i, results[i].status);
    } else if (!results[i].duplicate) {
      ++*declared;
      declared_.Add();
      declared_by_team_.With({chunk[i].team()})->Add();
    }
  }
  return failed;
}

}  // namespace ledger::query
