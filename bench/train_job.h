// A tj-train job of real processes on 127.0.0.1, started the way the operator and `tjctl run`
// start one: M PS (one by default), N workers and the coordinator ("chief"), each a `tj-train` with the TF_CONFIG,
// TJ_CHECKPOINT_DIR and TJ_PROGRESS_FILE it would get (as tests/trainer/train/train_cluster.h
// does), in a fresh directory. Shared by the benchmarks that measure whole jobs (recovery,
// goodput). Every process dies with the thread that started it (tjctl/local/process.h), so start
// them all from one long-lived thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tjctl/local/process.h"

namespace tj::bench {

// What the coordinator's progress file (TJ_PROGRESS_FILE) says.
struct TrainProgress {
  std::string state;
  int64_t step = -1;
  std::optional<int64_t> last_checkpoint_step;
  std::optional<int64_t> restored_from_step;
};

struct TrainJobOptions {
  std::string train_binary;
  std::string parent_dir = "/var/tmp";
  std::string name;  // the job's directory is <parent_dir>/<name>-XXXXXX
  int workers = 2;
  int num_ps = 1;
  bool keep = false;  // keep the directory (logs, checkpoints, progress) afterwards
};

class TrainJob {
 public:
  // A fresh directory; ports picked now; nothing started.
  static absl::StatusOr<std::unique_ptr<TrainJob>> Create(const TrainJobOptions& options);
  ~TrainJob();  // SIGKILLs every process; removes the directory unless `keep`
  TrainJob(const TrainJob&) = delete;
  TrainJob& operator=(const TrainJob&) = delete;

  // Added to every process's environment from the next start on.
  std::map<std::string, std::string>& env() { return env_; }
  const std::string& dir() const { return dir_; }
  int workers() const { return static_cast<int>(workers_.size()); }
  const std::string& chief_address() const { return chief_; }
  const std::string& worker_address(int i) const { return workers_[static_cast<size_t>(i)]; }
  std::string progress_path() const { return dir_ + "/progress.json"; }
  // Every process's stdout and stderr, appended across restarts: <dir>/<name>.log.
  std::string log_path(const std::string& name) const { return dir_ + "/" + name + ".log"; }
  static std::string WorkerName(int i);  // "worker-<i>"
  static std::string PsName(int i);      // "ps-<i>"
  int num_ps() const { return static_cast<int>(ps_.size()); }

  // Every PS and every worker (processes "ps-<i>", "worker-<i>").
  absl::Status StartServers();
  // Every PS.
  absl::Status StartPs();
  // (Re)starts PS task i at its address.
  absl::Status StartPs(int i);
  // (Re)starts worker i at its address: a replacement pod, same TF_CONFIG.
  absl::Status StartWorker(int i);
  absl::Status StartChief(const std::vector<std::string>& args);

  pid_t pid(const std::string& name) const;  // -1 when not started
  // SIGKILL (a lost pod), reaped.
  void Kill(const std::string& name);
  // Sends `signal` to the process group of `name` (a container's processes) without waiting.
  bool Signal(const std::string& name, int signal);
  // Exit code (128 + N for signal N) if `name` exits within `timeout` (zero: just check); reaped.
  std::optional<int> WaitForExit(const std::string& name, absl::Duration timeout);

  std::optional<TrainProgress> ReadProgress() const;
  std::string Log(const std::string& name) const;
  // The last `lines` lines of a log, for error messages.
  std::string LogTail(const std::string& name, size_t lines = 15) const;

 private:
  explicit TrainJob(const TrainJobOptions& options) : options_(options) {}
  std::string TfConfig(const std::string& type, int index) const;
  absl::Status Start(const std::string& name, const std::string& type, int index,
                     const std::vector<std::string>& args);

  TrainJobOptions options_;
  std::string dir_;
  std::string chief_;
  std::vector<std::string> ps_;
  std::vector<std::string> workers_;
  std::map<std::string, std::string> env_;
  std::map<std::string, local::ChildProcess> processes_;
};

// Polls the progress file (every millisecond: it is a few hundred bytes, atomically replaced) until
// `done` holds; the time it was first seen to hold and that progress.
struct SeenProgress {
  std::chrono::steady_clock::time_point at;
  TrainProgress progress;
};
absl::StatusOr<SeenProgress> WaitForProgress(const TrainJob& job,
                                             const std::function<bool(const TrainProgress&)>& done,
                                             absl::Duration timeout, const std::string& what);

// Whether a job can start: `train_binary` executable and the digits CSV at `data`; prints what is
// missing (naming `program`) to stderr.
bool TrainJobInputsPresent(const std::string& program, const std::string& train_binary,
                           const std::string& data);

// The first line of `log` (spdlog "[%Y-%m-%d %H:%M:%S.%e]", local time) containing `needle`
// stamped at or after `after`, and its stamp (millisecond resolution).
struct LogLine {
  absl::Time at;
  std::string text;
};
std::optional<LogLine> LogLineAfter(const std::string& log, const std::string& needle,
                                    absl::Time after);
// The stamp of that line.
std::optional<absl::Time> LogTimeOf(const std::string& log, const std::string& needle,
                                    absl::Time after);

}  // namespace tj::bench
