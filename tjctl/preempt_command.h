// `tjctl preempt JOB REPLICA [--grace S]`: a spot preemption on one machine. For a job started with
// `tjctl run`, it marks the replica as disrupted (restarted, not counted toward backoffLimit, like a
// pod with DisruptionTarget), sends the coordinator a PreemptionNotice for it with the deadline
// now + S, and after S seconds terminates the process (SIGTERM, then SIGKILL after 30 s) — unless
// it already exited, as a coordinator does once it has checkpointed.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace tj {

struct PreemptOptions {
  std::string job;
  std::string replica;   // "ps-0", "worker-1", "coordinator-0" or the full "<job>-ps-0"
  double grace_seconds = 0;
  std::string work_dir;  // default: the newest ./tj-runs/<job>-* that is still running
  std::string runs_dir = "tj-runs";
};

void AddPreemptCommand(CLI::App& app, PreemptOptions& options, int& exit_code);
int RunPreempt(const PreemptOptions& options);

}  // namespace tj
