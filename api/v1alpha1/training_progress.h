// TrainingProgress: what a job's coordinator reports about its training as it runs: the step
// reached of how many, the latest loss and throughput, evaluation metrics, checkpoints. The
// coordinator writes it (locally, to the file TJ_PROGRESS_FILE names, atomically replaced);
// `tjctl run` reads it for the live display and the final status file; the operator will copy it
// into the TrainingJob's status.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/v1alpha1/goodput.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

inline constexpr size_t kMaxProgressEvents = 20;

struct TrainingProgress {
  // "starting", "restoring", "held" (its checkpoint storage refuses the start's claim: not
  // training until it is taken), "training", "checkpointing", "evaluating", "succeeded", "failed".
  std::string state = "starting";
  int64_t step = 0;         // training steps completed (closures whose result was received)
  int64_t total_steps = 0;  // the goal
  int64_t epoch = 0;        // completed passes over the training data
  std::optional<double> loss;                 // mean training loss of the latest logged steps
  std::optional<double> examples_per_second;  // since the previous report
  std::map<std::string, double> metrics;      // latest evaluation: "accuracy", "auc", "eval_loss"
  std::optional<int64_t> last_checkpoint_step;
  std::optional<int64_t> restored_from_step;  // the checkpoint this run of the coordinator resumed
  // Why the newest checkpoint save failed while training went on (storage refused or unreachable:
  // the error names the location, the refused request and the credentials' source); empty once a
  // save succeeds again.
  std::string checkpoint_error;
  std::string message;                        // last notable event, for people
  // Preemption notices, decisions and exits, oldest first, at most kMaxProgressEvents:
  // "<RFC 3339 time> <what happened>".
  std::vector<std::string> events;
  std::string updated;                        // RFC 3339, UTC
  // This coordinator process's time split (absent from coordinators older than session 10).
  std::optional<RunGoodput> goodput;

  friend bool operator==(const TrainingProgress&, const TrainingProgress&) = default;
};

nlohmann::json ToJson(const TrainingProgress& progress);

// The coordinator also publishes its progress (ToJson, compact) under this key of its
// Coordination service's key-value store, where the operator reads it (KeyValueGet) to report
// status.step and status.lastCheckpointStep.
inline constexpr char kProgressKey[] = "tj/progress";
// InvalidArgument naming the field that is missing or of the wrong type.
absl::StatusOr<TrainingProgress> TrainingProgressFromJson(const nlohmann::json& json);

}  // namespace tj::v1alpha1
