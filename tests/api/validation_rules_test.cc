// Rules checked on JSON manifests (as the operator receives them): pod templates, the local and
// cluster targets, name lengths, defaults.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/coordination_port.h"
#include "api/v1alpha1/decode.h"
#include "api/v1alpha1/defaults.h"
#include "api/v1alpha1/dns_names.h"
#include "api/v1alpha1/encode.h"
#include "api/v1alpha1/limits.h"
#include "api/v1alpha1/load.h"
#include "api/v1alpha1/managed_by.h"
#include "api/v1alpha1/validation.h"

namespace tj::v1alpha1 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

json Container(std::string name = "main") {
  return {{"name", name}, {"image", "img"}, {"command", {"tj-train"}}};
}

json Job() {
  json tmpl = {{"spec", {{"containers", {Container()}}}}};
  return {{"apiVersion", "trainingjob.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", "job"}}},
          {"spec",
           {{"replicaSpecs",
             {{"Coordinator", {{"template", tmpl}}},
              {"PS", {{"replicas", 2}, {"template", tmpl}}},
              {"Worker", {{"replicas", 3}, {"template", tmpl}}}}}}}};
}

json& WorkerPodSpec(json& job) { return job["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]; }

// "field: message" of every error.
std::vector<std::string> Problems(const json& manifest, ValidationOptions options = {}) {
  std::vector<std::string> out;
  for (const FieldError& e : CheckTrainingJobJson(manifest, options).errors) {
    out.push_back(e.field + ": " + e.message);
  }
  return out;
}

constexpr char kWorkerPod[] = "spec.replicaSpecs.Worker.template.spec";

TEST(ValidationRulesTest, BaseJobIsValid) { EXPECT_THAT(Problems(Job()), ElementsAre()); }

json& CoordinatorContainer(json& job) {
  return job["spec"]["replicaSpecs"]["Coordinator"]["template"]["spec"]["containers"][0];
}

TEST(ValidationRulesTest, CoordinationPortIsReadFromTheNamedContainerPort) {
  json job = Job();
  CoordinatorContainer(job)["ports"] = {{{"name", "metrics"}, {"containerPort", 9090}},
                                        {{"name", "tj-coordination"}, {"containerPort", 2223}}};
  EXPECT_THAT(Problems(job), ElementsAre());
  auto loaded = CheckTrainingJobJson(job, {});
  ASSERT_TRUE(loaded.job.has_value());
  EXPECT_EQ(CoordinationPort(*loaded.job), 2223);
  EXPECT_EQ(CoordinationPort(*CheckTrainingJobJson(Job(), {}).job), std::nullopt);
}

TEST(ValidationRulesTest, CoordinationPortMustNotBeTheTrainerPort) {
  json job = Job();
  CoordinatorContainer(job)["ports"] = {{{"name", "tj-coordination"}, {"containerPort", 2222}}};
  EXPECT_THAT(Problems(job),
              ElementsAre(HasSubstr("spec.replicaSpecs.Coordinator.template.spec.containers[0]."
                                    "ports[0].containerPort: Invalid value: 2222")));
  CoordinatorContainer(job)["ports"][0].erase("containerPort");
  EXPECT_THAT(Problems(job), ElementsAre(HasSubstr("ports[0].containerPort: Required value")));
}

// The CRD's rule is on the port schema every container shares, so tjctl checks every port of
// that name too (the operator reads only the Coordinator's first container's).
TEST(ValidationRulesTest, CoordinationPortNameIsCheckedOnEveryContainer) {
  json job = Job();
  WorkerPodSpec(job)["containers"][0]["ports"] = {
      {{"name", "grpc"}, {"containerPort", 2222}},
      {{"name", "tj-coordination"}, {"containerPort", 70000}}};
  EXPECT_THAT(Problems(job),
              ElementsAre(std::string(kWorkerPod) +
                          ".containers[0].ports[1].containerPort: Invalid value: 70000: the port "
                          "named tj-coordination (the coordinator's Coordination service beside "
                          "TensorFlow's server) must be a port number from 1 to 65535 other than "
                          "the trainer port 2222"));
  WorkerPodSpec(job)["containers"][0]["ports"][1]["containerPort"] = 2223;
  EXPECT_THAT(Problems(job), ElementsAre());
  EXPECT_EQ(CoordinationPort(*CheckTrainingJobJson(job, {}).job), std::nullopt);
}

TEST(ValidationRulesTest, ContainerImageRequiredOnTheCluster) {
  json job = Job();
  WorkerPodSpec(job)["containers"][0].erase("image");
  EXPECT_THAT(Problems(job),
              ElementsAre(std::string(kWorkerPod) +
                          ".containers[0].image: Required value: the operator needs an image to "
                          "create the pod"));
  // tjctl run starts the command; the image is not needed there.
  EXPECT_THAT(Problems(job, {ValidationTarget::kLocal}), ElementsAre());
}

TEST(ValidationRulesTest, ContainerCommandRequiredLocally) {
  json job = Job();
  job["spec"]["replicaSpecs"]["PS"]["template"]["spec"]["containers"][0].erase("command");
  EXPECT_THAT(Problems(job), ElementsAre());
  EXPECT_THAT(Problems(job, {ValidationTarget::kLocal}),
              ElementsAre(HasSubstr(
                  "spec.replicaSpecs.PS.template.spec.containers[0].command: Required value")));
}

TEST(ValidationRulesTest, EmptyImageIsMissing) {
  json job = Job();
  WorkerPodSpec(job)["containers"][0]["image"] = "";
  EXPECT_THAT(Problems(job), ElementsAre(HasSubstr("containers[0].image: Required value")));
}

TEST(ValidationRulesTest, AtLeastOneContainer) {
  json job = Job();
  WorkerPodSpec(job)["containers"] = json::array();
  EXPECT_THAT(Problems(job), ElementsAre(std::string(kWorkerPod) +
                                         ".containers: Required value: at least one container"));
}

TEST(ValidationRulesTest, TemplateRequired) {
  json job = Job();
  job["spec"]["replicaSpecs"]["Worker"].erase("template");
  EXPECT_THAT(Problems(job), ElementsAre(HasSubstr("spec.replicaSpecs.Worker.template: Required")));
  job["spec"]["replicaSpecs"]["Worker"]["template"] = {{"metadata", {{"labels", {{"a", "b"}}}}}};
  EXPECT_THAT(Problems(job),
              ElementsAre(HasSubstr("spec.replicaSpecs.Worker.template.spec: Required")));
}

TEST(ValidationRulesTest, ContainerNamesAreUniqueLabels) {
  json job = Job();
  WorkerPodSpec(job)["containers"] = {Container("main"), Container("main"), Container("Side_Car")};
  EXPECT_THAT(
      Problems(job),
      ElementsAre(std::string(kWorkerPod) + ".containers[1].name: Duplicate value: \"main\"",
                  HasSubstr(".containers[2].name: Invalid value: \"Side_Car\"")));
}

TEST(ValidationRulesTest, ContainerFieldTypes) {
  json job = Job();
  json& c = WorkerPodSpec(job)["containers"][0];
  c["command"] = "tj-train --model softmax";
  c["args"] = {"--steps", 100};
  c["resources"] = json::array();
  c["volumeMounts"] = json::object();
  EXPECT_THAT(
      Problems(job),
      ElementsAre(HasSubstr(".containers[0].command: Invalid value: \"tj-train --model "
                            "softmax\": must be a list"),
                  HasSubstr(".containers[0].args[1]: Invalid value: 100: must be a string"),
                  HasSubstr(".containers[0].resources: Invalid value: []: must be an object"),
                  HasSubstr(".containers[0].volumeMounts: Invalid value: {}: must be a list")));
}

TEST(ValidationRulesTest, EnvRules) {
  json job = Job();
  WorkerPodSpec(job)["containers"][0]["env"] = {
      {{"name", "TF_CONFIG"}, {"value", "{}"}},
      {{"name", "A"}, {"value", "x"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "a"}}}}}},
      {{"value", "orphan"}},
      {{"name", "B"}, {"value", 3}},
      {{"name", "C"}, {"valueFrom", {{"secretKeyRef", {{"name", "s"}, {"key", "k"}}}}}}};
  EXPECT_THAT(
      Problems(job),
      ElementsAre(HasSubstr(".env[0].name: Forbidden: TF_CONFIG is set for every replica"),
                  HasSubstr(".env[1].valueFrom: Invalid value: \"\": may not be specified when "
                            "`value` is not empty"),
                  HasSubstr(".env[2].name: Required value"),
                  HasSubstr(".env[3].value: Invalid value: 3: must be a string")));
}

TEST(ValidationRulesTest, PodRestartPolicyMustBeNeverOrUnset) {
  json job = Job();
  WorkerPodSpec(job)["restartPolicy"] = "Never";
  EXPECT_THAT(Problems(job), ElementsAre());
  WorkerPodSpec(job)["restartPolicy"] = "OnFailure";
  EXPECT_THAT(Problems(job),
              ElementsAre(HasSubstr(std::string(kWorkerPod) +
                                    ".restartPolicy: Invalid value: \"OnFailure\": must be Never "
                                    "or unset")));
}

TEST(ValidationRulesTest, TerminationGracePeriodNotNegative) {
  json job = Job();
  WorkerPodSpec(job)["terminationGracePeriodSeconds"] = -1;
  EXPECT_THAT(Problems(job),
              ElementsAre(std::string(kWorkerPod) +
                          ".terminationGracePeriodSeconds: Invalid value: -1: must be greater than "
                          "or equal to 0"));
}

TEST(ValidationRulesTest, UnknownTemplateFieldsAreAccepted) {
  json job = Job();
  WorkerPodSpec(job)["nodeSelector"] = {{"pool", "spot"}};
  WorkerPodSpec(job)["containers"][0]["securityContext"] = {{"runAsNonRoot", true}};
  job["spec"]["replicaSpecs"]["Worker"]["template"]["metadata"] = {{"labels", {{"a", "b"}}}};
  EXPECT_THAT(Problems(job), ElementsAre());
}

TEST(ValidationRulesTest, TemplateLabelsMustBeStrings) {
  json job = Job();
  job["spec"]["replicaSpecs"]["Worker"]["template"]["metadata"] = {{"labels", {{"tier", 1}}}};
  EXPECT_THAT(Problems(job),
              ElementsAre("spec.replicaSpecs.Worker.template.metadata.labels[tier]: Invalid "
                          "value: 1: must be a string"));
}

TEST(ValidationRulesTest, ApiServerMetadataIsAccepted) {
  json job = Job();
  job["metadata"]["resourceVersion"] = "123";
  job["metadata"]["generation"] = 4;
  job["metadata"]["uid"] = "0b1c";
  job["metadata"]["managedFields"] = json::array();
  job["metadata"]["namespace"] = "ml";
  CheckedTrainingJob checked = CheckTrainingJobJson(job);
  ASSERT_TRUE(checked.ok()) << FormatFieldErrors("job", checked.errors);
  EXPECT_EQ(checked.job->metadata.uid, "0b1c");
  EXPECT_EQ(checked.job->metadata.namespace_name, "ml");
  EXPECT_EQ(checked.job->metadata.other["resourceVersion"], "123");
}

TEST(ValidationRulesTest, BadNamespace) {
  json job = Job();
  job["metadata"]["namespace"] = "ML_Team";
  EXPECT_THAT(Problems(job), ElementsAre(HasSubstr("metadata.namespace: Invalid value")));
}

TEST(ValidationRulesTest, NameLengthIsSetByTheCoordinatorWithinTheLimits) {
  TrainingJobSpec spec = DecodeTrainingJob(Job()).job.spec;
  // "-coordinator-0" (14 characters) is longer than "-worker-999", the last worker allowed.
  EXPECT_EQ(MaxJobNameLength(spec), 49u);
  spec.replica_specs[ReplicaType::kWorker].replicas = kMaxReplicasPerType;
  EXPECT_EQ(MaxJobNameLength(spec), 49u);
  // Counts beyond the limits have their own error; the name is not blamed for them.
  spec.replica_specs[ReplicaType::kWorker].replicas = 2000000000;
  EXPECT_EQ(MaxJobNameLength(spec), 49u);
}

TEST(ValidationRulesTest, ReplicasPerTypeAreLimited) {
  json job = Job();
  job["spec"]["replicaSpecs"]["Worker"]["replicas"] = 2000000000;
  EXPECT_THAT(Problems(job),
              ElementsAre("spec.replicaSpecs.Worker.replicas: Invalid value: 2000000000: must be "
                          "less than or equal to 1000: every replica's TF_CONFIG lists every "
                          "replica of the job"));
  job["spec"]["replicaSpecs"]["Worker"]["replicas"] = 1;
  job["spec"]["replicaSpecs"]["PS"]["replicas"] = 1001;
  EXPECT_THAT(Problems(job), ElementsAre(HasSubstr("spec.replicaSpecs.PS.replicas: Invalid value: "
                                                   "1001: must be less than or equal to 1000")));
  job["spec"]["replicaSpecs"]["PS"]["replicas"] = 998;  // 1 + 998 + 1: the most a job may have
  EXPECT_THAT(Problems(job), ElementsAre());
}

TEST(ValidationRulesTest, TotalReplicasAreLimited) {
  json job = Job();
  job["spec"]["replicaSpecs"]["PS"]["replicas"] = 500;
  job["spec"]["replicaSpecs"]["Worker"]["replicas"] = 500;
  EXPECT_THAT(Problems(job),
              ElementsAre("spec.replicaSpecs: Invalid value: 1001: the job's replicas (Coordinator "
                          "+ PS + Worker) must be at most 1000 in total: every replica's TF_CONFIG "
                          "lists every replica of the job"));
}

TEST(ValidationRulesTest, PodTemplateSizeIsLimited) {
  json job = Job();
  job["spec"]["replicaSpecs"]["Worker"]["template"]["metadata"] = {
      {"annotations", {{"blob", std::string(kMaxPodTemplateBytes, 'x')}}}};
  EXPECT_THAT(Problems(job),
              ElementsAre(HasSubstr("spec.replicaSpecs.Worker.template: Too long: must have at "
                                    "most 65536 bytes, has ")));
  job["spec"]["replicaSpecs"]["Worker"]["template"]["metadata"]["annotations"]["blob"] =
      std::string(kMaxPodTemplateBytes - 200, 'x');
  EXPECT_THAT(Problems(job), ElementsAre());
}

TEST(ValidationRulesTest, ContainersAndEnvAreLimitedAsInTheCrd) {
  json job = Job();
  json containers = json::array();
  for (size_t i = 0; i <= kMaxContainers; ++i)
    containers.push_back(Container("c" + std::to_string(i)));
  WorkerPodSpec(job)["containers"] = containers;
  EXPECT_THAT(Problems(job), ElementsAre(std::string(kWorkerPod) +
                                         ".containers: Too many: 33: must have at most 32 items"));

  job = Job();
  json env = json::array();
  for (size_t i = 0; i <= kMaxEnvVars; ++i) env.push_back({{"name", "V" + std::to_string(i)}});
  WorkerPodSpec(job)["containers"][0]["env"] = env;
  EXPECT_THAT(Problems(job),
              ElementsAre(std::string(kWorkerPod) +
                          ".containers[0].env: Too many: 513: must have at most 512 items"));
  WorkerPodSpec(job)["containers"][0]["env"] = {{{"name", std::string(513, 'E')}}};
  EXPECT_THAT(Problems(job), ElementsAre(std::string(kWorkerPod) +
                                         ".containers[0].env[0].name: Too long: must have at "
                                         "most 512 bytes, has 513"));
}

TEST(ValidationRulesTest, NameAtTheLimitIsValid) {
  json job = Job();
  job["metadata"]["name"] = "a" + std::string(47, 'b') + "c";  // 49
  EXPECT_THAT(Problems(job), ElementsAre());
}

TEST(ValidationRulesTest, DnsLabels) {
  EXPECT_TRUE(IsDns1123Label("0abc"));
  EXPECT_FALSE(IsDns1035Label("0abc"));
  EXPECT_TRUE(IsDns1035Label("digits-2"));
  EXPECT_FALSE(IsDns1035Label("digits-"));
  EXPECT_FALSE(IsDns1035Label("-digits"));
  EXPECT_FALSE(IsDns1035Label("di.gits"));
  EXPECT_FALSE(IsDns1035Label(std::string(64, 'a')));
  EXPECT_TRUE(IsDns1035Label(std::string(63, 'a')));
}

TEST(ValidationRulesTest, DefaultsFillEveryUnsetField) {
  TrainingJob job = WithDefaults(DecodeTrainingJob(Job()).job);
  for (const auto& [type, replica] : job.spec.replica_specs) {
    EXPECT_EQ(replica.restart_policy, RestartPolicy::kExitCode);
  }
  EXPECT_EQ(job.spec.replica_specs[ReplicaType::kCoordinator].replicas, 1);
  EXPECT_EQ(job.spec.replica_specs[ReplicaType::kPs].replicas, 2);
  EXPECT_EQ(job.spec.run_policy.backoff_limit, 6);
  EXPECT_EQ(job.spec.run_policy.clean_pod_policy, CleanPodPolicy::kRunning);
  EXPECT_EQ(job.spec.run_policy.suspend, false);
  EXPECT_EQ(job.spec.run_policy.active_deadline_seconds, std::nullopt);
  EXPECT_EQ(job.spec.run_policy.ttl_seconds_after_finished, std::nullopt);
  EXPECT_EQ(job.spec.fault_tolerance.restart_exit_codes, std::vector<int32_t>{42});
  EXPECT_EQ(job.spec.fault_tolerance.worker_recovery_timeout_seconds, 3600);
  EXPECT_EQ(job.spec.fault_tolerance.transient_ps_failure_threshold, 3);
  EXPECT_EQ(job.spec.preemption.grace_period_seconds, 0);
  EXPECT_EQ(job.spec.checkpoint, std::nullopt);
  // Defaulting twice changes nothing.
  EXPECT_EQ(WithDefaults(job), job);
}

TEST(ValidationRulesTest, DefaultsKeepExplicitValues) {
  json manifest = Job();
  manifest["spec"]["faultTolerance"] = {{"restartExitCodes", json::array()}};
  manifest["spec"]["runPolicy"] = {{"backoffLimit", 0}, {"cleanPodPolicy", "None"}};
  manifest["spec"]["checkpoint"] = {{"dir", "/ckpt"}};
  TrainingJob job = WithDefaults(DecodeTrainingJob(manifest).job);
  EXPECT_EQ(job.spec.fault_tolerance.restart_exit_codes, std::vector<int32_t>{});
  EXPECT_EQ(job.spec.run_policy.backoff_limit, 0);
  EXPECT_EQ(job.spec.run_policy.clean_pod_policy, CleanPodPolicy::kNone);
  ASSERT_TRUE(job.spec.checkpoint.has_value());
  EXPECT_EQ(job.spec.checkpoint->keep, 3);
  EXPECT_EQ(job.spec.checkpoint->interval_steps, std::nullopt);
}

// spec.managedBy: decoded, encoded back, validated as the CRD does (a domain-prefixed path of at
// most 63 characters), and read from raw manifests to tell whose job it is.
json JobManagedBy(const json& value) {
  json job = Job();
  job["spec"]["managedBy"] = value;
  return job;
}

TEST(ManagedByRulesTest, OursAndMultiKueueAreValidAndRoundTrip) {
  for (const char* value : {kManagedByOperator, kManagedByMultiKueue}) {
    SCOPED_TRACE(value);
    const CheckedTrainingJob checked = CheckTrainingJobJson(JobManagedBy(value));
    ASSERT_TRUE(checked.ok());
    EXPECT_EQ(checked.job->spec.managed_by, value);
    EXPECT_EQ(TrainingJobToJson(*checked.job)["spec"]["managedBy"], value);
  }
}

TEST(ManagedByRulesTest, UnsetStaysUnset) {
  const CheckedTrainingJob checked = CheckTrainingJobJson(Job());
  ASSERT_TRUE(checked.ok());
  EXPECT_EQ(checked.job->spec.managed_by, std::nullopt);
  EXPECT_FALSE(TrainingJobToJson(*checked.job)["spec"].contains("managedBy"));
}

TEST(ManagedByRulesTest, NotADomainPrefixedPathNamesTheField) {
  for (const char* value : {"multikueue", "/path", "example.com/", "Example.com/x",
                            "example.com/a b", "-example.com/x", ""}) {
    SCOPED_TRACE(value);
    EXPECT_THAT(Problems(JobManagedBy(value)),
                ElementsAre(absl::StrCat("spec.managedBy: Invalid value: \"", value,
                                         "\": must be a domain-prefixed path naming the "
                                         "controller that runs the job, such as "
                                         "\"trainingjob.dev/tj-operator\" (this operator, the same "
                                         "as unset) or \"kueue.x-k8s.io/multikueue\"")));
  }
}

TEST(ManagedByRulesTest, At63CharactersValidAt64TooLong) {
  const std::string prefix = "example.com/";
  EXPECT_THAT(Problems(JobManagedBy(prefix + std::string(63 - prefix.size(), 'x'))),
              ElementsAre());
  EXPECT_THAT(Problems(JobManagedBy(prefix + std::string(64 - prefix.size(), 'x'))),
              ElementsAre("spec.managedBy: Too long: must have at most 63 bytes, has 64"));
}

TEST(ManagedByRulesTest, NotAStringNamesTheField) {
  EXPECT_THAT(Problems(JobManagedBy(7)),
              ElementsAre(::testing::StartsWith("spec.managedBy: Invalid value: 7")));
}

TEST(ManagedByRulesTest, AnotherControllerIsAnyOtherString) {
  EXPECT_FALSE(ManagedByAnotherController(Job()));
  EXPECT_FALSE(ManagedByAnotherController(JobManagedBy(kManagedByOperator)));
  EXPECT_TRUE(ManagedByAnotherController(JobManagedBy(kManagedByMultiKueue)));
  // Invalid here, but someone else's all the same: this operator writes nothing to it.
  EXPECT_TRUE(ManagedByAnotherController(JobManagedBy("not a path")));
  // Not a string: the job is invalid, and this operator's to report.
  EXPECT_FALSE(ManagedByAnotherController(JobManagedBy(7)));
  EXPECT_FALSE(ManagedByAnotherController(json::array()));
  EXPECT_FALSE(ManagedByAnotherController(json{{"spec", "x"}}));
}

TEST(ManagedByRulesTest, DomainPrefixedPath) {
  for (const char* value : {"a/b", "kueue.x-k8s.io/multikueue", "example.com/a/b-c_d.e~f:g"}) {
    EXPECT_TRUE(IsDomainPrefixedPath(value)) << value;
  }
  for (const char* value : {"a", "a/", "/b", "a..b/c", "a/b\"c"}) {
    EXPECT_FALSE(IsDomainPrefixedPath(value)) << value;
  }
}

}  // namespace
}  // namespace tj::v1alpha1
