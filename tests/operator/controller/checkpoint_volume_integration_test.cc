// The checkpoint volume against the real API server (fixture: reconciler_integration_fixture.h).
#include <string>

#include "tests/operator/controller/reconciler_integration_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::HasSubstr;

// takes a claim the operator made only under reclaimPolicy Delete.
class CheckpointVolumeIntegrationTest : public ReconcilerIntegrationTest {
 protected:
  void CreateJobWithVolume(const std::string& name, const std::string& volume_yaml) {
    std::string yaml = absl::StrReplaceAll(
        kJobYaml, {{"BACKOFF", "6"}, {"EXTRA_RUN_POLICY", ""}, {"name: digits", "name: " + name}});
    absl::StrAppend(&yaml, "  checkpoint:\n    dir: /checkpoints/", name, "\n    volume: ",
                    volume_yaml, "\n");
    auto manifest = v1alpha1::YamlToJson(yaml, "job.yaml");
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    auto created = client_->Create(*kube::Resource("trainingjobs", ns_), *manifest);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void CreateClaim(const std::string& name, const std::string& access_mode) {
    const json claim = {
        {"metadata", {{"name", name}}},
        {"spec",
         {{"accessModes", json::array({access_mode})},
          {"storageClassName", ""},
          {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
    auto created = client_->Create(*kube::Resource("persistentvolumeclaims", ns_), claim);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  absl::StatusOr<json> Claim(const std::string& name) {
    return client_->Get(*kube::Resource("persistentvolumeclaims", ns_, name));
  }
  static std::string ClaimOf(const json& pod) {
    for (const json& volume : pod["spec"].value("volumes", json::array())) {
      if (volume.contains("persistentVolumeClaim")) {
        return volume["persistentVolumeClaim"]["claimName"];
      }
    }
    return "";
  }
};

TEST_F(CheckpointVolumeIntegrationTest, ClaimFromTemplateIsMadeBeforeThePodsAndMountedOnCoordinatorAndPs) {
  CreateJobWithVolume("digits", "{claimTemplate: {resources: {requests: {storage: 2Gi}}}}");
  Reconcile();
  absl::StatusOr<json> claim = Claim("digits-checkpoint");
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ((*claim)["spec"]["accessModes"], json::array({"ReadWriteMany"}));
  EXPECT_EQ((*claim)["spec"]["resources"]["requests"]["storage"], "2Gi");
  EXPECT_EQ((*claim)["metadata"]["labels"]["trainingjob.dev/job-name"], "digits");
  EXPECT_FALSE((*claim)["metadata"].contains("ownerReferences")) << "Retain by default";
  EXPECT_TRUE(events_.Has("Normal CreatedCheckpointClaim: created PersistentVolumeClaim " + ns_ +
                          "/digits-checkpoint (reclaimPolicy Retain)"))
      << ::testing::PrintToString(events_.events());

  const std::map<std::string, json> pods = Pods();
  ASSERT_EQ(pods.size(), 4u);
  for (const char* name : {"digits-coordinator-0", "digits-ps-0"}) {
    const json& pod = pods.at(name);
    EXPECT_EQ(ClaimOf(pod), "digits-checkpoint") << name;
    EXPECT_EQ(pod["spec"]["securityContext"]["fsGroup"], 65532) << name;
    bool mounted = false;
    for (const json& mount : pod["spec"]["containers"][0]["volumeMounts"]) {
      mounted |= mount["mountPath"] == "/checkpoints/digits";
    }
    EXPECT_TRUE(mounted) << name;
  }
  EXPECT_EQ(ClaimOf(pods.at("digits-worker-0")), "");
  EXPECT_EQ(CreatedCondition("digits")["status"], "True");
}

TEST_F(CheckpointVolumeIntegrationTest, AMissingClaimHoldsTheJobUntilItExists) {
  CreateJobWithVolume("digits", "{claimName: team-checkpoints}");
  ReconcileResult held = Reconcile();
  EXPECT_TRUE(Pods().empty()) << "no pod, so no checkpoint half-written";
  const json created = CreatedCondition("digits");
  EXPECT_EQ(created["status"], "False");
  EXPECT_EQ(created["reason"], "CheckpointVolumeUnavailable");
  EXPECT_THAT(created["message"].get<std::string>(),
              HasSubstr("PersistentVolumeClaim " + ns_ + "/team-checkpoints"));
  EXPECT_THAT(created["message"].get<std::string>(), HasSubstr("does not exist"));
  ASSERT_TRUE(held.requeue_after.has_value()) << "claims are not watched: the job comes back";
  EXPECT_LE(*held.requeue_after, absl::Seconds(30));
  EXPECT_TRUE(events_.Has("Warning CheckpointVolumeUnavailable: PersistentVolumeClaim " + ns_ +
                          "/team-checkpoints"))
      << ::testing::PrintToString(events_.events());

  // Held, not failed, and not a Warning per reconcile.
  const size_t events = events_.events().size();
  Reconcile();
  EXPECT_TRUE(Pods().empty());
  EXPECT_EQ(events_.events().size(), events) << ::testing::PrintToString(events_.events());
  EXPECT_NE(State("digits"), "Failed");

  CreateClaim("team-checkpoints", "ReadWriteMany");
  Reconcile();
  const std::map<std::string, json> pods = Pods();
  ASSERT_EQ(pods.size(), 4u);
  EXPECT_EQ(ClaimOf(pods.at("digits-ps-0")), "team-checkpoints");
  EXPECT_EQ(CreatedCondition("digits")["status"], "True");
}

TEST_F(CheckpointVolumeIntegrationTest, AReadWriteOnceClaimIsRefusedNamingTheClaim) {
  CreateClaim("single-node", "ReadWriteOnce");
  CreateJobWithVolume("digits", "{claimName: single-node}");
  Reconcile();
  EXPECT_TRUE(Pods().empty());
  const json created = CreatedCondition("digits");
  EXPECT_EQ(created["reason"], "CheckpointVolumeUnavailable");
  EXPECT_THAT(created["message"].get<std::string>(),
              HasSubstr("PersistentVolumeClaim " + ns_ +
                        "/single-node has access modes [ReadWriteOnce], not ReadWriteMany"));
  // Another job's template claim of the same name is not taken over either.
  CreateClaim("other-checkpoint", "ReadWriteMany");
  CreateJobWithVolume("other", "{claimTemplate: {resources: {requests: {storage: 1Gi}}}}");
  Reconcile("other");
  EXPECT_THAT(CreatedCondition("other")["message"].get<std::string>(),
              HasSubstr("was not made for this TrainingJob"));
}

TEST_F(CheckpointVolumeIntegrationTest, DeleteGoesWithTheJobRetainOutlivesIt) {
  CreateJobWithVolume("gone",
                      "{claimTemplate: {resources: {requests: {storage: 1Gi}}}, "
                      "reclaimPolicy: Delete}");
  CreateJobWithVolume("kept", "{claimTemplate: {resources: {requests: {storage: 1Gi}}}}");
  Reconcile("gone");
  Reconcile("kept");
  absl::StatusOr<json> owned = Claim("gone-checkpoint");
  ASSERT_TRUE(owned.ok()) << owned.status();
  EXPECT_TRUE(ControlledBy(*owned, Job("gone")["metadata"]["uid"]));
  ASSERT_TRUE(Claim("kept-checkpoint").ok());

  for (const char* job : {"gone", "kept"}) {
    kube::DeleteOptions options;
    options.propagation_policy = "Background";
    auto deleted = client_->Delete(*kube::Resource("trainingjobs", ns_, job), options);
    ASSERT_TRUE(deleted.ok()) << deleted.status();
  }
  // The garbage collector deletes the owned claim (and the pvc-protection controller lets it go
  // once the pods that mount it are gone).
  EXPECT_TRUE(testing::WaitFor(
      [&] { return absl::IsNotFound(Claim("gone-checkpoint").status()); }, absl::Seconds(120)))
      << "the claim of a reclaimPolicy Delete job outlived it";
  EXPECT_TRUE(testing::WaitFor([&] {
    return absl::IsNotFound(client_->Get(*kube::Resource("trainingjobs", ns_, "kept")).status());
  }, absl::Seconds(120)));
  absl::StatusOr<json> kept = Claim("kept-checkpoint");
  ASSERT_TRUE(kept.ok()) << "Retain: the checkpoints outlive the job";
  EXPECT_FALSE((*kept)["metadata"].contains("deletionTimestamp"));

  // A job of the same name made again finds its checkpoints: the retained claim is used, once
  // every object of the old job has gone the same way as the job. The garbage collector deletes
  // them in no fixed order: its Secret gone does not mean its pods are. A pod of the old job still
  // there makes the new job's create answer AlreadyExists, which the reconciler takes as "no longer
  // awaited" (the operator's pod informer brings the job back when the old pod goes; this test has
  // none), and the old pod then goes: no kept-ps-0.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        if (!absl::IsNotFound(
                client_->Get(*kube::Resource("secrets", ns_, "kept-job-token")).status())) {
          return false;
        }
        kube::ListOptions of_the_job;
        of_the_job.label_selector = "trainingjob.dev/job-name=kept";
        for (const char* kind : {"pods", "services"}) {
          auto listed = client_->List(*kube::Resource(kind, ns_), of_the_job);
          if (!listed.ok() || !(*listed)["items"].empty()) return false;
        }
        return true;
      },
      absl::Seconds(120)))
      << "the old job's objects outlived it";
  CreateJobWithVolume("kept", "{claimTemplate: {resources: {requests: {storage: 1Gi}}}}");
  Reconcile("kept");
  EXPECT_EQ(CreatedCondition("kept")["status"], "True");
  EXPECT_EQ(ClaimOf(Pods().at("kept-ps-0")), "kept-checkpoint");
}


}  // namespace
}  // namespace tj::op::testing
