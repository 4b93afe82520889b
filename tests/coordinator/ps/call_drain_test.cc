#include "coordinator/ps/call_drain.h"

#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "absl/time/clock.h"

namespace tj {
namespace {

TEST(CallDrainTest, AdmitsUntilClosed) {
  CallDrain drain;
  EXPECT_TRUE(drain.Admit().has_value());
  EXPECT_EQ(drain.CloseAndDrain(absl::Now()), 0);
  EXPECT_FALSE(drain.Admit().has_value());
}

TEST(CallDrainTest, ReportsCallsStillRunningAtTheDeadline) {
  CallDrain drain;
  std::optional<CallDrain::Admission> running = drain.Admit();
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(drain.CloseAndDrain(absl::Now() + absl::Milliseconds(10)), 1);
}

TEST(CallDrainTest, DrainEndsWhenTheLastRunningCallEnds) {
  CallDrain drain;
  std::optional<CallDrain::Admission> running = drain.Admit();
  ASSERT_TRUE(running.has_value());
  int64_t left = -1;
  std::thread closer([&] { left = drain.CloseAndDrain(absl::InfiniteFuture()); });

  running.reset();
  closer.join();

  EXPECT_EQ(left, 0);
}

}  // namespace
}  // namespace tj
