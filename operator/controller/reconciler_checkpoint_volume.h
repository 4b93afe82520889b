// The reconcile's checkpoint-volume step (spec.checkpoint.volume): before the coordinator or a
// PS is created, the claim the job mounts exists (made from claimTemplate when the job has one)
// and can serve. A claim that cannot (missing, not ReadWriteMany, being deleted, Lost) holds the
// job: no pod is created (no worker either, it waits with the rest), Created is False naming the
// claim (checkpoint_volume_problem), a Warning Event says why once per problem, and the job is
// looked at again after checkpoint_volume_retry_interval (nothing watches claims). Holding, not
// failing: the claim may be created or fixed later, and a job that never started has written no
// checkpoint.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/per_job.h"
#include "operator/controller/reconcile_step.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class CheckpointVolumeStep : public ReconcileStep {
 public:
  CheckpointVolumeStep(kube::KubeClient& client, EventSink& events, absl::Duration retry_interval)
      : client_(client), events_(events), retry_interval_(retry_interval) {}

  std::string Name() const override { return "CheckpointVolume"; }
  // Sets job.checkpoint_volume_problem.
  StepResult Run(JobReconcile& job) override;
  void Forget(const std::string& key) override { last_problem_.Forget(key); }

 private:
  // Why the claim cannot serve ("" when it can); a failure a retry may fix is an error.
  absl::StatusOr<std::string> Problem(const JobReconcile& job);

  kube::KubeClient& client_;
  EventSink& events_;
  const absl::Duration retry_interval_;
  PerJob<std::string> last_problem_;
};

}  // namespace tj::op
