#include "api/v1alpha1/status_json.h"

#include <cmath>

#include "api/v1alpha1/json_fields.h"

namespace tj::v1alpha1 {
namespace {

std::optional<absl::Time> ReadTime(ObjectReader& reader, std::string_view key) {
  std::optional<std::string> text = reader.String(key);
  if (!text) return std::nullopt;
  absl::Time time;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, *text, &time, &error)) {
    reader.errors().push_back(InvalidError(
        reader.Path(key), *text, "must be an RFC 3339 time such as 2024-05-01T12:00:00Z"));
    return std::nullopt;
  }
  return time;
}

// Counts and steps are never negative; a negative one is reported rather than trusted.
template <typename Int>
Int NonNegative(ObjectReader& reader, std::string_view key, std::optional<Int> value) {
  if (!value) return 0;
  if (*value < 0) {
    reader.errors().push_back(InvalidError(reader.Path(key), *value, "must be >= 0"));
    return 0;
  }
  return *value;
}

JobCondition DecodeCondition(const nlohmann::json& value, const std::string& path,
                             FieldErrors& errors) {
  JobCondition condition;
  ObjectReader r(value, path, errors);
  if (std::optional<std::string> type = r.String("type")) {
    if (auto t = ParseConditionType(*type)) {
      condition.type = *t;
    } else {
      errors.push_back(NotSupportedError(r.Path("type"), *type, ConditionTypeNames()));
    }
  } else if (r.is_object() && r.Field("type") == nullptr) {
    errors.push_back(RequiredError(r.Path("type")));
  }
  if (std::optional<std::string> status = r.String("status")) {
    if (auto s = ParseConditionStatus(*status)) {
      condition.status = *s;
    } else {
      errors.push_back(NotSupportedError(r.Path("status"), *status, {"True", "False", "Unknown"}));
    }
  }
  condition.reason = r.String("reason").value_or("");
  condition.message = r.String("message").value_or("");
  condition.last_transition_time = ReadTime(r, "lastTransitionTime");
  r.RejectUnknown();
  return condition;
}

ReplicaStatus DecodeReplicaStatus(const nlohmann::json& value, const std::string& path,
                                  FieldErrors& errors) {
  ReplicaStatus status;
  ObjectReader r(value, path, errors);
  status.active = NonNegative(r, "active", r.Int32("active"));
  status.succeeded = NonNegative(r, "succeeded", r.Int32("succeeded"));
  status.failed = NonNegative(r, "failed", r.Int32("failed"));
  status.restarts = NonNegative(r, "restarts", r.Int32("restarts"));
  status.counted_restarts = NonNegative(r, "countedRestarts", r.Int32("countedRestarts"));
  r.RejectUnknown();
  return status;
}

// status.goodput, goodputSeconds and goodputAccount; each is optional (older operators wrote none).
void DecodeGoodput(ObjectReader& r, TrainingJobStatus& status) {
  if (const nlohmann::json* ratio = r.Field("goodput")) {
    if (!ratio->is_number() || !std::isfinite(ratio->get<double>()) || ratio->get<double>() < 0 ||
        ratio->get<double>() > 1) {
      r.errors().push_back(InvalidError(r.Path("goodput"), *ratio, "must be a number from 0 to 1"));
    } else {
      status.goodput = ratio->get<double>();
    }
  }
  if (const nlohmann::json* seconds = r.Field("goodputSeconds")) {
    auto split = TimeSplitFromJson(*seconds, r.Path("goodputSeconds"));
    if (split.ok()) {
      status.goodput_seconds = *split;
    } else {
      r.errors().push_back(
          InvalidError(r.Path("goodputSeconds"), *seconds, std::string(split.status().message())));
    }
  }
  if (const nlohmann::json* account = r.Field("goodputAccount")) {
    auto job = JobGoodputFromJson(*account, r.Path("goodputAccount"));
    if (job.ok()) {
      status.goodput_account = *job;
    } else {
      r.errors().push_back(
          InvalidError(r.Path("goodputAccount"), *account, std::string(job.status().message())));
    }
  }
}

}  // namespace

std::string FormatKubernetesTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%SZ", time, absl::UTCTimeZone());
}

TrainingJobStatus DecodeTrainingJobStatus(const nlohmann::json& value, const std::string& path,
                                          FieldErrors& errors) {
  TrainingJobStatus status;
  ObjectReader r(value, path, errors);
  if (const nlohmann::json* conditions = r.Field("conditions")) {
    const std::string list_path = r.Path("conditions");
    if (ExpectArray(*conditions, list_path, errors)) {
      for (size_t i = 0; i < conditions->size(); ++i) {
        status.conditions.push_back(
            DecodeCondition((*conditions)[i], IndexPath(list_path, i), errors));
      }
    }
  }
  if (const nlohmann::json* replicas = r.Field("replicaStatuses")) {
    const std::string map_path = r.Path("replicaStatuses");
    if (ExpectObject(*replicas, map_path, errors)) {
      for (const auto& [key, entry] : replicas->items()) {
        const std::string entry_path = ChildPath(map_path, key);
        std::optional<ReplicaType> type = ParseReplicaType(key);
        if (!type) {
          errors.push_back(NotSupportedError(entry_path, key, ReplicaTypeNames()));
          continue;
        }
        status.replica_statuses[*type] = DecodeReplicaStatus(entry, entry_path, errors);
      }
    }
  }
  if (std::optional<int64_t> step = r.Int64("step")) status.step = NonNegative(r, "step", step);
  if (std::optional<int64_t> step = r.Int64("lastCheckpointStep")) {
    status.last_checkpoint_step = NonNegative(r, "lastCheckpointStep", step);
  }
  if (std::optional<std::string> state = r.String("state")) status.state = *state;
  if (std::optional<std::string> selector = r.String("workerSelector")) {
    status.worker_selector = *selector;
  }
  status.preemptions = NonNegative(r, "preemptions", r.Int32("preemptions"));
  status.start_time = ReadTime(r, "startTime");
  status.completion_time = ReadTime(r, "completionTime");
  status.restart_count = NonNegative(r, "restartCount", r.Int32("restartCount"));
  status.coordinator_restarts =
      NonNegative(r, "coordinatorRestarts", r.Int32("coordinatorRestarts"));
  if (std::optional<int64_t> generation = r.Int64("observedGeneration")) {
    status.observed_generation = NonNegative(r, "observedGeneration", generation);
  }
  DecodeGoodput(r, status);
  r.RejectUnknown();
  return status;
}

nlohmann::json TrainingJobStatusToJson(const TrainingJobStatus& status) {
  nlohmann::json out = nlohmann::json::object();
  if (!status.conditions.empty()) {
    nlohmann::json& conditions = out["conditions"] = nlohmann::json::array();
    for (const JobCondition& c : status.conditions) {
      nlohmann::json condition = {{"type", ConditionTypeName(c.type)},
                                  {"status", ConditionStatusName(c.status)}};
      if (!c.reason.empty()) condition["reason"] = c.reason;
      if (!c.message.empty()) condition["message"] = c.message;
      if (c.last_transition_time) {
        condition["lastTransitionTime"] = FormatKubernetesTime(*c.last_transition_time);
      }
      conditions.push_back(std::move(condition));
    }
  }
  if (!status.replica_statuses.empty()) {
    nlohmann::json& replicas = out["replicaStatuses"] = nlohmann::json::object();
    for (const auto& [type, s] : status.replica_statuses) {
      nlohmann::json& entry = replicas[std::string(ReplicaTypeName(type))] = {
          {"active", s.active},
          {"succeeded", s.succeeded},
          {"failed", s.failed},
          {"restarts", s.restarts}};
      // Written once there is one: a status without failure-policy counting reads as before.
      if (s.counted_restarts > 0) entry["countedRestarts"] = s.counted_restarts;
    }
  }
  if (!status.state.empty()) out["state"] = status.state;
  if (!status.worker_selector.empty()) out["workerSelector"] = status.worker_selector;
  if (status.step) out["step"] = *status.step;
  if (status.last_checkpoint_step) out["lastCheckpointStep"] = *status.last_checkpoint_step;
  if (status.preemptions > 0) out["preemptions"] = status.preemptions;
  if (status.start_time) out["startTime"] = FormatKubernetesTime(*status.start_time);
  if (status.completion_time) {
    out["completionTime"] = FormatKubernetesTime(*status.completion_time);
  }
  out["restartCount"] = status.restart_count;
  out["coordinatorRestarts"] = status.coordinator_restarts;
  if (status.observed_generation) out["observedGeneration"] = *status.observed_generation;
  if (status.goodput) out["goodput"] = *status.goodput;
  if (status.goodput_seconds) out["goodputSeconds"] = ToJson(*status.goodput_seconds);
  if (status.goodput_account) out["goodputAccount"] = ToJson(*status.goodput_account);
  return out;
}

}  // namespace tj::v1alpha1
