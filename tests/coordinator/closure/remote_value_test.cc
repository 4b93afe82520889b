#include "coordinator/closure/remote_value.h"

#include <gtest/gtest.h>

#include <thread>

#include "coordinator/base/values.h"

namespace tj {
namespace {

TEST(RemoteValueTest, StartsNotReadyAndFetchBlocksUntilAValueArrives) {
  auto state = std::make_shared<RemoteValueState>();
  RemoteValue value(state);
  EXPECT_EQ(value.status(), RemoteValueStatus::kNotReady);
  EXPECT_TRUE(absl::IsDeadlineExceeded(value.FetchWithTimeout(absl::Milliseconds(10)).status()));
  std::thread setter([&] { state->SetValue(IntValue(7)); });
  auto fetched = value.Fetch();
  setter.join();
  ASSERT_TRUE(fetched.ok());
  EXPECT_EQ(fetched->int_value(), 7);
  EXPECT_EQ(value.status(), RemoteValueStatus::kReady);
}

TEST(RemoteValueTest, ErrorIsReadyAndFetchReturnsIt) {
  auto state = std::make_shared<RemoteValueState>();
  state->SetError(absl::InvalidArgumentError("bad"));
  EXPECT_EQ(state->status(), RemoteValueStatus::kReady);
  EXPECT_EQ(state->Fetch().status().message(), "bad");
}

TEST(RemoteValueTest, CancelledFetchGivesCancelled) {
  auto state = std::make_shared<RemoteValueState>();
  state->SetCancelled();
  EXPECT_TRUE(absl::IsCancelled(state->Fetch().status()));
}

TEST(RemoteValueTest, AbortedThenRebuiltBecomesReadyAgain) {
  auto state = std::make_shared<RemoteValueState>();
  state->SetValue(IntValue(1));
  state->SetAborted();
  EXPECT_EQ(state->status(), RemoteValueStatus::kAborted);
  EXPECT_TRUE(absl::IsCancelled(state->Fetch().status()));
  state->SetValue(IntValue(2));
  EXPECT_EQ(state->Fetch()->int_value(), 2);
}

}  // namespace
}  // namespace tj
