// `tjctl demo`: runs a small local cluster (parameter server and worker processes) driven by the
// ClusterCoordinator, prints what happens, and kills and restarts a worker midway to show closures
// being put back and per-worker resources rebuilt.
#pragma once

#include <CLI/CLI.hpp>

namespace tj {

struct DemoOptions {
  int workers = 3;
  int closures = 2000;
  int samples_per_closure = 20000;
  bool inject_fault = true;
};

void AddDemoCommand(CLI::App& app, DemoOptions& options, int& exit_code);
int RunDemo(const DemoOptions& options);

}  // namespace tj
