#include "operator/controller/reconciler_stuck_pods.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "jobcontrol/replacement.h"
#include "operator/kube/resource.h"

namespace tj::op {

StepResult StuckPodsStep::Run(JobReconcile& job) {
  std::optional<absl::Duration> next;
  for (const ObservedPod& pod : job.pods) {
    if (!pod.deletion_deadline || pod.node_name.empty()) continue;
    bool node_known = false;
    ObjectPtr node = view_.Node(pod.node_name, &node_known);
    if (!node_known || (node != nullptr && NodeIsReady(*node))) continue;
    // TerminatingOrFailed (workers by default): its replacement need not wait for the kill to be
    // confirmed, so the name is freed at the deadline. Failed: two of one replica must not run at
    // once (a partitioned node may still run it), so only after the timeout.
    const bool wait = ReplacementPolicyFor(*job.job, pod.key.type) ==
                      v1alpha1::ReplacementPolicy::kFailed;
    const absl::Time due = *pod.deletion_deadline + (wait ? timeout_ : absl::ZeroDuration());
    if (job.now < due) {
      next = SoonerRequeue(next, due - job.now);
      continue;
    }
    auto ref = kube::Resource("pods", JobNamespace(*job.job), pod.name);
    if (!ref.ok()) continue;
    kube::DeleteOptions options;
    options.precondition_uid = pod.uid;
    options.grace_period_seconds = 0;
    // Not an error when it fails: the next reconcile tries again.
    auto deleted = client_.Delete(*ref, options);
    if (deleted.ok()) {
      events_.Record(*job.job_json, EventType::kWarning, "ForceDeletedPod",
                     absl::StrCat(pod.name, " was stuck Terminating on node ", pod.node_name,
                                  ", which is not ready, for ",
                                  absl::FormatDuration(job.now - *pod.deletion_deadline),
                                  " past its deadline; deleted without grace"));
    }
  }
  return next ? StepResult::RequeueAfter(*next) : StepResult::Continue();
}

}  // namespace tj::op
