#include "operator/controller/reconciler_notices.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "jobcontrol/tf_config.h"
#include "spdlog/spdlog.h"

namespace tj::op {
namespace {

absl::Duration GracePeriodOf(const v1alpha1::TrainingJob& job, ReplicaType type) {
  auto it = job.spec.replica_specs.find(type);
  if (it != job.spec.replica_specs.end()) {
    if (auto grace = it->second.pod_template.termination_grace_period_seconds()) {
      return absl::Seconds(*grace);
    }
  }
  return absl::Seconds(30);  // Kubernetes' default terminationGracePeriodSeconds
}

}  // namespace

StepResult NoticesStep::Run(JobReconcile& job) {
  job.new_preemptions = NotifyDisruptions(job);
  return StepResult::Continue();
}

int NoticesStep::NotifyDisruptions(const JobReconcile& job) {
  int new_signals = 0;
  for (const ObservedPod& pod : job.pods) {
    bool node_known = false;
    ObjectPtr node = pod.node_name.empty() ? nullptr : view_.Node(pod.node_name, &node_known);
    const std::string signal = PreemptionSignal(pod, node.get(), node_known);
    if (signal.empty() || !Notify(job, pod, signal, Cause::kDisruption)) continue;
    StdMutexLock lock(mu_);
    if (!deleting_.contains(pod.uid)) ++new_signals;
  }
  return new_signals;
}

void NoticesStep::NotifyScaleDown(const JobReconcile& job, const ObservedPod& pod) {
  Notify(job, pod, kScaleDownNoticeReason, Cause::kScaleDown);
}

void NoticesStep::NotifyEviction(const JobReconcile& job, const ObservedPod& coordinator,
                                 const std::string& signal) {
  Notify(job, coordinator, signal, Cause::kDisruption);
}

absl::Time NoticesStep::LastPsDisruption(const JobReconcile& job) {
  bool disrupted = false;
  for (const ObservedPod& pod : job.pods) {
    disrupted |= pod.key.type == ReplicaType::kPs &&
                 (pod.termination.disrupted || !pod.disruption.empty());
  }
  return last_ps_disruption_.With(job.key, [&](PsDisruption& last) {
    if (disrupted) last.at = std::max(last.at, job.now);
    return last.at;
  });
}

void NoticesStep::DeletingPod(const std::string& uid) {
  StdMutexLock lock(mu_);
  deleting_.insert(uid);
}

void NoticesStep::PodDeleted(const std::string& uid) {
  StdMutexLock lock(mu_);
  deleting_.erase(uid);
  for (auto it = notified_.lower_bound(uid + "|");
       it != notified_.end() && it->starts_with(uid + "|");) {
    it = notified_.erase(it);
  }
}

bool NoticesStep::Notify(const JobReconcile& job, const ObservedPod& pod,
                         const std::string& signal, Cause cause) {
  {
    StdMutexLock lock(mu_);
    if (!notified_.insert(pod.uid + "|" + signal).second) return false;
  }
  if (cause == Cause::kDisruption && pod.key.type == ReplicaType::kPs) {
    last_ps_disruption_.With(job.key, [&](PsDisruption& last) {
      last.at = std::max(last.at, job.now);
    });
  }
  const ObservedPod* coordinator = RunningCoordinator(job.pods);
  if (coordinator == nullptr) {
    spdlog::info("{}: {} {}: no running coordinator to notify", job.key, pod.name, signal);
    return true;
  }
  PreemptionNotice notice;
  notice.job = job.key;
  notice.coordinator_address = CoordinatorAddress(*job.job, coordinator);
  notice.token = job.token;
  notice.tls = TlsFor(job.key, coordinator, job.control_tls);
  notice.task_type = std::string(TfTaskType(pod.key.type));
  notice.task_index = pod.key.index;
  notice.reason = signal;
  notice.deadline = pod.deletion_deadline.value_or(job.now + GracePeriodOf(*job.job, pod.key.type));
  notifier_.Send(notice);
  counting_.NoticeQueued();
  if (metrics_ != nullptr) {
    metrics_->AddCounter("tj_operator_preemption_signals_total",
                         "Pod disruptions seen and passed to the coordinator", 1,
                         {{"signal", signal.substr(0, signal.find('/'))}});
  }
  events_.Record(*job.job_json, EventType::kNormal, "PreemptionNotice",
                 absl::StrCat(pod.name, ": ", signal, "; notice sent to the coordinator"));
  return true;
}

}  // namespace tj::op
