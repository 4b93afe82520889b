// Specification of ClosureQueue, run with the default capacity and with capacity 2 (so that Put
// blocks on a full queue in every scenario).
#include "coordinator/closure/closure_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"

namespace tj {
namespace {

ClosurePtr MakeClosure(uint64_t id) {
  auto c = std::make_shared<Closure>();
  c->id = id;
  c->function = "f";
  return c;
}

class ClosureQueueTest : public ::testing::TestWithParam<size_t> {
 protected:
  ClosureQueue queue_{GetParam()};
};

TEST_P(ClosureQueueTest, GetReturnsClosuresInFifoOrderAndCountsThemInFlight) {
  ASSERT_TRUE(queue_.Put(MakeClosure(1)).ok());
  auto first = queue_.Get();
  ASSERT_TRUE(queue_.Put(MakeClosure(2)).ok());
  auto second = queue_.Get();
  EXPECT_EQ(first->id, 1u);
  EXPECT_EQ(second->id, 2u);
  EXPECT_EQ(queue_.inflight(), 2u);
  EXPECT_FALSE(*queue_.Done());
  queue_.MarkFinished();
  queue_.MarkFinished();
  EXPECT_TRUE(*queue_.Done());
}

TEST_P(ClosureQueueTest, GetTimesOutOnAnEmptyQueue) {
  EXPECT_EQ(queue_.Get(absl::Now() + absl::Milliseconds(20)), nullptr);
  EXPECT_EQ(queue_.inflight(), 0u);
}

TEST_P(ClosureQueueTest, PutBackGoesToTheFrontAndIsProcessedAgain) {
  ASSERT_TRUE(queue_.Put(MakeClosure(1)).ok());
  auto taken = queue_.Get();
  ASSERT_TRUE(queue_.Put(MakeClosure(2)).ok());
  queue_.PutBack(taken);
  EXPECT_EQ(queue_.inflight(), 0u);
  EXPECT_EQ(queue_.queued(), 2u);
  EXPECT_EQ(queue_.Get()->id, 1u);
  EXPECT_EQ(queue_.Get()->id, 2u);
}

TEST_P(ClosureQueueTest, WaitReturnsWhenEverythingFinished) {
  ASSERT_TRUE(queue_.Put(MakeClosure(1)).ok());
  absl::Notification waited;
  std::thread waiter([&] {
    EXPECT_TRUE(queue_.Wait().ok());
    waited.Notify();
  });
  auto c = queue_.Get();
  EXPECT_FALSE(waited.HasBeenNotified());
  queue_.MarkFinished();
  waiter.join();
  EXPECT_TRUE(waited.HasBeenNotified());
}

TEST_P(ClosureQueueTest, WaitWithTimeoutGivesFalseWhileWorkIsPending) {
  ASSERT_TRUE(queue_.Put(MakeClosure(1)).ok());
  auto waited = queue_.WaitWithTimeout(absl::Milliseconds(20));
  ASSERT_TRUE(waited.ok());
  EXPECT_FALSE(*waited);
}

TEST_P(ClosureQueueTest, ErrorIsRaisedOnceThenClearedAndQueuedClosuresCancelled) {
  ASSERT_TRUE(queue_.Put(MakeClosure(1)).ok());
  ASSERT_TRUE(queue_.Put(MakeClosure(2)).ok());
  auto failing = queue_.Get();
  auto queued = queue_.Get();
  queue_.PutBack(queued);  // back in the queue: must be cancelled by the raise
  queue_.MarkFailed(absl::InvalidArgumentError("boom"));

  absl::Status first = queue_.Wait();
  EXPECT_EQ(first.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(first.message(), "boom");
  EXPECT_TRUE(absl::IsCancelled(queued->output->Fetch().status()));
  EXPECT_EQ(queue_.queued(), 0u);
  // Raised once: the queue is usable again.
  EXPECT_TRUE(queue_.Wait().ok());
  EXPECT_TRUE(*queue_.Done());
  ASSERT_TRUE(queue_.Put(MakeClosure(3)).ok());
  EXPECT_EQ(queue_.Get()->id, 3u);
}

TEST_P(ClosureQueueTest, OnlyTheFirstErrorIsKept) {
  ASSERT_TRUE(queue_.Put(MakeClosure(1)).ok());
  ASSERT_TRUE(queue_.Put(MakeClosure(2)).ok());
  queue_.Get();
  queue_.Get();
  queue_.MarkFailed(absl::InvalidArgumentError("first"));
  queue_.MarkFailed(absl::InternalError("second"));
  EXPECT_EQ(queue_.Done().status().message(), "first");
  EXPECT_TRUE(queue_.Done().ok());
}

TEST_P(ClosureQueueTest, PutRaisesThePendingErrorAndDoesNotEnqueue) {
  ASSERT_TRUE(queue_.Put(MakeClosure(1)).ok());
  queue_.Get();
  queue_.MarkFailed(absl::UnavailableError("ps down"));
  auto late = MakeClosure(2);
  EXPECT_TRUE(absl::IsUnavailable(queue_.Put(late)));
  EXPECT_EQ(queue_.queued(), 0u);
  EXPECT_TRUE(queue_.Put(MakeClosure(3)).ok());
}

TEST_P(ClosureQueueTest, RaiseWaitsForInFlightClosuresAndCancelsThem) {
  std::atomic<int> cancel_requests{0};
  queue_.SetCancelInflightHook([&] { cancel_requests++; });
  ASSERT_TRUE(queue_.Put(MakeClosure(1)).ok());
  ASSERT_TRUE(queue_.Put(MakeClosure(2)).ok());
  auto failing = queue_.Get();
  auto running = queue_.Get();
  queue_.MarkFailed(absl::AbortedError("x"));
  absl::Notification raised;
  std::thread joiner([&] {
    EXPECT_TRUE(absl::IsAborted(queue_.Wait()));
    raised.Notify();
  });
  // The raise must not return while `running` is in flight: nothing may still be executing then.
  while (cancel_requests.load() == 0) std::this_thread::yield();
  EXPECT_FALSE(raised.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  running->MarkCancelled();
  queue_.MarkFinished();
  joiner.join();
  EXPECT_EQ(cancel_requests.load(), 1);
}

TEST_P(ClosureQueueTest, PutBlocksWhileFullAndResumesWhenASlotFrees) {
  ClosureQueue small(2);
  ASSERT_TRUE(small.Put(MakeClosure(1)).ok());
  ASSERT_TRUE(small.Put(MakeClosure(2)).ok());
  absl::Notification put_done;
  std::thread putter([&] {
    EXPECT_TRUE(small.Put(MakeClosure(3)).ok());
    put_done.Notify();
  });
  EXPECT_FALSE(put_done.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  small.Get();
  putter.join();
  EXPECT_EQ(small.queued(), 2u);
}

TEST_P(ClosureQueueTest, StopCancelsQueuedClosuresAndWakesGetters) {
  absl::Notification got;
  std::thread getter([&] {
    EXPECT_EQ(queue_.Get(), nullptr);
    got.Notify();
  });
  auto queued = MakeClosure(9);
  queue_.Stop();
  getter.join();
  EXPECT_TRUE(got.HasBeenNotified());
}

TEST_P(ClosureQueueTest, InterruptedGetReturnsEmpty) {
  std::atomic<bool> interrupt{false};
  std::thread getter([&] {
    auto batch = queue_.GetBatch(4, absl::InfiniteFuture(), [&] { return interrupt.load(); });
    EXPECT_TRUE(batch.empty());
  });
  interrupt = true;
  queue_.Wake();
  getter.join();
}

TEST_P(ClosureQueueTest, AbortQueuedFailsQueuedClosuresAndRaisesOnce) {
  auto c = MakeClosure(1);
  ASSERT_TRUE(queue_.Put(c).ok());
  queue_.AbortQueued(absl::UnavailableError("no worker left"));
  EXPECT_EQ(c->output->Fetch().status().message(), "no worker left");
  EXPECT_TRUE(absl::IsUnavailable(queue_.Wait()));
  EXPECT_TRUE(queue_.Wait().ok());
}

// 10 threads put, take, put back and finish closures at random; every closure must finish exactly
// once, however many times it was put back.
TEST_P(ClosureQueueTest, TenThreadsHammeringProcessEachClosureExactlyOnce) {
  constexpr int kProducers = 4, kConsumers = 6, kPerProducer = 2000;
  std::vector<std::atomic<int>> finished(kProducers * kPerProducer);
  std::atomic<int> put_backs{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        ASSERT_TRUE(queue_.Put(MakeClosure(static_cast<uint64_t>(p * kPerProducer + i))).ok());
      }
    });
  }
  std::atomic<bool> done{false};
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      uint64_t n = static_cast<uint64_t>(c);
      while (!done.load()) {
        auto batch = queue_.GetBatch(1 + n % 3, absl::Now() + absl::Milliseconds(5));
        for (auto& closure : batch) {
          if (++n % 7 == 0) {
            put_backs++;
            queue_.PutBack(closure);
          } else {
            finished[closure->id]++;
            queue_.MarkFinished();
          }
        }
      }
    });
  }
  for (int p = 0; p < kProducers; ++p) threads[static_cast<size_t>(p)].join();
  ASSERT_TRUE(queue_.Wait().ok());
  done = true;
  for (size_t t = kProducers; t < threads.size(); ++t) threads[t].join();
  for (const auto& count : finished) EXPECT_EQ(count.load(), 1);
  EXPECT_GT(put_backs.load(), 0);
  EXPECT_TRUE(*queue_.Done());
}

TEST_P(ClosureQueueTest, PutOrDispatchOnAnEmptyQueueHandsTheClosureToDispatchInFlight) {
  size_t inflight_seen = 0;
  uint64_t dispatched = 0;
  ASSERT_TRUE(queue_
                  .PutOrDispatch(MakeClosure(7),
                                 [&](const ClosurePtr& c) {
                                   inflight_seen = queue_.inflight();
                                   dispatched = c->id;
                                   return true;
                                 })
                  .ok());
  EXPECT_EQ(dispatched, 7u);
  EXPECT_EQ(inflight_seen, 1u);  // counted before the dispatcher sees it: a raise must wait for it
  EXPECT_EQ(queue_.inflight(), 1u);
  EXPECT_EQ(queue_.queued(), 0u);
  EXPECT_FALSE(*queue_.Done());
  queue_.MarkFinished();
  EXPECT_TRUE(*queue_.Done());
}

TEST_P(ClosureQueueTest, PutOrDispatchQueuesWhatDispatchDeclines) {
  ASSERT_TRUE(queue_.PutOrDispatch(MakeClosure(1), [](const ClosurePtr&) { return false; }).ok());
  EXPECT_EQ(queue_.inflight(), 0u);
  EXPECT_EQ(queue_.queued(), 1u);
  EXPECT_EQ(queue_.Get()->id, 1u);
}

TEST_P(ClosureQueueTest, PutOrDispatchDoesNotOvertakeQueuedClosures) {
  ASSERT_TRUE(queue_.Put(MakeClosure(1)).ok());
  bool called = false;
  ASSERT_TRUE(queue_
                  .PutOrDispatch(MakeClosure(2),
                                 [&](const ClosurePtr&) {
                                   called = true;
                                   return true;
                                 })
                  .ok());
  EXPECT_FALSE(called);
  EXPECT_EQ(queue_.Get()->id, 1u);
  EXPECT_EQ(queue_.Get()->id, 2u);
}

TEST_P(ClosureQueueTest, PutOrDispatchRaisesThePendingErrorBeforeDispatching) {
  ASSERT_TRUE(queue_.Put(MakeClosure(1)).ok());
  queue_.Get();
  queue_.MarkFailed(absl::InternalError("boom"));
  bool called = false;
  EXPECT_TRUE(absl::IsInternal(queue_.PutOrDispatch(MakeClosure(2), [&](const ClosurePtr&) {
    called = true;
    return true;
  })));
  EXPECT_FALSE(called);
  EXPECT_EQ(queue_.inflight(), 0u);
  EXPECT_EQ(queue_.queued(), 0u);
}

TEST_P(ClosureQueueTest, PutOrDispatchAfterStopCancelsADeclinedClosure) {
  auto closure = MakeClosure(1);
  ASSERT_TRUE(queue_
                  .PutOrDispatch(closure,
                                 [&](const ClosurePtr&) {
                                   queue_.Stop();  // the coordinator shut down meanwhile
                                   return false;
                                 })
                  .ok());
  EXPECT_EQ(closure->output->status(), RemoteValueStatus::kReady);
  EXPECT_TRUE(absl::IsCancelled(closure->output->Fetch().status()));
  EXPECT_EQ(queue_.inflight(), 0u);
}

TEST_P(ClosureQueueTest, ReturnPutsUnsentClosuresBackAtTheFrontInOrder) {
  ASSERT_TRUE(queue_.Put(MakeClosure(1)).ok());
  ASSERT_TRUE(queue_.Put(MakeClosure(2)).ok());
  auto batch = queue_.GetBatch(2, absl::InfiniteFuture());
  ASSERT_EQ(batch.size(), 2u);
  ASSERT_TRUE(queue_.Put(MakeClosure(3)).ok());
  queue_.Return(std::move(batch));
  EXPECT_EQ(queue_.inflight(), 0u);
  EXPECT_EQ(queue_.Get()->id, 1u);
  EXPECT_EQ(queue_.Get()->id, 2u);
  EXPECT_EQ(queue_.Get()->id, 3u);
}

INSTANTIATE_TEST_SUITE_P(Capacities, ClosureQueueTest,
                         ::testing::Values(kDefaultClosureQueueCapacity, size_t{2}),
                         [](const auto& info) {
                           return info.param == 2 ? std::string("Capacity2")
                                                  : std::string("DefaultCapacity");
                         });

}  // namespace
}  // namespace tj
