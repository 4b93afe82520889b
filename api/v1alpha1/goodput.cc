#include "api/v1alpha1/goodput.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace tj::v1alpha1 {
namespace {

struct CauseNames {
  std::string_view label;
  std::string_view field;
};
constexpr std::array<CauseNames, kLostCauseCount> kCauseNames = {{
    {"startup", "startup"},
    {"restart", "restart"},
    {"waiting_for_workers", "waitingForWorkers"},
    {"worker_rerun", "workerRerun"},
    {"checkpoint_save", "checkpointSave"},
    {"steps_since_checkpoint", "stepsSinceCheckpoint"},
}};

absl::Status Bad(std::string_view what, std::string_view field, std::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": field '", std::string(field),
                                                 "' must be ", std::string(expected)));
}

// A number of seconds: absent reads as 0; negative, NaN or infinite is an error.
absl::Status ReadSeconds(const nlohmann::json& json, std::string_view what, const char* field,
                         double& into) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_number()) return Bad(what, field, "a number");
  const double value = it->get<double>();
  if (!std::isfinite(value) || value < 0) return Bad(what, field, "a finite number >= 0");
  into = value;
  return absl::OkStatus();
}

}  // namespace

std::string_view LostCauseLabel(LostCause cause) {
  return kCauseNames[static_cast<size_t>(cause)].label;
}
std::string_view LostCauseField(LostCause cause) {
  return kCauseNames[static_cast<size_t>(cause)].field;
}

nlohmann::json ToJson(const TimeSplit& split) {
  nlohmann::json lost = nlohmann::json::object();
  for (LostCause cause : kLostCauses)
    lost[std::string(LostCauseField(cause))] = split.lost_by(cause);
  return {{"wallSeconds", split.wall},
          {"productiveSeconds", split.productive},
          {"lostSeconds", std::move(lost)}};
}

nlohmann::json ToJson(const RunGoodput& run) {
  nlohmann::json out = ToJson(run.seconds);
  out["run"] = run.run;
  out["startedAtUnixSeconds"] = run.started_unix_seconds;
  out["productiveAtCheckpointSeconds"] = run.productive_at_checkpoint;
  return out;
}

nlohmann::json ToJson(const JobGoodput& job) {
  return {{"previousRuns", ToJson(job.previous_runs)}, {"lastRun", ToJson(job.last_run)}};
}

absl::StatusOr<TimeSplit> TimeSplitFromJson(const nlohmann::json& json, std::string_view what) {
  if (!json.is_object())
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": not an object"));
  TimeSplit split;
  for (absl::Status s : {ReadSeconds(json, what, "wallSeconds", split.wall),
                         ReadSeconds(json, what, "productiveSeconds", split.productive)}) {
    if (!s.ok()) return s;
  }
  if (auto it = json.find("lostSeconds"); it != json.end() && !it->is_null()) {
    if (!it->is_object()) return Bad(what, "lostSeconds", "an object of numbers");
    const std::string lost_what = absl::StrCat(std::string(what), ".lostSeconds");
    // Causes a newer coordinator knows and this one does not are left out of the split.
    for (LostCause cause : kLostCauses) {
      const std::string field(LostCauseField(cause));
      if (absl::Status s = ReadSeconds(*it, lost_what, field.c_str(), split.lost_by(cause));
          !s.ok()) {
        return s;
      }
    }
  }
  return split;
}

absl::StatusOr<RunGoodput> RunGoodputFromJson(const nlohmann::json& json, std::string_view what) {
  auto seconds = TimeSplitFromJson(json, what);
  if (!seconds.ok()) return seconds.status();
  RunGoodput run;
  run.seconds = *seconds;
  if (auto it = json.find("run"); it != json.end() && !it->is_null()) {
    if (!it->is_string()) return Bad(what, "run", "a string");
    run.run = it->get<std::string>();
  }
  for (absl::Status s :
       {ReadSeconds(json, what, "startedAtUnixSeconds", run.started_unix_seconds),
        ReadSeconds(json, what, "productiveAtCheckpointSeconds", run.productive_at_checkpoint)}) {
    if (!s.ok()) return s;
  }
  return run;
}

absl::StatusOr<JobGoodput> JobGoodputFromJson(const nlohmann::json& json, std::string_view what) {
  if (!json.is_object())
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": not an object"));
  JobGoodput job;
  if (auto it = json.find("previousRuns"); it != json.end() && !it->is_null()) {
    auto split = TimeSplitFromJson(*it, absl::StrCat(std::string(what), ".previousRuns"));
    if (!split.ok()) return split.status();
    job.previous_runs = *split;
  }
  if (auto it = json.find("lastRun"); it != json.end() && !it->is_null()) {
    auto run = RunGoodputFromJson(*it, absl::StrCat(std::string(what), ".lastRun"));
    if (!run.ok()) return run.status();
    job.last_run = *run;
  }
  return job;
}

}  // namespace tj::v1alpha1
