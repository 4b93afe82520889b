// The environment of one replica's trainer container or local process, beyond what the user wrote:
// TF_CONFIG and the TJ_* variables of api/v1alpha1/runtime_env.h. The operator and `tjctl run`
// both call this, so a program sees the same environment on a cluster and on one machine.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "api/v1alpha1/types.h"
#include "jobcontrol/replicas.h"

namespace tj {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// In a fixed order (TF_CONFIG first). `tf_config` comes from RenderTfConfig. Optional settings the
// job leaves unset get their defaults, so the runtime never has to guess; the checkpoint variables
// appear only when spec.checkpoint is set. `checkpoint_dir` replaces spec.checkpoint.dir when not
// empty (`tjctl run` keeps a local run's checkpoints in its work directory).
EnvList ReplicaEnvironment(const v1alpha1::TrainingJob& job, ReplicaKey replica,
                           const std::string& tf_config, const std::string& checkpoint_dir = {});

// Adds `extra` to `base`: a name already in `base` takes the new value in place (Kubernetes keeps
// the last of duplicate env names; ours must win over the user's TF_CONFIG).
EnvList MergeEnvironment(EnvList base, const EnvList& extra);

}  // namespace tj
