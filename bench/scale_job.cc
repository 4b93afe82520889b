// tj-bench-scale-job: the job tj-bench-scale runs. A program on the trainingjob SDK, so its roles
// are tj-train's (the same PS, the same worker runtime, the same training loop, checkpoints and
// restart code); only the model differs: one dense variable `scale/dense` [rows, 1024] split over
// the PS tasks, and one embedding table `scale/emb` of dim 16 filled to --table-rows before training.
// Step s ("scale.step") on a worker pulls the whole dense variable, pushes an L2 weight-decay
// gradient of it (one pass, the same bytes back), looks up a window of rows and pushes their
// decay too. Steps listed by --sparse-only-from/--sparse-only-to touch the table only, so that the
// checkpoint after them differs from the previous one by the rows those steps changed.
// The chief logs one line per step ("scale step <s>: ...") that tj-bench-scale parses.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/base/shutdown_signals.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/base/values.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "coordinator/ps/spare_buffers.h"
#include "coordinator/worker/args.h"
#include "coordinator/worker/function_context.h"
#include "coordinator/worker/resource.h"
#include "trainer/sdk/placement_record.h"
#include "trainer/sdk/program.h"
#include "trainer/sdk/training_loop.h"

namespace tj::bench {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kDense[] = "scale/dense";
constexpr char kTable[] = "scale/emb";
constexpr char kModelResource[] = "scale.model";
constexpr char kStepFunction[] = "scale.step";
constexpr int64_t kColumns = 1024;
constexpr float kDecay = 1e-4f;
constexpr int64_t kFillBatch = 65536;

struct ScaleConfig {
  int64_t dense_rows = 0;  // the dense variable is [dense_rows, kColumns] float32
  int64_t table_rows = 0;
  int32_t dim = 16;
  int64_t max_slice_bytes = int64_t{16} << 20;
  // A dense step pulls, computes and pushes slice by slice (ShardedPsClient::StreamStep) rather
  // than pull all, compute all, push all.
  bool streamed = true;
};

json ToJson(const ScaleConfig& c) {
  return {{"dense_rows", c.dense_rows},
          {"table_rows", c.table_rows},
          {"dim", c.dim},
          {"max_slice_bytes", c.max_slice_bytes},
          {"streamed", c.streamed}};
}

ScaleConfig FromJson(const json& j) {
  ScaleConfig c;
  c.dense_rows = j.value("dense_rows", int64_t{0});
  c.table_rows = j.value("table_rows", int64_t{0});
  c.dim = j.value("dim", 16);
  c.max_slice_bytes = j.value("max_slice_bytes", int64_t{16} << 20);
  c.streamed = j.value("streamed", true);
  return c;
}

// Row i of the table has this id: spread over the id space, as real ids are.
int64_t RowId(int64_t i) { return i * 7919 + 13; }

v1::Optimizer Sgd() {
  v1::Optimizer optimizer;
  optimizer.mutable_sgd()->set_learning_rate(0.1f);
  return optimizer;
}

std::vector<v1::VariableSpec> Variables(const ScaleConfig& c) {
  if (c.dense_rows == 0) return {};
  v1::VariableSpec dense;
  dense.set_name(kDense);
  dense.add_shape(c.dense_rows);
  dense.add_shape(kColumns);
  dense.mutable_initializer()->set_kind(v1::Initializer::RANDOM_UNIFORM);
  dense.mutable_initializer()->set_minval(-0.05f);
  dense.mutable_initializer()->set_maxval(0.05f);
  dense.mutable_initializer()->set_seed(1);
  *dense.mutable_optimizer() = Sgd();
  return {dense};
}

std::vector<v1::TableSpec> Tables(const ScaleConfig& c) {
  v1::TableSpec table;
  table.set_name(kTable);
  table.set_dim(c.dim);
  table.mutable_initializer()->set_kind(v1::Initializer::RANDOM_UNIFORM);
  table.mutable_initializer()->set_minval(-0.05f);
  table.mutable_initializer()->set_maxval(0.05f);
  table.mutable_initializer()->set_seed(7);
  *table.mutable_optimizer() = Sgd();
  return {table};
}

absl::StatusOr<ShardedPsOptions> PsOptions(const ScaleConfig& c) {
  ShardedPsOptions options;
  options.placement.max_slice_bytes = c.max_slice_bytes;
  options.max_rpc_bytes = c.max_slice_bytes;
  return options;
}

// The model's gradient: L2 weight decay, element by element.
absl::Status Decay(int64_t /*first_element*/, std::span<const float> w, std::span<float> g) {
  for (size_t i = 0; i < w.size(); ++i) g[i] = kDecay * w[i];
  return absl::OkStatus();
}

// A worker's model: its client of every PS and the buffers of one step, reused by the next (a
// worker runs one step at a time).
class ScaleModel : public Resource {
 public:
  ScaleModel(ScaleConfig config, std::unique_ptr<ShardedPsClient> ps)
      : config_(config), ps_(std::move(ps)) {}
  // A restarted coordinator re-creates the model: the next one receives into these buffers
  // instead of faulting in fresh memory for its first step.
  ~ScaleModel() override {
    absl::MutexLock lock(&mu_);
    for (v1::Tensor& tensor : params_) GiveSpareBuffer(std::move(*tensor.mutable_data()));
    if (gradient_ != nullptr && gradient_.use_count() == 1) {
      GiveSpareBuffer(std::move(*gradient_->mutable_data()));
    }
  }
  std::string type_name() const override { return kModelResource; }

  absl::StatusOr<v1::Value> Step(bool dense, int64_t first_row, int64_t rows) {
    absl::MutexLock lock(&mu_);
    const auto start = Clock::now();
    int64_t bytes = 0;
    if (dense && config_.dense_rows > 0) {
      if (gradient_ == nullptr || gradient_.use_count() > 1) {
        gradient_ = std::make_shared<v1::Tensor>();
      }
      if (config_.streamed) {
        params_.resize(1);
        TJ_RETURN_IF_ERROR(ps_->StreamStep(kDense, params_[0], gradient_, Decay));
      } else {
        TJ_RETURN_IF_ERROR(ps_->PullInto({kDense}, params_));
        const std::string& values = params_[0].data();
        gradient_->set_dtype(v1::DTYPE_FLOAT32);
        gradient_->mutable_shape()->Assign(params_[0].shape().begin(), params_[0].shape().end());
        if (!TakeSpareBuffer(*gradient_->mutable_data(), values.size())) {
          gradient_->mutable_data()->resize(values.size());
        }
        const size_t n = values.size() / sizeof(float);
        TJ_RETURN_IF_ERROR(
            Decay(0, {reinterpret_cast<const float*>(values.data()), n},
                  {reinterpret_cast<float*>(gradient_->mutable_data()->data()), n}));
        TJ_RETURN_IF_ERROR(ps_->Push({kDense}, std::vector<std::shared_ptr<const v1::Tensor>>{
                                                   gradient_}));
      }
      bytes += 2 * static_cast<int64_t>(params_[0].data().size());
    }
    if (rows > 0) {
      ids_.resize(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) {
        ids_[static_cast<size_t>(i)] = RowId((first_row + i) % config_.table_rows);
      }
      const SparseLookup lookup{kTable, ids_};
      TJ_ASSIGN_OR_RETURN(std::vector<v1::Tensor> looked_up, ps_->Lookup({&lookup, 1}));
      const std::string& values = looked_up[0].data();
      row_gradients_.resize(values.size() / sizeof(float));
      const auto* w = reinterpret_cast<const float*>(values.data());
      for (size_t i = 0; i < row_gradients_.size(); ++i) row_gradients_[i] = kDecay * w[i];
      const SparseUpdate update{kTable, ids_, row_gradients_};
      TJ_RETURN_IF_ERROR(ps_->PushSparse({&update, 1}));
      bytes += 2 * static_cast<int64_t>(values.size()) +
               2 * rows * static_cast<int64_t>(sizeof(int64_t));
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const bool first_dense = dense && !stepped_dense_;
    if (dense) stepped_dense_ = true;
    v1::Value result;
    auto& entries = *result.mutable_map()->mutable_entries();
    entries["loss"] = DoubleValue(0);
    entries["examples"] = IntValue(rows);
    entries["bytes"] = IntValue(bytes);
    entries["seconds"] = DoubleValue(seconds);
    // This model's first dense step allocates its values and gradient: tj-bench-scale reports
    // such steps apart.
    entries["first"] = IntValue(first_dense ? 1 : 0);
    return result;
  }

 private:
  const ScaleConfig config_;
  const std::unique_ptr<ShardedPsClient> ps_;
  absl::Mutex mu_;
  std::vector<v1::Tensor> params_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<v1::Tensor> gradient_ ABSL_GUARDED_BY(mu_);
  bool stepped_dense_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int64_t> ids_ ABSL_GUARDED_BY(mu_);
  std::vector<float> row_gradients_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::shared_ptr<Resource>> CreateModel(FunctionContext& ctx, const Args& args) {
  TJ_RETURN_IF_ERROR(args.ExpectCount(1));
  TJ_ASSIGN_OR_RETURN(std::string_view text, args.String(0));
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("scale model config is not JSON");
  const ScaleConfig config = FromJson(j);
  std::vector<std::string> addresses;
  for (size_t i = 0; i < ctx.num_ps(); ++i) {
    TJ_ASSIGN_OR_RETURN(PsClient * client, ctx.ps(static_cast<int>(i)));
    addresses.push_back(client->address());
  }
  TJ_ASSIGN_OR_RETURN(ShardedPsOptions options, PsOptions(config));
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<ShardedPsClient> ps,
                      ShardedPsClient::Connect(addresses, Variables(config), Tables(config),
                                               options));
  return std::shared_ptr<Resource>(std::make_shared<ScaleModel>(config, std::move(ps)));
}

// "scale.step"(model, dense, first_row, rows, sleep_ms).
absl::StatusOr<v1::Value> StepFunction(FunctionContext& ctx, const Args& args) {
  TJ_RETURN_IF_ERROR(args.ExpectCount(5));
  TJ_ASSIGN_OR_RETURN(std::shared_ptr<ScaleModel> model, args.Resource<ScaleModel>(0));
  TJ_ASSIGN_OR_RETURN(int64_t dense, args.Int(1));
  TJ_ASSIGN_OR_RETURN(int64_t first_row, args.Int(2));
  TJ_ASSIGN_OR_RETURN(int64_t rows, args.Int(3));
  TJ_ASSIGN_OR_RETURN(int64_t sleep_ms, args.Int(4));
  if (sleep_ms > 0) TJ_RETURN_IF_ERROR(ctx.SleepFor(absl::Milliseconds(sleep_ms)));
  return model->Step(dense != 0, first_row, rows);
}

struct ChiefFlags {
  ScaleConfig model;
  int64_t steps = 12;
  int64_t rows_per_step = 0;
  int64_t sparse_only_from = -1;  // steps [from, to) touch the table only
  int64_t sparse_only_to = -1;
  // Steps from this one sleep this long first: keeps a tiny run (the smoke test) going long enough
  // for its PS to be killed mid-run.
  int64_t slow_from_step = -1;
  int64_t slow_step_ms = 0;
};

class ScaleSteps : public sdk::StepProgram {
 public:
  ScaleSteps(ClusterCoordinator& coordinator, PerWorkerValues model, const ChiefFlags& flags)
      : coordinator_(coordinator), model_(std::move(model)), flags_(flags) {}

  absl::StatusOr<RemoteValue> ScheduleStep(int64_t step) override {
    const bool dense = step < flags_.sparse_only_from || step >= flags_.sparse_only_to;
    scheduled_.push_back(step);
    return coordinator_.Schedule(
        kStepFunction,
        {model_, int64_t{dense ? 1 : 0}, step * flags_.rows_per_step, flags_.rows_per_step,
         step >= flags_.slow_from_step ? flags_.slow_step_ms : int64_t{0}});
  }

  // Results come back in step order: the step is the oldest one scheduled and not yet read.
  absl::StatusOr<sdk::StepResult> ReadStepResult(const v1::Value& value) override {
    const auto& entries = value.map().entries();
    const int64_t step = scheduled_.empty() ? -1 : scheduled_.front();
    if (!scheduled_.empty()) scheduled_.erase(scheduled_.begin());
    const auto first = entries.find("first");
    spdlog::info("scale step {}: bytes {} seconds {:.6f} first {}", step,
                 entries.at("bytes").int_value(), entries.at("seconds").double_value(),
                 first == entries.end() ? 0 : first->second.int_value());
    return sdk::StepResult{0, entries.at("examples").int_value()};
  }

 private:
  ClusterCoordinator& coordinator_;
  PerWorkerValues model_;
  const ChiefFlags& flags_;
  std::vector<int64_t> scheduled_;
};

// Creates every row of the table: rows exist once looked up.
absl::Status FillTable(const ShardedPsClient& ps, int64_t rows) {
  const auto start = Clock::now();
  std::vector<int64_t> ids;
  for (int64_t first = 0; first < rows; first += kFillBatch) {
    ids.clear();
    for (int64_t i = first; i < std::min(rows, first + kFillBatch); ++i) ids.push_back(RowId(i));
    const SparseLookup lookup{kTable, ids};
    TJ_RETURN_IF_ERROR(ps.Lookup({&lookup, 1}).status());
  }
  spdlog::info("scale: table {} filled: {} rows in {:.3f} s", kTable, rows,
               std::chrono::duration<double>(Clock::now() - start).count());
  return absl::OkStatus();
}

absl::Status RunChief(const ChiefFlags& flags, sdk::ChiefContext& context) {
  TJ_ASSIGN_OR_RETURN(ShardedPsOptions options, PsOptions(flags.model));
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<ShardedPsClient> ps,
                      ShardedPsClient::Create(context.ps_clients(), Variables(flags.model),
                                              Tables(flags.model), options));
  spdlog::info("scale: dense bytes per PS task: {}",
               absl::StrJoin(ps->placement().bytes_per_task(), ","));
  TJ_RETURN_IF_ERROR(ps->CheckPsMemory());
  TJ_ASSIGN_OR_RETURN(PerWorkerValues model,
                      context.coordinator().CreatePerWorkerResource(
                          kModelResource, {ToJson(flags.model).dump()}));
  sdk::TrainingLoopOptions loop;
  loop.total_steps = flags.steps;
  loop.log_every_steps = 1000000;
  // A few steps ahead only: a step moves the whole dense variable.
  loop.max_steps_ahead = 4;
  loop.program_fingerprint = ToJson(flags.model);
  loop.ps_placement = sdk::PlacementRecord(ps->placement());
  bool filled = false;
  loop.create_variables = [&]() -> absl::Status {
    TJ_RETURN_IF_ERROR(ps->CreateVariables());
    filled = true;
    return FillTable(*ps, flags.model.table_rows);
  };
  ScaleSteps steps(context.coordinator(), model, flags);
  TJ_ASSIGN_OR_RETURN(sdk::TrainingSummary summary, sdk::RunTrainingLoop(context, steps, loop));
  spdlog::info("scale: final: {} steps ({} in this run), table filled {}", summary.steps,
               summary.steps_this_run, filled);
  return absl::OkStatus();
}

}  // namespace
}  // namespace tj::bench

int main(int argc, char** argv) {
  tj::BlockShutdownSignals();
  CLI::App app{"tj-bench-scale-job: the job of tj-bench-scale (role from TF_CONFIG)"};
  tj::bench::ChiefFlags flags;
  app.add_option("--dense-rows", flags.model.dense_rows, "rows of 1024 float32")
      ->capture_default_str();
  app.add_option("--table-rows", flags.model.table_rows)->capture_default_str();
  app.add_option("--dim", flags.model.dim)->capture_default_str();
  app.add_option("--streamed", flags.model.streamed,
                 "dense steps pull, compute and push slice by slice (false: pull all, then push all)")
      ->capture_default_str();
  app.add_option("--steps", flags.steps)->capture_default_str();
  app.add_option("--rows-per-step", flags.rows_per_step)->capture_default_str();
  app.add_option("--sparse-only-from", flags.sparse_only_from)->capture_default_str();
  app.add_option("--sparse-only-to", flags.sparse_only_to)->capture_default_str();
  app.add_option("--slow-from-step", flags.slow_from_step)->capture_default_str();
  app.add_option("--slow-step-ms", flags.slow_step_ms)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("tj-bench-scale-job"));
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  return tj::sdk::RunProgram({
      .name = "tj-bench-scale-job",
      .register_functions =
          [](tj::FunctionRegistry& registry) -> absl::Status {
        TJ_RETURN_IF_ERROR(
            registry.RegisterResource(tj::bench::kModelResource, tj::bench::CreateModel));
        return registry.Register(tj::bench::kStepFunction, tj::bench::StepFunction);
      },
      .run_chief = [&flags](tj::sdk::ChiefContext& context) {
        return tj::bench::RunChief(flags, context);
      },
  });
}
