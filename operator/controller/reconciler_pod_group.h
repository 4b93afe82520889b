// The reconcile's PodGroup step (--gang-scheduler): the job's PodGroup exists, controlled by the
// job, with the spec BuildPodGroup gives (created, or its fields merge-patched back), before any
// pod that names it. The API server is asked only when pods are about to be created or the
// PodGroup differs from the one last confirmed. When it cannot be had (the API not installed, not
// permitted, the name taken), no pod is created: Created says why (pod_group_problem), a Warning
// Event once per problem, and the job is looked at again after pod_group_retry_interval.
#pragma once

#include <string>

#include "nlohmann/json.hpp"
#include "operator/controller/event_sink.h"
#include "operator/controller/per_job.h"
#include "operator/controller/reconcile_step.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class PodGroupStep : public ReconcileStep {
 public:
  PodGroupStep(kube::KubeClient& client, EventSink& events, GangScheduler scheduler,
               absl::Duration retry_interval)
      : client_(client), events_(events), scheduler_(scheduler), retry_interval_(retry_interval) {}

  std::string Name() const override { return "PodGroup"; }
  // Sets job.pod_group_problem.
  StepResult Run(JobReconcile& job) override;
  void Forget(const std::string& key) override { memory_.Forget(key); }

 private:
  struct Memory {
    nlohmann::json confirmed;  // BuildPodGroup's object as last created or confirmed
    std::string last_problem;
  };
  // A problem no retry fixes is OK with *problem set; other failures are errors.
  absl::Status Ensure(const JobReconcile& job, std::string* problem);

  kube::KubeClient& client_;
  EventSink& events_;
  const GangScheduler scheduler_;
  const absl::Duration retry_interval_;
  PerJob<Memory> memory_;
};

}  // namespace tj::op
