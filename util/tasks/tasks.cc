#include "util/tasks/tasks.h"

#include <algorithm>

namespace ledger::tasks {

Pool::Pool(size_t threads) {
  for (size_t i = 0; i < std::max<size_t>(threads, 1); ++i) {
    threads_.emplace_back([this] {
      while (auto task = queue_.Pop()) (*task)();
    });
  }
}

Pool::~Pool() {
  queue_.Close();
  for (auto& t : threads_) t.join();
}

Pool& Pool::Shared() {
  // Never destroyed: tasks may still run while static objects go.
  static Pool* pool = new Pool(2 * std::max(2u, std::thread::hardware_concurrency()));
  return *pool;
}

}  // namespace ledger::tasks
