// The worker's error path alone: what one reconcile throws becomes that key's failure (requeued
// with backoff by the controller), and each failure gets a bounded reason label.
#include "operator/controller/reconcile_guard.h"

#include <stdexcept>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tj::op {
namespace {

using ::testing::HasSubstr;

TEST(ReconcileGuardTest, AJsonTypeErrorBecomesAnInternalFailure) {
  // What a volume named with a number does to the pod builder's value("name", "").
  const nlohmann::json volume = {{"name", 5}};
  const GuardedReconcile guarded = RunReconcileGuarded([&]() -> ReconcileResult {
    return {absl::OkStatus(), absl::Seconds(volume.value("name", "").size())};
  });
  EXPECT_TRUE(guarded.threw);
  EXPECT_TRUE(absl::IsInternal(guarded.result.status)) << guarded.result.status;
  EXPECT_THAT(std::string(guarded.result.status.message()), HasSubstr("type must be string"));
  EXPECT_FALSE(guarded.result.requeue_after.has_value());
  EXPECT_EQ(ReconcileErrorReason(guarded), "exception");
}

TEST(ReconcileGuardTest, ANonStandardExceptionIsCaughtToo) {
  const GuardedReconcile guarded = RunReconcileGuarded([]() -> ReconcileResult { throw 42; });
  EXPECT_TRUE(guarded.threw);
  EXPECT_TRUE(absl::IsInternal(guarded.result.status));
  EXPECT_EQ(ReconcileErrorReason(guarded), "exception");
}

TEST(ReconcileGuardTest, ResultsPassThroughAndErrorsAreNamedByTheirCode) {
  const GuardedReconcile ok = RunReconcileGuarded([]() -> ReconcileResult {
    return {absl::OkStatus(), absl::Seconds(30)};
  });
  EXPECT_FALSE(ok.threw);
  EXPECT_TRUE(ok.result.status.ok());
  EXPECT_EQ(ok.result.requeue_after, absl::Seconds(30));

  const GuardedReconcile conflict = RunReconcileGuarded([]() -> ReconcileResult {
    return {absl::AbortedError("409"), std::nullopt};
  });
  EXPECT_FALSE(conflict.threw);
  EXPECT_EQ(ReconcileErrorReason(conflict), "aborted");
  const GuardedReconcile slow = RunReconcileGuarded([]() -> ReconcileResult {
    return {absl::DeadlineExceededError("slow"), std::nullopt};
  });
  EXPECT_EQ(ReconcileErrorReason(slow), "deadline_exceeded");
}

}  // namespace
}  // namespace tj::op
