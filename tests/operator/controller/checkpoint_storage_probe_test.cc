// The operator's bucket check in a reconcile worker: an endpoint that accepts the connection and
// never answers is given up after kBucketProbeTimeout, not after the runtime's 60 s stall limit.
#include "operator/controller/checkpoint_storage_probe.h"

#include <chrono>
#include <future>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/operator/controller/controller_test_jobs.h"
#include "tests/support/loopback_listener.h"

namespace tj::op {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(CheckpointStorageProbeTest, AnEndpointThatNeverAnswersIsGivenUpNamingTheBucket) {
  // Listens and never accepts: the request then waits for a response that never comes.
  tj::testing::LoopbackListener endpoint;
  const std::string spec = absl::StrReplaceAll(R"(  checkpoint:
    dir: s3://team-ckpt/runs/digits
    s3:
      endpoint: ENDPOINT
      credentialsSecret: {name: ckpt-s3}
)",
                                               {{"ENDPOINT", endpoint.url()}});
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml(spec));
  // The subject is a deadline, so the test bounds the wait: halfway between the probe's 5 s and
  // the 60 s after which the client's stall limit would end the request anyway.
  std::future<absl::Status> probe = std::async(std::launch::async, [&job] {
    return ProbeCheckpointBucket(job, {"AKIDEXAMPLE0001", "secret"});
  });
  ASSERT_EQ(probe.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the bucket check still waits on a silent endpoint";
  const absl::Status probed = probe.get();
  EXPECT_TRUE(absl::IsUnavailable(probed)) << probed;
  EXPECT_THAT(std::string(probed.message()), AllOf(HasSubstr("team-ckpt"),
                                                   HasSubstr(endpoint.url())));
}

}  // namespace
}  // namespace tj::op
