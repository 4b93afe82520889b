#include "trainer/train/train_functions.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <vector>

#include "coordinator/base/status_macros.h"
#include "coordinator/base/strings.h"
#include "coordinator/base/values.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "trainer/train/model_kernel.h"
#include "trainer/train/training_data.h"

namespace tj::train {
namespace {

class TrainerResource : public Resource {
 public:
  TrainerResource(TrainConfig config, TrainingData data, std::unique_ptr<ModelKernel> kernel,
                  std::unique_ptr<ShardedPsClient> ps)
      : config_(std::move(config)),
        data_(std::move(data)),
        kernel_(std::move(kernel)),
        ps_(std::move(ps)) {}

  std::string type_name() const override { return kTrainerResource; }
  v1::Value Describe() const override {
    return StringValue(Cat(config_.model, " on ", config_.data, ": ", data_.train->num_examples(),
                           " training examples"));
  }

  const TrainConfig& config() const { return config_; }
  const TrainingData& data() const { return data_; }
  const ModelKernel& kernel() const { return *kernel_; }
  const ShardedPsClient& ps() const { return *ps_; }

 private:
  TrainConfig config_;
  TrainingData data_;
  std::unique_ptr<ModelKernel> kernel_;
  std::unique_ptr<ShardedPsClient> ps_;
};

v1::Value MapValue(std::vector<std::pair<std::string, v1::Value>> entries) {
  v1::Value value;
  auto* map = value.mutable_map()->mutable_entries();
  for (auto& [key, entry] : entries) (*map)[key] = std::move(entry);
  return value;
}

template <typename T>
std::string_view RawBytes(const std::vector<T>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

absl::StatusOr<std::shared_ptr<Resource>> CreateTrainer(FunctionContext& ctx, const Args& args) {
  TJ_RETURN_IF_ERROR(args.ExpectCount(1));
  TJ_ASSIGN_OR_RETURN(std::string_view text, args.String(0));
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InvalidArgumentError("trainer config is not JSON");
  TJ_ASSIGN_OR_RETURN(TrainConfig config, TrainConfigFromJson(json));
  TJ_ASSIGN_OR_RETURN(TrainingData data, LoadTrainingData(config));
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<ModelKernel> kernel,
                      MakeModelKernel(config, data.train->dim(), data.train->num_classes()));
  std::vector<std::string> addresses;
  for (size_t i = 0; i < ctx.num_ps(); ++i) {
    TJ_ASSIGN_OR_RETURN(PsClient * client, ctx.ps(static_cast<int>(i)));
    addresses.push_back(client->address());
  }
  TJ_ASSIGN_OR_RETURN(ShardedPsOptions options, PsOptionsOf(config));
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<ShardedPsClient> ps,
                      ShardedPsClient::Connect(addresses, kernel->Variables(), kernel->Tables(),
                                               options));
  spdlog::info("worker {}: trainer ready: {} on {} ({} training, {} held-out examples)",
               ctx.worker_index(), config.model, config.data, data.train->num_examples(),
               data.test->num_examples());
  return std::shared_ptr<Resource>(std::make_shared<TrainerResource>(
      std::move(config), std::move(data), std::move(kernel), std::move(ps)));
}

struct RangeArgs {
  std::shared_ptr<TrainerResource> trainer;
  int64_t begin = 0;
  int64_t end = 0;
};

absl::StatusOr<RangeArgs> ReadRangeArgs(const Args& args) {
  TJ_RETURN_IF_ERROR(args.ExpectCount(3));
  RangeArgs out;
  TJ_ASSIGN_OR_RETURN(out.trainer, args.Resource<TrainerResource>(0));
  TJ_ASSIGN_OR_RETURN(out.begin, args.Int(1));
  TJ_ASSIGN_OR_RETURN(out.end, args.Int(2));
  return out;
}

absl::StatusOr<v1::Value> TrainStep(FunctionContext& ctx, const Args& args) {
  TJ_ASSIGN_OR_RETURN(RangeArgs in, ReadRangeArgs(args));
  thread_local Batch batch;  // reused step after step: the readers keep its capacity
  TJ_RETURN_IF_ERROR(in.trainer->data().train->Read(in.begin, in.end, batch));
  if (in.trainer->config().step_sleep_ms > 0) {
    TJ_RETURN_IF_ERROR(ctx.SleepFor(absl::Milliseconds(in.trainer->config().step_sleep_ms)));
  }
  TJ_ASSIGN_OR_RETURN(TrainStepStats stats, in.trainer->kernel().TrainStep(batch, in.trainer->ps()));
  return MapValue({{"loss", DoubleValue(stats.loss)}, {"examples", IntValue(stats.examples)}});
}

absl::StatusOr<v1::Value> Eval(FunctionContext&, const Args& args) {
  TJ_ASSIGN_OR_RETURN(RangeArgs in, ReadRangeArgs(args));
  thread_local Batch batch;
  TJ_RETURN_IF_ERROR(in.trainer->data().test->Read(in.begin, in.end, batch));
  TJ_ASSIGN_OR_RETURN(EvalPartial partial, in.trainer->kernel().Evaluate(batch, in.trainer->ps()));
  std::vector<std::pair<std::string, v1::Value>> entries = {
      {"loss_sum", DoubleValue(partial.loss_sum)},
      {"correct", IntValue(partial.correct)},
      {"examples", IntValue(partial.examples)},
  };
  if (!partial.scores.empty()) {
    entries.emplace_back("scores", BytesValue(RawBytes(partial.scores)));
    entries.emplace_back("labels", BytesValue(RawBytes(partial.labels)));
  }
  return MapValue(std::move(entries));
}

}  // namespace

absl::Status RegisterTrainFunctions(FunctionRegistry& registry) {
  TJ_RETURN_IF_ERROR(registry.RegisterResource(kTrainerResource, CreateTrainer));
  TJ_RETURN_IF_ERROR(registry.Register(kTrainStepFunction, TrainStep));
  TJ_RETURN_IF_ERROR(registry.Register(kEvalFunction, Eval));
  return absl::OkStatus();
}

}  // namespace tj::train
