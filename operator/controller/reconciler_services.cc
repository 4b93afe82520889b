#include "operator/controller/reconciler_services.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/status/status.h"
#include "operator/kube/resource.h"

namespace tj::op {

StepResult ServicesStep::Run(JobReconcile& job) {
  const std::shared_ptr<const v1alpha1::TrainingJob>& shared_job = job.job;
  const std::string ns = JobNamespace(*shared_job);
  auto services = view_.ServicesOf(ns, shared_job->metadata.name);
  if (!services.ok()) return StepResult::Fail(services.status());
  std::set<std::string> existing;
  for (const ObjectPtr& service : *services) {
    if (ControlledBy(*service, shared_job->metadata.uid.value_or(""))) {
      existing.insert(ObjectName(*service));
    }
  }
  auto ref = kube::Resource("services", ns);
  if (!ref.ok()) return StepResult::Fail(ref.status());
  std::set<std::string> desired;
  for (const Replica& replica : DesiredReplicas(*shared_job)) {
    desired.insert(replica.name);
    if (existing.contains(replica.name)) continue;
    job.writes.push_back({absl::StrCat("services/", replica.name), WriteKind::kService,
                          [this, ref = *ref, shared_job, key = replica.key] {
                            return client_.Create(ref, BuildReplicaService(*shared_job, key));
                          }});
  }
  for (const std::string& name : existing) {
    if (desired.contains(name)) continue;
    auto service_ref = kube::Resource("services", ns, name);
    if (!service_ref.ok()) return StepResult::Fail(service_ref.status());
    auto deleted = client_.Delete(*service_ref, {});
    if (!deleted.ok() && !absl::IsNotFound(deleted.status())) {
      return StepResult::Fail(deleted.status());
    }
  }
  return StepResult::Continue();
}

}  // namespace tj::op
