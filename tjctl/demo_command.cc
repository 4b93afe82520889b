#include "tjctl/demo_command.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/resolver/tf_config_cluster_resolver.h"
#include "tjctl/local/binaries.h"
#include "tjctl/local/process.h"

namespace tj {
namespace {

using local::ChildProcess;

// TF_CONFIG for one task of the local cluster, in TensorFlow's format.
std::string TfConfig(const std::string& chief, const std::vector<std::string>& ps,
                     const std::vector<std::string>& workers, const std::string& type, int index) {
  auto quoted = [](const std::vector<std::string>& v) {
    std::vector<std::string> q;
    for (const auto& s : v) q.push_back(absl::StrCat("\"", s, "\""));
    return absl::StrJoin(q, ",");
  };
  return absl::StrCat(R"({"cluster":{"chief":[")", chief, R"("],"ps":[)", quoted(ps), R"(],"worker":[)", quoted(workers),
                      R"(]},"task":{"type":")", type, R"(","index":)", index, "}}");
}

class LocalDemoCluster {
 public:
  ~LocalDemoCluster() { Stop(); }

  absl::Status Start(int num_workers, const std::string& worker_bin, const std::string& ps_bin) {
    worker_bin_ = worker_bin;
    // The coordinator (this process) is the chief; it serves nothing yet, but TF_CONFIG names it.
    chief_ = absl::StrCat("127.0.0.1:", local::PickFreePort());
    ps_.push_back(absl::StrCat("127.0.0.1:", local::PickFreePort()));
    for (int i = 0; i < num_workers; ++i) {
      workers_.push_back(absl::StrCat("127.0.0.1:", local::PickFreePort()));
    }
    auto ps = ChildProcess::StartAndWaitListening(
        ps_bin, {"--address", ps_[0], "--task", "0"},
        {{"TF_CONFIG", TfConfig(chief_, ps_, workers_, "ps", 0)}});
    if (!ps.ok()) return ps.status();
    ps_process_.emplace(std::move(*ps));
    std::printf("  ps 0      pid %d  %s\n", ps_process_->pid(), ps_[0].c_str());
    worker_processes_.resize(static_cast<size_t>(num_workers));
    for (int i = 0; i < num_workers; ++i) {
      if (auto s = StartWorker(i); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status StartWorker(int i) {
    auto w = ChildProcess::StartAndWaitListening(worker_bin_, {},
                                                 {{"TF_CONFIG", TfConfig(chief_, ps_, workers_, "worker", i)}});
    if (!w.ok()) return w.status();
    worker_processes_[static_cast<size_t>(i)].emplace(std::move(*w));
    std::printf("  worker %d  pid %d  %s\n", i, worker_processes_[static_cast<size_t>(i)]->pid(),
                workers_[static_cast<size_t>(i)].c_str());
    return absl::OkStatus();
  }

  void KillWorker(int i) { worker_processes_[static_cast<size_t>(i)]->KillAndWait(SIGKILL); }

  void Stop() {
    for (auto& w : worker_processes_) {
      if (w && w->running()) w->Terminate(absl::Seconds(5));
    }
    if (ps_process_ && ps_process_->running()) ps_process_->Terminate(absl::Seconds(5));
  }

  std::string chief_tf_config() const { return TfConfig(chief_, ps_, workers_, "chief", 0); }

 private:
  std::string worker_bin_;
  std::string chief_;
  std::vector<std::string> ps_, workers_;
  std::optional<ChildProcess> ps_process_;
  std::vector<std::optional<ChildProcess>> worker_processes_;
};

}  // namespace

void AddDemoCommand(CLI::App& app, DemoOptions& options, int& exit_code) {
  CLI::App* demo = app.add_subcommand(
      "demo", "run a local cluster of worker and PS processes driven by the coordinator");
  demo->add_option("--workers", options.workers, "worker processes")->check(CLI::Range(1, 64));
  demo->add_option("--closures", options.closures, "closures to schedule")->check(CLI::Range(1, 10'000'000));
  demo->add_option("--samples", options.samples_per_closure, "Monte Carlo samples per closure")
      ->check(CLI::Range(1, 100'000'000));
  demo->add_flag("!--no-fault", options.inject_fault, "do not kill and restart a worker midway");
  demo->callback([&] { exit_code = RunDemo(options); });
}

int RunDemo(const DemoOptions& options) {
  auto worker_bin = local::FindBinary("tj-worker");
  auto ps_bin = local::FindBinary("tj-ps");
  if (!worker_bin.ok() || !ps_bin.ok()) {
    std::fprintf(stderr, "tjctl demo: %s\n",
                 (!worker_bin.ok() ? worker_bin.status() : ps_bin.status()).ToString().c_str());
    return 1;
  }
  std::printf("Starting a local cluster: 1 parameter server, %d workers\n", options.workers);
  LocalDemoCluster cluster;
  if (auto s = cluster.Start(options.workers, *worker_bin, *ps_bin); !s.ok()) {
    std::fprintf(stderr, "tjctl demo: %s\n", s.ToString().c_str());
    return 1;
  }
  // The coordinator finds its workers the way a TensorFlow chief does: from TF_CONFIG.
  auto resolver = TFConfigClusterResolver::FromJson(cluster.chief_tf_config());
  if (!resolver.ok()) {
    std::fprintf(stderr, "tjctl demo: %s\n", resolver.status().ToString().c_str());
    return 1;
  }
  CoordinatorOptions coordinator_options;
  coordinator_options.worker_recovery_timeout = absl::Seconds(60);
  auto coordinator = ClusterCoordinator::Create(**resolver, coordinator_options);
  if (!coordinator.ok()) {
    std::fprintf(stderr, "tjctl demo: %s\n", coordinator.status().ToString().c_str());
    return 1;
  }
  auto counters = (*coordinator)->CreatePerWorkerResource("counter");
  if (!counters.ok()) return 1;
  std::printf("Created a per-worker counter on every worker\n");
  std::printf("Scheduling %d closures of %d Monte Carlo samples (estimating pi), each also adding 1 "
              "to the PS variable \"steps\"\n",
              options.closures, options.samples_per_closure);

  const int victim = options.workers > 1 ? 1 : 0;
  constexpr int kPhases = 5;
  std::vector<RemoteValue> hits;
  int scheduled_steps = 0;
  const absl::Time start = absl::Now();
  auto elapsed = [&] { return absl::ToDoubleSeconds(absl::Now() - start); };
  auto finished = [&] {
    int64_t done = 0, sum = 0;
    for (auto& v : hits) {
      if (v.status() != RemoteValueStatus::kReady) continue;
      if (auto x = v.Fetch(); x.ok()) {
        ++done;
        sum += x->int_value();
      }
    }
    return std::pair<int64_t, int64_t>(done, sum);
  };
  // Five phases, each joined before the next: worker `victim` is killed in the middle of phase 2 with
  // closures in flight, and restarted before phase 4.
  for (int phase = 0; phase < kPhases; ++phase) {
    const int begin = options.closures * phase / kPhases, end = options.closures * (phase + 1) / kPhases;
    if (options.inject_fault && phase == 3) {
      std::printf("[%6.2fs] Restarting worker %d: the coordinator rebuilds its counter, then sends work\n",
                  elapsed(), victim);
      if (auto s = cluster.StartWorker(victim); !s.ok()) {
        std::fprintf(stderr, "tjctl demo: %s\n", s.ToString().c_str());
        return 1;
      }
    }
    for (int i = begin; i < end; ++i) {
      auto h = (*coordinator)->Schedule("pi_samples", {i, options.samples_per_closure});
      auto step = (*coordinator)->Schedule("ps_add", {0, "steps", 1.0});
      auto tick = (*coordinator)->Schedule("counter_next", {*counters});
      for (const auto* r : {&h, &step, &tick}) {
        if (!r->ok()) {
          std::fprintf(stderr, "tjctl demo: %s\n", r->status().ToString().c_str());
          return 1;
        }
      }
      hits.push_back(*h);
      ++scheduled_steps;
    }
    if (options.inject_fault && phase == 1) {
      const int64_t target = begin + (end - begin) / 4;
      while (finished().first < target) absl::SleepFor(absl::Milliseconds(5));  // progress display
      std::printf("[%6.2fs] Killing worker %d with SIGKILL while it runs closures\n", elapsed(),
                  victim);
      cluster.KillWorker(victim);
    }
    if (absl::Status joined = (*coordinator)->Join(); !joined.ok()) {
      std::fprintf(stderr, "tjctl demo: %s\n", joined.ToString().c_str());
      return 1;
    }
    const auto [done, sum] = finished();
    std::printf("[%6.2fs] phase %d/%d joined: %ld closures finished, pi ~ %.5f\n", elapsed(),
                phase + 1, kPhases, static_cast<long>(done),
                4.0 * static_cast<double>(sum) / (static_cast<double>(done) * options.samples_per_closure));
  }
  auto all = Fetch(hits);
  int64_t sum = 0;
  for (const auto& v : *all) sum += v.int_value();
  const double pi = 4.0 * static_cast<double>(sum) /
                    (static_cast<double>(all->size()) * options.samples_per_closure);
  auto steps = (*coordinator)->Schedule("ps_read", {0, "steps"});
  const double steps_value = steps.ok() && steps->Fetch().ok() ? steps->Fetch()->double_value() : -1;
  std::printf("[%6.2fs] All closures finished. pi ~ %.5f (error %.5f)\n",
              absl::ToDoubleSeconds(absl::Now() - start), pi, std::abs(pi - M_PI));
  std::printf("PS variable \"steps\" = %.0f (scheduled %d; at-least-once: >= scheduled)\n",
              steps_value, scheduled_steps);
  std::printf("%-7s %-22s %-11s %10s %9s %9s\n", "worker", "address", "state", "completed",
              "failures", "put back");
  for (const auto& w : (*coordinator)->Workers()) {
    std::printf("%-7d %-22s %-11s %10ld %9ld %9ld\n", w.index, w.address.c_str(),
                std::string(WorkerStateName(w.state)).c_str(), static_cast<long>(w.completed),
                static_cast<long>(w.failures), static_cast<long>(w.put_back));
  }
  coordinator->reset();
  cluster.Stop();
  return steps_value >= scheduled_steps ? 0 : 1;
}

}  // namespace tj
