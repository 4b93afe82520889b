#include "trainer/train/train_chief.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <string>
#include <vector>

#include "coordinator/base/status_macros.h"
#include "coordinator/base/strings.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "trainer/models/auc.h"
#include "trainer/sdk/placement_record.h"
#include "trainer/sdk/training_loop.h"
#include "trainer/train/model_kernel.h"
#include "trainer/train/train_functions.h"
#include "trainer/train/training_data.h"

namespace tj::train {
namespace {

class TrainSteps : public sdk::StepProgram {
 public:
  TrainSteps(ClusterCoordinator& coordinator, PerWorkerValues trainer, const TrainConfig& config,
             const TrainingData& data)
      : coordinator_(coordinator),
        trainer_(std::move(trainer)),
        config_(config),
        data_(data),
        schedule_(data.train->num_examples(), config.batch_size, config.seed) {}

  absl::StatusOr<RemoteValue> ScheduleStep(int64_t step) override {
    const StepRange range = schedule_.RangeOf(step);
    return coordinator_.Schedule(kTrainStepFunction, {trainer_, range.begin, range.end});
  }

  absl::StatusOr<std::map<std::string, double>> Evaluate(int64_t) override {
    const int64_t n = data_.test->num_examples();
    std::map<std::string, double> metrics;
    if (n == 0) return metrics;
    std::vector<RemoteValue> parts;
    for (int64_t begin = 0; begin < n; begin += config_.eval_batch_size) {
      TJ_ASSIGN_OR_RETURN(RemoteValue part,
                          coordinator_.Schedule(kEvalFunction,
                                                {trainer_, begin,
                                                 std::min(n, begin + config_.eval_batch_size)}));
      parts.push_back(std::move(part));
    }
    double loss_sum = 0;
    int64_t correct = 0, examples = 0;
    std::vector<float> scores;
    std::vector<int32_t> labels;
    for (const RemoteValue& part : parts) {
      TJ_ASSIGN_OR_RETURN(v1::Value value, Fetch(part));
      const auto& entries = value.map().entries();
      loss_sum += entries.at("loss_sum").double_value();
      correct += entries.at("correct").int_value();
      examples += entries.at("examples").int_value();
      if (auto it = entries.find("scores"); it != entries.end()) {
        AppendRaw(it->second.bytes_value(), scores);
        AppendRaw(entries.at("labels").bytes_value(), labels);
      }
    }
    metrics["eval_loss"] = loss_sum / static_cast<double>(examples);
    metrics["accuracy"] = static_cast<double>(correct) / static_cast<double>(examples);
    if (!scores.empty()) {
      auto auc = Auc(scores, labels);
      if (auc.ok()) metrics["auc"] = *auc;
    }
    return metrics;
  }

 private:
  template <typename T>
  static void AppendRaw(const std::string& bytes, std::vector<T>& out) {
    const size_t old = out.size();
    out.resize(old + bytes.size() / sizeof(T));
    std::memcpy(out.data() + old, bytes.data(), (out.size() - old) * sizeof(T));
  }

  ClusterCoordinator& coordinator_;
  PerWorkerValues trainer_;
  const TrainConfig& config_;
  const TrainingData& data_;
  StepSchedule schedule_;
};

}  // namespace

absl::Status RunTrainChief(const TrainConfig& config, sdk::ChiefContext& context) {
  TJ_RETURN_IF_ERROR(Validate(config));
  TJ_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(config));
  spdlog::info("data {}: {} training and {} held-out examples, {} {} , {} classes", config.data,
               data.train->num_examples(), data.test->num_examples(), data.train->dim(),
               data.train->kind() == BatchKind::kDense ? "features" : "ids",
               data.train->num_classes());
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<ModelKernel> kernel,
                      MakeModelKernel(config, data.train->dim(), data.train->num_classes()));
  TJ_ASSIGN_OR_RETURN(ShardedPsOptions ps_options, PsOptionsOf(config));
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<ShardedPsClient> ps,
                      ShardedPsClient::Create(context.ps_clients(), kernel->Variables(),
                                              kernel->Tables(), ps_options));
  spdlog::info("dense variables over {} PS task(s), partitioner {}: {}", ps->num_ps(),
               config.partitioner, sdk::DescribePlacement(ps->placement()));
  // A model that does not fit the PS tasks' memory is refused before a checkpoint is restored or
  // anything is created. The variables are created by the loop, after its restore.
  TJ_RETURN_IF_ERROR(ps->CheckPsMemory());

  std::string logdir = config.logdir;
  // Event files are appended to as training goes, which objects cannot be: an s3:// checkpoint
  // location gets none unless a logdir is given.
  if (logdir.empty() && !context.settings().checkpoint_dir.empty() &&
      !context.settings().checkpoint_dir.starts_with("s3://")) {
    logdir = context.settings().checkpoint_dir + "/events";
  }
  if (absl::Status opened = context.OpenSummaryWriter(logdir); !opened.ok()) {
    spdlog::warn("TensorBoard events disabled: {}", opened.ToString());
  } else if (!logdir.empty()) {
    spdlog::info("TensorBoard events in {}", logdir);
  }

  TJ_ASSIGN_OR_RETURN(PerWorkerValues trainer,
                      context.coordinator().CreatePerWorkerResource(
                          kTrainerResource, {ToJson(config).dump()}));
  const int64_t batches_per_epoch = data.BatchesPerEpoch(config.batch_size);
  sdk::TrainingLoopOptions options;
  options.total_steps = config.steps > 0 ? config.steps : config.epochs * batches_per_epoch;
  options.steps_per_epoch = batches_per_epoch;
  options.log_every_steps = config.log_every_steps;
  options.eval_every_steps = config.eval_every_steps;
  options.program_fingerprint = Fingerprint(config);
  // Recorded in every checkpoint and checked before one is restored: the slices a checkpoint's
  // shard files hold must be the slices this run looks for.
  options.ps_placement = sdk::PlacementRecord(ps->placement());
  // Idempotent: variables restored from the checkpoint keep their values.
  options.create_variables = [&ps] { return ps->CreateVariables(); };
  TrainSteps steps(context.coordinator(), trainer, config, data);
  TJ_ASSIGN_OR_RETURN(sdk::TrainingSummary summary,
                      sdk::RunTrainingLoop(context, steps, options));

  std::string line;
  for (const auto& [name, value] : summary.metrics) line += Cat(" ", name, "=", value);
  spdlog::info("final: {} steps ({} in this run){}", summary.steps, summary.steps_this_run, line);
  auto below = [&](const char* metric, double gate) -> absl::Status {
    if (gate <= 0) return absl::OkStatus();
    auto it = summary.metrics.find(metric);
    if (it == summary.metrics.end()) {
      return absl::FailedPreconditionError(
          Cat("--min-", metric, " ", gate, " was asked for but the evaluation has no ", metric,
              " (is --test-percent 0?)"));
    }
    if (it->second < gate) {
      return absl::FailedPreconditionError(
          Cat("held-out ", metric, " ", it->second, " is below --min-", metric, " ", gate));
    }
    return absl::OkStatus();
  };
  TJ_RETURN_IF_ERROR(below("accuracy", config.min_accuracy));
  TJ_RETURN_IF_ERROR(below("auc", config.min_auc));
  return absl::OkStatus();
}

}  // namespace tj::train
