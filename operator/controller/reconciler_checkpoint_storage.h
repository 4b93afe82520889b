// The reconcile's checkpoint-bucket step (spec.checkpoint.s3), the counterpart of
// CheckpointVolumeStep: before the coordinator or a PS is created, the credentials Secret is read
// by name (one GET; Secrets are never listed or watched) and the bucket is asked with those
// credentials (checkpoint_storage_probe.h). A Secret that does not exist or lacks a key, a bucket
// that does not exist, credentials that are refused or an endpoint that does not answer hold the
// job: no pod is created (no worker either), Created is False with reason
// CheckpointStorageUnavailable naming the Secret, key or bucket (checkpoint_storage_problem), a
// Warning Event says why once per problem, and the job is looked at again after
// checkpoint_volume_retry_interval. Holding, not failing: the Secret or bucket may be made later,
// and a job with no pod has written nothing.
#pragma once

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/per_job.h"
#include "operator/controller/reconcile_step.h"
#include "operator/controller/reconciler_options.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class CheckpointStorageStep : public ReconcileStep {
 public:
  CheckpointStorageStep(kube::KubeClient& client, EventSink& events, BucketProbe probe,
                        absl::Duration retry_interval)
      : client_(client),
        events_(events),
        probe_(std::move(probe)),
        retry_interval_(retry_interval) {}

  std::string Name() const override { return "CheckpointStorage"; }
  // Sets job.checkpoint_storage_problem.
  StepResult Run(JobReconcile& job) override;
  void Forget(const std::string& key) override { last_problem_.Forget(key); }

 private:
  // Why the bucket cannot serve ("" when it can); a failure a retry may fix is an error.
  absl::StatusOr<std::string> Problem(const JobReconcile& job);

  kube::KubeClient& client_;
  EventSink& events_;
  const BucketProbe probe_;
  const absl::Duration retry_interval_;
  PerJob<std::string> last_problem_;
};

}  // namespace tj::op
