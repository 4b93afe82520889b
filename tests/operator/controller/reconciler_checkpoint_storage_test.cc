// CheckpointStorageStep over fakes, the bucket probe a fake too (no S3 server): the Secret and
// bucket are looked at only when a coordinator or PS pod is about to be made; a missing Secret or
// key and a refused bucket hold the job with one Warning per problem, the access key ID masked,
// and a retry interval; a failure a retry may fix stops the reconcile.
#include "operator/controller/reconciler_checkpoint_storage.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "operator/controller/job_status.h"
#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kBucket[] =
    "  checkpoint:\n    dir: s3://tj-ckpt/digits\n    s3:\n      endpoint: http://s3.test:8333\n"
    "      credentialsSecret: {name: ckpt-s3}\n";
constexpr char kAccessKey[] = "AKIAEXAMPLE12345";
constexpr char kSecretKey[] = "the-secret-access-key";

nlohmann::json CredentialsSecret(const std::string& secret_key_name) {
  return {{"metadata", {{"name", "ckpt-s3"}, {"namespace", "ml"}}},
          {"data",
           {{"AWS_ACCESS_KEY_ID", absl::Base64Escape(kAccessKey)},
            {secret_key_name, absl::Base64Escape(kSecretKey)}}}};
}

class CheckpointStorageStepTest : public StepTest {
 protected:
  JobReconcile Creating(ReplicaType type) {
    JobReconcile r = Reconcile();
    r.decision.to_create = {{type, 0}};
    return r;
  }
  // The fake bucket: answers `bucket_answer_`, and remembers what it was asked with.
  absl::Status Probe(const v1alpha1::TrainingJob& job, const S3Credentials& credentials) {
    probed_dirs_.push_back(job.spec.checkpoint->dir);
    probed_keys_.push_back(credentials.access_key_id + ":" + credentials.secret_access_key);
    return bucket_answer_;
  }

  absl::Status bucket_answer_;
  std::vector<std::string> probed_dirs_;
  std::vector<std::string> probed_keys_;
  CheckpointStorageStep step_{
      client_, events_,
      [this](const v1alpha1::TrainingJob& job, const S3Credentials& credentials) {
        return Probe(job, credentials);
      },
      absl::Seconds(30)};
};

TEST_F(CheckpointStorageStepTest, OnlyAPodThatWritesCheckpointsMakesTheBucketBeLookedAt) {
  SetJob(kBucket);
  client_.objects["secrets/ml/ckpt-s3"] = CredentialsSecret("AWS_SECRET_ACCESS_KEY");
  JobReconcile worker = Creating(ReplicaType::kWorker);
  EXPECT_EQ(step_.Run(worker).next, StepResult::Next::kContinue);
  JobReconcile nothing = Reconcile();
  step_.Run(nothing);
  EXPECT_THAT(client_.calls, IsEmpty());
  EXPECT_THAT(probed_dirs_, IsEmpty());

  JobReconcile ps = Creating(ReplicaType::kPs);
  const StepResult result = step_.Run(ps);
  EXPECT_THAT(client_.calls, ElementsAre("get secrets ckpt-s3"));
  EXPECT_THAT(probed_dirs_, ElementsAre("s3://tj-ckpt/digits"));
  EXPECT_THAT(probed_keys_, ElementsAre(std::string(kAccessKey) + ":" + kSecretKey))
      << "the probe is asked with the Secret's keys, decoded";
  EXPECT_THAT(ps.checkpoint_storage_problem, IsEmpty());
  EXPECT_TRUE(ps.MayCreatePods());
  EXPECT_FALSE(result.requeue_after.has_value());
  EXPECT_THAT(events_.events(), IsEmpty());
}

TEST_F(CheckpointStorageStepTest, AJobWithoutABucketCostsNoRequest) {
  SetJob();
  JobReconcile r = Creating(ReplicaType::kCoordinator);
  EXPECT_EQ(step_.Run(r).next, StepResult::Next::kContinue);
  EXPECT_THAT(client_.calls, IsEmpty());
  EXPECT_THAT(probed_dirs_, IsEmpty());
}

TEST_F(CheckpointStorageStepTest, AMissingSecretOrKeyHoldsTheJobWithOneWarningPerProblem) {
  SetJob(kBucket);
  for (int i = 0; i < 2; ++i) {
    JobReconcile r = Creating(ReplicaType::kCoordinator);
    const StepResult result = step_.Run(r);
    EXPECT_THAT(r.checkpoint_storage_problem,
                HasSubstr("Secret ml/ckpt-s3 (spec.checkpoint.s3.credentialsSecret.name) does "
                          "not exist"));
    EXPECT_FALSE(r.MayCreatePods());
    EXPECT_EQ(result.requeue_after, absl::Seconds(30)) << "Secrets are not watched";
  }
  EXPECT_THAT(probed_dirs_, IsEmpty()) << "no credentials, no request to the bucket";

  client_.objects["secrets/ml/ckpt-s3"] = CredentialsSecret("secret-key");
  JobReconcile no_key = Creating(ReplicaType::kCoordinator);
  step_.Run(no_key);
  EXPECT_THAT(no_key.checkpoint_storage_problem,
              HasSubstr("Secret ml/ckpt-s3 has no key AWS_SECRET_ACCESS_KEY "
                        "(spec.checkpoint.s3.credentialsSecret.secretAccessKeyKey)"));
  EXPECT_EQ(events_.events().size(), 2u) << "one Warning per problem, not per reconcile";
  EXPECT_TRUE(events_.Has(std::string("Warning ") + kCheckpointStorageUnavailableReason + ": "))
      << ::testing::PrintToString(events_.events());

  client_.objects["secrets/ml/ckpt-s3"] = CredentialsSecret("AWS_SECRET_ACCESS_KEY");
  JobReconcile ok = Creating(ReplicaType::kCoordinator);
  const StepResult result = step_.Run(ok);
  EXPECT_THAT(ok.checkpoint_storage_problem, IsEmpty());
  EXPECT_TRUE(ok.MayCreatePods());
  EXPECT_FALSE(result.requeue_after.has_value());
}

TEST_F(CheckpointStorageStepTest, ARefusedBucketHoldsTheJobNamingItWithTheAccessKeyMasked) {
  SetJob(kBucket);
  client_.objects["secrets/ml/ckpt-s3"] = CredentialsSecret("AWS_SECRET_ACCESS_KEY");
  bucket_answer_ = absl::PermissionDeniedError(
      std::string("access key ") + kAccessKey + " refused for bucket tj-ckpt");
  JobReconcile r = Creating(ReplicaType::kPs);
  const StepResult result = step_.Run(r);
  EXPECT_EQ(result.next, StepResult::Next::kContinue) << "held, not failed";
  EXPECT_EQ(result.requeue_after, absl::Seconds(30));
  EXPECT_THAT(r.checkpoint_storage_problem,
              HasSubstr("checkpoint location s3://tj-ckpt/digits: access key ****2345 refused "
                        "for bucket tj-ckpt"));
  EXPECT_THAT(r.checkpoint_storage_problem, HasSubstr("credentials of Secret ml/ckpt-s3"));
  EXPECT_THAT(r.checkpoint_storage_problem, Not(HasSubstr(kAccessKey)));
  EXPECT_FALSE(events_.Has(kAccessKey)) << ::testing::PrintToString(events_.events());
  EXPECT_FALSE(events_.Has(kSecretKey));
  EXPECT_EQ(events_.events().size(), 1u);
}

TEST_F(CheckpointStorageStepTest, AFailureARetryMayFixStopsTheReconcile) {
  SetJob(kBucket);
  client_.fail_calls["get secrets"] = absl::UnavailableError("down");
  JobReconcile r = Creating(ReplicaType::kPs);
  const StepResult result = step_.Run(r);
  EXPECT_EQ(result.next, StepResult::Next::kStop);
  EXPECT_TRUE(absl::IsUnavailable(result.status));
  EXPECT_THAT(events_.events(), IsEmpty());
}

TEST_F(CheckpointStorageStepTest, ADeletedJobIsForgotten) {
  SetJob(kBucket);
  JobReconcile missing = Creating(ReplicaType::kPs);
  step_.Run(missing);
  step_.Forget("ml/digits");
  JobReconcile again = Creating(ReplicaType::kPs);
  step_.Run(again);
  EXPECT_EQ(events_.events().size(), 2u) << "a job made again under the name is warned again";
}

}  // namespace
}  // namespace tj::op::testing
