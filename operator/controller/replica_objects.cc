#include "operator/controller/replica_objects.h"

#include <set>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "api/v1alpha1/coordination_port.h"
#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/labels.h"
#include "api/v1alpha1/runtime_env.h"
#include "coordinator/base/coordinator_generation.h"
#include "coordinator/base/job_roles.h"
#include "jobcontrol/replica_env.h"
#include "jobcontrol/tf_config.h"
#include "operator/controller/checkpoint_storage.h"
#include "operator/controller/checkpoint_volume.h"
#include "operator/controller/pod_group.h"

namespace tj::op {
namespace {

using nlohmann::json;

std::string NamespaceOf(const v1alpha1::TrainingJob& job) {
  return job.metadata.namespace_name.empty() ? std::string("default") : job.metadata.namespace_name;
}

json ObjectMetaFor(const v1alpha1::TrainingJob& job, const std::string& name, json labels) {
  return json{{"name", name},
              {"namespace", NamespaceOf(job)},
              {"labels", std::move(labels)},
              {"ownerReferences", json::array({ControllerReference(job)})}};
}

// Appends `item` to the array at `parent[key]` unless an element with the same "name" is there.
void AddNamedUnlessPresent(json& parent, const char* key, json item) {
  if (!parent.contains(key) || !parent[key].is_array()) parent[key] = json::array();
  for (const json& existing : parent[key]) {
    if (existing.is_object() && existing.value("name", "") == item["name"]) return;
  }
  parent[key].push_back(std::move(item));
}

// The container's env with every variable of `injected` set to its value: same-named user
// entries are dropped (the operator's contract wins, as tjctl's MergeEnvironment makes it win),
// the rest keep their order, injected ones follow in their order.
json MergeContainerEnv(const json& user_env, const EnvList& injected) {
  std::set<std::string> injected_names;
  for (const auto& [name, value] : injected) injected_names.insert(name);
  json env = json::array();
  if (user_env.is_array()) {
    for (const json& var : user_env) {
      if (var.is_object() && injected_names.contains(var.value("name", ""))) continue;
      env.push_back(var);
    }
  }
  for (const auto& [name, value] : injected) env.push_back({{"name", name}, {"value", value}});
  return env;
}

}  // namespace

json ControllerReference(const v1alpha1::TrainingJob& job) {
  return json{{"apiVersion", std::string(v1alpha1::kApiVersion)},
              {"kind", std::string(v1alpha1::kKind)},
              {"name", job.metadata.name},
              {"uid", job.metadata.uid.value_or("")},
              {"controller", true},
              {"blockOwnerDeletion", true}};
}

bool ControlledBy(const json& object, const std::string& uid) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object() ||
      !object["metadata"].contains("ownerReferences")) {
    return false;
  }
  const json& refs = object["metadata"]["ownerReferences"];
  if (!refs.is_array()) return false;
  for (const json& ref : refs) {
    if (ref.is_object() && ref.value("uid", "") == uid && ref.value("controller", false)) {
      return true;
    }
  }
  return false;
}

json ReplicaLabels(const v1alpha1::TrainingJob& job, ReplicaKey key) {
  return json{{v1alpha1::kJobNameLabel, job.metadata.name},
              {v1alpha1::kReplicaTypeLabel, std::string(v1alpha1::ReplicaTypeLowerName(key.type))},
              {v1alpha1::kReplicaIndexLabel, std::to_string(key.index)}};
}

absl::StatusOr<std::shared_ptr<const JobPods>> JobPods::Create(
    std::shared_ptr<const v1alpha1::TrainingJob> job, bool tls) {
  const ReplicaAddresses addresses = ClusterServiceAddresses(*job, v1alpha1::kTrainerPort);
  absl::StatusOr<TfConfigRenderer> tf_config = TfConfigRenderer::Create(*job, addresses);
  if (!tf_config.ok()) return tf_config.status();
  if (absl::Status fits = tf_config->CheckAllFit(); !fits.ok()) return fits;
  auto coordinator = addresses.find(ReplicaKey{ReplicaType::kCoordinator, 0});
  std::string coordinator_address = coordinator != addresses.end() ? coordinator->second : "";
  if (auto port = v1alpha1::CoordinationPort(*job); port && !coordinator_address.empty()) {
    // Notices from a preStop hook go to the coordinator's Coordination service, not its trainer
    // port (TensorFlow's server on a TensorFlow chief). The Service is headless: any port works.
    coordinator_address = absl::StrCat(
        coordinator_address.substr(0, coordinator_address.rfind(':')), ":", *port);
  }
  return std::shared_ptr<const JobPods>(
      new JobPods(std::move(job), std::move(*tf_config), std::move(coordinator_address), tls));
}

absl::StatusOr<json> BuildReplicaPod(const v1alpha1::TrainingJob& job, ReplicaKey key,
                                     const PodBuildOptions& options) {
  absl::StatusOr<std::shared_ptr<const JobPods>> pods =
      JobPods::Create(std::make_shared<const v1alpha1::TrainingJob>(job));
  if (!pods.ok()) return pods.status();
  return BuildReplicaPod(**pods, key, options);
}

absl::StatusOr<json> BuildReplicaPod(const JobPods& pods, ReplicaKey key,
                                     const PodBuildOptions& options) {
  const v1alpha1::TrainingJob& job = pods.job();
  const std::string name = ReplicaName(job, key);
  auto spec_it = job.spec.replica_specs.find(key.type);
  if (spec_it == job.spec.replica_specs.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.replicaSpecs.", std::string(v1alpha1::ReplicaTypeName(key.type)), " is missing"));
  }
  const json& template_json = spec_it->second.pod_template.raw();
  json pod_spec = template_json.is_object() && template_json.contains("spec") &&
                          template_json["spec"].is_object()
                      ? template_json["spec"]
                      : json::object();
  if (!pod_spec.contains("containers") || !pod_spec["containers"].is_array() ||
      pod_spec["containers"].empty() || !pod_spec["containers"][0].is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("spec.replicaSpecs.",
                                                   std::string(v1alpha1::ReplicaTypeName(key.type)),
                                                   ".template.spec.containers: required"));
  }

  // Labels and annotations: the template's, then the operator's (which win).
  json labels = json::object();
  json annotations = json::object();
  if (template_json.is_object() && template_json.contains("metadata") &&
      template_json["metadata"].is_object()) {
    const json& meta = template_json["metadata"];
    if (meta.contains("labels") && meta["labels"].is_object()) labels = meta["labels"];
    if (meta.contains("annotations") && meta["annotations"].is_object()) {
      annotations = meta["annotations"];
    }
  }
  labels.update(ReplicaLabels(job, key));

  json metadata = ObjectMetaFor(job, name, labels);
  if (!annotations.empty()) metadata["annotations"] = annotations;

  // The operator restarts replicas itself (restart policy, backoffLimit); the kubelet must not.
  pod_spec["restartPolicy"] = "Never";
  // <replica>.<replica>.<ns>.svc would need a shared subdomain Service; the per-replica Service
  // gives "<replica>.<ns>.svc", and the hostname makes the pod know itself by that name.
  pod_spec["hostname"] = name;

  auto tf_config = pods.tf_config().Render(key.type, key.index);
  if (!tf_config.ok()) return tf_config.status();
  EnvList injected = ReplicaEnvironment(job, key, *tf_config);
  if (!pods.coordinator_address().empty()) {
    injected.emplace_back(v1alpha1::env::kCoordinatorAddress, pods.coordinator_address());
  }
  // The pod's own role's credential only: a worker cannot act as the coordinator.
  const std::string role_key(v1alpha1::ReplicaTypeLowerName(key.type));
  injected.emplace_back(v1alpha1::env::kTokenFile,
                        absl::StrCat(v1alpha1::kJobTokenMountPath, "/", role_key));
  injected.emplace_back(
      v1alpha1::env::kTokenVerifiersFile,
      absl::StrCat(v1alpha1::kJobTokenMountPath, "/", v1alpha1::kJobVerifiersSecretKey));
  if (pods.tls()) {
    injected.emplace_back(v1alpha1::env::kTlsDir,
                          absl::StrCat(v1alpha1::kJobTokenMountPath, "/", v1alpha1::kJobTlsSubdir));
  }
  if (key.type == ReplicaType::kCoordinator) {
    if (auto port = v1alpha1::CoordinationPort(job)) {
      injected.emplace_back(v1alpha1::env::kCoordinationAddress, absl::StrCat(":", *port));
    }
    // Built when the pod is created: above every earlier coordinator pod's of the job.
    injected.emplace_back(v1alpha1::env::kCoordinatorGeneration,
                          absl::StrCat(NextCoordinatorGeneration(0)));
  }

  json& trainer = pod_spec["containers"][0];
  trainer["env"] = MergeContainerEnv(trainer.contains("env") ? trainer["env"] : json(), injected);
  // The pod's IP, known only once it runs: from the downward API.
  json& env = trainer["env"];
  for (auto it = env.begin(); it != env.end();) {
    it = it->value("name", "") == v1alpha1::env::kPodIp ? env.erase(it) : it + 1;
  }
  env.push_back({{"name", v1alpha1::env::kPodIp},
                 {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}});
  AddNamedUnlessPresent(trainer, "ports",
                        {{"name", v1alpha1::kTrainerPortName},
                         {"containerPort", v1alpha1::kTrainerPort},
                         {"protocol", "TCP"}});
  AddNamedUnlessPresent(trainer, "volumeMounts",
                        {{"name", v1alpha1::kJobTokenVolumeName},
                         {"mountPath", v1alpha1::kJobTokenMountPath},
                         {"readOnly", true}});
  json items = json::array({{{"key", role_key}, {"path", role_key}},
                            {{"key", v1alpha1::kJobVerifiersSecretKey},
                             {"path", v1alpha1::kJobVerifiersSecretKey}}});
  if (pods.tls()) {
    // The role's certificate under the names job_tls.h reads; never the CA's key, nor another
    // role's or the operator's certificate.
    const std::string dir = absl::StrCat(v1alpha1::kJobTlsSubdir, "/");
    items.push_back({{"key", v1alpha1::kJobCaCertSecretKey}, {"path", dir + "ca.crt"}});
    items.push_back({{"key", v1alpha1::JobCertSecretKey(role_key)}, {"path", dir + "tls.crt"}});
    items.push_back({{"key", v1alpha1::JobKeySecretKey(role_key)}, {"path", dir + "tls.key"}});
  }
  AddNamedUnlessPresent(pod_spec, "volumes",
                        {{"name", v1alpha1::kJobTokenVolumeName},
                         {"secret",
                          {{"secretName", v1alpha1::JobTokenSecretName(job.metadata.name)},
                           {"items", std::move(items)},
                           // Readable by a non-root trainer; the pod is the trust boundary.
                           {"defaultMode", 0444}}}});
  AddCheckpointVolume(job, key.type, pod_spec);
  AddCheckpointStorageEnv(job, key.type, pod_spec);

  const auto& scheduling = job.spec.run_policy.scheduling_policy;
  if (options.gang_scheduler != GangScheduler::kNone) {
    const std::string group = PodGroupName(job);  // the PodGroup the reconciler ensures
    if (options.gang_scheduler == GangScheduler::kVolcano) {
      pod_spec["schedulerName"] = "volcano";
      metadata["annotations"]["scheduling.k8s.io/group-name"] = group;
      if (scheduling && scheduling->queue) {
        metadata["annotations"]["volcano.sh/queue-name"] = *scheduling->queue;
      }
    } else {
      pod_spec["schedulerName"] = "scheduler-plugins-scheduler";
      metadata["labels"]["scheduling.x-k8s.io/pod-group"] = group;
    }
    if (scheduling && scheduling->priority_class && !pod_spec.contains("priorityClassName")) {
      pod_spec["priorityClassName"] = *scheduling->priority_class;
    }
  }

  return json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", pod_spec}};
}

json BuildReplicaService(const v1alpha1::TrainingJob& job, ReplicaKey key) {
  const std::string name = ReplicaName(job, key);
  json labels = ReplicaLabels(job, key);
  return json{{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", ObjectMetaFor(job, name, labels)},
              {"spec",
               {{"clusterIP", "None"},
                {"publishNotReadyAddresses", true},
                {"selector", labels},
                {"ports", json::array({{{"name", v1alpha1::kTrainerPortName},
                                        {"port", v1alpha1::kTrainerPort},
                                        {"targetPort", v1alpha1::kTrainerPort},
                                        {"protocol", "TCP"}}})}}}};
}

json JobTokenSecretData(const std::string& token) {
  json data = {{v1alpha1::kJobTokenSecretKey, absl::Base64Escape(token)}};
  for (const auto& [name, content] : JobCredentialFiles(token)) {
    data[name] = absl::Base64Escape(content);
  }
  return data;
}

json BuildJobTokenSecret(const v1alpha1::TrainingJob& job, const std::string& token,
                         const json& tls_data) {
  json data = JobTokenSecretData(token);
  data.update(tls_data);
  json labels = {{v1alpha1::kJobNameLabel, job.metadata.name}};
  return json{
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata", ObjectMetaFor(job, v1alpha1::JobTokenSecretName(job.metadata.name), labels)},
      {"type", "Opaque"},
      {"data", std::move(data)}};
}

json BuildJobNetworkPolicy(const v1alpha1::TrainingJob& job, const NetworkPolicyOptions& options) {
  const json job_pods = {{"matchLabels", {{v1alpha1::kJobNameLabel, job.metadata.name}}}};
  json operator_labels = json::object();
  for (const auto& [key, value] : options.operator_pod_labels) operator_labels[key] = value;
  const json from_operator = {
      {"namespaceSelector",
       {{"matchLabels", {{"kubernetes.io/metadata.name", options.operator_namespace}}}}},
      {"podSelector", {{"matchLabels", operator_labels}}}};
  // The operator reaches the coordinator's Coordination service: the trainer port, and the
  // declared coordination port of a TensorFlow chief (v1alpha1::CoordinationPort).
  json operator_ports = json::array({{{"protocol", "TCP"}, {"port", v1alpha1::kTrainerPort}}});
  if (auto port = v1alpha1::CoordinationPort(job)) {
    operator_ports.push_back({{"protocol", "TCP"}, {"port", *port}});
  }
  return json{
      {"apiVersion", "networking.k8s.io/v1"},
      {"kind", "NetworkPolicy"},
      {"metadata",
       ObjectMetaFor(job, job.metadata.name, {{v1alpha1::kJobNameLabel, job.metadata.name}})},
      {"spec",
       {{"podSelector", job_pods},
        {"policyTypes", json::array({"Ingress"})},
        {"ingress",
         json::array({{{"from", json::array({{{"podSelector", job_pods}}})}},
                      {{"from", json::array({from_operator})}, {"ports", operator_ports}}})}}}};
}

}  // namespace tj::op
