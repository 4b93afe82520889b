// TrainConfig: everything tj-train's coordinator decides about a run (model, data, batching,
// optimizer, evaluation). The coordinator parses it from flags, checks it, and sends it as JSON to
// every worker when it creates their trainer resource, so workers need no flags of their own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "nlohmann/json.hpp"
#include "tj/v1/ps.pb.h"
#include "trainer/data/split.h"
#include "trainer/models/ctr_model.h"

namespace tj::train {

struct TrainConfig {
  std::string model = "softmax";  // softmax | lr | fm
  // A CSV (.csv, .csv.gz: dense features, integer label), a LibSVM file (.libsvm, .svm, .txt and
  // their .gz) or "synthetic-ctr" (the deterministic generator).
  std::string data;
  std::string data_format = "auto";  // auto | csv | libsvm
  int label_column = -1;             // CSV: label column, negative from the end
  int num_classes = 0;               // CSV / LibSVM multiclass: 0 infers
  int64_t num_features = 0;          // LibSVM: 0 infers
  // synthetic-ctr
  int64_t synthetic_examples = 200'000;
  int32_t synthetic_fields = 8;
  int64_t synthetic_vocab = 1000;
  int64_t id_space = int64_t{1} << 22;

  int test_percent = 20;
  SplitRule split = SplitRule::kInterleaved;  // which examples are held out: --split
  int64_t batch_size = 32;
  int64_t epochs = 10;
  int64_t steps = 0;  // 0: epochs * batches per epoch
  uint64_t seed = 1;

  std::string optimizer = "sgd";  // sgd | adagrad | adam
  double learning_rate = 0.001;
  int32_t factor_dim = 8;        // fm
  CtrHead head = CtrHead::kBias;  // lr, fm: the output layer (trainer/models/ctr_model.h)
  // fm: how the rows (linear weight and factors) start: RANDOM_NORMAL or TRUNCATED_NORMAL with
  // init_stddev, or RANDOM_UNIFORM on [-init_limit, init_limit] (0.05: Keras' Embedding default).
  v1::Initializer::Kind init = v1::Initializer::RANDOM_NORMAL;
  double init_stddev = 0.01;
  double init_limit = 0.05;

  int64_t eval_batch_size = 1024;
  int64_t eval_every_steps = 0;  // 0: at the end only
  int64_t log_every_steps = 50;
  // Quality gates: the run fails (exit 1) when the final evaluation is below them (0: off).
  double min_accuracy = 0;
  double min_auc = 0;
  // Slows each step down by this much on the worker: for demos and fault tests, which need a run
  // to last long enough to be interrupted.
  int64_t step_sleep_ms = 0;
  std::string logdir;  // TensorBoard; empty: <checkpoint dir>/events, or none
  // How dense variables are split over the PS tasks (coordinator/ps/placement.h): TensorFlow's
  // partitioners, "min_size:<bytes>[:<max_shards>]", "max_size:<bytes>[:<max_shards>]" or
  // "fixed:<shards>"; each shard is stored and moved as slices of at most max_slice_bytes.
  std::string partitioner = "min_size:1MiB";
  int64_t max_slice_bytes = int64_t{16} << 20;
  // A dense step's gradient is written a few rows at a time and pushed slice by slice while the
  // next rows are computed (ShardedPsClient::StreamPush); false: computed whole, then pushed.
  // The same values, gradient and PS state either way.
  bool streamed_step = true;
};

// The ShardedPsClient options of `config` (its partitioner and slice size), the same on the
// coordinator and every worker. InvalidArgument naming the flag.
absl::StatusOr<ShardedPsOptions> PsOptionsOf(const TrainConfig& config);

// InvalidArgument naming the flag ("--batch-size must be >= 1, got 0").
absl::Status Validate(const TrainConfig& config);

nlohmann::json ToJson(const TrainConfig& config);
absl::StatusOr<TrainConfig> TrainConfigFromJson(const nlohmann::json& json);

// The fields a checkpoint must agree with to be resumed: model, data and how it is cut in steps.
nlohmann::json Fingerprint(const TrainConfig& config);

// The flag spellings of the kinds above ("interleaved", "tail"; "bias", "dense"; "normal",
// "truncated_normal", "uniform") and back: InvalidArgument naming the flag and the choices.
std::string_view SplitName(SplitRule rule);
absl::StatusOr<SplitRule> ParseSplit(std::string_view name);
std::string_view HeadName(CtrHead head);
absl::StatusOr<CtrHead> ParseHead(std::string_view name);
std::string_view InitName(v1::Initializer::Kind kind);
absl::StatusOr<v1::Initializer::Kind> ParseInit(std::string_view name);

}  // namespace tj::train
