// tj-train: the built-in training program. One binary for every role of a TrainingJob, the role
// read from TF_CONFIG: the coordinator ("chief") trains the model its flags describe; workers and
// parameter servers need no flags (they ignore them, so one container spec can serve every role).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "absl/synchronization/mutex.h"
#include "coordinator/base/shutdown_signals.h"
#include "trainer/sdk/program.h"
#include "trainer/train/train_chief.h"
#include "trainer/train/train_functions.h"

namespace {

// A flag naming a kind: parsed by `parse`, whose error is CLI11's message for the flag.
template <typename Kind>
void AddKind(CLI::App& app, const std::string& flag, Kind& target,
             absl::StatusOr<Kind> (*parse)(std::string_view), std::string_view (*name_of)(Kind),
             const std::string& help) {
  app.add_option_function<std::string>(
         flag,
         [&target, parse](const std::string& value) {
           absl::StatusOr<Kind> kind = parse(value);
           if (!kind.ok()) throw CLI::ValidationError(std::string(kind.status().message()));
           target = *kind;
         },
         help)
      ->default_str(std::string(name_of(target)));
}

}  // namespace

int main(int argc, char** argv) {
  tj::BlockShutdownSignals();
  CLI::App app{
      "tj-train: parameter-server training of softmax regression (dense data) or sparse "
      "logistic regression / factorization machines (CTR data). The role comes from TF_CONFIG; "
      "the flags matter to the coordinator only."};
  tj::train::TrainConfig config;
  app.add_option("--model", config.model, "softmax | lr | fm")->capture_default_str();
  app.add_option("--data", config.data,
                 "CSV (.csv[.gz]), LibSVM file ([.gz]) or synthetic-ctr");
  app.add_option("--data-format", config.data_format, "auto | csv | libsvm")->capture_default_str();
  app.add_option("--label-column", config.label_column, "CSV label column (negative: from the end)")
      ->capture_default_str();
  app.add_option("--num-classes", config.num_classes, "0 infers from the labels")
      ->capture_default_str();
  app.add_option("--num-features", config.num_features, "LibSVM id space; 0 infers")
      ->capture_default_str();
  app.add_option("--synthetic-examples", config.synthetic_examples)->capture_default_str();
  app.add_option("--synthetic-fields", config.synthetic_fields)->capture_default_str();
  app.add_option("--synthetic-vocab", config.synthetic_vocab)->capture_default_str();
  app.add_option("--id-space", config.id_space)->capture_default_str();
  app.add_option("--test-percent", config.test_percent, "held-out share of the examples")
      ->capture_default_str();
  AddKind(app, "--split", config.split, tj::train::ParseSplit, tj::train::SplitName,
          "which examples are held out: interleaved (every (100 / test-percent)th) or tail (the "
          "last ones)");
  app.add_option("--batch-size", config.batch_size)->capture_default_str();
  app.add_option("--epochs", config.epochs)->capture_default_str();
  app.add_option("--steps", config.steps, "total steps; 0: epochs x batches per epoch")
      ->capture_default_str();
  app.add_option("--seed", config.seed)->capture_default_str();
  app.add_option("--optimizer", config.optimizer, "sgd | adagrad | adam")->capture_default_str();
  app.add_option("--learning-rate", config.learning_rate)->capture_default_str();
  app.add_option("--factor-dim", config.factor_dim, "fm factors per id")->capture_default_str();
  AddKind(app, "--head", config.head, tj::train::ParseHead, tj::train::HeadName,
          "lr, fm output layer: bias (z = b + s) or dense (z = b + a s, a learned too, as Keras' "
          "Dense(1))");
  AddKind(app, "--init", config.init, tj::train::ParseInit, tj::train::InitName,
          "fm row initialization: normal, truncated_normal (--init-stddev) or uniform "
          "(+-init-limit)");
  app.add_option("--init-stddev", config.init_stddev, "fm row initialization (normal kinds)")
      ->capture_default_str();
  app.add_option("--init-limit", config.init_limit, "fm row initialization (uniform)")
      ->capture_default_str();
  app.add_option("--eval-batch-size", config.eval_batch_size)->capture_default_str();
  app.add_option("--eval-every-steps", config.eval_every_steps, "0: evaluate at the end only")
      ->capture_default_str();
  app.add_option("--log-every-steps", config.log_every_steps)->capture_default_str();
  app.add_option("--min-accuracy", config.min_accuracy,
                 "fail the run when the final held-out accuracy is lower")
      ->capture_default_str();
  app.add_option("--min-auc", config.min_auc, "fail the run when the final held-out AUC is lower")
      ->capture_default_str();
  app.add_option("--step-sleep-ms", config.step_sleep_ms,
                 "slow every step down (demos and fault tests)")
      ->capture_default_str();
  app.add_option("--logdir", config.logdir,
                 "TensorBoard event directory (default: <checkpoint dir>/events)");
  app.add_option("--partitioner", config.partitioner,
                 "how dense variables are split over the PS: min_size:<bytes>[:<max_shards>] "
                 "(max_shards 0: the number of PS), max_size:<bytes>[:<max_shards>] or "
                 "fixed:<shards> (TensorFlow's partitioners)")
      ->capture_default_str();
  app.add_option("--max-slice-bytes", config.max_slice_bytes,
                 "largest piece of a variable one RPC moves; shards are stored as slices this big")
      ->capture_default_str();
  app.add_option("--streamed-step", config.streamed_step,
                 "a dense gradient is computed a few rows at a time and pushed slice by slice "
                 "while the next rows are computed (false: computed whole, then pushed)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  spdlog::set_default_logger(spdlog::stderr_color_mt("tj-train"));
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");

  return tj::sdk::RunProgram({
      .name = "tj-train",
      .register_functions = tj::train::RegisterTrainFunctions,
      .run_chief = [&config](tj::sdk::ChiefContext& context) {
        return tj::train::RunTrainChief(config, context);
      },
  });
}
