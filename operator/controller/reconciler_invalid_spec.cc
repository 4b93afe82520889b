#include "operator/controller/reconciler_invalid_spec.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/status_json.h"
#include "operator/controller/job_reconcile.h"
#include "operator/controller/job_status.h"
#include "operator/controller/reconciler_status.h"

namespace tj::op {

using nlohmann::json;
using v1alpha1::ConditionStatus;
using v1alpha1::ConditionType;

ReconcileResult InvalidSpec::Reconcile(const json& job_json, const std::string& key,
                                       const std::string& message, absl::Time now) {
  v1alpha1::FieldErrors status_errors;
  v1alpha1::TrainingJobStatus status;
  if (job_json.contains("status")) {
    status = v1alpha1::DecodeTrainingJobStatus(job_json["status"], "status", status_errors);
  }
  if (JobFinished(status)) return {};
  const std::string full = absl::StrCat("invalid spec: ", message);
  const bool first_report = last_message_.With(key, [&](std::string& last) {
    const bool first = last != full;
    last = full;
    return first;
  });
  const std::string name = ObjectName(job_json);
  const size_t slash = key.find('/');
  auto pods = view_.PodsOf(key.substr(0, slash), name);
  if (!pods.ok()) return {pods.status(), std::nullopt};
  if (pods->empty()) {
    // Nothing runs yet: the job cannot start. Failed, with every problem in the message.
    SetJobCondition(status.conditions, ConditionType::kFailed, ConditionStatus::kTrue,
                    "InvalidSpec", full, now);
    status.state = "Failed";
    if (!status.completion_time) status.completion_time = now;
    if (job_json.contains("metadata") && job_json["metadata"].contains("generation")) {
      status.observed_generation = job_json["metadata"]["generation"].get<int64_t>();
    }
    if (absl::Status written = WriteJobStatus(client_, job_json, status); !written.ok()) {
      return {written, std::nullopt};
    }
    if (first_report) events_.Record(job_json, EventType::kWarning, "InvalidSpec", full);
    return {};
  }
  // Nothing is created, restarted or deleted until the spec is fixed; the Warning says why.
  if (first_report) {
    events_.Record(job_json, EventType::kWarning, "InvalidSpec",
                   absl::StrCat(full,
                                "; the running pods are kept, nothing else is done until "
                                "the spec is fixed"));
  }
  return {};
}

}  // namespace tj::op
