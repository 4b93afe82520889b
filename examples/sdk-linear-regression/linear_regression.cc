// An example program built on the trainingjob-operator C++ SDK: linear regression y = w.x + b by
// asynchronous SGD on parameter servers, with a train-step function of its own. The same binary is
// the coordinator, a worker or a parameter server, as TF_CONFIG says; checkpoints, resume after a
// restart, progress and TensorBoard come from the SDK's training loop.
//
//   examples/sdk-linear-regression.yaml runs it with `tjctl run`.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "coordinator/base/shutdown_signals.h"
#include "coordinator/base/status_macros.h"
#include "absl/strings/str_cat.h"
#include "coordinator/base/values.h"
#include "coordinator/ps/ps_client.h"
#include "trainer/sdk/program.h"
#include "trainer/sdk/training_loop.h"

namespace {

constexpr int kDim = 4;
constexpr float kTrueWeights[kDim] = {3.0f, -2.0f, 0.5f, 1.0f};
constexpr float kTrueBias = 2.0f;

// Example i of a synthetic data set, computed from i alone so any worker can produce any range.
void Example(int64_t i, float* x, float* y) {
  std::mt19937_64 rng(static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + 1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  float target = kTrueBias;
  for (int j = 0; j < kDim; ++j) {
    x[j] = uniform(rng);
    target += kTrueWeights[j] * x[j];
  }
  *y = target + 0.01f * uniform(rng);
}

// "linreg.step"(begin, end): the mean squared error of examples [begin, end) and one SGD step on
// the PS (variable "linreg/wb" holds w then b, on PS task 0; the PS applies the learning rate).
absl::StatusOr<tj::v1::Value> Step(tj::FunctionContext& ctx, const tj::Args& args) {
  TJ_ASSIGN_OR_RETURN(int64_t begin, args.Int(0));
  TJ_ASSIGN_OR_RETURN(int64_t end, args.Int(1));
  TJ_ASSIGN_OR_RETURN(tj::PsClient * ps, ctx.ps(0));
  TJ_ASSIGN_OR_RETURN(std::vector<tj::v1::Tensor> pulled, ps->Pull({"linreg/wb"}));
  TJ_ASSIGN_OR_RETURN(std::vector<float> wb, tj::FloatsOf(pulled[0]));
  std::vector<float> gradient(kDim + 1, 0.0f);
  double loss = 0;
  for (int64_t i = begin; i < end; ++i) {
    float x[kDim], y;
    Example(i, x, &y);
    float prediction = wb[kDim];
    for (int j = 0; j < kDim; ++j) prediction += wb[j] * x[j];
    const float error = prediction - y;
    loss += 0.5 * error * error;
    for (int j = 0; j < kDim; ++j) gradient[j] += error * x[j];
    gradient[kDim] += error;
  }
  const auto n = static_cast<float>(end - begin);
  for (float& g : gradient) g /= n;
  TJ_RETURN_IF_ERROR(ps->Push({"linreg/wb"}, {tj::FloatTensor(gradient, {kDim + 1})}));
  tj::v1::Value result;
  (*result.mutable_map()->mutable_entries())["loss"] = tj::DoubleValue(loss / n);
  (*result.mutable_map()->mutable_entries())["examples"] = tj::IntValue(end - begin);
  return result;
}

class LinearRegression : public tj::sdk::StepProgram {
 public:
  LinearRegression(tj::sdk::ChiefContext& context, int64_t batch)
      : context_(context), batch_(batch) {}

  absl::StatusOr<tj::RemoteValue> ScheduleStep(int64_t step) override {
    return context_.coordinator().Schedule("linreg.step", {step * batch_, (step + 1) * batch_});
  }

  // The distance of the learned parameters from the true ones.
  absl::StatusOr<std::map<std::string, double>> Evaluate(int64_t) override {
    TJ_ASSIGN_OR_RETURN(std::vector<tj::v1::Tensor> pulled,
                        context_.ps_clients()[0]->Pull({"linreg/wb"}));
    TJ_ASSIGN_OR_RETURN(std::vector<float> wb, tj::FloatsOf(pulled[0]));
    double distance = std::pow(wb[kDim] - kTrueBias, 2);
    for (int j = 0; j < kDim; ++j) distance += std::pow(wb[j] - kTrueWeights[j], 2);
    return std::map<std::string, double>{{"parameter_error", std::sqrt(distance)}};
  }

 private:
  tj::sdk::ChiefContext& context_;
  int64_t batch_;
};

}  // namespace

int main(int argc, char** argv) {
  tj::BlockShutdownSignals();
  CLI::App app{"linear regression on parameter servers, an example of the trainingjob SDK"};
  int64_t steps = 2000;
  int64_t batch = 64;
  double learning_rate = 0.1;
  double max_error = 0;
  app.add_option("--steps", steps)->capture_default_str();
  app.add_option("--batch-size", batch)->capture_default_str();
  app.add_option("--learning-rate", learning_rate)->capture_default_str();
  app.add_option("--max-error", max_error, "fail when the parameters end farther than this")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  return tj::sdk::RunProgram({
      .name = "sdk-linear-regression",
      .register_functions =
          [](tj::FunctionRegistry& registry) { return registry.Register("linreg.step", Step); },
      .run_chief = [&](tj::sdk::ChiefContext& context) -> absl::Status {
        tj::v1::VariableSpec wb;
        wb.set_name("linreg/wb");
        wb.add_shape(kDim + 1);
        wb.mutable_optimizer()->mutable_sgd()->set_learning_rate(static_cast<float>(learning_rate));
        TJ_RETURN_IF_ERROR(context.ps_clients()[0]->CreateVariables({wb}));
        LinearRegression program(context, batch);
        tj::sdk::TrainingLoopOptions options;
        options.total_steps = steps;
        options.log_every_steps = 200;
        options.program_fingerprint = {{"program", "sdk-linear-regression"}, {"batch", batch}};
        TJ_ASSIGN_OR_RETURN(tj::sdk::TrainingSummary summary,
                            tj::sdk::RunTrainingLoop(context, program, options));
        const double error = summary.metrics.at("parameter_error");
        if (max_error > 0 && error > max_error) {
          return absl::FailedPreconditionError(
              absl::StrCat("parameter error ", error, " is above --max-error ", max_error));
        }
        return absl::OkStatus();
      },
  });
}
