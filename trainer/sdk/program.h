// The C++ SDK's entry point: one binary for every role of a parameter-server job, the role read
// from TF_CONFIG as TensorFlow programs do. A program registers its worker functions and gives
// the coordinator's ("chief") body; RunProgram does the rest:
//   ps      serves variables and tables until SIGTERM;
//   worker  serves the built-in and the program's functions until SIGTERM;
//   chief   waits for the parameter servers, connects a ClusterCoordinator to the workers, runs
//           the body, and turns its outcome into the exit code the job's restart policy expects:
//           0 on success, TJ_RESTART_EXIT_CODE (42) when a parameter server was lost or after a
//           preemption checkpoint (the job restarts the coordinator, which restores the last
//           checkpoint), 1 otherwise. The coordinator also serves the Coordination service on its
//           own TF_CONFIG address (key-value store, barriers, task states, preemption notices),
//           and SIGTERM is a preemption notice for it.
//
//   int main(int argc, char** argv) {
//     tj::BlockShutdownSignals();  // first, before any thread starts
//     ... parse flags ...
//     return tj::sdk::RunProgram({.name = "my-train",
//                                 .register_functions = RegisterMyFunctions,
//                                 .run_chief = RunMyChief});
//   }
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "coordinator/worker/function_registry.h"
#include "coordinator/preemption/termination_config.h"
#include "trainer/sdk/chief_context.h"

namespace tj::sdk {

struct Program {
  std::string name = "program";
  // Called once in every worker process; the built-in functions are registered already.
  std::function<absl::Status(FunctionRegistry&)> register_functions = nullptr;
  // The coordinator's body. A status carrying a PS task (PsTaskOf) means "restart me".
  std::function<absl::Status(ChiefContext&)> run_chief = nullptr;
  // Adjusts the coordinator's TerminationConfig (save_fn, exit_fn, a termination watcher) after
  // the SDK filled it from the job (grace period, restart exit code).
  std::function<void(TerminationConfig&)> configure_termination = nullptr;
  // How long the coordinator waits for every parameter server to answer at start-up before it
  // gives up with the restart exit code (pods can take a while to be scheduled).
  absl::Duration ps_startup_timeout = absl::Minutes(10);
};

// Exit codes besides 0 and the job's restart exit code.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;  // bad TF_CONFIG or environment: fails the job at once

// Call BlockShutdownSignals() first thing in main, before anything starts a thread.
int RunProgram(const Program& program);

// The exit code for the chief's outcome (see above), logging why.
int ChiefExitCode(const absl::Status& outcome, const JobSettings& settings,
                  const std::string& program);

}  // namespace tj::sdk
