#include "operator/controller/multikueue_workload.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1alpha1/load.h"
#include "api/v1alpha1/managed_by.h"
#include "operator/controller/job_reconcile.h"
#include "operator/controller/kueue_requests.h"
#include "operator/controller/kueue_workload.h"
#include "operator/controller/replica_objects.h"

namespace tj::op {

using nlohmann::json;

bool MultiKueueWorkload::Handles(const json& job_json) const {
  if (!options_.enabled || !job_json.contains("spec") || !job_json["spec"].is_object()) {
    return false;
  }
  const json& managed_by = job_json["spec"].value("managedBy", json());
  return managed_by.is_string() && managed_by == v1alpha1::kManagedByMultiKueue;
}

void MultiKueueWorkload::EventOnce(const json& job_json, const std::string& key,
                                   const std::string& reason, const std::string& message) {
  const bool fresh = last_event_.With(key, [&](std::string& last) {
    if (last == reason + "|" + message) return false;
    last = reason + "|" + message;
    return true;
  });
  if (fresh) events_.Record(job_json, EventType::kWarning, reason, message);
}

ReconcileResult MultiKueueWorkload::Reconcile(const json& job_json, const std::string& key) {
  v1alpha1::CheckedTrainingJob checked = v1alpha1::CheckTrainingJobJson(job_json);
  if (!checked.ok()) {
    // The worker cluster would say so in the job's status, but with no Workload MultiKueue never
    // sends the job there: the Event is all the user gets.
    std::vector<std::string> problems;
    for (const v1alpha1::FieldError& error : checked.errors) {
      problems.push_back(error.field.empty() ? error.message
                                             : absl::StrCat(error.field, ": ", error.message));
    }
    EventOnce(job_json, key, "InvalidSpec",
              absl::StrCat(absl::StrJoin(problems, "; "),
                           "; no Workload is made, so MultiKueue cannot dispatch the job"));
    return {};
  }
  const v1alpha1::TrainingJob& job = *checked.job;
  if (QueueNameOf(job).empty()) return {};
  absl::StatusOr<json> workload = GetJobWorkload(view_, client_, job);
  if (workload.ok()) {
    if (!ControlledBy(*workload, job.metadata.uid.value_or(""))) {
      EventOnce(job_json, key, "WorkloadConflict",
                absl::StrCat("Workload ", WorkloadName(job),
                             " exists and is not controlled by this TrainingJob; delete it or "
                             "rename the job"));
      return {absl::OkStatus(), options_.poll_interval};
    }
    return {SyncActive(client_, *workload, job), std::nullopt};
  }
  if (!absl::IsNotFound(workload.status())) return {workload.status(), std::nullopt};
  absl::StatusOr<std::optional<int32_t>> priority = WorkloadPriority(client_, job);
  if (absl::IsNotFound(priority.status())) {
    EventOnce(job_json, key, "PriorityClassNotFound", std::string(priority.status().message()));
    return {absl::OkStatus(), options_.poll_interval};
  }
  if (!priority.ok()) return {priority.status(), std::nullopt};
  absl::StatusOr<json> created =
      client_.Create(KueueResource("workloads", JobNamespace(job)), BuildWorkload(job, *priority));
  if (created.ok()) {
    events_.Record(job_json, EventType::kNormal, "CreatedWorkload",
                   absl::StrCat("created Workload ", JobNamespace(job), "/", WorkloadName(job),
                                " in LocalQueue ", QueueNameOf(job),
                                " for MultiKueue to dispatch"));
  } else if (!absl::IsAlreadyExists(created.status())) {
    return {created.status(), std::nullopt};
  }
  return {};
}

}  // namespace tj::op
