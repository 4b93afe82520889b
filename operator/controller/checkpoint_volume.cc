#include "operator/controller/checkpoint_volume.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1alpha1/labels.h"
#include "operator/controller/replica_objects.h"

namespace tj::op {
namespace {

using nlohmann::json;

const v1alpha1::CheckpointVolume* VolumeOf(const v1alpha1::TrainingJob& job) {
  if (!job.spec.checkpoint || !job.spec.checkpoint->volume) return nullptr;
  return &*job.spec.checkpoint->volume;
}

std::string DescribeClaim(const json& claim) {
  const json& meta = claim.contains("metadata") ? claim["metadata"] : json::object();
  return absl::StrCat("PersistentVolumeClaim ", meta.value("namespace", "default"), "/",
                      meta.value("name", ""));
}

}  // namespace

std::optional<std::string> CheckpointClaimName(const v1alpha1::TrainingJob& job) {
  const v1alpha1::CheckpointVolume* volume = VolumeOf(job);
  if (volume == nullptr) return std::nullopt;
  if (volume->claim_name) return *volume->claim_name;
  return absl::StrCat(job.metadata.name, "-checkpoint");
}

bool MountsCheckpointVolume(ReplicaType type) {
  return type == ReplicaType::kCoordinator || type == ReplicaType::kPs;
}

json BuildCheckpointClaim(const v1alpha1::TrainingJob& job) {
  const v1alpha1::CheckpointVolume* volume = VolumeOf(job);
  const v1alpha1::CheckpointClaimTemplate tmpl =
      volume != nullptr && volume->claim_template ? *volume->claim_template
                                                  : v1alpha1::CheckpointClaimTemplate{};
  json metadata = {
      {"name", CheckpointClaimName(job).value_or("")},
      {"namespace",
       job.metadata.namespace_name.empty() ? std::string("default") : job.metadata.namespace_name},
      {"labels", {{v1alpha1::kJobNameLabel, job.metadata.name}}}};
  if (volume != nullptr &&
      volume->reclaim_policy.value_or(v1alpha1::kDefaultClaimReclaimPolicy) ==
          v1alpha1::ClaimReclaimPolicy::kDelete) {
    metadata["ownerReferences"] = json::array({ControllerReference(job)});
  }
  json modes = json::array();
  for (v1alpha1::VolumeAccessMode mode :
       tmpl.access_modes.value_or(std::vector{v1alpha1::VolumeAccessMode::kReadWriteMany})) {
    modes.push_back(std::string(v1alpha1::VolumeAccessModeName(mode)));
  }
  json spec = {{"accessModes", modes},
               {"resources", {{"requests", {{"storage", tmpl.storage}}}}}};
  if (tmpl.storage_class_name) spec["storageClassName"] = *tmpl.storage_class_name;
  return json{{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata", std::move(metadata)},
              {"spec", std::move(spec)}};
}

void AddCheckpointVolume(const v1alpha1::TrainingJob& job, ReplicaType type, json& pod_spec) {
  const v1alpha1::CheckpointVolume* volume = VolumeOf(job);
  if (volume == nullptr || !MountsCheckpointVolume(type)) return;
  if (!pod_spec.contains("volumes") || !pod_spec["volumes"].is_array()) {
    pod_spec["volumes"] = json::array();
  }
  pod_spec["volumes"].push_back(
      {{"name", kCheckpointVolumeName},
       {"persistentVolumeClaim", {{"claimName", CheckpointClaimName(job).value_or("")}}}});
  json& trainer = pod_spec["containers"][0];
  if (!trainer.contains("volumeMounts") || !trainer["volumeMounts"].is_array()) {
    trainer["volumeMounts"] = json::array();
  }
  trainer["volumeMounts"].push_back(
      {{"name", kCheckpointVolumeName},
       {"mountPath", volume->mount_path.value_or(job.spec.checkpoint->dir)}});
  // The image runs as a non-root user: without a group that owns the volume it could not write
  // to a freshly provisioned one (root-owned, 0755, on most provisioners).
  if (!pod_spec.contains("securityContext") || !pod_spec["securityContext"].is_object()) {
    pod_spec["securityContext"] = json::object();
  }
  json& security = pod_spec["securityContext"];
  if (!security.contains("fsGroup")) {
    security["fsGroup"] = security.contains("runAsGroup") && security["runAsGroup"].is_number()
                              ? security["runAsGroup"].get<int64_t>()
                              : kRuntimeImageGroup;
  }
  // A volume of checkpoints holds many files: the kubelet changes their group once, not on every
  // start of every pod (a PS restart would otherwise walk the whole tree).
  if (!security.contains("fsGroupChangePolicy")) security["fsGroupChangePolicy"] = "OnRootMismatch";
}

std::string CheckpointClaimProblem(const json& claim) {
  const std::string what = DescribeClaim(claim);
  const json& meta = claim.contains("metadata") ? claim["metadata"] : json::object();
  if (meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null()) {
    return absl::StrCat(what, " is being deleted; no pod is created until it is gone and "
                              "recreated, or the job names another claim");
  }
  const json& status = claim.contains("status") ? claim["status"] : json::object();
  if (status.is_object() && status.value("phase", "") == "Lost") {
    return absl::StrCat(what, " is Lost: its PersistentVolume is gone; no pod is created until "
                              "the claim is bound again or the job names another claim");
  }
  const json& spec = claim.contains("spec") ? claim["spec"] : json::object();
  std::vector<std::string> modes;
  if (spec.is_object() && spec.contains("accessModes") && spec["accessModes"].is_array()) {
    for (const json& mode : spec["accessModes"]) {
      if (mode.is_string()) modes.push_back(mode.get<std::string>());
    }
  }
  for (const std::string& mode : modes) {
    if (mode == "ReadWriteMany") return "";
  }
  return absl::StrCat(what, " has access modes [", absl::StrJoin(modes, ", "),
                      "], not ReadWriteMany: the coordinator and every PS write the checkpoint "
                      "directory from pods on different nodes; no pod is created until the job "
                      "names a ReadWriteMany claim");
}

}  // namespace tj::op
