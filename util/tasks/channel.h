// A queue between threads, bounded or not: the pool's tasks, the blocks
// the verifier hashes, the entries it projects. Push waits while `capacity`
// items wait; Pop waits for an item and returns nullopt once the channel is
// closed and drained.
//
// Thread-safe.
#ifndef UTIL_TASKS_CHANNEL_H_
#define UTIL_TASKS_CHANNEL_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>

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
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] { return items_.size() < capacity_; });
      items_.push_back(std::move(item));
    }
    changed_.notify_all();
  }
  // False, with `item` dropped, when the channel is full.
  bool TryPush(T item) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (items_.size() >= capacity_) return false;
      items_.push_back(std::move(item));
    }
    changed_.notify_all();
    return true;
  }
  // The oldest item; waits for one. nullopt once closed and empty.
  std::optional<T> Pop() {
    std::optional<T> item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] { return closed_ || !items_.empty(); });
      if (items_.empty()) return std::nullopt;
      item.emplace(std::move(items_.front()));
      items_.pop_front();
    }
    changed_.notify_all();
    return item;
  }
  // The oldest item if there is one, without waiting.
  std::optional<T> TryPop() {
    std::optional<T> item;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (items_.empty()) return std::nullopt;
      item.emplace(std::move(items_.front()));
      items_.pop_front();
    }
    changed_.notify_all();
    return item;
  }
  // Pops return nullopt once what is queued is taken.
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    changed_.notify_all();
  }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace ledger::tasks

#endif  // UTIL_TASKS_CHANNEL_H_
