// Two timers of the append service: the idle-stream reaper and delayed
// answers. Internal to ledger/service.
//
// Thread-safe.
#ifndef SERVER_TIMERS_H_
#define SERVER_TIMERS_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "grpcpp/server_context.h"

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
      std::lock_guard<std::recursive_mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  static int64_t NowUs() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // `last_us` MUST stay valid until Remove(ctx).
  void Add(grpc::CallbackServerContext* ctx, const std::atomic<int64_t>* last_us) {
    if (idle_us_ <= 0) return;
    std::lock_guard<std::recursive_mutex> lock(mu_);
    streams_[ctx] = last_us;
  }
  void Remove(grpc::CallbackServerContext* ctx) {
    if (idle_us_ <= 0) return;
    std::lock_guard<std::recursive_mutex> lock(mu_);
    streams_.erase(ctx);
  }

 private:
  void Run(int64_t tick_ms) {
    std::unique_lock<std::recursive_mutex> lock(mu_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::milliseconds(tick_ms));
      int64_t now = NowUs();
      std::vector<grpc::CallbackServerContext*> idle;
      for (const auto& [ctx, last] : streams_) {
        if (now - last->load(std::memory_order_relaxed) > idle_us_) idle.push_back(ctx);
      }
      // The lock is held while cancelling, so Remove (from the stream's
      // OnDone, perhaps on this very thread) waits and `ctx` stays valid.
      for (grpc::CallbackServerContext* ctx : idle) {
        streams_.erase(ctx);
        ctx->TryCancel();
      }
    }
  }

  const int64_t idle_us_;
  std::recursive_mutex mu_;
  std::condition_variable_any wake_;
  bool stop_ = false;
  std::map<grpc::CallbackServerContext*, const std::atomic<int64_t>*> streams_;
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
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  void Run(int64_t delay_us, std::function<void()> fn) {
    auto at = std::chrono::steady_clock::now() + std::chrono::microseconds(delay_us);
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.emplace(at, std::move(fn));
    }
    wake_.notify_all();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      if (pending_.empty()) {
        if (stop_) return;
        wake_.wait(lock);
        continue;
      }
      auto first = pending_.begin();
      if (!stop_ && first->first > std::chrono::steady_clock::now()) {
        wake_.wait_until(lock, first->first);
        continue;
      }
      std::function<void()> fn = std::move(first->second);
      pending_.erase(first);
      lock.unlock();
      fn();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> pending_;
  std::thread thread_;
};

}  // namespace ledger::server

#endif  // SERVER_TIMERS_H_
