// A few threads that run the tasks of the export and verification
// pipelines (a gzip member to inflate, a chunk of lines to check) in the
// order given, so that a million-entry pack does not start and stop a
// thread for each of its thousands of chunks.
//
// A task MUST NOT wait for another task of the pool: with every thread
// waiting, nothing would run. The pipelines' tasks wait for nothing.
//
// Thread-safe.
#ifndef UTIL_TASKS_TASKS_H_
#define UTIL_TASKS_TASKS_H_

#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "util/tasks/channel.h"

namespace ledger::tasks {

class Pool {
 public:
  explicit Pool(size_t threads);
  // Finishes the tasks given, then stops.
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // The process's pool: a thread per core (at least two), started on first
  // use.
  static Pool& Shared();

  // Runs `task` on a thread of the pool; the future has its result.
  template <typename Task>
  std::future<std::invoke_result_t<Task>> Run(Task task) {
    auto packaged = std::make_shared<std::packaged_task<std::invoke_result_t<Task>()>>(std::move(task));
    std::future<std::invoke_result_t<Task>> result = packaged->get_future();
    queue_.Push([packaged] { (*packaged)(); });
    return result;
  }

 private:
  Channel<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
};

}  // namespace ledger::tasks

#endif  // UTIL_TASKS_TASKS_H_
