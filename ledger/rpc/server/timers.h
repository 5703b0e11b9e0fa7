// Two timers of the append service: the idle-stream reaper and delayed
// answers. Internal to ledger/rpc/service.
//
// Thread-safe. Each runs a thread of its own and calls out (TryCancel, the
// delayed functions) without its lock held.
#ifndef LEDGER_RPC_SERVER_TIMERS_H_
#define LEDGER_RPC_SERVER_TIMERS_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "grpcpp/server_context.h"
#include "util/sync/mutex.h"

namespace ledger::server {

// Cancels append streams that received nothing for a while, so an idle
// client does not hold a stream (and one of its concurrent calls) forever.
class IdleStreams {
 public:
  explicit IdleStreams(int64_t idle_ms) : idle_us_(idle_ms * 1000) {
    if (idle_ms > 0) thread_ = std::thread([this, idle_ms] { Run(std::clamp<int64_t>(idle_ms / 4, 1, 1000)); });
  }
  ~IdleStreams() {
    {
      sync::MutexLock lock(&mu_);
      stop_ = true;
    }
    wake_.SignalAll();
    if (thread_.joinable()) thread_.join();
  }

  static int64_t NowUs() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // `last_us` MUST stay valid until Remove(ctx).
  void Add(grpc::CallbackServerContext* ctx, const std::atomic<int64_t>* last_us) {
    if (idle_us_ <= 0) return;
    sync::MutexLock lock(&mu_);
    streams_[ctx] = last_us;
  }
  // After Remove(ctx) the reaper no longer touches `ctx`: a cancel of it
  // under way on the reaper's thread ends first, unless Remove is called
  // from within that cancel (the stream's OnDone, on the reaper's thread).
  void Remove(grpc::CallbackServerContext* ctx) {
    if (idle_us_ <= 0) return;
    sync::MutexLock lock(&mu_);
    streams_.erase(ctx);
    while (cancelling_ == ctx && std::this_thread::get_id() != reaper_) cancelled_.Wait(&mu_);
  }

 private:
  void Run(int64_t tick_ms) {
    {
      sync::MutexLock lock(&mu_);
      reaper_ = std::this_thread::get_id();
    }
    while (true) {
      std::vector<grpc::CallbackServerContext*> idle;
      {
        sync::MutexLock lock(&mu_);
        if (stop_) return;
        wake_.WaitUntil(&mu_, sync::CondVar::Clock::now() + std::chrono::milliseconds(tick_ms));
        if (stop_) return;
        int64_t now = NowUs();
        for (const auto& [ctx, last] : streams_) {
          if (now - last->load(std::memory_order_relaxed) > idle_us_) idle.push_back(ctx);
        }
      }
      for (grpc::CallbackServerContext* ctx : idle) Cancel(ctx);
    }
  }

  // Cancels `ctx` unless it was removed since the scan. A Remove(ctx) on
  // another thread waits until TryCancel returns, so `ctx` stays valid
  // through it.
  void Cancel(grpc::CallbackServerContext* ctx) {
    {
      sync::MutexLock lock(&mu_);
      if (streams_.erase(ctx) == 0) return;
      cancelling_ = ctx;
    }
    ctx->TryCancel();
    sync::MutexLock lock(&mu_);
    cancelling_ = nullptr;
    cancelled_.SignalAll();
  }

  const int64_t idle_us_;
  sync::Mutex mu_;
  sync::CondVar wake_;
  sync::CondVar cancelled_;  // cancelling_ went back to nullptr
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::map<grpc::CallbackServerContext*, const std::atomic<int64_t>*> streams_ ABSL_GUARDED_BY(mu_);
  grpc::CallbackServerContext* cancelling_ ABSL_GUARDED_BY(mu_) = nullptr;  // in TryCancel on the reaper's thread
  std::thread::id reaper_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// Runs functions after a delay, on a thread of its own: refusals for being
// over a limit are answered late (auth::Limiter's hold), so that a flooder
// waits instead of spending the server's time on refusals. Whatever is
// still pending at destruction runs then.
class Later {
 public:
  Later() : thread_([this] { Loop(); }) {}
  ~Later() {
    {
      sync::MutexLock lock(&mu_);
      stop_ = true;
    }
    wake_.SignalAll();
    thread_.join();
  }

  void Run(int64_t delay_us, std::function<void()> fn) {
    auto at = sync::CondVar::Clock::now() + std::chrono::microseconds(delay_us);
    {
      sync::MutexLock lock(&mu_);
      pending_.emplace(at, std::move(fn));
    }
    wake_.SignalAll();
  }

 private:
  void Loop() {
    while (std::optional<std::function<void()>> fn = Next()) (*fn)();
  }

  // The first function due, once it is (at once after destruction began);
  // nullopt once stopped with nothing pending.
  std::optional<std::function<void()>> Next() {
    sync::MutexLock lock(&mu_);
    while (true) {
      if (pending_.empty()) {
        if (stop_) return std::nullopt;
        wake_.Wait(&mu_);
        continue;
      }
      auto first = pending_.begin();
      if (!stop_ && first->first > sync::CondVar::Clock::now()) {
        wake_.WaitUntil(&mu_, first->first);
        continue;
      }
      std::function<void()> fn = std::move(first->second);
      pending_.erase(first);
      return fn;
    }
  }

  sync::Mutex mu_;
  sync::CondVar wake_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::multimap<sync::CondVar::Clock::time_point, std::function<void()>> pending_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace ledger::server

#endif  // LEDGER_RPC_SERVER_TIMERS_H_
