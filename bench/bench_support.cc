#include "bench/bench_support.h"

#include <cstdio>

#include <filesystem>

#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <numeric>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"

namespace tj::bench {
namespace {

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string model = line.substr(colon + 1);
        model.erase(0, model.find_first_not_of(" \t"));
        return model;
      }
    }
  }
  return "unknown";
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerProcess>> WorkerProcess::Start(const std::string& binary,
                                                                    int task,
                                                                    const std::string& log_path,
                                                                    absl::Duration timeout) {
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("worker binary ", binary, " is not executable"));
  }
  const std::string log = log_path.empty() ? "/dev/null" : log_path;
  const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return absl::InternalError(absl::StrCat("cannot open worker log ", log));
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    close(log_fd);
    return absl::InternalError("pipe failed");
  }
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  const std::string task_arg = absl::StrCat(task);
  std::vector<char*> argv = {const_cast<char*>(binary.c_str()),   const_cast<char*>("--address"),
                             const_cast<char*>("127.0.0.1:0"),    const_cast<char*>("--task"),
                             const_cast<char*>(task_arg.c_str()), nullptr};
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return absl::InternalError("fork failed");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  close(log_fd);
  std::unique_ptr<WorkerProcess> worker(new WorkerProcess());
  worker->pid_ = pid;
  worker->stdout_fd_ = pipe_fds[0];
  std::string line;
  const absl::Time deadline = absl::Now() + timeout;
  while (line.find('\n') == std::string::npos) {
    pollfd p{worker->stdout_fd_, POLLIN, 0};
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (ms <= 0 || poll(&p, 1, ms) <= 0) {
      return absl::DeadlineExceededError(absl::StrCat(binary, " did not print LISTENING in time"));
    }
    char buf[256];
    const ssize_t n = read(worker->stdout_fd_, buf, sizeof(buf));
    if (n <= 0) return absl::UnavailableError(absl::StrCat(binary, " exited before listening"));
    line.append(buf, static_cast<size_t>(n));
  }
  constexpr std::string_view kPrefix = "LISTENING ";
  if (line.rfind(kPrefix, 0) != 0) {
    return absl::InternalError(absl::StrCat(binary, " printed '", line, "' instead of LISTENING"));
  }
  worker->address_ = line.substr(kPrefix.size(), line.find('\n') - kPrefix.size());
  return worker;
}

WorkerProcess::~WorkerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    bool exited = false;
    for (int i = 0; i < 500 && !exited; ++i) {
      exited = waitpid(pid_, &status, WNOHANG) == pid_;
      if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!exited) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

double WorkerProcess::CpuSeconds() const { return ProcessCpuSeconds(pid_); }

int64_t ProcStatusBytes(const std::string& pid, const std::string& field) {
  std::ifstream in("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with(field + ":")) continue;
    std::istringstream value(line.substr(field.size() + 1));
    int64_t kb = -1;
    value >> kb;
    return kb < 0 ? -1 : kb * 1024;
  }
  return -1;
}

bool ResetPeakRss(pid_t pid) {
  std::ofstream out("/proc/" + std::to_string(pid) + "/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

double ProcessCpuSeconds(pid_t pid) {
  // Fields 14 and 15 of /proc/PID/stat (utime, stime) in clock ticks; the command name in field 2
  // may contain spaces, so fields are counted from its closing parenthesis.
  const std::string stat = FirstLine(absl::StrCat("/proc/", pid, "/stat"));
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && (fields >> field); ++i) {
    if (i == 14 || i == 15) ticks += std::strtod(field.c_str(), nullptr);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::map<pid_t, ThreadSchedTimes> ThreadSchedStats(pid_t pid) {
  std::map<pid_t, ThreadSchedTimes> threads;
  std::error_code error;
  for (const auto& task :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"), error)) {
    std::istringstream fields(FirstLine(task.path().string() + "/schedstat"));
    double on_cpu = 0, waiting = 0;
    pid_t tid = 0;
    if (!absl::SimpleAtoi(task.path().filename().string(), &tid) || !(fields >> on_cpu >> waiting)) {
      continue;
    }
    threads[tid] = {on_cpu * 1e-9, waiting * 1e-9};
  }
  return threads;
}

ThreadSchedTimes BusiestThreadBetween(const std::map<pid_t, ThreadSchedTimes>& before,
                                      const std::map<pid_t, ThreadSchedTimes>& after) {
  ThreadSchedTimes busiest;
  for (const auto& [tid, now] : after) {
    ThreadSchedTimes delta = now;
    if (auto it = before.find(tid); it != before.end()) {
      delta.on_cpu_s -= it->second.on_cpu_s;
      delta.waiting_s -= it->second.waiting_s;
    }
    if (delta.on_cpu_s > busiest.on_cpu_s) busiest = delta;
  }
  return busiest;
}

double SelfCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

int64_t TcpOutSegments() {
  std::ifstream in("/proc/net/snmp");
  std::string header, values;
  while (std::getline(in, header)) {
    if (header.rfind("Tcp:", 0) != 0) continue;
    if (!std::getline(in, values)) break;
    std::istringstream names(header), numbers(values);
    std::string name, number;
    while ((names >> name) && (numbers >> number)) {
      if (name == "OutSegs") return std::strtoll(number.c_str(), nullptr, 10);
    }
  }
  return -1;
}

LatencySummary Summarize(std::vector<double> micros) {
  LatencySummary s;
  s.samples = micros.size();
  if (micros.empty()) return s;
  std::sort(micros.begin(), micros.end());
  auto rank = [&](double p) {
    const auto k = static_cast<size_t>(std::ceil(p * static_cast<double>(micros.size())));
    return micros[std::clamp<size_t>(k, 1, micros.size()) - 1];
  };
  s.p50_us = rank(0.50);
  s.p99_us = rank(0.99);
  s.mean_us =
      std::accumulate(micros.begin(), micros.end(), 0.0) / static_cast<double>(micros.size());
  s.min_us = micros.front();
  s.max_us = micros.back();
  return s;
}

nlohmann::json ToJson(const LatencySummary& s) {
  return {{"samples", s.samples}, {"p50_us", s.p50_us}, {"p99_us", s.p99_us},
          {"mean_us", s.mean_us}, {"min_us", s.min_us}, {"max_us", s.max_us}};
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string LoadAverage() {
  const std::string line = FirstLine("/proc/loadavg");
  std::istringstream in(line);
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return absl::StrCat(one, " ", five, " ", fifteen);
}

nlohmann::json MachineDescription() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int nproc = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (sched_getaffinity(0, sizeof(set), &set) == 0) nproc = CPU_COUNT(&set);
  utsname uts{};
  uname(&uts);
  char date[64] = {};
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return {{"nproc", nproc},
          {"cpu_model", CpuModel()},
          {"kernel", absl::StrCat(uts.sysname, " ", uts.release, " ", uts.machine)},
          {"date", date},
          {"loadavg_at_start", LoadAverage()},
          {"grpc_version", grpc::Version()}};
}

bool TensorFlowImportable(std::string* note) {
  // bench/tf/setup.sh installs TensorFlow in its own venv; the system python3 is the fallback.
  const char* home = std::getenv("HOME");
  const std::string venv_python =
      absl::StrCat(home != nullptr ? home : "", "/.cache/trainingjob-operator/tf-venv/bin/python");
  const std::string python = access(venv_python.c_str(), X_OK) == 0 ? venv_python : "python3";
  const int status =
      std::system(absl::StrCat(python, " -c 'import tensorflow' >/dev/null 2>&1").c_str());
  if (status == 0) {
    *note = absl::StrCat("tensorflow is importable by ", python);
    return true;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    *note = "python3 not found";
  } else {
    *note = "tensorflow not installed: run bench/tf/setup.sh";
  }
  return false;
}

std::string FindOnPath(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

int PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

namespace {

// fork + execv of `binary` with `argv`; stdin from /dev/null, stdout to `out_fd`, stderr to
// `err_fd` (either may be -1: /dev/null). Everything is prepared before fork.
absl::StatusOr<pid_t> Spawn(const std::string& binary, const std::vector<std::string>& args,
                            int out_fd, int err_fd) {
  const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) return absl::InternalError("cannot open /dev/null");
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(null_fd);
    return absl::InternalError("fork failed");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    dup2(null_fd, STDIN_FILENO);
    dup2(out_fd >= 0 ? out_fd : null_fd, STDOUT_FILENO);
    dup2(err_fd >= 0 ? err_fd : null_fd, STDERR_FILENO);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(null_fd);
  return pid;
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv, bool capture_stderr,
                                         absl::Duration timeout) {
  if (argv.empty()) return absl::InvalidArgumentError("RunCommand: empty command");
  const std::string binary = FindOnPath(argv[0]);
  if (binary.empty()) return absl::NotFoundError(absl::StrCat(argv[0], " not found on PATH"));
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  const auto start = std::chrono::steady_clock::now();
  auto pid = Spawn(binary, argv, pipe_fds[1], capture_stderr ? pipe_fds[1] : -1);
  close(pipe_fds[1]);
  if (!pid.ok()) {
    close(pipe_fds[0]);
    return pid.status();
  }
  CommandResult result;
  const absl::Time deadline = absl::Now() + timeout;
  bool timed_out = false;
  while (true) {
    pollfd p{pipe_fds[0], POLLIN, 0};
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (ms <= 0 || poll(&p, 1, ms) <= 0) {
      timed_out = true;
      break;
    }
    char buf[4096];
    const ssize_t n = read(pipe_fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    result.output.append(buf, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  if (timed_out) kill(*pid, SIGKILL);
  int status = 0;
  waitpid(*pid, &status, 0);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.exit_code = ExitCode(status);
  if (timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(argv[0], " did not finish within ", absl::FormatDuration(timeout)));
  }
  return result;
}

absl::StatusOr<std::unique_ptr<BackgroundCommand>> BackgroundCommand::Start(
    const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("BackgroundCommand: empty command");
  const std::string binary = FindOnPath(argv[0]);
  if (binary.empty()) return absl::NotFoundError(absl::StrCat(argv[0], " not found on PATH"));
  auto pid = Spawn(binary, argv, -1, -1);
  if (!pid.ok()) return pid.status();
  std::unique_ptr<BackgroundCommand> command(new BackgroundCommand());
  command->pid_ = *pid;
  return command;
}

bool BackgroundCommand::WaitForExit(absl::Duration timeout) {
  if (pid_ <= 0) return true;
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  while (true) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return true;
    }
    if (absl::Now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

BackgroundCommand::~BackgroundCommand() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

bool WriteJsonFile(const std::string& path, const nlohmann::json& json, const char* program) {
  std::error_code ec;
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  std::ofstream file(path);
  file << json.dump(2) << "\n";
  if (!file) {
    std::fprintf(stderr, "%s: cannot write %s\n", program, path.c_str());
    return false;
  }
  std::printf("wrote %s\n", path.c_str());
  return true;
}

}  // namespace tj::bench
