// A job whose spec fails validation (one that slipped past the CRD's schema, or whose TF_CONFIG
// would not fit in an environment variable): one with no pods yet is marked Failed (InvalidSpec,
// every problem with its field path); a running one keeps its pods (weeks of training are not
// thrown away for a typo) and gets a Warning Event; nothing else is done until it is fixed.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/controller/cluster_view.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/per_job.h"
#include "operator/controller/reconciler_options.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class InvalidSpec {
 public:
  InvalidSpec(ClusterView& view, kube::KubeClient& client, EventSink& events)
      : view_(view), client_(client), events_(events) {}

  // `message`: the problems, "; "-separated. The Warning Event is posted once per message.
  ReconcileResult Reconcile(const nlohmann::json& job_json, const std::string& key,
                            const std::string& message, absl::Time now);
  // The job's spec is valid (again): a later problem is reported anew.
  void Valid(const std::string& key) { last_message_.Forget(key); }
  void Forget(const std::string& key) { last_message_.Forget(key); }

 private:
  ClusterView& view_;
  kube::KubeClient& client_;
  EventSink& events_;
  PerJob<std::string> last_message_;
};

}  // namespace tj::op
