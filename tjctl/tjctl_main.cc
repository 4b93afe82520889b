// tjctl: the command line of trainingjob-operator.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "absl/synchronization/mutex.h"

#include "tjctl/demo_command.h"
#include "tjctl/preempt_command.h"
#include "tjctl/run_command.h"
#include "tjctl/validate_command.h"

int main(int argc, char** argv) {
  // Debian's Abseil runs its deadlock detector on every lock; it costs 20-30% of dispatch throughput
  // (bench/). Tests keep it on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"tjctl: run and inspect TrainingJobs"};
  app.require_subcommand(1);
  int exit_code = 0;
  tj::DemoOptions demo_options;
  tj::AddDemoCommand(app, demo_options, exit_code);
  tj::ValidateOptions validate_options;
  tj::AddValidateCommand(app, validate_options, exit_code);
  tj::RunOptions run_options;
  tj::AddRunCommand(app, run_options, exit_code);
  tj::PreemptOptions preempt_options;
  tj::AddPreemptCommand(app, preempt_options, exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
