// The functions tj-train's workers serve:
//   resource "tj.train.trainer"(config JSON)  loads the data, builds the model kernel and a client
//                                             for the parameter servers, once per worker;
//   "tj.train.step"(trainer, begin, end)      one training step on training examples [begin, end):
//                                             {"loss": double, "examples": int};
//   "tj.train.eval"(trainer, begin, end)      evaluates held-out examples [begin, end):
//                                             {"loss_sum", "correct", "examples"[, "scores",
//                                             "labels" as raw little-endian bytes]}.
#pragma once

#include "absl/status/status.h"
#include "coordinator/worker/function_registry.h"

namespace tj::train {

inline constexpr char kTrainerResource[] = "tj.train.trainer";
inline constexpr char kTrainStepFunction[] = "tj.train.step";
inline constexpr char kEvalFunction[] = "tj.train.eval";

absl::Status RegisterTrainFunctions(FunctionRegistry& registry);

}  // namespace tj::train
