// The work queue and its rate limiters against client-go's workqueue semantics and numbers. Time is
// a FakeWorkQueueClock everywhere except one test of the real clock; threads synchronise on the
// queue itself or on the fake clock's count of blocked waiters, never on sleeps.
#include "operator/kube/work_queue.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/kube/rate_limiter.h"
#include "operator/kube/work_queue_clock.h"

namespace tj::kube {
namespace {

using ::testing::Optional;

absl::Duration Ms(int64_t ms) { return absl::Milliseconds(ms); }

// ---------------------------------------------------------------- rate limiters

TEST(ItemExponentialFailureRateLimiterTest, DoublesFrom5msAndCapsAt1000s) {
  ItemExponentialFailureRateLimiter limiter(absl::Milliseconds(5), absl::Seconds(1000));
  // 5 ms * 2^n: 2^17 * 5 ms = 655.36 s is the last below the cap, 2^18 * 5 ms = 1310.72 s is
  // capped.
  const std::vector<absl::Duration> expected = {Ms(5),
                                                Ms(10),
                                                Ms(20),
                                                Ms(40),
                                                Ms(80),
                                                Ms(160),
                                                Ms(320),
                                                Ms(640),
                                                Ms(1280),
                                                Ms(2560),
                                                Ms(5120),
                                                Ms(10240),
                                                Ms(20480),
                                                Ms(40960),
                                                Ms(81920),
                                                Ms(163840),
                                                Ms(327680),
                                                Ms(655360),
                                                absl::Seconds(1000),
                                                absl::Seconds(1000),
                                                absl::Seconds(1000)};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(limiter.When("ns/a"), expected[i]) << "failure " << i;
    EXPECT_EQ(limiter.NumRequeues("ns/a"), static_cast<int>(i + 1));
  }
  // Other keys have their own count.
  EXPECT_EQ(limiter.NumRequeues("ns/b"), 0);
  EXPECT_EQ(limiter.When("ns/b"), Ms(5));
  // Forget resets.
  limiter.Forget("ns/a");
  EXPECT_EQ(limiter.NumRequeues("ns/a"), 0);
  EXPECT_EQ(limiter.When("ns/a"), Ms(5));
  EXPECT_EQ(limiter.When("ns/a"), Ms(10));
  EXPECT_EQ(limiter.NumRequeues("ns/b"), 1);
}

TEST(ItemExponentialFailureRateLimiterTest, ClientGoTableAndNoOverflow) {
  // client-go's TestItemExponentialFailureRateLimiter.
  ItemExponentialFailureRateLimiter limiter(absl::Milliseconds(1), absl::Seconds(1));
  for (absl::Duration want : {Ms(1), Ms(2), Ms(4), Ms(8), Ms(16)}) {
    EXPECT_EQ(limiter.When("one"), want);
  }
  EXPECT_EQ(limiter.NumRequeues("one"), 5);
  EXPECT_EQ(limiter.When("two"), Ms(1));
  EXPECT_EQ(limiter.When("two"), Ms(2));
  EXPECT_EQ(limiter.NumRequeues("two"), 2);
  limiter.Forget("one");
  EXPECT_EQ(limiter.NumRequeues("one"), 0);
  EXPECT_EQ(limiter.When("one"), Ms(1));

  // client-go's TestItemExponentialFailureRateLimiterOverFlow: 2^1000 ns is far beyond int64.
  ItemExponentialFailureRateLimiter tiny(absl::Nanoseconds(1), absl::Seconds(1000));
  for (int i = 0; i < 5; ++i) tiny.When("overflow1");
  EXPECT_EQ(tiny.When("overflow1"), absl::Nanoseconds(32));
  for (int i = 0; i < 1000; ++i) tiny.When("overflow1");
  EXPECT_EQ(tiny.When("overflow1"), absl::Seconds(1000));

  ItemExponentialFailureRateLimiter big(absl::Minutes(10), absl::Hours(1000));
  for (int i = 0; i < 2; ++i) big.When("overflow2");
  EXPECT_EQ(big.When("overflow2"), absl::Minutes(40));
  for (int i = 0; i < 1000; ++i) big.When("overflow2");
  EXPECT_EQ(big.When("overflow2"), absl::Hours(1000));
}

TEST(BucketRateLimiterTest, BurstOf100ThenTenPerSecond) {
  auto clock = std::make_shared<FakeWorkQueueClock>();
  BucketRateLimiter limiter(10, 100, clock);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(limiter.When("k" + std::to_string(i)), absl::ZeroDuration()) << i;
  }
  // Then each reservation goes 100 ms further into debt.
  EXPECT_EQ(limiter.When("k100"), Ms(100));
  EXPECT_EQ(limiter.When("k101"), Ms(200));
  EXPECT_EQ(limiter.When("k102"), Ms(300));
  // One second refills 10 tokens, 3 of which repay the debt.
  clock->Advance(absl::Seconds(1));
  for (int i = 0; i < 7; ++i) EXPECT_EQ(limiter.When("again"), absl::ZeroDuration()) << i;
  EXPECT_EQ(limiter.When("again"), Ms(100));
  // 100 ms pays for exactly one token.
  clock->Advance(Ms(100));
  EXPECT_EQ(limiter.When("again"), Ms(100));
  // A long idle refills to the burst and no further.
  clock->Advance(absl::Hours(1));
  for (int i = 0; i < 100; ++i) ASSERT_EQ(limiter.When("x"), absl::ZeroDuration()) << i;
  EXPECT_EQ(limiter.When("x"), Ms(100));
  EXPECT_EQ(limiter.NumRequeues("x"), 0);
  limiter.Forget("x");  // nothing to forget
  EXPECT_EQ(limiter.When("x"), Ms(200));
}

TEST(DefaultControllerRateLimiterTest, MaxOfExponentialAndBucket) {
  auto clock = std::make_shared<FakeWorkQueueClock>();
  std::unique_ptr<RateLimiter> limiter = DefaultControllerRateLimiter(clock);
  // One key failing: its own backoff dominates (the bucket still has tokens).
  for (absl::Duration want : {Ms(5), Ms(10), Ms(20), Ms(40), Ms(80)}) {
    EXPECT_EQ(limiter->When("ns/failing"), want);
  }
  EXPECT_EQ(limiter->NumRequeues("ns/failing"), 5);
  limiter->Forget("ns/failing");
  EXPECT_EQ(limiter->NumRequeues("ns/failing"), 0);
  EXPECT_EQ(limiter->When("ns/failing"), Ms(5));
  // 6 tokens are spent; 94 more keys pass with their first-failure 5 ms.
  for (int i = 0; i < 94; ++i) ASSERT_EQ(limiter->When("ns/k" + std::to_string(i)), Ms(5)) << i;
  // The bucket is empty: it dominates for new keys, 10 per second.
  EXPECT_EQ(limiter->When("ns/new1"), Ms(100));
  EXPECT_EQ(limiter->When("ns/new2"), Ms(200));
  EXPECT_EQ(limiter->NumRequeues("ns/new2"), 1);
  // After a long quiet time, the per-item cap is what is left.
  clock->Advance(absl::Hours(1));
  for (int i = 0; i < 17; ++i) limiter->When("ns/hot");
  EXPECT_EQ(limiter->When("ns/hot"), Ms(655360));
  EXPECT_EQ(limiter->When("ns/hot"), absl::Seconds(1000));
}

// ---------------------------------------------------------------- queue basics

struct FakeQueue {
  std::shared_ptr<FakeWorkQueueClock> clock = std::make_shared<FakeWorkQueueClock>();
  std::unique_ptr<WorkQueue> queue;
  FakeQueue() {
    WorkQueueOptions options;
    options.name = "test";
    options.clock = clock;
    queue = std::make_unique<WorkQueue>(std::move(options));
  }
};

TEST(WorkQueueTest, AddDeduplicatesAndKeepsOrder) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  q.Add("ns/a");
  q.Add("ns/b");
  q.Add("ns/a");
  q.Add("ns/c");
  q.Add("ns/b");
  EXPECT_EQ(q.Len(), 3u);
  EXPECT_EQ(q.AddsTotal(), 3u);
  EXPECT_EQ(q.Depth(), 3u);
  EXPECT_THAT(q.Get(), Optional(std::string("ns/a")));
  EXPECT_THAT(q.Get(), Optional(std::string("ns/b")));
  EXPECT_THAT(q.Get(), Optional(std::string("ns/c")));
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.Depth(), 0u);
  q.Done("ns/a");
  q.Done("ns/b");
  q.Done("ns/c");
  EXPECT_EQ(q.Len(), 0u);
  // A key that was Done can be queued again.
  q.Add("ns/a");
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.AddsTotal(), 4u);
}

TEST(WorkQueueTest, KeyAddedWhileProcessingIsQueuedAgainOnDone) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  q.Add("ns/a");
  ASSERT_THAT(q.Get(), Optional(std::string("ns/a")));
  // Added (three times) while processing: held back, not handed out.
  q.Add("ns/a");
  q.Add("ns/a");
  q.Add("ns/a");
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.Depth(), 1u);
  EXPECT_EQ(q.AddsTotal(), 2u);
  q.Add("ns/b");
  EXPECT_THAT(q.Get(), Optional(std::string("ns/b")));  // not ns/a
  q.Done("ns/a");
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_THAT(q.Get(), Optional(std::string("ns/a")));
  q.Done("ns/a");
  q.Done("ns/b");
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.Depth(), 0u);
  // Done of a key that is not being processed is ignored.
  q.Add("ns/c");
  q.Done("ns/c");
  EXPECT_EQ(q.Len(), 1u);
}

TEST(WorkQueueTest, SecondWorkerDoesNotGetAKeyUntilTheFirstIsDone) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  q.Add("ns/a");
  ASSERT_THAT(q.Get(), Optional(std::string("ns/a")));
  std::optional<std::string> second;
  std::thread worker([&] { second = q.Get(); });
  f.clock->AwaitWaiters(1);  // the second worker is blocked in Get
  q.Add("ns/a");
  EXPECT_EQ(q.Len(), 0u);  // nothing for the blocked worker
  q.Done("ns/a");
  worker.join();
  EXPECT_THAT(second, Optional(std::string("ns/a")));
}

TEST(WorkQueueTest, NeverTwoWorkersOnOneKeyAndNoAddIsLost) {
  // Real time: producers and workers race freely.
  WorkQueue q;
  constexpr int kKeys = 16;
  constexpr int kWorkers = 6;
  constexpr int kProducers = 3;
  constexpr int kAddsPerProducer = 4000;
  std::vector<std::atomic<int>> active(kKeys);
  std::vector<std::atomic<int>> version(kKeys);  // bumped before each Add
  std::vector<std::atomic<int>> seen(kKeys);     // the version a worker saw when it started
  std::atomic<int> overlaps{0};
  std::atomic<int> processed{0};
  for (int i = 0; i < kKeys; ++i) {
    active[i] = 0;
    version[i] = 0;
    seen[i] = 0;
  }
  auto index = [](const std::string& key) { return std::stoi(key.substr(key.find('/') + 1)); };

  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      while (std::optional<std::string> key = q.Get()) {
        const int i = index(*key);
        if (active[i].fetch_add(1) != 0) overlaps.fetch_add(1);
        seen[i].store(version[i].load());
        std::this_thread::yield();  // widen the window for a second worker
        processed.fetch_add(1);
        active[i].fetch_sub(1);
        q.Done(*key);
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int n = 0; n < kAddsPerProducer; ++n) {
        const int i = (n * 7 + p) % kKeys;
        version[i].fetch_add(1);
        q.Add("ns/" + std::to_string(i));
      }
    });
  }
  for (auto& t : producers) t.join();
  // Queued keys and keys re-queued on Done are still handed out after ShutDown; workers stop when
  // nothing is left.
  q.ShutDownWithDrain();
  for (auto& t : workers) t.join();

  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(processed.load(), 0);
  EXPECT_LE(processed.load(), kProducers * kAddsPerProducer);
  for (int i = 0; i < kKeys; ++i) {
    // Every key was processed after its last Add.
    EXPECT_EQ(seen[i].load(), version[i].load()) << "key " << i;
  }
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.Depth(), 0u);
  EXPECT_EQ(q.Metrics().processing, 0u);
}

// ---------------------------------------------------------------- delays

TEST(WorkQueueTest, AddAfterHandsOutInDeadlineOrder) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  q.AddAfter("ns/c", absl::Seconds(3));
  q.AddAfter("ns/a", absl::Seconds(1));
  q.AddAfter("ns/b", absl::Seconds(2));
  q.AddAfter("ns/d", absl::Seconds(2));  // same deadline as b: arrival order
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.Metrics().waiting, 4u);
  f.clock->Advance(Ms(999));
  EXPECT_EQ(q.Len(), 0u);
  f.clock->Advance(Ms(1));
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_THAT(q.Get(), Optional(std::string("ns/a")));
  f.clock->Advance(absl::Seconds(5));
  EXPECT_EQ(q.Len(), 3u);
  EXPECT_THAT(q.Get(), Optional(std::string("ns/b")));
  EXPECT_THAT(q.Get(), Optional(std::string("ns/d")));
  EXPECT_THAT(q.Get(), Optional(std::string("ns/c")));
  EXPECT_EQ(q.Metrics().waiting, 0u);
  EXPECT_EQ(q.RetriesTotal(), 4u);
}

TEST(WorkQueueTest, AddAfterDuplicatesKeepTheEarliestDeadline) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  q.AddAfter("ns/later-then-sooner", absl::Seconds(5));
  q.AddAfter("ns/later-then-sooner", absl::Seconds(1));
  q.AddAfter("ns/sooner-then-later", absl::Seconds(1));
  q.AddAfter("ns/sooner-then-later", absl::Seconds(5));
  EXPECT_EQ(q.Metrics().waiting, 2u);
  f.clock->Advance(absl::Seconds(1));
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(q.Metrics().waiting, 0u);  // the later deadlines were dropped, not kept
  f.clock->Advance(absl::Seconds(10));
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(q.AddsTotal(), 2u);
}

TEST(WorkQueueTest, AddAfterOfAQueuedOrProcessingKeyFoldsIntoIt) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  q.AddAfter("ns/now", absl::ZeroDuration());  // no delay: queued at once
  q.AddAfter("ns/neg", Ms(-5));
  EXPECT_EQ(q.Len(), 2u);
  q.AddAfter("ns/now", Ms(10));
  f.clock->Advance(Ms(10));
  EXPECT_EQ(q.Len(), 2u);  // still queued once
  ASSERT_THAT(q.Get(), Optional(std::string("ns/now")));
  q.AddAfter("ns/now", Ms(10));
  f.clock->Advance(Ms(10));
  EXPECT_EQ(q.Len(), 1u);  // held back while processing
  q.Done("ns/now");
  EXPECT_EQ(q.Len(), 2u);
}

TEST(WorkQueueTest, AdvanceWakesABlockedGet) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  std::optional<std::string> got;
  std::thread worker([&] { got = q.Get(); });
  f.clock->AwaitWaiters(1);
  q.AddAfter("ns/a", absl::Seconds(30));  // starts the delay thread: a second waiter
  f.clock->AwaitWaiters(2);
  EXPECT_EQ(q.Len(), 0u);
  f.clock->Advance(absl::Seconds(30));
  worker.join();
  EXPECT_THAT(got, Optional(std::string("ns/a")));
}

TEST(WorkQueueTest, AddRateLimitedBacksOffPerKeyAndForgetResets) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  for (absl::Duration backoff : {Ms(5), Ms(10), Ms(20), Ms(40)}) {
    q.AddRateLimited("ns/a");
    f.clock->Advance(backoff - absl::Nanoseconds(1));
    EXPECT_EQ(q.Len(), 0u) << backoff;
    f.clock->Advance(absl::Nanoseconds(1));
    ASSERT_EQ(q.Len(), 1u) << backoff;
    ASSERT_THAT(q.Get(), Optional(std::string("ns/a")));
    q.Done("ns/a");
  }
  EXPECT_EQ(q.NumRequeues("ns/a"), 4);
  EXPECT_EQ(q.RetriesTotal(), 4u);
  q.Forget("ns/a");
  EXPECT_EQ(q.NumRequeues("ns/a"), 0);
  q.AddRateLimited("ns/a");
  f.clock->Advance(Ms(5));
  EXPECT_EQ(q.Len(), 1u);
}

TEST(WorkQueueTest, AddRateLimitedIsBoundByTheBucket) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  for (int i = 0; i < 100; ++i) q.AddRateLimited("ns/k" + std::to_string(i));
  f.clock->Advance(Ms(5));
  EXPECT_EQ(q.Len(), 100u);  // the burst
  q.AddRateLimited("ns/k100");
  q.AddRateLimited("ns/k101");
  f.clock->Advance(Ms(95));  // 100 ms since the burst
  EXPECT_EQ(q.Len(), 101u);
  f.clock->Advance(Ms(100));
  EXPECT_EQ(q.Len(), 102u);
}

TEST(WorkQueueTest, RealClockAddAfterWaitsForTheDelay) {
  WorkQueue q;
  const absl::Time start = absl::Now();
  q.AddAfter("ns/a", Ms(20));
  EXPECT_THAT(q.Get(), Optional(std::string("ns/a")));
  EXPECT_GE(absl::Now() - start, Ms(20));
}

// ---------------------------------------------------------------- shutdown

TEST(WorkQueueTest, ShutDownWakesEveryBlockedGet) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  constexpr int kWorkers = 3;
  std::atomic<int> nullopts{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < kWorkers; ++i) {
    workers.emplace_back([&] {
      if (!q.Get().has_value()) nullopts.fetch_add(1);
    });
  }
  f.clock->AwaitWaiters(kWorkers);
  EXPECT_FALSE(q.ShuttingDown());
  q.ShutDown();
  for (auto& t : workers) t.join();
  EXPECT_EQ(nullopts.load(), kWorkers);
  EXPECT_TRUE(q.ShuttingDown());
  EXPECT_EQ(q.Get(), std::nullopt);
}

TEST(WorkQueueTest, AfterShutDownQueuedKeysAreHandedOutAndNewOnesIgnored) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  q.Add("ns/a");
  q.Add("ns/b");
  q.AddAfter("ns/delayed", absl::Seconds(1));
  q.ShutDown();
  q.Add("ns/c");
  q.AddAfter("ns/d", absl::ZeroDuration());
  q.AddRateLimited("ns/e");
  EXPECT_EQ(q.NumRequeues("ns/e"), 0);
  f.clock->Advance(absl::Seconds(2));  // the delayed key was dropped
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_THAT(q.Get(), Optional(std::string("ns/a")));
  EXPECT_THAT(q.Get(), Optional(std::string("ns/b")));
  EXPECT_EQ(q.Get(), std::nullopt);
  EXPECT_EQ(q.AddsTotal(), 2u);
}

TEST(WorkQueueTest, ShutDownWithDrainWaitsForEveryKeyToBeDone) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  q.Add("ns/a");
  q.Add("ns/b");
  ASSERT_THAT(q.Get(), Optional(std::string("ns/a")));
  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    q.ShutDownWithDrain();
    drained = true;
  });
  f.clock->AwaitWaiters(1);  // the drainer is blocked
  EXPECT_TRUE(q.ShuttingDown());
  EXPECT_FALSE(drained.load());
  // A queued key is still handed out while draining.
  ASSERT_THAT(q.Get(), Optional(std::string("ns/b")));
  EXPECT_EQ(q.Get(), std::nullopt);
  q.Done("ns/a");
  // ns/b is still being processed: the drainer keeps waiting.
  EXPECT_FALSE(drained.load());
  q.Done("ns/b");
  drainer.join();
  EXPECT_TRUE(drained.load());
}

TEST(WorkQueueTest, ShutDownWithDrainReturnsAtOnceWhenIdleAndShutDownEndsADrain) {
  {
    FakeQueue f;
    f.queue->ShutDownWithDrain();  // nothing in flight
    EXPECT_TRUE(f.queue->ShuttingDown());
  }
  FakeQueue f;
  WorkQueue& q = *f.queue;
  q.Add("ns/a");
  ASSERT_THAT(q.Get(), Optional(std::string("ns/a")));
  std::thread drainer([&] { q.ShutDownWithDrain(); });
  f.clock->AwaitWaiters(1);
  q.ShutDown();  // stop waiting for ns/a
  drainer.join();
  q.Done("ns/a");
}

// ---------------------------------------------------------------- metrics

TEST(WorkQueueTest, MetricsCountAddsDepthRetriesAndRunningTime) {
  FakeQueue f;
  WorkQueue& q = *f.queue;
  EXPECT_EQ(q.LongestRunningProcessor(), absl::ZeroDuration());
  q.Add("ns/a");
  q.Add("ns/b");
  q.Add("ns/a");
  ASSERT_THAT(q.Get(), Optional(std::string("ns/a")));
  f.clock->Advance(absl::Seconds(3));
  ASSERT_THAT(q.Get(), Optional(std::string("ns/b")));
  f.clock->Advance(absl::Seconds(2));
  q.Add("ns/a");  // dirty while processing: counts in depth, not in Len
  q.AddRateLimited("ns/c");

  WorkQueueMetrics m = q.Metrics();
  EXPECT_EQ(m.adds_total, 3u);
  EXPECT_EQ(m.depth, 1u);
  EXPECT_EQ(m.retries_total, 1u);
  EXPECT_EQ(m.waiting, 1u);
  EXPECT_EQ(m.processing, 2u);
  EXPECT_EQ(m.longest_running_processor, absl::Seconds(5));
  EXPECT_EQ(m.unfinished_work, absl::Seconds(7));
  EXPECT_EQ(q.LongestRunningProcessor(), absl::Seconds(5));
  EXPECT_EQ(q.UnfinishedWork(), absl::Seconds(7));
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.name(), "test");

  q.Done("ns/a");
  EXPECT_EQ(q.LongestRunningProcessor(), absl::Seconds(2));
  EXPECT_EQ(q.Depth(), 1u);  // ns/a queued again
  EXPECT_EQ(q.Len(), 1u);
  f.clock->Advance(Ms(5));  // ns/c's first backoff
  EXPECT_EQ(q.Depth(), 2u);
  EXPECT_EQ(q.AddsTotal(), 4u);
}

}  // namespace
}  // namespace tj::kube
