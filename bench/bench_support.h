// What every benchmark in bench/ shares: real worker processes on 127.0.0.1 (with their CPU time
// read from /proc), latency summaries, and a description of the machine a run was measured on.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tj::bench {

// A `tj-worker` process listening on 127.0.0.1 at a port it chose. Its stderr (logs) goes to
// `log_path` (or /dev/null when empty), so the benchmark's table stays readable. It dies with the
// benchmark (PR_SET_PDEATHSIG) even if the benchmark crashes.
class WorkerProcess {
 public:
  static absl::StatusOr<std::unique_ptr<WorkerProcess>> Start(
      const std::string& binary, int task, const std::string& log_path,
      absl::Duration timeout = absl::Seconds(30));
  ~WorkerProcess();  // SIGTERM, then SIGKILL if it has not exited within 5 s
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  // User + system CPU time the process has used so far (10 ms resolution).
  double CpuSeconds() const;

 private:
  WorkerProcess() = default;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string address_;
};

// User + system CPU time process `pid` has used so far (10 ms resolution); 0 if it is gone.
double ProcessCpuSeconds(pid_t pid);
// A field of /proc/<pid>/status in bytes ("VmRSS", "VmHWM"; pid "self" for this process); -1 if
// unreadable.
int64_t ProcStatusBytes(const std::string& pid, const std::string& field);
// Sets the VmHWM of `pid` back to its VmRSS (writes 5 to /proc/PID/clear_refs), so that the next
// VmHWM is the peak of what runs meanwhile; false if the kernel refused.
bool ResetPeakRss(pid_t pid);
// Per thread of `pid` (by thread id): seconds on a CPU and seconds runnable but waiting for one
// (the first two fields of /proc/PID/task/TID/schedstat): what a loaded machine adds to a thread's
// wall clock.
struct ThreadSchedTimes {
  double on_cpu_s = 0;
  double waiting_s = 0;
};
std::map<pid_t, ThreadSchedTimes> ThreadSchedStats(pid_t pid);
// The thread that ran the most between two ThreadSchedStats snapshots: its CPU and wait seconds.
ThreadSchedTimes BusiestThreadBetween(const std::map<pid_t, ThreadSchedTimes>& before,
                                      const std::map<pid_t, ThreadSchedTimes>& after);

// User + system CPU time of this process (every thread).
double SelfCpuSeconds();
// CPU time of the calling thread alone.
double ThreadCpuSeconds();

// TCP segments sent in this network namespace so far (OutSegs of /proc/net/snmp). Every process of
// a benchmark talks over loopback, so the difference across a measurement, per operation, says how
// well messages are batched (a ping-pong costs at least 2 segments; anything else on the host's
// namespace adds noise, hence "indicative").
int64_t TcpOutSegments();

struct LatencySummary {
  size_t samples = 0;
  double p50_us = 0;
  double p99_us = 0;
  double mean_us = 0;
  double min_us = 0;
  double max_us = 0;
};
// Nearest-rank percentiles of latencies in microseconds.
LatencySummary Summarize(std::vector<double> micros);
nlohmann::json ToJson(const LatencySummary& s);

// nproc (CPUs this process may run on), the CPU model from /proc/cpuinfo, the kernel, the date
// (UTC), the load average, the gRPC version.
nlohmann::json MachineDescription();

// Writes `json` (indented) to `path`, creating its directory; prints "wrote <path>", or an error
// naming `program` and the path. False when it could not be written.
bool WriteJsonFile(const std::string& path, const nlohmann::json& json, const char* program);
std::string LoadAverage();

// Whether `python3 -c "import tensorflow"` works; `note` says why not.
bool TensorFlowImportable(std::string* note);

double Median(std::vector<double> values);

// The full path of `name` if it is an executable on PATH, else empty.
std::string FindOnPath(const std::string& name);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and closed).
int PickFreePort();

// A command's exit and output (stdout, and stderr when asked), and how long it took.
struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed by one
  std::string output;
  double seconds = 0;
};
// Runs argv[0] (looked up on PATH) with argv and waits for it, killing it after `timeout`. Its
// stdin is /dev/null; stderr is captured with stdout or discarded.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         bool capture_stderr = false,
                                         absl::Duration timeout = absl::Minutes(10));

// A helper process running in the background (a baseline's server), its output discarded. It dies
// with the benchmark (PR_SET_PDEATHSIG).
class BackgroundCommand {
 public:
  static absl::StatusOr<std::unique_ptr<BackgroundCommand>> Start(
      const std::vector<std::string>& argv);
  ~BackgroundCommand();  // SIGKILLs and reaps it if still running
  BackgroundCommand(const BackgroundCommand&) = delete;
  BackgroundCommand& operator=(const BackgroundCommand&) = delete;

  // Whether it exited within `timeout` (then reaped).
  bool WaitForExit(absl::Duration timeout);

 private:
  BackgroundCommand() = default;
  pid_t pid_ = -1;
};

}  // namespace tj::bench
