// ThreadPoolWriteExecutor: a fixed number of writes at once, FIFO, back-pressure when full.
#include "operator/controller/write_executor.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/wait_for.h"

namespace tj::op {
namespace {

using std::chrono::milliseconds;

TEST(ThreadPoolWriteExecutorTest, RunsAtMostItsConcurrencyAtOnceAndEverything) {
  ThreadPoolWriteExecutor executor(3, 100);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  std::atomic<int> done{0};
  for (int i = 0; i < 10; ++i) {
    executor.Submit([&] {
      const int now = ++running;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return release; });
      --running;
      ++done;
    });
  }
  ASSERT_TRUE(testing::WaitFor([&] { return running.load() == 3; }));
  EXPECT_EQ(executor.Queued(), 7u);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(executor.WaitIdle(milliseconds(10'000)));
  EXPECT_EQ(done.load(), 10);
  EXPECT_EQ(most.load(), 3);
}

TEST(ThreadPoolWriteExecutorTest, SubmitWaitsForRoomWhenTheQueueIsFull) {
  ThreadPoolWriteExecutor executor(1, 1);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  auto blocked = [&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
  };
  executor.Submit(blocked);  // running
  ASSERT_TRUE(testing::WaitFor([&] { return executor.Queued() == 0; }));
  executor.Submit(blocked);  // queued: the queue is full
  std::atomic<bool> third_submitted{false};
  std::thread submitter([&] {
    executor.Submit([] {});
    third_submitted = true;
  });
  // Still waiting while nothing finished: for a while (a bounded check of something that must
  // not happen), then it gets in once the running write ends.
  EXPECT_FALSE(testing::WaitFor([&] { return third_submitted.load(); }, absl::Milliseconds(300)));
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(testing::WaitFor([&] { return third_submitted.load(); }));
  submitter.join();
  EXPECT_TRUE(executor.WaitIdle(milliseconds(10'000)));
}

TEST(ThreadPoolWriteExecutorTest, UrgentWritesGoBeforeTheOthersWaiting) {
  ThreadPoolWriteExecutor executor(1, 100);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::vector<std::string> order;
  executor.Submit([&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
  });
  ASSERT_TRUE(testing::WaitFor([&] { return executor.Queued() == 0; }));
  auto record = [&](std::string name) {
    return [&order, &mu, name] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(name);
    };
  };
  executor.Submit(record("service a"));
  executor.Submit(record("pod a"), /*urgent=*/true);
  executor.Submit(record("service b"));
  executor.Submit(record("pod b"), /*urgent=*/true);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(executor.WaitIdle(milliseconds(10'000)));
  EXPECT_EQ(order, (std::vector<std::string>{"pod a", "pod b", "service a", "service b"}));
}

TEST(ThreadPoolWriteExecutorTest, StopDropsWhatIsQueuedAndRefusesMore) {
  std::atomic<int> ran{0};
  {
    ThreadPoolWriteExecutor executor(1, 10);
    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    executor.Submit([&] {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return release; });
      ++ran;
    });
    ASSERT_TRUE(testing::WaitFor([&] { return executor.Queued() == 0; }));
    executor.Submit([&] { ++ran; });
    std::thread stopper([&] { executor.Stop(); });
    ASSERT_TRUE(testing::WaitFor([&] { return executor.Queued() == 0; }));
    {
      std::lock_guard<std::mutex> lock(mu);
      release = true;
    }
    cv.notify_all();
    stopper.join();
    executor.Submit([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 1) << "the write in flight finished; the queued and late ones dropped";
}

}  // namespace
}  // namespace tj::op
