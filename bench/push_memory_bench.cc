// tj-bench-push-memory: what many workers pushing at once cost a parameter server's memory. One
// real tj-ps per round (TJ_PS_PUSH_WINDOW_BYTES set), N clients each on its own connection (as
// workers are) push a dense delta M times at once; the PS's peak resident memory (VmHWM) before
// and after is the figure, and its growth less the window is what the window does not bound.
// With --baseline-ps-binary the rounds alternate between two tj-ps builds in the same run, so
// that both see the same machine load. Every push must be applied exactly once (checked).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/bench_support.h"
#include "coordinator/base/values.h"
#include "coordinator/ps/ps_client.h"
#include "tj/v1/ps.pb.h"

#ifndef TJ_PS_BINARY
#define TJ_PS_BINARY ""
#endif

namespace tj::bench {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

struct Config {
  std::string ps_binary = TJ_PS_BINARY;
  std::string baseline_ps_binary;
  std::string json_path;
  int workers = 16;
  int pushes = 8;
  int64_t push_mib = 4;
  int64_t window_mib = 8;
  int rounds = 2;
  bool smoke = false;
};

struct Round {
  std::string binary;
  int64_t peak_growth = 0;  // bytes
  double seconds = 0;
};

absl::StatusOr<Round> RunRound(const Config& config, const std::string& binary) {
  setenv("TJ_PS_PUSH_WINDOW_BYTES", std::to_string(config.window_mib * kMiB).c_str(), 1);
  auto process = WorkerProcess::Start(binary, 0, "/dev/null");
  unsetenv("TJ_PS_PUSH_WINDOW_BYTES");
  if (!process.ok()) return process.status();
  const pid_t pid = (*process)->pid();
  const std::string address = (*process)->address();
  PsClientOptions options;
  options.rpc_timeout = absl::Seconds(120);
  std::shared_ptr<PsClient> creator = PsClient::Connect(address, 0, options);
  if (auto health = creator->WaitForHealth(absl::Seconds(30)); !health.ok()) {
    return health.status();
  }
  const int64_t floats = config.push_mib * kMiB / static_cast<int64_t>(sizeof(float));
  v1::CreateVariablesRequest create;
  v1::VariableSpec* spec = create.add_variables();
  spec->set_name("w");
  spec->add_shape(floats);
  if (absl::Status created = creator->Create(create); !created.ok()) return created;
  std::vector<std::shared_ptr<PsClient>> workers;
  for (int w = 0; w < config.workers; ++w) {
    workers.push_back(PsClient::Connect(address, 0, options));
    if (auto pulled = workers.back()->Pull({"w"}); !pulled.ok()) return pulled.status();
  }
  // One push first, so that the update's buffer and gRPC's own are already counted.
  if (absl::Status pushed =
          creator->Push({"w"}, {FloatTensor(std::vector<float>(floats, 0.0f), {floats})});
      !pushed.ok()) {
    return pushed;
  }
  const int64_t peak_before = ProcStatusBytes(std::to_string(pid), "VmHWM");
  std::vector<absl::Status> failed(static_cast<size_t>(config.workers));
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int w = 0; w < config.workers; ++w) {
    threads.emplace_back([&, w] {
      const v1::Tensor delta = FloatTensor(std::vector<float>(floats, 1.0f), {floats});
      for (int i = 0; i < config.pushes && failed[static_cast<size_t>(w)].ok(); ++i) {
        failed[static_cast<size_t>(w)] = workers[static_cast<size_t>(w)]->Push({"w"}, {delta});
      }
    });
  }
  for (std::thread& t : threads) t.join();
  Round round;
  round.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  round.binary = binary;
  round.peak_growth = ProcStatusBytes(std::to_string(pid), "VmHWM") - peak_before;
  for (const absl::Status& status : failed) {
    if (!status.ok()) return status;
  }
  auto values = creator->Pull({"w"});
  if (!values.ok()) return values.status();
  const float expected = static_cast<float>(config.workers * config.pushes);
  const auto* data = reinterpret_cast<const float*>((*values)[0].data().data());
  for (int64_t i = 0; i < floats; i += 4099) {
    if (data[i] != expected) {
      return absl::InternalError(absl::StrCat("element ", i, " is ", data[i], ", not ", expected,
                                              ": a push was lost or applied twice"));
    }
  }
  return round;
}

int Run(const Config& config) {
  std::vector<std::string> binaries = {config.ps_binary};
  if (!config.baseline_ps_binary.empty()) binaries.insert(binaries.begin(), config.baseline_ps_binary);
  std::printf("PS push memory (tj-bench-push-memory): %d workers x %d pushes of %lld MiB at once, "
              "window %lld MiB, load %s\n",
              config.workers, config.pushes, static_cast<long long>(config.push_mib),
              static_cast<long long>(config.window_mib), LoadAverage().c_str());
  nlohmann::json rounds = nlohmann::json::array();
  for (int r = 0; r < config.rounds; ++r) {
    for (const std::string& binary : binaries) {
      auto round = RunRound(config, binary);
      if (!round.ok()) {
        std::fprintf(stderr, "tj-bench-push-memory: %s: %s\n", binary.c_str(),
                     round.status().ToString().c_str());
        return 1;
      }
      const double growth_mib = static_cast<double>(round->peak_growth) / kMiB;
      const double beyond = growth_mib - static_cast<double>(config.window_mib);
      std::printf("  %-8s %s: PS peak +%.1f MiB, %.2f MiB per worker beyond the window, %.2f s, "
                  "load %s\n",
                  binary == config.ps_binary ? "this" : "baseline", binary.c_str(), growth_mib,
                  beyond / config.workers, round->seconds, LoadAverage().c_str());
      std::fflush(stdout);
      rounds.push_back({{"binary", binary},
                        {"baseline", binary != config.ps_binary},
                        {"peak_growth_bytes", round->peak_growth},
                        {"seconds", round->seconds},
                        {"load", LoadAverage()}});
    }
  }
  if (!config.json_path.empty()) {
    nlohmann::json out = {{"machine", MachineDescription()},
                          {"workers", config.workers},
                          {"pushes", config.pushes},
                          {"push_bytes", config.push_mib * kMiB},
                          {"window_bytes", config.window_mib * kMiB},
                          {"rounds", rounds}};
    if (!WriteJsonFile(config.json_path, out, "tj-bench-push-memory")) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tj::bench

int main(int argc, char** argv) {
  tj::bench::Config config;
  CLI::App app{"tj-bench-push-memory: a PS's peak memory while many workers push at once"};
  app.add_option("--ps-binary", config.ps_binary, "tj-ps to measure")->capture_default_str();
  app.add_option("--baseline-ps-binary", config.baseline_ps_binary,
                 "another tj-ps, measured in alternation with --ps-binary");
  app.add_option("--workers", config.workers, "clients, each on its own connection")
      ->capture_default_str();
  app.add_option("--pushes", config.pushes, "pushes per worker")->capture_default_str();
  app.add_option("--push-mib", config.push_mib, "size of each push")->capture_default_str();
  app.add_option("--window-mib", config.window_mib, "TJ_PS_PUSH_WINDOW_BYTES, in MiB")
      ->capture_default_str();
  app.add_option("--rounds", config.rounds, "rounds (each binary once per round)")
      ->capture_default_str();
  app.add_option("--json", config.json_path, "write the results as JSON to this path");
  app.add_flag("--quick,--smoke", config.smoke,
               "seconds: 4 workers, 2 pushes, 1 round; checks that the benchmark runs");
  CLI11_PARSE(app, argc, argv);
  if (config.smoke) {
    config.workers = 4;
    config.pushes = 2;
    config.rounds = 1;
  }
  if (config.workers < 1 || config.pushes < 1 || config.push_mib < 1 || config.rounds < 1 ||
      config.window_mib < 0 || config.ps_binary.empty()) {
    std::fprintf(stderr, "tj-bench-push-memory: counts and sizes must be positive\n");
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);
  return tj::bench::Run(config);
}
