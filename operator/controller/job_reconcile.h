// One reconcile of one TrainingJob as its steps (reconcile_step.h) share it: what the Reconciler
// read before the first step, then what each step found or decided, in step order. A field is
// written by one step and read by the ones after it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "api/v1alpha1/types.h"
#include "jobcontrol/job_phase.h"
#include "nlohmann/json.hpp"
#include "operator/controller/coordinator_rpc.h"
#include "operator/controller/job_writes.h"
#include "operator/controller/kueue_workload.h"
#include "operator/controller/observed_pod.h"
#include "operator/controller/replica_objects.h"

namespace tj::op {

// Why Kueue keeps the job from running (reconciler_admission.h): the reason and message of its
// Suspended condition.
struct QueueHold {
  std::string reason;  // CamelCase: WaitingForAdmission, LocalQueueNotFound, Evicted, ...
  std::string message;
};

struct JobReconcile {
  // Read by the Reconciler before the steps.
  std::string key;  // "namespace/name"
  absl::Time now;
  const nlohmann::json* job_json = nullptr;  // the job as read, for Events and status writes
  // Shared by this reconcile's queued writes, which build their objects when they run: a burst
  // holds thousands of writes queued, and their built objects were most of the memory.
  std::shared_ptr<const v1alpha1::TrainingJob> job;
  v1alpha1::TrainingJobStatus status;  // as the job has it
  // No create of the job is awaited (read before the pods: an expectation observed after this
  // point is in the cache already).
  bool creations_settled = true;
  std::vector<ObservedPod> pods;  // the job's own, those already restarted left out
  std::string create_failure;     // the last refused create (JobWrites::CreateFailure)

  // SecretStep: the job's token (empty: the job runs open), the operator's control certificate
  // and whether the Secret holds the job's CA (pods made now get TLS).
  std::string token;
  std::shared_ptr<const CoordinatorTls> control_tls;
  bool secret_has_tls = false;

  int new_preemptions = 0;  // NoticesStep: disruption signals first seen now

  // AdmissionStep (Kueue): set while the job's Workload is not admitted; DecideStep then
  // decides as for a suspended job (every pod stopped, none made).
  std::optional<QueueHold> queue_hold;
  // AdmissionStep: where each role's new pods go (the admitted flavours); null: as written.
  std::shared_ptr<const Placements> placements;

  // DecideStep.
  JobDecision decision;
  std::shared_ptr<const JobPods> job_pods;  // set when pods are to be created or restarted

  // Why no pod may be created now (PodGroupStep, CheckpointVolumeStep, CheckpointStorageStep);
  // empty: nothing holds it.
  std::string pod_group_problem;
  std::string checkpoint_volume_problem;
  std::string checkpoint_storage_problem;

  // PendingPodsStep: why pods cannot start, when they cannot.
  std::optional<StuckJudgement> stuck;

  // StatusStep: a first reconcile's status is written after the creates, on the executor.
  bool first_reconcile = false;

  // Creates and a first status write, handed to the executor by the last step (WritesStep).
  std::vector<Write> writes;

  bool PodsToCreate() const { return !decision.to_create.empty() || !decision.restarts.empty(); }
  bool MayCreatePods() const {
    return pod_group_problem.empty() && checkpoint_volume_problem.empty() &&
           checkpoint_storage_problem.empty();
  }
};

// The job's namespace ("default" when unset) and "namespace/name".
std::string JobNamespace(const v1alpha1::TrainingJob& job);
std::string JobKey(const v1alpha1::TrainingJob& job);

// metadata.name of an object, or "".
std::string ObjectName(const nlohmann::json& object);

const ObservedPod* FindPod(const std::vector<ObservedPod>& pods, ReplicaKey key);
// The running coordinator with an IP, or null.
const ObservedPod* RunningCoordinator(const std::vector<ObservedPod>& pods);
// "podIP:port" of the running coordinator's Coordination service, or "": the trainer port (2222),
// or the job's declared coordination port (v1alpha1::CoordinationPort: a TensorFlow chief).
std::string CoordinatorAddress(const v1alpha1::TrainingJob& job, const ObservedPod* coordinator);
// How the operator calls this coordinator: TLS with the job's control certificate when the pod
// serves TLS, plaintext for a pod of an operator before TLS (null).
std::shared_ptr<const CoordinatorTls> TlsFor(const std::string& job_key,
                                             const ObservedPod* coordinator,
                                             const std::shared_ptr<const CoordinatorTls>& tls);

}  // namespace tj::op
