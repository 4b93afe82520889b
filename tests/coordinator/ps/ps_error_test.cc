#include "coordinator/ps/ps_error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tj {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

TEST(PsErrorTest, UnavailableErrorNamesTaskAndAddressAndCarriesTheTask) {
  const absl::Status status = PsUnavailableError(3, "10.0.0.7:2222", "connection refused");

  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            "parameter server /job:ps/task:3 at 10.0.0.7:2222 unavailable: connection refused");
  EXPECT_THAT(PsTaskOf(status), Optional(3));
}

TEST(PsErrorTest, UnavailableErrorWithoutAnAddressLeavesItOut) {
  EXPECT_EQ(PsUnavailableError(0, "", "gone").message(),
            "parameter server /job:ps/task:0 unavailable: gone");
}

TEST(PsErrorTest, PsTaskOfIsEmptyForStatusesWithoutThePayload) {
  EXPECT_EQ(PsTaskOf(absl::OkStatus()), std::nullopt);
  EXPECT_EQ(PsTaskOf(absl::UnavailableError("some other service")), std::nullopt);
  EXPECT_EQ(PsTaskOf(absl::NotFoundError("variable 'w' does not exist")), std::nullopt);
}

TEST(PsErrorTest, PsTaskOfIgnoresAPayloadThatIsNotATaskIndex) {
  absl::Status status = absl::UnavailableError("x");
  status.SetPayload("tj.dev/ps_task", absl::Cord("three"));
  EXPECT_EQ(PsTaskOf(status), std::nullopt);
}

}  // namespace
}  // namespace tj
