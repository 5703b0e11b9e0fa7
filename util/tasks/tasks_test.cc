#include "util/tasks/tasks.h"

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "util/tasks/channel.h"

namespace ledger::tasks {
namespace {

TEST(PoolTest, RunsEveryTaskAndReturnsItsResult) {
  Pool pool(3);
  std::vector<std::future<std::string>> results;
  results.reserve(1000);
  for (int i = 0; i < 1000; ++i) results.push_back(pool.Run([i] { return std::to_string(i * i); }));
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(results[i].get(), std::to_string(i * i));
}

TEST(PoolTest, RunsOnItsOwnThreadsAtMostThatManyAtOnce) {
  Pool pool(2);
  std::atomic<int> running{0}, most{0};
  std::vector<std::future<std::thread::id>> ids;
  ids.reserve(200);
  for (int i = 0; i < 200; ++i) {
    ids.push_back(pool.Run([&] {
      int now = ++running;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::yield();
      --running;
      return std::this_thread::get_id();
    }));
  }
  std::set<std::thread::id> threads;
  for (auto& id : ids) threads.insert(id.get());
  EXPECT_LE(threads.size(), 2u);
  EXPECT_FALSE(threads.count(std::this_thread::get_id()));
  EXPECT_LE(most.load(), 2);
}

TEST(PoolTest, DestructionFinishesTheTasksGiven) {
  std::atomic<int> done{0};
  {
    Pool pool(1);
    for (int i = 0; i < 100; ++i) pool.Run([&] { ++done; });
  }
  EXPECT_EQ(done.load(), 100);
}

TEST(ChannelTest, BoundedFifoThatDrainsAfterClose) {
  Channel<int> channel(2);
  EXPECT_TRUE(channel.TryPush(1));
  EXPECT_TRUE(channel.TryPush(2));
  EXPECT_FALSE(channel.TryPush(3));  // full
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    channel.Push(3);  // waits for room
    pushed = true;
    channel.Close();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(pushed.load());
  EXPECT_EQ(channel.Pop(), 1);
  EXPECT_EQ(channel.Pop(), 2);
  EXPECT_EQ(channel.Pop(), 3);
  producer.join();
  EXPECT_TRUE(pushed.load());
  EXPECT_EQ(channel.Pop(), std::nullopt);  // closed and drained
  EXPECT_EQ(channel.TryPop(), std::nullopt);
}

}  // namespace
}  // namespace ledger::tasks
