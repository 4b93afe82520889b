// ModelKernel: one built-in model as the workers run it against the parameter servers: which
// variables and tables it keeps there, one training step on a batch (pull, gradient, push), and an
// evaluation of a batch. The coordinator uses the same kernel's specs to create the variables.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "tj/v1/ps.pb.h"
#include "trainer/data/batch.h"
#include "trainer/train/train_config.h"

namespace tj::train {

struct TrainStepStats {
  double loss = 0;
  int64_t examples = 0;
};

// Sums over the examples of one evaluation batch; the coordinator adds them up.
struct EvalPartial {
  double loss_sum = 0;
  int64_t correct = 0;  // softmax: argmax == label; CTR: (p >= 0.5) == label
  int64_t examples = 0;
  std::vector<float> scores;    // CTR only: click probabilities, for the AUC
  std::vector<int32_t> labels;  // CTR only
};

class ModelKernel {
 public:
  virtual ~ModelKernel() = default;
  virtual std::vector<v1::VariableSpec> Variables() const = 0;
  virtual std::vector<v1::TableSpec> Tables() const = 0;
  // Thread-safe: a worker runs several steps at once (asynchronous training).
  virtual absl::StatusOr<TrainStepStats> TrainStep(const Batch& batch,
                                                   const ShardedPsClient& ps) const = 0;
  virtual absl::StatusOr<EvalPartial> Evaluate(const Batch& batch,
                                               const ShardedPsClient& ps) const = 0;
};

// The kernel of config.model for data of `dim` features (or id space) and `num_classes`.
absl::StatusOr<std::unique_ptr<ModelKernel>> MakeModelKernel(const TrainConfig& config,
                                                             int64_t dim, int32_t num_classes);

// The optimizer the PS applies, from --optimizer and --learning-rate.
v1::Optimizer OptimizerOf(const TrainConfig& config);

}  // namespace tj::train
