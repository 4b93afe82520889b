// The coordinator's training loop, the part every PS program shares: resume from the newest valid
// checkpoint, schedule one closure per step (a bounded number ahead), count the steps whose result
// came back, pause at checkpoint boundaries (join every scheduled step, then save, so a checkpoint
// records exactly the steps, hence the data, consumed), evaluate, report progress and TensorBoard
// scalars. Steps are numbered globally from 0; a program maps step s to the data it trains on, so
// a resumed run continues with exactly the data that follows the checkpoint.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/closure/remote_value.h"
#include "nlohmann/json.hpp"
#include "tj/v1/value.pb.h"
#include "trainer/sdk/checkpoint_retry.h"
#include "trainer/sdk/chief_context.h"

namespace tj::sdk {

struct StepResult {
  double loss = 0;
  int64_t examples = 0;
};

// What a program provides to the loop.
class StepProgram {
 public:
  virtual ~StepProgram() = default;
  // Schedules global step `step` on the cluster (ClusterCoordinator::Schedule) and returns its
  // result handle. Called in step order, each step exactly once per run of the loop.
  virtual absl::StatusOr<RemoteValue> ScheduleStep(int64_t step) = 0;
  // Reads a step's result. The default reads a map {"loss": number, "examples": int}.
  virtual absl::StatusOr<StepResult> ReadStepResult(const v1::Value& value);
  // Evaluates the model as it is after `step` steps; metrics by name ("accuracy", "auc",
  // "eval_loss"...). The default has none.
  virtual absl::StatusOr<std::map<std::string, double>> Evaluate(int64_t step);
};

struct TrainingLoopOptions {
  int64_t total_steps = 0;
  int64_t steps_per_epoch = 0;  // for the epoch shown in progress; 0 when it has no meaning
  int64_t log_every_steps = 100;
  int64_t eval_every_steps = 0;  // 0: evaluate once, at the end
  // Steps scheduled beyond the oldest one not yet back: keeps every worker busy without holding
  // a handle per step of a long job.
  int64_t max_steps_ahead = 4096;
  // Saved in every checkpoint and compared on restore: a checkpoint written by a program with
  // another configuration (another model, batch size, data) is refused instead of resumed.
  nlohmann::json program_fingerprint = nullptr;
  // The placement of the dense variables (PlacementRecord), saved in every checkpoint and checked
  // before one is restored: a checkpoint whose shard files hold other slices is refused
  // (FailedPrecondition) before any PS is touched. Null: not recorded, not checked.
  nlohmann::json ps_placement = nullptr;
  // Creates the program's variables (idempotently) once the restore is done: after the placement
  // check, so that a job resumed under another placement is refused before anything is created,
  // and after the restore, which replaces each PS's whole state anyway. Optional.
  std::function<absl::Status()> create_variables = nullptr;
  // How often the final and the preemption save are tried again when their storage refuses them.
  CheckpointRetryPolicy checkpoint_retry = CheckpointRetryPolicy();
};

struct TrainingSummary {
  int64_t steps = 0;           // total_steps
  int64_t steps_this_run = 0;  // run by this process (the rest came from the checkpoint)
  std::optional<int64_t> restored_from_step;
  std::optional<double> last_loss;
  std::map<std::string, double> metrics;  // the final evaluation
};

// The status RunTrainingLoop returns when every attempt of the final checkpoint was refused by its
// storage: the storage's own code and answer (naming the location), carrying this payload, which
// ChiefExitCode turns into the restart exit code. Training is done but its state is not saved, so
// the run did not succeed; a restarted coordinator resumes from the newest checkpoint.
inline constexpr char kFinalCheckpointNotSavedPayloadUrl[] = "tj.dev/final_checkpoint_not_saved";
bool IsFinalCheckpointNotSaved(const absl::Status& status);

// Errors: whatever a step or the coordinator raised (a lost PS carries its task, PsTaskOf), a
// checkpoint that cannot be written or restored, a fingerprint mismatch (FailedPrecondition), a
// final checkpoint its storage refused (IsFinalCheckpointNotSaved).
absl::StatusOr<TrainingSummary> RunTrainingLoop(ChiefContext& context, StepProgram& program,
                                                const TrainingLoopOptions& options);

}  // namespace tj::sdk
