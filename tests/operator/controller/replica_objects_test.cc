// The objects the operator creates, built from a manifest: names, labels, ownership, the
// environment contract, what of the user's template survives.
#include "operator/controller/replica_objects.h"

#include <memory>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "api/v1alpha1/labels.h"
#include "coordinator/base/job_roles.h"
#include "gtest/gtest.h"
#include "tests/operator/controller/controller_test_jobs.h"

namespace tj::op {
namespace {

using nlohmann::json;
using v1alpha1::ReplicaType;

std::string EnvValue(const json& container, const std::string& name, int* count = nullptr) {
  std::string value;
  int seen = 0;
  for (const json& var : container["env"]) {
    if (var["name"] == name) {
      value = var.value("value", "");
      ++seen;
    }
  }
  if (count) *count = seen;
  return value;
}

TEST(ReplicaObjectsTest, PodCarriesNameLabelsOwnerAndNeverRestartPolicy) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  auto pod = BuildReplicaPod(job, {ReplicaType::kPs, 0});
  ASSERT_TRUE(pod.ok()) << pod.status();
  const json& meta = (*pod)["metadata"];
  EXPECT_EQ(meta["name"], "digits-ps-0");
  EXPECT_EQ(meta["namespace"], "ml");
  EXPECT_EQ(meta["labels"][v1alpha1::kJobNameLabel], "digits");
  EXPECT_EQ(meta["labels"][v1alpha1::kReplicaTypeLabel], "ps");
  EXPECT_EQ(meta["labels"][v1alpha1::kReplicaIndexLabel], "0");
  EXPECT_EQ(meta["labels"]["team"], "ranking");  // the template's own label is kept
  EXPECT_EQ(meta["annotations"]["note"], "kept");
  ASSERT_EQ(meta["ownerReferences"].size(), 1u);
  const json& owner = meta["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "TrainingJob");
  EXPECT_EQ(owner["apiVersion"], "trainingjob.dev/v1alpha1");
  EXPECT_EQ(owner["uid"], "0b0e6c52-1111-4a4a-9a9a-0123456789ab");
  EXPECT_TRUE(owner["controller"].get<bool>());
  EXPECT_TRUE(owner["blockOwnerDeletion"].get<bool>());
  const json& spec = (*pod)["spec"];
  EXPECT_EQ(spec["restartPolicy"], "Never");
  EXPECT_EQ(spec["hostname"], "digits-ps-0");
  EXPECT_EQ(spec["nodeSelector"]["pool"], "spot");  // user fields survive
  ASSERT_EQ(spec["containers"].size(), 2u);
  EXPECT_FALSE(spec["containers"][1].contains("env")) << "only the trainer gets the job env";
}

TEST(ReplicaObjectsTest, TrainerGetsTheEnvironmentContractAndItWinsOverUserValues) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  auto pod = BuildReplicaPod(job, {ReplicaType::kCoordinator, 0});
  ASSERT_TRUE(pod.ok()) << pod.status();
  const json& trainer = (*pod)["spec"]["containers"][0];
  int tf_config_count = 0;
  const json tf_config = json::parse(EnvValue(trainer, "TF_CONFIG", &tf_config_count));
  EXPECT_EQ(tf_config_count, 1);
  EXPECT_EQ(tf_config["task"]["type"], "chief");
  EXPECT_EQ(tf_config["cluster"]["ps"][0], "digits-ps-0.ml.svc:2222");
  EXPECT_EQ(tf_config["cluster"]["worker"].size(), 2u);
  int job_name_count = 0;
  EXPECT_EQ(EnvValue(trainer, "TJ_JOB_NAME", &job_name_count), "digits");
  EXPECT_EQ(job_name_count, 1) << "the user's TJ_JOB_NAME is replaced, not duplicated";
  EXPECT_EQ(EnvValue(trainer, "MODEL"), "softmax");  // other user variables are kept
  EXPECT_EQ(EnvValue(trainer, "TJ_REPLICA_NAME"), "digits-coordinator-0");
  EXPECT_EQ(EnvValue(trainer, "TJ_RESTART_EXIT_CODE"), "42");
  EXPECT_EQ(EnvValue(trainer, "TJ_COORDINATOR_ADDRESS"), "digits-coordinator-0.ml.svc:2222");
  bool pod_ip_from_downward_api = false;
  for (const json& var : trainer["env"]) {
    pod_ip_from_downward_api |=
        var["name"] == "TJ_POD_IP" && var["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP";
  }
  EXPECT_TRUE(pod_ip_from_downward_api);
  // Its own role's credential and the verifiers, nothing else of the Secret.
  EXPECT_EQ(EnvValue(trainer, "TJ_TOKEN_FILE"),
            std::string(v1alpha1::kJobTokenMountPath) + "/coordinator");
  EXPECT_EQ(EnvValue(trainer, "TJ_TOKEN_VERIFIERS_FILE"),
            std::string(v1alpha1::kJobTokenMountPath) + "/verifiers");
  EXPECT_EQ(EnvValue(trainer, "TJ_TLS_DIR"), std::string(v1alpha1::kJobTokenMountPath) + "/tls");
  uint64_t generation = 0;
  EXPECT_TRUE(absl::SimpleAtoi(EnvValue(trainer, "TJ_COORDINATOR_GENERATION"), &generation));
  EXPECT_GT(generation, 0u);
  ASSERT_TRUE(trainer.contains("ports"));
  EXPECT_EQ(trainer["ports"][0]["containerPort"], 2222);
  bool mounted = false;
  for (const json& mount : trainer["volumeMounts"]) {
    mounted |= mount["mountPath"] == v1alpha1::kJobTokenMountPath && mount["readOnly"] == true;
  }
  EXPECT_TRUE(mounted);
  bool volume = false;
  for (const json& v : (*pod)["spec"]["volumes"]) {
    if (v["secret"]["secretName"] != "digits-job-token") continue;
    volume = true;
    // And the job's CA and its role's certificate, where TJ_TLS_DIR points; never the CA's key.
    EXPECT_EQ(v["secret"]["items"], json::parse(R"([{"key": "coordinator", "path": "coordinator"},
                              {"key": "verifiers", "path": "verifiers"},
                              {"key": "ca.crt", "path": "tls/ca.crt"},
                              {"key": "coordinator.crt", "path": "tls/tls.crt"},
                              {"key": "coordinator.key", "path": "tls/tls.key"}])"));
  }
  EXPECT_TRUE(volume);
  EXPECT_EQ((*pod)["spec"]["terminationGracePeriodSeconds"], 20);  // honoured as written
}

// A TensorFlow chief holds 2222 for TensorFlow's server: a declared tj-coordination port moves
// the job's Coordination service (notices, progress) there, for the pod and for everyone who dials.
TEST(ReplicaObjectsTest, DeclaredCoordinationPortIsWhereTheCoordinationServiceIs) {
  v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  nlohmann::json& raw = job.spec.replica_specs.at(ReplicaType::kCoordinator).pod_template.mutable_raw();
  raw["spec"]["containers"][0]["ports"] = {{{"name", "tj-coordination"}, {"containerPort", 2223}}};
  auto chief = BuildReplicaPod(job, {ReplicaType::kCoordinator, 0});
  ASSERT_TRUE(chief.ok()) << chief.status();
  const json& trainer = (*chief)["spec"]["containers"][0];
  EXPECT_EQ(EnvValue(trainer, "TJ_COORDINATION_ADDRESS"), ":2223");
  EXPECT_EQ(trainer["ports"].size(), 2u) << "the trainer port is added beside the declared one";
  auto worker = BuildReplicaPod(job, {ReplicaType::kWorker, 0});
  ASSERT_TRUE(worker.ok()) << worker.status();
  EXPECT_EQ(EnvValue((*worker)["spec"]["containers"][0], "TJ_COORDINATOR_ADDRESS"),
            "digits-coordinator-0.ml.svc:2223");
  EXPECT_EQ(EnvValue((*worker)["spec"]["containers"][0], "TJ_COORDINATION_ADDRESS"), "");
  const json policy = BuildJobNetworkPolicy(job, NetworkPolicyOptions{});
  EXPECT_EQ(policy["spec"]["ingress"][1]["ports"],
            json::parse(R"([{"port": 2222, "protocol": "TCP"}, {"port": 2223, "protocol": "TCP"}])"));
}

TEST(ReplicaObjectsTest, BuildingTwiceGivesTheSameObject) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  EXPECT_EQ(*BuildReplicaPod(job, {ReplicaType::kWorker, 1}),
            *BuildReplicaPod(job, {ReplicaType::kWorker, 1}));
}

TEST(ReplicaObjectsTest, GangSchedulingAddsWhatEachSchedulerReads) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml(R"(  runPolicy:
    schedulingPolicy: {minAvailable: 4, queue: research, priorityClass: high}
)"));
  auto volcano = BuildReplicaPod(job, {ReplicaType::kWorker, 0}, {GangScheduler::kVolcano});
  ASSERT_TRUE(volcano.ok());
  EXPECT_EQ((*volcano)["spec"]["schedulerName"], "volcano");
  EXPECT_EQ((*volcano)["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "digits");
  EXPECT_EQ((*volcano)["metadata"]["annotations"]["volcano.sh/queue-name"], "research");
  EXPECT_EQ((*volcano)["spec"]["priorityClassName"], "high");
  auto plugins =
      BuildReplicaPod(job, {ReplicaType::kWorker, 0}, {GangScheduler::kSchedulerPlugins});
  EXPECT_EQ((*plugins)["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "digits");
  auto none = BuildReplicaPod(job, {ReplicaType::kWorker, 0});
  EXPECT_FALSE((*none)["spec"].contains("schedulerName"));
}

TEST(ReplicaObjectsTest, HeadlessServiceSelectsExactlyTheReplica) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  const json service = BuildReplicaService(job, {ReplicaType::kWorker, 1});
  EXPECT_EQ(service["metadata"]["name"], "digits-worker-1");
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  EXPECT_TRUE(service["spec"]["publishNotReadyAddresses"].get<bool>());
  EXPECT_EQ(service["spec"]["selector"][v1alpha1::kReplicaTypeLabel], "worker");
  EXPECT_EQ(service["spec"]["selector"][v1alpha1::kReplicaIndexLabel], "1");
  EXPECT_EQ(service["spec"]["ports"][0]["port"], 2222);
}

TEST(ReplicaObjectsTest, TokenSecretHoldsTheTokenBase64) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  const json secret = BuildJobTokenSecret(job, "s3cr3t", json{{"ca.crt", "Q0E="}});
  EXPECT_EQ(secret["metadata"]["name"], "digits-job-token");
  std::string decoded;
  ASSERT_TRUE(absl::Base64Unescape(secret["data"]["token"].get<std::string>(), &decoded));
  EXPECT_EQ(decoded, "s3cr3t");
  // And what the pods mount: each role's credential and the verifiers.
  for (JobRole role : kAllJobRoles) {
    ASSERT_TRUE(absl::Base64Unescape(
        secret["data"][std::string(JobRoleName(role))].get<std::string>(), &decoded));
    EXPECT_EQ(decoded, DeriveRoleCredential("s3cr3t", role));
  }
  ASSERT_TRUE(absl::Base64Unescape(secret["data"]["verifiers"].get<std::string>(), &decoded));
  EXPECT_EQ(decoded, FormatRoleVerifiers(DeriveRoleVerifiers("s3cr3t")));
  EXPECT_EQ(secret["metadata"]["ownerReferences"][0]["name"], "digits");
  EXPECT_EQ(secret["data"]["ca.crt"], "Q0E=") << "the TLS data given";
}

// A job whose pods run plaintext (an operator before TLS made some): no certificate mounted, no
// TJ_TLS_DIR.
TEST(ReplicaObjectsTest, PlaintextPodsMountNoCertificate) {
  auto job =
      std::make_shared<const v1alpha1::TrainingJob>(testing::LoadJob(testing::SmallJobYaml()));
  auto pods = JobPods::Create(job, /*tls=*/false);
  ASSERT_TRUE(pods.ok()) << pods.status();
  auto pod = BuildReplicaPod(**pods, {ReplicaType::kPs, 0});
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(EnvValue((*pod)["spec"]["containers"][0], "TJ_TLS_DIR"), "");
  for (const json& v : (*pod)["spec"]["volumes"]) {
    if (v["name"] != "tj-job-token") continue;
    EXPECT_EQ(v["secret"]["items"].size(), 2u) << v.dump();
  }
}

// The pods of one reconcile share one JobPods: the same pods as built one by one, and a job whose
// TF_CONFIG cannot fit in an environment variable builds none, the error naming job and replica.
TEST(ReplicaObjectsTest, SharedJobPodsBuildTheSamePodsAndRefuseAnOversizedTfConfig) {
  auto job =
      std::make_shared<const v1alpha1::TrainingJob>(testing::LoadJob(testing::SmallJobYaml("", 3)));
  auto pods = JobPods::Create(job);
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (int i = 0; i < 3; ++i) {
    auto shared = BuildReplicaPod(**pods, {ReplicaType::kWorker, i});
    auto alone = BuildReplicaPod(*job, {ReplicaType::kWorker, i});
    ASSERT_TRUE(shared.ok() && alone.ok());
    EXPECT_EQ(*shared, *alone);
  }

  v1alpha1::TrainingJob big = *job;
  big.metadata.name = std::string(49, 'j');
  big.metadata.namespace_name = std::string(63, 'n');
  big.spec.replica_specs[ReplicaType::kWorker].replicas = 998;
  auto refused = JobPods::Create(std::make_shared<const v1alpha1::TrainingJob>(big));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("TF_CONFIG of job " + std::string(63, 'n') + "/" +
                                            std::string(49, 'j') + " for worker 997"),
            absl::string_view::npos)
      << refused.status();
  EXPECT_FALSE(BuildReplicaPod(big, {ReplicaType::kWorker, 0}).ok());
}

}  // namespace
}  // namespace tj::op
