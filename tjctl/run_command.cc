#include "tjctl/run_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "api/v1alpha1/load.h"
#include "coordinator/base/job_tls.h"
#include "coordinator/base/job_token.h"
#include "coordinator/base/strings.h"
#include "jobcontrol/replicas.h"
#include "tjctl/local/launch_plan.h"
#include "tjctl/local/local_job.h"
#include "tjctl/local/metrics_targets.h"
#include "tjctl/local/progress_display.h"
#include "tjctl/local/termination_signals.h"

namespace tj {
namespace {

namespace fs = std::filesystem;
using local::kExitInvalid;

constexpr char kRunDescription[] =
    "run a TrainingJob on this machine as local processes, with the operator's semantics";

constexpr char kRunFooter[] = R"(
Each replica gets 127.0.0.1:<free port> in TF_CONFIG, the TJ_* variables, TJ_PROGRESS_FILE and
TJ_TOKEN_FILE and TJ_TOKEN_VERIFIERS_FILE: a fresh job secret per run (<work-dir>/job-token,
mode 0600) and, derived from it, one credential per role in <work-dir>/credentials; each replica
gets its own role's. The coordinator gets TJ_COORDINATOR_GENERATION, higher at every start.
Bare command names are looked up in $TJ_BIN_DIR, next to tjctl, then on $PATH.
The work directory holds logs/<replica>.log, progress.json, status.json and checkpoints/;
run again with the same --work-dir (or --checkpoint-dir) to resume from its checkpoints.
Ctrl-C stops every replica (SIGTERM, grace period, SIGKILL); a second Ctrl-C kills at once.

Exit codes: 0 Succeeded, 1 Failed, 2 invalid manifest (nothing started),
            130 SIGINT, 143 SIGTERM (every process stopped).
See docs/tjctl-run.md.)";

std::string DefaultWorkDir(const std::string& job_name) {
  const std::string base = Cat("tj-runs/", job_name, "-",
                               absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::UTCTimeZone()));
  std::string candidate = base;
  for (int n = 2; fs::exists(candidate); ++n) candidate = Cat(base, "-", n);
  return candidate;
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

bool MakeDirs(const std::string& dir, std::FILE* err) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    std::fprintf(err, "tjctl run: cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
    return false;
  }
  return true;
}

// A file readable by the user only (the processes run as the user).
bool WritePrivateFile(const std::string& path, const std::string& content, std::FILE* err) {
  std::error_code ignored;
  fs::remove(path, ignored);  // an earlier run's, possibly with wider permissions
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  const bool written =
      fd >= 0 && write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  const int error = errno;
  if (fd >= 0) close(fd);
  if (!written) {
    std::fprintf(err, "tjctl run: cannot write %s: %s\n", path.c_str(), strerror(error));
  }
  return written;
}

// A fresh job secret for this run and the role credentials derived from it (job_roles.h).
bool WriteJobToken(const local::RunPaths& paths, std::FILE* err) {
  auto token = GenerateJobToken();
  if (!token.ok()) {
    std::fprintf(err, "tjctl run: %s\n", std::string(token.status().message()).c_str());
    return false;
  }
  if (!WritePrivateFile(paths.token_file, *token, err) || !MakeDirs(paths.credentials_dir, err)) {
    return false;
  }
  fs::permissions(paths.credentials_dir, fs::perms::owner_all, fs::perm_options::replace);
  for (const auto& [name, content] : JobCredentialFiles(*token)) {
    if (!WritePrivateFile(paths.credentials_dir + "/" + name, content, err)) return false;
  }
  return true;
}

// Written whole under another name, then renamed: Prometheus re-reads the file when it changes
// and must never see half of it.
bool WriteTargetsFile(const std::string& path, const std::string& content, std::FILE* err) {
  const std::string temporary = path + ".tmp";
  std::error_code ec;
  if (!MakeDirs(fs::path(path).parent_path().string(), err)) return false;
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << content;
    if (!out.flush()) {
      std::fprintf(err, "tjctl run: --metrics-targets: cannot write %s\n", temporary.c_str());
      return false;
    }
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    std::fprintf(err, "tjctl run: --metrics-targets: cannot write %s: %s\n", path.c_str(),
                 ec.message().c_str());
    return false;
  }
  return true;
}

}  // namespace

void AddRunCommand(CLI::App& app, RunOptions& options, int& exit_code) {
  CLI::App* run = app.add_subcommand("run", kRunDescription);
  run->add_option("file", options.file, "TrainingJob manifest (YAML or JSON)")->required();
  run->add_option("--work-dir", options.work_dir,
                  "where logs, progress, status and checkpoints go "
                  "(default: ./tj-runs/<job>-<UTC yyyymmdd-hhmmss>)");
  run->add_option("--status-file", options.status_file,
                  "where the JSON status is written (default: <work-dir>/status.json)");
  run->add_option("--checkpoint-dir", options.checkpoint_dir,
                  "checkpoint directory instead of <work-dir>/checkpoints, e.g. an earlier run's "
                  "to resume from it (only for jobs with spec.checkpoint)");
  run->add_flag("-q,--quiet", options.quiet, "print only the final result");
  run->add_flag("--tls", options.tls,
                "TLS on every channel of the job, with certificates made for this run "
                "(<work-dir>/tls, TJ_TLS_DIR)");
  run->add_option("--metrics-targets", options.metrics_targets,
                  "give every replica its own TJ_METRICS_ADDRESS (127.0.0.1:<free port>) and "
                  "write them to this file for Prometheus' file_sd_configs (labels namespace, "
                  "trainingjob, replica_type, replica_index, pod)");
  run->footer(kRunFooter);
  run->callback([&] { exit_code = RunJobLocally(options, stdout, stderr); });
}

int RunJobLocally(const RunOptions& options, std::FILE* out, std::FILE* err) {
  const v1alpha1::ValidationOptions validation{v1alpha1::ValidationTarget::kLocal};
  v1alpha1::CheckedTrainingJob checked = v1alpha1::CheckTrainingJobFile(options.file, validation);
  if (!checked.ok()) {
    for (const v1alpha1::FieldError& error : checked.errors) {
      std::fprintf(err, "%s\n", v1alpha1::FormatFieldError(options.file, error).c_str());
    }
    return kExitInvalid;
  }
  const v1alpha1::TrainingJob& job = *checked.job;

  local::RunPaths paths;
  paths.work_dir =
      Absolute(options.work_dir.empty() ? DefaultWorkDir(job.metadata.name) : options.work_dir);
  paths.logs_dir = paths.work_dir + "/logs";
  paths.progress_file = paths.work_dir + "/progress.json";
  paths.token_file = paths.work_dir + "/job-token";
  paths.credentials_dir = paths.work_dir + "/credentials";
  if (options.tls) paths.tls_dir = paths.work_dir + "/tls";
  if (job.spec.checkpoint.has_value()) {
    paths.checkpoint_dir = Absolute(options.checkpoint_dir.empty() ? paths.work_dir + "/checkpoints"
                                                                   : options.checkpoint_dir);
    // An s3://bucket/prefix location (coordinator/checkpoint/s3_location.h) is passed on as is;
    // its endpoint and credentials come from this environment, which every replica inherits.
    if (options.checkpoint_dir.starts_with("s3://")) paths.checkpoint_dir = options.checkpoint_dir;
  } else if (!options.checkpoint_dir.empty() && !options.quiet) {
    std::fprintf(err, "tjctl run: warning: the job has no spec.checkpoint; --checkpoint-dir is "
                      "ignored\n");
  }
  const std::string status_file =
      Absolute(options.status_file.empty() ? paths.work_dir + "/status.json" : options.status_file);

  const ReplicaAddresses addresses = local::PickLocalAddresses(job);
  const ReplicaAddresses metrics_addresses = options.metrics_targets.empty()
                                                 ? ReplicaAddresses{}
                                                 : local::PickLocalAddresses(job, addresses);
  local::LaunchPlan plan = local::PlanLocalLaunch(job, addresses, paths, metrics_addresses);
  if (!plan.ok()) {
    for (const v1alpha1::FieldError& error : plan.errors) {
      std::fprintf(err, "%s\n", v1alpha1::FormatFieldError(options.file, error).c_str());
    }
    return kExitInvalid;
  }
  if (!options.quiet) {
    for (const std::string& warning : plan.warnings) {
      std::fprintf(err, "%s: warning: %s\n", options.file.c_str(), warning.c_str());
    }
  }
  if (!MakeDirs(paths.logs_dir, err) ||
      (!paths.checkpoint_dir.empty() && !paths.checkpoint_dir.starts_with("s3://") &&
       !MakeDirs(paths.checkpoint_dir, err)) ||
      !MakeDirs(fs::path(status_file).parent_path().string(), err) || !WriteJobToken(paths, err)) {
    return kExitInvalid;
  }
  if (!options.metrics_targets.empty() &&
      !WriteTargetsFile(Absolute(options.metrics_targets),
                        local::PrometheusTargetsJson(job, metrics_addresses), err)) {
    return kExitInvalid;
  }
  if (!paths.tls_dir.empty()) {
    // Every replica listens and dials on 127.0.0.1: one certificate for that address serves all.
    if (absl::Status made = GenerateJobTls(paths.tls_dir, {"localhost"}, {"127.0.0.1"});
        !made.ok()) {
      std::fprintf(err, "tjctl run: %s\n", std::string(made.message()).c_str());
      return kExitInvalid;
    }
  }

  auto signals = local::TerminationSignals::Block();
  if (!signals.ok()) {
    std::fprintf(err, "tjctl run: %s\n", std::string(signals.status().message()).c_str());
    return kExitInvalid;
  }
  const local::DisplayMode mode = options.quiet              ? local::DisplayMode::kQuiet
                                  : isatty(fileno(out)) != 0 ? local::DisplayMode::kTerminal
                                                             : local::DisplayMode::kPlain;
  local::ProgressDisplay display(mode, out);
  if (!options.quiet) {
    std::fprintf(out, "tjctl run: job %s: 1 coordinator, %d PS, %d workers\n  work dir: %s\n",
                 job.metadata.name.c_str(), ReplicaCount(job.spec, ReplicaType::kPs),
                 ReplicaCount(job.spec, ReplicaType::kWorker), paths.work_dir.c_str());
    if (!paths.checkpoint_dir.empty()) {
      std::fprintf(out, "  checkpoints: %s\n", paths.checkpoint_dir.c_str());
    }
    std::fflush(out);
  }
  local::LocalJobOptions job_options;
  job_options.paths = paths;
  job_options.status_file = status_file;
  local::LocalJob local_job(job, std::move(plan), job_options, display, *signals);
  return local_job.Run();
}

}  // namespace tj
