// The reconcile's status step: the job's next status (NextJobStatus) from what the steps before
// observed and decided, written BEFORE anything is acted on: if the write fails (a stale cache:
// Conflict) the reconcile stops and the next one decides again from fresh data, and a restart is
// counted before it is carried out. Except on a job's first reconcile (no condition yet, nothing
// to restart): its one status write goes after its creates, on the write executor, counting the
// requested pods as active. Posts the phase's Event; comes back at activeDeadlineSeconds and,
// while the job runs, every progress_interval to refresh status.step (sooner while
// CheckpointFailing is True, so that the save clearing it is seen before the job ends).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "api/v1alpha1/status.h"
#include "nlohmann/json.hpp"
#include "operator/controller/event_sink.h"
#include "operator/controller/reconcile_step.h"
#include "operator/controller/reconciler_options.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class StatusStep : public ReconcileStep {
 public:
  StatusStep(kube::KubeClient& client, EventSink& events, const ReconcilerOptions& options)
      : client_(client), events_(events), options_(options) {}

  std::string Name() const override { return "Status"; }
  // Sets job.first_reconcile.
  StepResult Run(JobReconcile& job) override;

 private:
  void RecordCheckpointChange(const v1alpha1::TrainingJobStatus& before,
                              const v1alpha1::TrainingJobStatus& after,
                              const nlohmann::json& job_json);

  kube::KubeClient& client_;
  EventSink& events_;
  const ReconcilerOptions& options_;
};

// Replaces the job's status (the status subresource) with `status`.
absl::Status WriteJobStatus(kube::KubeClient& client, const nlohmann::json& job_json,
                            const v1alpha1::TrainingJobStatus& status);

}  // namespace tj::op
