// A queue between threads, bounded or not: the pool's tasks, the blocks
// the verifier hashes, the entries it projects. Push waits while `capacity`
// items wait; Pop waits for an item and returns nullopt once the channel is
// closed and drained.
//
// Thread-safe.
#ifndef UTIL_TASKS_CHANNEL_H_
#define UTIL_TASKS_CHANNEL_H_

#include <cstddef>
#include <deque>
#include <limits>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "util/sync/mutex.h"

namespace ledger::tasks {

template <typename T>
class Channel {
 public:
  explicit Channel(size_t capacity = std::numeric_limits<size_t>::max()) : capacity_(capacity) {}
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Waits for room. An item pushed after Close is still popped.
  void Push(T item) {
    {
      sync::MutexLock lock(&mu_);
      while (items_.size() >= capacity_) changed_.Wait(&mu_);
      items_.push_back(std::move(item));
    }
    changed_.SignalAll();
  }
  // False, with `item` dropped, when the channel is full.
  bool TryPush(T item) {
    {
      sync::MutexLock lock(&mu_);
      if (items_.size() >= capacity_) return false;
      items_.push_back(std::move(item));
    }
    changed_.SignalAll();
    return true;
  }
  // The oldest item; waits for one. nullopt once closed and empty.
  std::optional<T> Pop() {
    std::optional<T> item;
    {
      sync::MutexLock lock(&mu_);
      while (!closed_ && items_.empty()) changed_.Wait(&mu_);
      if (items_.empty()) return std::nullopt;
      item.emplace(std::move(items_.front()));
      items_.pop_front();
    }
    changed_.SignalAll();
    return item;
  }
  // The oldest item if there is one, without waiting.
  std::optional<T> TryPop() {
    std::optional<T> item;
    {
      sync::MutexLock lock(&mu_);
      if (items_.empty()) return std::nullopt;
      item.emplace(std::move(items_.front()));
      items_.pop_front();
    }
    changed_.SignalAll();
    return item;
  }
  // Pops return nullopt once what is queued is taken.
  void Close() {
    {
      sync::MutexLock lock(&mu_);
      closed_ = true;
    }
    changed_.SignalAll();
  }

 private:
  const size_t capacity_;
  sync::Mutex mu_;
  sync::CondVar changed_;
  std::deque<T> items_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ledger::tasks

#endif  // UTIL_TASKS_CHANNEL_H_
