#include "bench/baselines.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/strings/str_cat.h"
#include "bench/bench_support.h"

namespace tj::bench {

using json = nlohmann::json;

IperfResult RunIperf(int seconds) {
  IperfResult result;
  if (FindOnPath("iperf3").empty()) {
    result.note = "iperf3 not installed (Debian package iperf3; scripts/install-deps.sh)";
    return result;
  }
  const int port = PickFreePort();
  if (port <= 0) {
    result.note = "no free port for the iperf3 server";
    return result;
  }
  const std::string port_arg = absl::StrCat(port);
  auto server = BackgroundCommand::Start({"iperf3", "-s", "-1", "-p", port_arg});
  if (!server.ok()) {
    result.note = absl::StrCat("iperf3 server: ", server.status().message());
    return result;
  }
  // The server needs a moment to listen; the client fails fast until it does.
  std::string last_error;
  for (int attempt = 0; attempt < 50; ++attempt) {
    auto client =
        RunCommand({"iperf3", "-c", "127.0.0.1", "-p", port_arg, "-t", absl::StrCat(seconds), "-J"},
                   /*capture_stderr=*/false, absl::Seconds(seconds + 30));
    if (!client.ok()) {
      last_error = std::string(client.status().message());
      break;
    }
    const json out = json::parse(client->output, nullptr, /*allow_exceptions=*/false);
    if (client->exit_code == 0 && !out.is_discarded() && out.contains("end") &&
        out["end"].contains("sum_received") &&
        out["end"]["sum_received"].contains("bits_per_second")) {
      result.available = true;
      result.bits_per_second = out["end"]["sum_received"]["bits_per_second"].get<double>();
      (*server)->WaitForExit(absl::Seconds(5));
      return result;
    }
    last_error = !out.is_discarded() && out.contains("error")
                     ? out["error"].get<std::string>()
                     : absl::StrCat("exit ", client->exit_code);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  result.note = absl::StrCat("iperf3 failed: ", last_error);
  return result;
}

void DropFromPageCache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

namespace {

absl::StatusOr<double> RunDd(const std::vector<std::string>& argv, const char* what) {
  auto r = RunCommand(argv, /*capture_stderr=*/true);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::InternalError(absl::StrCat("dd ", what, " exited ", r->exit_code, ": ", r->output));
  }
  return r->seconds;
}

}  // namespace

absl::StatusOr<double> DdWrite(const std::string& path, int64_t mib) {
  return RunDd({"dd", "if=/dev/zero", "of=" + path, "bs=1M", absl::StrCat("count=", mib),
                "conv=fsync"},
               "write");
}

absl::StatusOr<double> DdCopy(const std::string& from, const std::string& to) {
  return RunDd({"dd", "if=" + from, "of=" + to, "bs=1M", "conv=fsync"}, "write");
}

absl::StatusOr<double> DdRead(const std::string& path) {
  return RunDd({"dd", "if=" + path, "of=/dev/null", "bs=1M"}, "read");
}

}  // namespace tj::bench
