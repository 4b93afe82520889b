// Goodput: how a job's wall time splits into productive training and time lost by cause. Plain
// data and its JSON (in the coordinator's progress and in the TrainingJob's status); the
// accounting itself is jobcontrol/goodput.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

enum class LostCause {
  kStartup,               // a job's first coordinator: process start until training starts
  kRestart,               // a later coordinator: the gap since the previous one, start, restore
  kWaitingForWorkers,     // configured workers that were away (recovering, preempted, lost)
  kWorkerRerun,           // work a lost worker had done on closures that then ran again
  kCheckpointSave,        // the training loop paused for a save
  kStepsSinceCheckpoint,  // training a restart threw away (done after the restored checkpoint)
};
inline constexpr size_t kLostCauseCount = static_cast<size_t>(LostCause::kStepsSinceCheckpoint) + 1;
inline constexpr std::array<LostCause, kLostCauseCount> kLostCauses = {
    LostCause::kStartup,     LostCause::kRestart,        LostCause::kWaitingForWorkers,
    LostCause::kWorkerRerun, LostCause::kCheckpointSave, LostCause::kStepsSinceCheckpoint};
// "waiting_for_workers": the metrics' label value.
std::string_view LostCauseLabel(LostCause cause);
// "waitingForWorkers": the key in JSON (progress and status).
std::string_view LostCauseField(LostCause cause);

using LostSeconds = std::array<double, kLostCauseCount>;

// A span of wall time split: wall = productive + the sum of lost.
struct TimeSplit {
  double wall = 0;
  double productive = 0;
  LostSeconds lost{};

  double lost_by(LostCause cause) const { return lost[static_cast<size_t>(cause)]; }
  double& lost_by(LostCause cause) { return lost[static_cast<size_t>(cause)]; }
  friend bool operator==(const TimeSplit&, const TimeSplit&) = default;
};

// One coordinator process's account, published in its progress.
struct RunGoodput {
  std::string run;  // random per coordinator process: tells a restart from a re-read
  double started_unix_seconds = 0;
  TimeSplit seconds;
  // Productive seconds when the newest checkpoint was saved: what a restart keeps.
  double productive_at_checkpoint = 0;

  friend bool operator==(const RunGoodput&, const RunGoodput&) = default;
};

// The job's account over its coordinators, kept in its status (the operator) or in memory (tjctl
// run): the runs before the last one, and the last one as it reported itself.
struct JobGoodput {
  TimeSplit previous_runs;
  RunGoodput last_run;

  friend bool operator==(const JobGoodput&, const JobGoodput&) = default;
};

nlohmann::json ToJson(const TimeSplit& split);
nlohmann::json ToJson(const RunGoodput& run);
nlohmann::json ToJson(const JobGoodput& job);
// InvalidArgument naming the field (under `what`) that is missing, not a number, negative or not
// finite.
absl::StatusOr<TimeSplit> TimeSplitFromJson(const nlohmann::json& json, std::string_view what);
absl::StatusOr<RunGoodput> RunGoodputFromJson(const nlohmann::json& json, std::string_view what);
absl::StatusOr<JobGoodput> JobGoodputFromJson(const nlohmann::json& json, std::string_view what);

}  // namespace tj::v1alpha1
