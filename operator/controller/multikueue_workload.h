// The manager cluster's side of MultiKueue (docs/kueue.md) for a TrainingJob whose spec.managedBy
// is kueue.x-k8s.io/multikueue, labelled kueue.x-k8s.io/queue-name, when the operator runs with
// --kueue. Kueue's generic adapter for external frameworks dispatches a job through its Workload,
// and for an external kind the kind's own controller makes that Workload: this one makes it, as
// for a job it runs (kueue_workload.h BuildWorkload: controlled by the job, one PodSet per role)
// and keeps its spec.active with runPolicy.suspend. Nothing else: no pod, Secret, Service, and no
// status write (MultiKueue copies the worker cluster's status onto the job); a problem (an
// invalid spec, a missing priority class) is a Warning Event on the job, once.
#pragma once

#include <string>

#include "nlohmann/json.hpp"
#include "operator/controller/cluster_view.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/per_job.h"
#include "operator/controller/reconciler_options.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class MultiKueueWorkload {
 public:
  MultiKueueWorkload(ClusterView& view, kube::KubeClient& client, EventSink& events,
                     KueueOptions options)
      : view_(view), client_(client), events_(events), options_(options) {}

  // True when this side handles the job: --kueue and spec.managedBy kueue.x-k8s.io/multikueue.
  bool Handles(const nlohmann::json& job_json) const;
  // Makes the job's Workload if it has none. Without the queue label MultiKueue has nothing to
  // dispatch and nothing is done.
  ReconcileResult Reconcile(const nlohmann::json& job_json, const std::string& key);
  void Forget(const std::string& key) { last_event_.Forget(key); }

 private:
  void EventOnce(const nlohmann::json& job_json, const std::string& key, const std::string& reason,
                 const std::string& message);

  ClusterView& view_;
  kube::KubeClient& client_;
  EventSink& events_;
  const KueueOptions options_;
  PerJob<std::string> last_event_;  // reason and message: each Warning posted once
};

}  // namespace tj::op
