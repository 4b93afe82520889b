#include "operator/controller/reconciler_pod_group.h"

#include "absl/strings/str_cat.h"
#include "operator/controller/job_status.h"
#include "operator/controller/pod_group.h"
#include "spdlog/spdlog.h"

namespace tj::op {

using nlohmann::json;

StepResult PodGroupStep::Run(JobReconcile& job) {
  if (scheduler_ == GangScheduler::kNone) return StepResult::Continue();
  std::string problem;
  if (absl::Status s = Ensure(job, &problem); !s.ok()) return StepResult::Fail(s);
  const bool new_problem = memory_.With(job.key, [&](Memory& memory) {
    const bool is_new = !problem.empty() && memory.last_problem != problem;
    memory.last_problem = problem;
    return is_new;
  });
  if (new_problem) {
    spdlog::warn("{}: {}", job.key, problem);
    events_.Record(*job.job_json, EventType::kWarning, kPodGroupUnavailableReason, problem);
  }
  job.pod_group_problem = std::move(problem);
  if (job.pod_group_problem.empty()) return StepResult::Continue();
  return StepResult::RequeueAfter(retry_interval_);
}

absl::Status PodGroupStep::Ensure(const JobReconcile& job, std::string* problem) {
  const v1alpha1::TrainingJob& spec = *job.job;
  const json desired = BuildPodGroup(spec, scheduler_);
  if (!job.PodsToCreate() &&
      memory_.With(job.key, [&](Memory& memory) { return memory.confirmed == desired; })) {
    return absl::OkStatus();
  }
  auto confirmed = [&] {
    memory_.With(job.key, [&](Memory& memory) { memory.confirmed = desired; });
  };
  const std::string ns = JobNamespace(spec);
  const std::string name = PodGroupName(spec);
  const std::string api = PodGroupApiName(scheduler_);
  const std::string what = absl::StrCat("PodGroup ", ns, "/", name, " (", api, ")");
  const kube::ResourceRef ref = PodGroupResource(scheduler_, ns, name);
  auto not_permitted = [&](const absl::Status& status) {
    return absl::StrCat("the operator may not use ", api, " (", std::string(status.message()),
                        "); its RBAC must grant podgroups get, create and patch in API group ",
                        ref.group,
                        " (the Helm chart does with gangScheduler=", GangSchedulerName(scheduler_),
                        "); no pod is created until the PodGroup exists");
  };

  absl::StatusOr<json> existing = client_.Get(ref);
  if (existing.ok()) {
    if (!ControlledBy(*existing, spec.metadata.uid.value_or(""))) {
      *problem =
          absl::StrCat(what,
                       " exists and is not controlled by this TrainingJob; delete it "
                       "or rename the job; no pod is created until the job's PodGroup exists");
      return absl::OkStatus();
    }
    // The fields the job decides, brought back level-based; others (set by the scheduler or a
    // person) are left alone.
    const json have = existing->contains("spec") ? (*existing)["spec"] : json::object();
    json changed = json::object();
    for (const auto& [field, value] : desired["spec"].items()) {
      const bool same = have.is_object() && have.contains(field) && have[field] == value;
      if (!same) changed[field] = value;
    }
    if (!changed.empty()) {
      auto patched = client_.MergePatch(ref, {{"spec", changed}});
      if (!patched.ok()) return patched.status();
      events_.Record(*job.job_json, EventType::kNormal, "UpdatedPodGroup",
                     absl::StrCat("updated ", what, ": ", changed.dump()));
    }
    confirmed();
    return absl::OkStatus();
  }
  if (absl::IsPermissionDenied(existing.status())) {
    *problem = not_permitted(existing.status());
    return absl::OkStatus();
  }
  // NotFound: no such PodGroup, or no such API; creating tells which.
  if (!absl::IsNotFound(existing.status())) return existing.status();
  absl::StatusOr<json> created = client_.Create(PodGroupResource(scheduler_, ns), desired);
  if (created.ok()) {
    confirmed();
    events_.Record(*job.job_json, EventType::kNormal, "CreatedPodGroup",
                   absl::StrCat("created ", what, " with minMember ",
                                desired["spec"]["minMember"].get<int32_t>()));
    return absl::OkStatus();
  }
  // Created by an earlier reconcile whose answer was lost: the next one confirms it.
  if (absl::IsAlreadyExists(created.status())) return absl::OkStatus();
  if (absl::IsNotFound(created.status())) {
    // A POST to a collection is NotFound only when the API server does not serve it (the job's
    // namespace exists: the job is in it).
    *problem = absl::StrCat(
        api, " is not installed: the API server does not serve ", PodGroupApiVersion(scheduler_),
        " podgroups; is --gang-scheduler=", GangSchedulerName(scheduler_),
        " right? Install that scheduler's CRDs, or run the operator with the gang scheduler the "
        "cluster has (or none); no pod is created until the PodGroup exists");
    return absl::OkStatus();
  }
  if (absl::IsPermissionDenied(created.status())) {
    *problem = not_permitted(created.status());
    return absl::OkStatus();
  }
  return created.status();
}

}  // namespace tj::op
