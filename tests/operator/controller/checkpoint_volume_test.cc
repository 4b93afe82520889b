// The checkpoint claim and its mounts (checkpoint_volume.h): which pods mount it, where, with
// which group; the claim built from a template and who owns it; which claims can serve.
#include "operator/controller/checkpoint_volume.h"

#include <string>

#include "api/v1alpha1/labels.h"
#include "gtest/gtest.h"
#include "operator/controller/replica_objects.h"
#include "tests/operator/controller/controller_test_jobs.h"

namespace tj::op {
namespace {

using nlohmann::json;
using v1alpha1::ReplicaType;

const char kTemplateVolume[] = R"(  checkpoint:
    dir: /checkpoints/run-1
    volume:
      claimTemplate:
        storageClassName: nfs
        resources: {requests: {storage: 5Gi}}
      mountPath: /checkpoints
)";

const json* FindNamed(const json& list, const std::string& name) {
  if (!list.is_array()) return nullptr;
  for (const json& item : list) {
    if (item.value("name", "") == name) return &item;
  }
  return nullptr;
}

json PodOf(const v1alpha1::TrainingJob& job, ReplicaType type) {
  absl::StatusOr<json> pod = BuildReplicaPod(job, {type, 0});
  EXPECT_TRUE(pod.ok()) << pod.status();
  return pod.ok() ? *pod : json::object();
}

TEST(CheckpointVolumeTest, CoordinatorAndPsMountTheClaimWritableByTheImageGroup) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml(kTemplateVolume));
  for (ReplicaType type : {ReplicaType::kCoordinator, ReplicaType::kPs}) {
    const json spec = PodOf(job, type)["spec"];
    const json* volume = FindNamed(spec["volumes"], kCheckpointVolumeName);
    ASSERT_NE(volume, nullptr) << spec.dump();
    EXPECT_EQ((*volume)["persistentVolumeClaim"]["claimName"], "digits-checkpoint");
    const json* mount = FindNamed(spec["containers"][0]["volumeMounts"], kCheckpointVolumeName);
    ASSERT_NE(mount, nullptr);
    EXPECT_EQ((*mount)["mountPath"], "/checkpoints");
    EXPECT_FALSE(mount->value("readOnly", false));
    EXPECT_EQ(spec["securityContext"]["fsGroup"], 65532);
    EXPECT_EQ(spec["securityContext"]["fsGroupChangePolicy"], "OnRootMismatch");
  }
  // The PS's sidecar is the user's: only the trainer mounts the checkpoints.
  const json ps = PodOf(job, ReplicaType::kPs)["spec"];
  EXPECT_EQ(FindNamed(ps["containers"][1].value("volumeMounts", json::array()),
                      kCheckpointVolumeName),
            nullptr);
}

TEST(CheckpointVolumeTest, WorkersDoNotMountTheClaim) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml(kTemplateVolume));
  const json spec = PodOf(job, ReplicaType::kWorker)["spec"];
  EXPECT_EQ(FindNamed(spec["volumes"], kCheckpointVolumeName), nullptr);
  EXPECT_FALSE(spec.contains("securityContext")) << spec["securityContext"].dump();
}

TEST(CheckpointVolumeTest, NamedClaimMountsAtTheDirectoryAndTemplateGroupWins) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml(R"(  checkpoint:
    dir: /var/lib/ckpt
    volume: {claimName: shared-ckpt}
)"));
  json pod_spec = {{"containers", json::array({{{"name", "trainer"}}})},
                   {"securityContext", {{"runAsGroup", 1000}, {"fsGroupChangePolicy", "Always"}}}};
  AddCheckpointVolume(job, ReplicaType::kPs, pod_spec);
  EXPECT_EQ(FindNamed(pod_spec["volumes"], kCheckpointVolumeName)->at("persistentVolumeClaim")
                .at("claimName"),
            "shared-ckpt");
  EXPECT_EQ(FindNamed(pod_spec["containers"][0]["volumeMounts"], kCheckpointVolumeName)
                ->at("mountPath"),
            "/var/lib/ckpt");
  EXPECT_EQ(pod_spec["securityContext"]["fsGroup"], 1000);  // the template's group
  EXPECT_EQ(pod_spec["securityContext"]["fsGroupChangePolicy"], "Always");
}

TEST(CheckpointVolumeTest, JobWithoutVolumeMountsNothing) {
  const v1alpha1::TrainingJob job =
      testing::LoadJob(testing::SmallJobYaml("  checkpoint: {dir: /ckpt}\n"));
  EXPECT_FALSE(CheckpointClaimName(job).has_value());
  const json spec = PodOf(job, ReplicaType::kCoordinator)["spec"];
  EXPECT_EQ(FindNamed(spec["volumes"], kCheckpointVolumeName), nullptr);
  EXPECT_FALSE(spec.contains("securityContext"));
}

TEST(CheckpointVolumeTest, ClaimFromTemplateIsOwnedByTheJobOnlyUnderDelete) {
  const v1alpha1::TrainingJob retained =
      testing::LoadJob(testing::SmallJobYaml(kTemplateVolume));
  const json claim = BuildCheckpointClaim(retained);
  EXPECT_EQ(claim["kind"], "PersistentVolumeClaim");
  EXPECT_EQ(claim["metadata"]["name"], "digits-checkpoint");
  EXPECT_EQ(claim["metadata"]["namespace"], "ml");
  EXPECT_EQ(claim["metadata"]["labels"][v1alpha1::kJobNameLabel], "digits");
  EXPECT_FALSE(claim["metadata"].contains("ownerReferences")) << "Retain is the default";
  EXPECT_EQ(claim["spec"]["accessModes"], json::array({"ReadWriteMany"}));
  EXPECT_EQ(claim["spec"]["storageClassName"], "nfs");
  EXPECT_EQ(claim["spec"]["resources"]["requests"]["storage"], "5Gi");

  const v1alpha1::TrainingJob deleted = testing::LoadJob(
      testing::SmallJobYaml(std::string(kTemplateVolume) + "      reclaimPolicy: Delete\n"));
  const json owned = BuildCheckpointClaim(deleted);
  ASSERT_EQ(owned["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(owned["metadata"]["ownerReferences"][0]["uid"],
            "0b0e6c52-1111-4a4a-9a9a-0123456789ab");
  EXPECT_TRUE(ControlledBy(owned, "0b0e6c52-1111-4a4a-9a9a-0123456789ab"));
}

TEST(CheckpointVolumeTest, DefaultStorageClassWhenTheTemplateNamesNone) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml(R"(  checkpoint:
    dir: /ckpt
    volume: {claimTemplate: {resources: {requests: {storage: 1Gi}}}}
)"));
  EXPECT_FALSE(BuildCheckpointClaim(job)["spec"].contains("storageClassName"));
}

TEST(CheckpointVolumeTest, OnlyAReadWriteManyClaimNotBeingDeletedCanServe) {
  json claim = {{"metadata", {{"name", "shared"}, {"namespace", "ml"}}},
                {"spec", {{"accessModes", json::array({"ReadWriteOnce", "ReadWriteMany"})}}},
                {"status", {{"phase", "Bound"}}}};
  EXPECT_EQ(CheckpointClaimProblem(claim), "");
  claim["status"]["phase"] = "Pending";  // WaitForFirstConsumer: bound once a pod needs it
  EXPECT_EQ(CheckpointClaimProblem(claim), "");

  json rwo = claim;
  rwo["spec"]["accessModes"] = json::array({"ReadWriteOnce"});
  const std::string problem = CheckpointClaimProblem(rwo);

  EXPECT_NE(problem.find("PersistentVolumeClaim ml/shared"), std::string::npos) << problem;
  EXPECT_NE(problem.find("not ReadWriteMany"), std::string::npos) << problem;

  json lost = claim;
  lost["status"]["phase"] = "Lost";
  EXPECT_NE(CheckpointClaimProblem(lost).find("is Lost"), std::string::npos);

  json deleting = claim;
  deleting["metadata"]["deletionTimestamp"] = "2026-11-25T10:00:00Z";
  EXPECT_NE(CheckpointClaimProblem(deleting).find("being deleted"), std::string::npos);
}

}  // namespace
}  // namespace tj::op
