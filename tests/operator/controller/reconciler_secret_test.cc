// SecretStep over fakes: a new Secret queued once (and only when no create is awaited), the token
// of one in flight used until its create fails, a Secret not the job's refused, an older
// operator's Secret completed by a patch on the Secret as read.
#include "operator/controller/reconciler_secret.h"

#include "absl/strings/escaping.h"
#include "api/v1alpha1/labels.h"
#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class SecretStepTest : public StepTest {
 protected:
  void SetUp() override { SetJob(); }
  SecretStep step_{view_, client_};
};

TEST_F(SecretStepTest, AJobWithoutASecretQueuesOneWithANewTokenAndCa) {
  JobReconcile r = Reconcile();
  const StepResult result = step_.Run(r);
  EXPECT_EQ(result.next, StepResult::Next::kContinue);
  ASSERT_THAT(Queued(r), ElementsAre("secrets/digits-job-token"));
  EXPECT_EQ(r.writes[0].kind, WriteKind::kSecret);
  EXPECT_TRUE(r.writes[0].urgent) << "the pods mount it";
  EXPECT_FALSE(r.token.empty());
  EXPECT_TRUE(r.secret_has_tls);
  EXPECT_NE(r.control_tls, nullptr);
  EXPECT_TRUE(client_.calls.empty()) << "nothing is written before the writes are dispatched";

  ASSERT_TRUE(r.writes[0].call().ok());
  EXPECT_THAT(client_.calls, ElementsAre("create secrets"));
  std::string token;
  ASSERT_TRUE(absl::Base64Unescape(client_.bodies[0]["data"]["token"].get<std::string>(), &token));
  EXPECT_EQ(token, r.token) << "the Secret holds the token the reconcile's notices use";
  EXPECT_EQ(view_.secrets_written.size(), 1u) << "Secrets are not watched: the view is told";
}

TEST_F(SecretStepTest, WhileCreatesAreAwaitedNoSecretIsMade) {
  JobReconcile r = Reconcile();
  r.creations_settled = false;
  step_.Run(r);
  EXPECT_TRUE(r.writes.empty());
  EXPECT_TRUE(r.token.empty());
}

TEST_F(SecretStepTest, TheTokenOfASecretInFlightServesUntilItsCreateFails) {
  JobReconcile first = Reconcile();
  step_.Run(first);
  ASSERT_EQ(first.writes.size(), 1u);

  JobReconcile awaiting = Reconcile();
  awaiting.creations_settled = false;
  step_.Run(awaiting);
  EXPECT_EQ(awaiting.token, first.token) << "the cache does not show the Secret yet";

  client_.fail_calls["create secrets"] = absl::AlreadyExistsError("exists");
  EXPECT_FALSE(first.writes[0].call().ok());
  JobReconcile after = Reconcile();
  after.creations_settled = false;
  step_.Run(after);
  EXPECT_TRUE(after.token.empty()) << "a Secret found existing holds another token";
}

TEST_F(SecretStepTest, ASecretOfTheSameNameNotOwnedByTheJobStopsTheReconcile) {
  view_.secrets["ml/digits-job-token"] = {
      {"metadata", {{"name", "digits-job-token"}, {"namespace", "ml"}}}};
  JobReconcile r = Reconcile();
  const StepResult result = step_.Run(r);
  EXPECT_EQ(result.next, StepResult::Next::kStop);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status.message(), HasSubstr("is not owned by this TrainingJob"));
  EXPECT_TRUE(r.writes.empty());
}

TEST_F(SecretStepTest, AnOlderOperatorsSecretIsCompletedOnTheSecretAsRead) {
  nlohmann::json old = BuildJobTokenSecret(Job(), "older-token", nlohmann::json::object());
  old["data"] = {{v1alpha1::kJobTokenSecretKey, absl::Base64Escape("older-token")}};
  old["metadata"]["resourceVersion"] = "7";
  view_.secrets["ml/digits-job-token"] = old;
  JobReconcile r = Reconcile();
  EXPECT_EQ(step_.Run(r).next, StepResult::Next::kContinue);
  EXPECT_THAT(client_.calls, ElementsAre("patch secrets digits-job-token"));
  EXPECT_EQ(client_.bodies[0]["metadata"]["resourceVersion"], "7")
      << "a cache lagging an earlier patch is refused (Conflict), never given a second CA";
  EXPECT_TRUE(client_.bodies[0]["data"].contains(v1alpha1::kJobVerifiersSecretKey));
  EXPECT_EQ(r.token, "older-token");
  EXPECT_TRUE(r.secret_has_tls) << "the patch added the job's CA";
  EXPECT_TRUE(r.writes.empty());
}

}  // namespace
}  // namespace tj::op::testing
