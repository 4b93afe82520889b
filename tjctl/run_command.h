// `tjctl run FILE`: runs a whole TrainingJob on this machine as local processes, with the
// semantics the operator gives it on Kubernetes (restart rules, backoffLimit, job phase,
// activeDeadlineSeconds, cleanup), a live progress display and a status file. docs/tjctl-run.md.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

namespace tj {

struct RunOptions {
  std::string file;
  std::string work_dir;        // empty: ./tj-runs/<job>-<UTC yyyymmdd-hhmmss>
  std::string status_file;     // empty: <work-dir>/status.json
  std::string checkpoint_dir;  // empty: <work-dir>/checkpoints (when the job has spec.checkpoint)
  bool quiet = false;
  bool tls = false;  // per-run certificates in <work-dir>/tls, TJ_TLS_DIR for every replica
  std::string metrics_targets;  // non-empty: a TJ_METRICS_ADDRESS per replica, listed there
};

void AddRunCommand(CLI::App& app, RunOptions& options, int& exit_code);
// Returns the exit code: 0 Succeeded, 1 Failed, 2 invalid manifest or local problem (nothing
// started), 128+N after signal N (130 SIGINT, 143 SIGTERM).
int RunJobLocally(const RunOptions& options, std::FILE* out, std::FILE* err);

}  // namespace tj
