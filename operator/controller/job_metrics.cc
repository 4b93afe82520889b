#include "operator/controller/job_metrics.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/goodput.h"
#include "api/v1alpha1/status.h"
#include "api/v1alpha1/status_json.h"
#include "operator/kube/typed_objects.h"

namespace tj::op {
namespace {

using nlohmann::json;
using v1alpha1::ConditionStatus;
using v1alpha1::ConditionType;

double Seconds(absl::Duration d) { return std::max(0.0, absl::ToDoubleSeconds(d)); }

// The job's state: the last True condition that is a state (Stuck only reports).
const v1alpha1::JobCondition* CurrentState(const v1alpha1::TrainingJobStatus& status) {
  const v1alpha1::JobCondition* current = nullptr;
  for (const v1alpha1::JobCondition& c : status.conditions) {
    if (c.status == ConditionStatus::kTrue && !v1alpha1::BesideThePhase(c.type)) current = &c;
  }
  return current;
}

}  // namespace

constexpr char kPhaseSeconds[] = "tj_trainingjob_phase_seconds";
constexpr char kPhaseSecondsHelp[] = "Seconds the job has been in its state";
constexpr char kDurationSeconds[] = "tj_trainingjob_duration_seconds";
constexpr char kDurationSecondsHelp[] =
    "Seconds from the job's start (status.startTime) to its completion, or to now";

void JobMetrics::Set(const std::string& name, const char* help, double value,
                     const MetricLabels& labels, Job& into) {
  if (!std::isfinite(value) || value < 0) return;  // absent rather than wrong
  registry_.SetGauge(name, help, value, labels);
  into.series.emplace_back(name, labels);
}

void JobMetrics::SetClockFigures(const Job& job, absl::Time now, const MetricLabels& labels) {
  if (job.phase_since) {
    registry_.SetGauge(kPhaseSeconds, kPhaseSecondsHelp, Seconds(now - job.phase_since->second),
                       job.phase_since->first);
  }
  if (job.running_since) {
    registry_.SetGauge(kDurationSeconds, kDurationSecondsHelp, Seconds(now - *job.running_since),
                       labels);
  }
}

void JobMetrics::Collect(const json& job, absl::Time now, Job& into) {
  const json& metadata = job["metadata"];
  const std::string name = metadata.value("name", "");
  const std::string namespace_name = metadata.value("namespace", "");
  const MetricLabels labels = {{"trainingjob_namespace", namespace_name}, {"trainingjob", name}};
  auto with = [&](const char* key, std::string value) {
    MetricLabels extended = labels;
    extended.emplace(key, std::move(value));
    return extended;
  };
  if (auto created = kube::ParseTime(metadata.value("creationTimestamp", json()))) {
    Set("tj_trainingjob_created_timestamp_seconds",
        "Unix time the TrainingJob was created (every job the operator sees has one)",
        absl::ToDoubleSeconds(*created - absl::UnixEpoch()), labels, into);
  }
  const auto raw = job.find("status");
  if (raw == job.end() || !raw->is_object()) return;  // never reconciled: nothing more to say
  // What decodes is used; a field of the wrong type (reported by the reconciler) or one an older
  // operator did not write is absent.
  v1alpha1::FieldErrors errors;
  const v1alpha1::TrainingJobStatus status =
      v1alpha1::DecodeTrainingJobStatus(*raw, "status", errors);

  if (const v1alpha1::JobCondition* state = CurrentState(status)) {
    const std::string phase(v1alpha1::ConditionTypeName(state->type));
    Set("tj_trainingjob_phase", "1 for the job's state (its last True condition)", 1,
        with("phase", phase), into);
    if (state->last_transition_time) {
      into.phase_since.emplace(with("phase", phase), *state->last_transition_time);
      into.series.emplace_back(kPhaseSeconds, into.phase_since->first);
    }
  }
  if (status.start_time) {
    if (status.completion_time) {
      Set(kDurationSeconds, kDurationSecondsHelp,
          Seconds(*status.completion_time - *status.start_time), labels, into);
    } else {
      into.running_since = *status.start_time;
      into.series.emplace_back(kDurationSeconds, labels);
    }
  }
  SetClockFigures(into, now, labels);
  for (const auto& [type, replica] : status.replica_statuses) {
    const std::string lower(v1alpha1::ReplicaTypeLowerName(type));
    MetricLabels counted = with("replica_type", lower);
    MetricLabels uncounted = counted;
    counted.emplace("counted", "true");
    uncounted.emplace("counted", "false");
    constexpr char kHelp[] =
        "Replica restarts (status.replicaStatuses), by whether they counted toward backoffLimit "
        "(failures) or not (preemptions, evictions, lost nodes)";
    Set("tj_trainingjob_restarts", kHelp, replica.counted_restarts, counted, into);
    Set("tj_trainingjob_restarts", kHelp, std::max(0, replica.restarts - replica.counted_restarts),
        uncounted, into);
  }
  Set("tj_trainingjob_preemptions", "Disruption notices the operator handled (status.preemptions)",
      status.preemptions, labels, into);
  Set("tj_trainingjob_coordinator_restarts",
      "Coordinator restarts, each a restore from a checkpoint (status.coordinatorRestarts)",
      status.coordinator_restarts, labels, into);
  if (status.step) {
    Set("tj_trainingjob_step", "The training step the coordinator last reported (status.step)",
        static_cast<double>(*status.step), labels, into);
    if (status.last_checkpoint_step) {
      Set("tj_trainingjob_steps_since_checkpoint",
          "status.step - status.lastCheckpointStep: what a restart now would train again",
          static_cast<double>(std::max<int64_t>(0, *status.step - *status.last_checkpoint_step)),
          labels, into);
    }
  }
  if (status.goodput) {
    Set("tj_trainingjob_goodput_ratio",
        "Productive share of the job's wall time over all its coordinators (status.goodput)",
        std::min(1.0, *status.goodput), labels, into);
  }
  if (status.goodput_seconds) {
    const v1alpha1::TimeSplit& split = *status.goodput_seconds;
    Set("tj_trainingjob_goodput_wall_seconds", "The job's wall time (status.goodputSeconds)",
        split.wall, labels, into);
    Set("tj_trainingjob_goodput_productive_seconds", "Of it, productive", split.productive, labels,
        into);
    for (v1alpha1::LostCause cause : v1alpha1::kLostCauses) {
      Set("tj_trainingjob_goodput_lost_seconds", "Of it, lost by cause", split.lost_by(cause),
          with("cause", std::string(v1alpha1::LostCauseLabel(cause))), into);
    }
  }
}

void JobMetrics::Refresh(const std::vector<kube::ObjectPtr>& jobs, absl::Time now) {
  std::unordered_set<std::string> seen;
  seen.reserve(jobs.size());
  for (const kube::ObjectPtr& object : jobs) {
    if (object == nullptr || !object->is_object()) continue;
    const auto metadata = object->find("metadata");
    if (metadata == object->end() || !metadata->is_object()) continue;
    const auto name = metadata->find("name");
    if (name == metadata->end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
      continue;
    }
    const auto namespace_name = metadata->find("namespace");
    const std::string key = absl::StrCat(
        namespace_name != metadata->end() && namespace_name->is_string()
            ? namespace_name->get_ref<const std::string&>()
            : std::string(),
        "/", name->get_ref<const std::string&>());
    if (!seen.insert(key).second) continue;  // listed twice: once is enough
    const auto version = metadata->find("resourceVersion");
    const std::string resource_version =
        version != metadata->end() && version->is_string() ? version->get<std::string>() : "";
    Job& known = jobs_[key];
    if (!resource_version.empty() && resource_version == known.resource_version) {
      SetClockFigures(known, now,
                      {{"trainingjob_namespace", key.substr(0, key.find('/'))},
                       {"trainingjob", name->get_ref<const std::string&>()}});
      continue;
    }
    Job fresh;
    fresh.resource_version = resource_version;
    try {
      Collect(*object, now, fresh);
    } catch (const json::exception&) {
      // One job's odd JSON costs its own figures only; the reconciler reports the job.
    }
    // A label value the new version no longer has (a phase left) goes.
    const std::set<Series> kept(fresh.series.begin(), fresh.series.end());
    for (const Series& old : known.series) {
      if (!kept.contains(old)) registry_.RemoveGauge(old.first, old.second);
    }
    known = std::move(fresh);
  }
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (seen.contains(it->first)) {
      ++it;
      continue;
    }
    for (const Series& old : it->second.series) registry_.RemoveGauge(old.first, old.second);
    it = jobs_.erase(it);
  }
}

size_t JobMetrics::SeriesCount() const {
  size_t count = 0;
  for (const auto& [key, job] : jobs_) count += job.series.size();
  return count;
}

}  // namespace tj::op
