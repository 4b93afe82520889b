// tj-train's coordinator: checks the data, creates the model's variables on the parameter
// servers, gives every worker its trainer, and runs the SDK's training loop with one closure per
// step (the closure carries the example range it trains on), then evaluates on the held-out data
// and applies the quality gates (--min-accuracy, --min-auc).
#pragma once

#include "absl/status/status.h"
#include "trainer/sdk/chief_context.h"
#include "trainer/train/train_config.h"

namespace tj::train {

absl::Status RunTrainChief(const TrainConfig& config, sdk::ChiefContext& context);

}  // namespace tj::train
