#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "util/sync/mutex.h"

namespace ledger::sync {
namespace {

struct Counter {
  Mutex mu;
  CondVar cv;
  int value ABSL_GUARDED_BY(mu) = 0;
};

TEST(MutexTest, MutexLockExcludesOtherThreads) {
  Counter c;
  auto add = [&c] {
    for (int i = 0; i < 100'000; ++i) {
      MutexLock lock(&c.mu);
      ++c.value;
    }
  };
  std::thread a(add), b(add);
  a.join();
  b.join();
  MutexLock lock(&c.mu);
  EXPECT_EQ(c.value, 200'000);
}

TEST(CondVarTest, WaitReturnsAfterSignalAllWithTheMutexHeld) {
  Counter c;
  std::thread setter([&c] {
    {
      MutexLock lock(&c.mu);
      c.value = 1;
    }
    c.cv.SignalAll();
  });
  {
    MutexLock lock(&c.mu);
    while (c.value == 0) c.cv.Wait(&c.mu);
    c.value = 2;  // held again: the setter's write happened before
  }
  setter.join();
  MutexLock lock(&c.mu);
  EXPECT_EQ(c.value, 2);
}

TEST(CondVarTest, WaitUntilReturnsFalseOnceTheDeadlinePassed) {
  Counter c;
  const auto started = CondVar::Clock::now();
  const auto deadline = started + std::chrono::milliseconds(50);
  MutexLock lock(&c.mu);
  while (c.cv.WaitUntil(&c.mu, deadline)) {
  }
  EXPECT_GE(CondVar::Clock::now(), deadline);
  c.value = 1;  // still held
}

TEST(CondVarTest, WaitUntilReturnsTrueWhenSignalled) {
  Counter c;
  bool woken = false;
  std::thread setter;
  {
    MutexLock lock(&c.mu);
    // The setter can take the mutex only once the wait released it.
    setter = std::thread([&c] {
      MutexLock lock(&c.mu);
      c.value = 1;
      c.cv.Signal();
    });
    const auto deadline = CondVar::Clock::now() + std::chrono::seconds(60);
    while (c.value == 0) woken = c.cv.WaitUntil(&c.mu, deadline);
  }
  setter.join();
  EXPECT_TRUE(woken);
}

}  // namespace
}  // namespace ledger::sync
