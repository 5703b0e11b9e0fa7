#include "export/tasks/tasks.h"

#include <algorithm>

namespace ledger::tasks {

Pool::Pool(size_t threads) {
  for (size_t i = 0; i < std::max<size_t>(threads, 1); ++i) threads_.emplace_back([this] { Loop(); });
}

Pool::~Pool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

Pool& Pool::Shared() {
  // Never destroyed: tasks may still run while static objects go.
  static Pool* pool = new Pool(2 * std::max(2u, std::thread::hardware_concurrency()));
  return *pool;
}

void Pool::Push(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
}

void Pool::Loop() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace ledger::tasks
