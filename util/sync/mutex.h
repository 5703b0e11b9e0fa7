// A mutex, its scoped lock and a condition variable that clang's thread
// safety analysis understands: members marked ABSL_GUARDED_BY(mu_) and
// methods marked ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) are checked at compile
// time (-Wthread-safety, the clang build of scripts/check_builds.sh).
//
// Thin wrappers over std::mutex and std::condition_variable, as LevelDB's
// port::Mutex is, rather than absl::Mutex: the system's Abseil is built
// without ThreadSanitizer's annotations, so TSan would see every absl::Mutex
// critical section as a race, while it understands pthread mutexes.
//
// Thread-safe, as a mutex is. A CondVar MUST always be waited on with the
// same Mutex held.
#ifndef UTIL_SYNC_MUTEX_H_
#define UTIL_SYNC_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace ledger::sync {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Waits release `mu` and hold it again before they return; like any
// condition variable they may wake spuriously, so callers wait in a loop
// that tests their condition.
class CondVar {
 public:
  using Clock = std::chrono::steady_clock;

  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // False once `deadline` has passed.
  bool WaitUntil(Mutex* mu, Clock::time_point deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace ledger::sync

#endif  // UTIL_SYNC_MUTEX_H_
