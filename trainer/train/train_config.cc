#include "trainer/train/train_config.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "coordinator/base/status_macros.h"
#include "coordinator/base/strings.h"

namespace tj::train {
namespace {

absl::Status Bad(std::string_view flag, std::string_view rule, const auto& value) {
  return absl::InvalidArgumentError(Cat("--", flag, " ", rule, ", got ", value));
}

// The flag spelling of each value of a kind, and back.
template <typename Kind, size_t N>
struct Names {
  std::string_view flag;
  std::pair<Kind, std::string_view> entries[N];

  std::string_view NameOf(Kind kind) const {
    for (const auto& [k, name] : entries) {
      if (k == kind) return name;
    }
    return "unknown";
  }
  absl::StatusOr<Kind> Parse(std::string_view name) const {
    std::string choices;
    for (const auto& [k, entry] : entries) {
      if (entry == name) return k;
      choices += choices.empty() ? std::string(entry) : Cat(", ", entry);
    }
    return Bad(flag, Cat("must be one of ", choices), name);
  }
};

constexpr Names<SplitRule, 2> kSplits{
    "split", {{SplitRule::kInterleaved, "interleaved"}, {SplitRule::kTail, "tail"}}};
constexpr Names<CtrHead, 2> kHeads{"head", {{CtrHead::kBias, "bias"}, {CtrHead::kDense, "dense"}}};
constexpr Names<v1::Initializer::Kind, 3> kInits{
    "init",
    {{v1::Initializer::RANDOM_NORMAL, "normal"},
     {v1::Initializer::TRUNCATED_NORMAL, "truncated_normal"},
     {v1::Initializer::RANDOM_UNIFORM, "uniform"}}};

}  // namespace

absl::Status Validate(const TrainConfig& c) {
  if (c.model != "softmax" && c.model != "lr" && c.model != "fm") {
    return Bad("model", "must be softmax, lr or fm", c.model);
  }
  if (c.data.empty()) {
    return absl::InvalidArgumentError(
        "--data is required: a CSV or LibSVM file (optionally .gz) or synthetic-ctr");
  }
  if (c.data_format != "auto" && c.data_format != "csv" && c.data_format != "libsvm") {
    return Bad("data-format", "must be auto, csv or libsvm", c.data_format);
  }
  if (c.num_classes < 0) return Bad("num-classes", "must be >= 0", c.num_classes);
  if (c.num_features < 0) return Bad("num-features", "must be >= 0", c.num_features);
  if (c.synthetic_examples < 1) return Bad("synthetic-examples", "must be >= 1", c.synthetic_examples);
  if (c.synthetic_fields < 1) return Bad("synthetic-fields", "must be >= 1", c.synthetic_fields);
  if (c.synthetic_vocab < 1) return Bad("synthetic-vocab", "must be >= 1", c.synthetic_vocab);
  if (c.id_space < 1) return Bad("id-space", "must be >= 1", c.id_space);
  if (c.test_percent < 0 || c.test_percent >= 100) {
    return Bad("test-percent", "must be in [0, 100)", c.test_percent);
  }
  if (c.batch_size < 1) return Bad("batch-size", "must be >= 1", c.batch_size);
  if (c.epochs < 1 && c.steps == 0) return Bad("epochs", "must be >= 1", c.epochs);
  if (c.steps < 0) return Bad("steps", "must be >= 0", c.steps);
  if (c.optimizer != "sgd" && c.optimizer != "adagrad" && c.optimizer != "adam") {
    return Bad("optimizer", "must be sgd, adagrad or adam", c.optimizer);
  }
  if (!(c.learning_rate > 0) || c.learning_rate > 1e3) {
    return Bad("learning-rate", "must be in (0, 1000]", c.learning_rate);
  }
  if (c.model == "fm" && c.factor_dim < 1) return Bad("factor-dim", "must be >= 1 for fm", c.factor_dim);
  if (c.factor_dim < 0 || c.factor_dim > 1024) return Bad("factor-dim", "must be in [0, 1024]", c.factor_dim);
  if (!(c.init_stddev >= 0)) return Bad("init-stddev", "must be >= 0", c.init_stddev);
  if (!(c.init_limit >= 0) || !std::isfinite(c.init_limit)) {
    return Bad("init-limit", "must be finite and >= 0", c.init_limit);
  }
  if (auto init = kInits.Parse(kInits.NameOf(c.init)); !init.ok()) return init.status();
  if (c.model == "softmax" && c.head != CtrHead::kBias) {
    return Bad("head", "is for the CTR models (lr, fm); softmax has its own bias", HeadName(c.head));
  }
  if (c.eval_batch_size < 1) return Bad("eval-batch-size", "must be >= 1", c.eval_batch_size);
  if (c.eval_every_steps < 0) return Bad("eval-every-steps", "must be >= 0", c.eval_every_steps);
  if (c.log_every_steps < 1) return Bad("log-every-steps", "must be >= 1", c.log_every_steps);
  if (c.min_accuracy < 0 || c.min_accuracy > 1) return Bad("min-accuracy", "must be in [0, 1]", c.min_accuracy);
  if (c.min_auc < 0 || c.min_auc > 1) return Bad("min-auc", "must be in [0, 1]", c.min_auc);
  if (c.step_sleep_ms < 0) return Bad("step-sleep-ms", "must be >= 0", c.step_sleep_ms);
  if (auto options = PsOptionsOf(c); !options.ok()) return options.status();
  if (c.model == "softmax" && c.data == "synthetic-ctr") {
    return absl::InvalidArgumentError(
        "--model softmax needs dense data (a CSV file); synthetic-ctr is sparse: use --model lr or fm");
  }
  return absl::OkStatus();
}

nlohmann::json ToJson(const TrainConfig& c) {
  return {
      {"model", c.model},
      {"data", c.data},
      {"data_format", c.data_format},
      {"label_column", c.label_column},
      {"num_classes", c.num_classes},
      {"num_features", c.num_features},
      {"synthetic_examples", c.synthetic_examples},
      {"synthetic_fields", c.synthetic_fields},
      {"synthetic_vocab", c.synthetic_vocab},
      {"id_space", c.id_space},
      {"test_percent", c.test_percent},
      {"split", std::string(SplitName(c.split))},
      {"batch_size", c.batch_size},
      {"epochs", c.epochs},
      {"steps", c.steps},
      {"seed", c.seed},
      {"optimizer", c.optimizer},
      {"learning_rate", c.learning_rate},
      {"factor_dim", c.factor_dim},
      {"head", std::string(HeadName(c.head))},
      {"init", std::string(InitName(c.init))},
      {"init_stddev", c.init_stddev},
      {"init_limit", c.init_limit},
      {"eval_batch_size", c.eval_batch_size},
      {"eval_every_steps", c.eval_every_steps},
      {"log_every_steps", c.log_every_steps},
      {"min_accuracy", c.min_accuracy},
      {"min_auc", c.min_auc},
      {"step_sleep_ms", c.step_sleep_ms},
      {"logdir", c.logdir},
      {"partitioner", c.partitioner},
      {"max_slice_bytes", c.max_slice_bytes},
      {"streamed_step", c.streamed_step},
  };
}

absl::StatusOr<TrainConfig> TrainConfigFromJson(const nlohmann::json& json) {
  TrainConfig c;
  try {
    c.model = json.at("model").get<std::string>();
    c.data = json.at("data").get<std::string>();
    c.data_format = json.at("data_format").get<std::string>();
    c.label_column = json.at("label_column").get<int>();
    c.num_classes = json.at("num_classes").get<int>();
    c.num_features = json.at("num_features").get<int64_t>();
    c.synthetic_examples = json.at("synthetic_examples").get<int64_t>();
    c.synthetic_fields = json.at("synthetic_fields").get<int32_t>();
    c.synthetic_vocab = json.at("synthetic_vocab").get<int64_t>();
    c.id_space = json.at("id_space").get<int64_t>();
    c.test_percent = json.at("test_percent").get<int>();
    c.batch_size = json.at("batch_size").get<int64_t>();
    c.epochs = json.at("epochs").get<int64_t>();
    c.steps = json.at("steps").get<int64_t>();
    c.seed = json.at("seed").get<uint64_t>();
    c.optimizer = json.at("optimizer").get<std::string>();
    c.learning_rate = json.at("learning_rate").get<double>();
    c.factor_dim = json.at("factor_dim").get<int32_t>();
    c.init_stddev = json.at("init_stddev").get<double>();
    c.eval_batch_size = json.at("eval_batch_size").get<int64_t>();
    c.eval_every_steps = json.at("eval_every_steps").get<int64_t>();
    c.log_every_steps = json.at("log_every_steps").get<int64_t>();
    c.min_accuracy = json.at("min_accuracy").get<double>();
    c.min_auc = json.at("min_auc").get<double>();
    c.step_sleep_ms = json.at("step_sleep_ms").get<int64_t>();
    c.logdir = json.at("logdir").get<std::string>();
    // Absent in the configurations of earlier coordinators: their defaults.
    c.partitioner = json.value("partitioner", c.partitioner);
    c.max_slice_bytes = json.value("max_slice_bytes", c.max_slice_bytes);
    c.init_limit = json.value("init_limit", c.init_limit);
    c.streamed_step = json.value("streamed_step", c.streamed_step);
    TJ_ASSIGN_OR_RETURN(c.split, ParseSplit(json.value("split", std::string(SplitName(c.split)))));
    TJ_ASSIGN_OR_RETURN(c.head, ParseHead(json.value("head", std::string(HeadName(c.head)))));
    TJ_ASSIGN_OR_RETURN(c.init, ParseInit(json.value("init", std::string(InitName(c.init)))));
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(Cat("training configuration: ", e.what()));
  }
  return c;
}

absl::StatusOr<ShardedPsOptions> PsOptionsOf(const TrainConfig& c) {
  ShardedPsOptions options;
  absl::StatusOr<PartitionerConfig> partitioner = PartitionerConfig::Parse(c.partitioner);
  if (!partitioner.ok()) {
    return absl::InvalidArgumentError(Cat("--partitioner: ", partitioner.status().message()));
  }
  options.placement.partitioner = *partitioner;
  if (c.max_slice_bytes < 64 || c.max_slice_bytes > (int64_t{256} << 20)) {
    return Bad("max-slice-bytes", "must be in [64, 268435456] (256 MiB, far below gRPC's limit)",
               c.max_slice_bytes);
  }
  options.placement.max_slice_bytes = c.max_slice_bytes;
  options.max_rpc_bytes = c.max_slice_bytes;
  options.max_bytes_in_flight = std::max<int64_t>(int64_t{64} << 20, 4 * c.max_slice_bytes);
  return options;
}

nlohmann::json Fingerprint(const TrainConfig& c) {
  nlohmann::json json = {{"model", c.model},           {"data", c.data},
                         {"test_percent", c.test_percent}, {"batch_size", c.batch_size},
                         {"seed", c.seed}};
  if (c.model == "fm") json["factor_dim"] = c.factor_dim;
  // Only when not the default, so that the checkpoints of earlier runs still match.
  if (c.head != CtrHead::kBias) json["head"] = std::string(HeadName(c.head));
  if (c.split != SplitRule::kInterleaved) json["split"] = std::string(SplitName(c.split));
  if (c.data == "synthetic-ctr") json["synthetic_examples"] = c.synthetic_examples;
  return json;
}

std::string_view SplitName(SplitRule rule) { return kSplits.NameOf(rule); }
absl::StatusOr<SplitRule> ParseSplit(std::string_view name) { return kSplits.Parse(name); }
std::string_view HeadName(CtrHead head) { return kHeads.NameOf(head); }
absl::StatusOr<CtrHead> ParseHead(std::string_view name) { return kHeads.Parse(name); }
std::string_view InitName(v1::Initializer::Kind kind) { return kInits.NameOf(kind); }
absl::StatusOr<v1::Initializer::Kind> ParseInit(std::string_view name) {
  return kInits.Parse(name);
}

}  // namespace tj::train
