// The job's checkpoint volume (spec.checkpoint.volume) as Kubernetes objects: the claim the
// operator creates from claimTemplate, the volume and mount it adds to the coordinator's and every
// PS's pod, and whether a claim found in the cluster can serve. Pure, like replica_objects.h; the
// reconciler's step that uses them is reconciler_checkpoint_volume.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "api/v1alpha1/types.h"
#include "jobcontrol/replicas.h"
#include "nlohmann/json.hpp"

namespace tj::op {

// The runtime image's user and group (docker/Dockerfile.runtime: USER 65532:65532): the group
// a checkpoint volume is given to (pod securityContext.fsGroup) unless the template says another.
inline constexpr int64_t kRuntimeImageGroup = 65532;
inline constexpr char kCheckpointVolumeName[] = "tj-checkpoint";

// The claim the job mounts: claimName, or "<job>-checkpoint" for a claimTemplate; nullopt when
// the job has no checkpoint volume.
std::optional<std::string> CheckpointClaimName(const v1alpha1::TrainingJob& job);

// Whether pods of this type mount the volume: the coordinator (manifests, the events log) and
// the PS (their shards). Workers never read or write the checkpoint directory.
bool MountsCheckpointVolume(ReplicaType type);

// The PersistentVolumeClaim for a job with a claimTemplate, labelled with the job's name;
// controlled by the job (so the garbage collector deletes it with the job) only under
// reclaimPolicy Delete.
nlohmann::json BuildCheckpointClaim(const v1alpha1::TrainingJob& job);

// Adds the claim's volume to `pod_spec` and mounts it on the first (trainer) container at
// mountPath (default spec.checkpoint.dir), and sets securityContext.fsGroup (the template's
// runAsGroup, else kRuntimeImageGroup) with fsGroupChangePolicy OnRootMismatch, each unless the
// template set it. No-op for a job without a volume or a type that does not mount it.
void AddCheckpointVolume(const v1alpha1::TrainingJob& job, ReplicaType type,
                         nlohmann::json& pod_spec);

// Why `claim` (as read from the API server) cannot hold the checkpoints of a job, or "" when it
// can: being deleted, Lost, or not ReadWriteMany (the coordinator and the PS write it from
// several nodes). The message names the claim.
std::string CheckpointClaimProblem(const nlohmann::json& claim);

}  // namespace tj::op
