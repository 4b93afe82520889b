// tj-bench-job-metrics: what the operator's per-job gauges (tj_trainingjob_*, JobMetrics) cost
// with many TrainingJobs. N jobs with a full status (as the operator writes it for a running job
// after a restart), held as the informer cache holds them; measured on one thread:
//   - refresh, nothing changed: JobMetrics::Refresh over the same objects again;
//   - refresh, 1 % changed: the same with 1 % of the jobs replaced by a new version (a status
//     write: new resourceVersion, new step);
//   - baseline, in the same run on the same registry: one Render of the exposition text, the cost
//     every scrape pays whatever the refresh does.
// Prints a table and, with --json, writes the figures and the machine description.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "bench/bench_support.h"
#include "coordinator/metrics/metrics_registry.h"
#include "operator/controller/job_metrics.h"

#ifndef TJ_BENCH_BUILD_TYPE
#define TJ_BENCH_BUILD_TYPE ""
#endif

namespace tj::bench {
namespace {

using json = nlohmann::json;

// Job i at status version `version` (the step and resourceVersion move with it).
kube::ObjectPtr MakeJob(int i, int version) {
  const int64_t step = 1000 + version;
  json status = {
      {"conditions",
       {{{"type", "Created"}, {"status", "True"}, {"lastTransitionTime", "2026-11-20T07:00:00Z"}},
        {{"type", "Restarting"},
         {"status", "False"},
         {"lastTransitionTime", "2026-11-20T07:50:00Z"}},
        {{"type", "Running"}, {"status", "True"}, {"lastTransitionTime", "2026-11-20T07:50:00Z"}}}},
      {"state", "Running"},
      {"replicaStatuses",
       {{"Coordinator", {{"active", 1}, {"succeeded", 0}, {"failed", 0}, {"restarts", 1}}},
        {"Worker",
         {{"active", 4}, {"succeeded", 0}, {"failed", 0}, {"restarts", 3}, {"countedRestarts", 1}}},
        {"PS", {{"active", 2}, {"succeeded", 0}, {"failed", 0}, {"restarts", 0}}}}},
      {"startTime", "2026-11-20T07:00:10Z"},
      {"step", step},
      {"lastCheckpointStep", step - step % 500},
      {"preemptions", 2},
      {"restartCount", 1},
      {"coordinatorRestarts", 1},
      {"goodput", 0.93},
      {"goodputSeconds",
       {{"wallSeconds", 3600},
        {"productiveSeconds", 3348},
        {"lostSeconds",
         {{"startup", 40},
          {"restart", 60},
          {"waitingForWorkers", 50},
          {"workerRerun", 30},
          {"checkpointSave", 42},
          {"stepsSinceCheckpoint", 30}}}}}};
  json job = {{"apiVersion", "trainingjob.dev/v1alpha1"},
              {"kind", "TrainingJob"},
              {"metadata",
               {{"name", absl::StrCat("ctr-", i)},
                {"namespace", absl::StrCat("team-", i % 50)},
                {"uid", absl::StrFormat("5f1c9a3e-%04x-4b7e-9d21-%012x", i & 0xffff, 7919 * i)},
                {"resourceVersion", std::to_string(100000 + 7 * i + version)},
                {"creationTimestamp", "2026-11-20T07:00:00Z"}}},
              {"status", std::move(status)}};
  return std::make_shared<const json>(std::move(job));
}

struct Timing {
  double cpu_seconds = 0;  // per call
  size_t series = 0;
};

int Main(int argc, char** argv) {
  CLI::App app{"tj-bench-job-metrics: the per-job gauges' cost with many TrainingJobs"};
  int jobs = 10000;
  int rounds = 5;
  std::string json_path;
  app.add_option("--jobs", jobs, "TrainingJobs in the cache")->check(CLI::Range(1, 1000000));
  app.add_option("--rounds", rounds, "Calls measured per figure (the mean is reported)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--json", json_path, "Write the figures here");
  bool smoke = false;
  app.add_flag("--smoke", smoke, "Smallest form (200 jobs, 2 rounds), for the smoke test");
  CLI11_PARSE(app, argc, argv);
  if (smoke) {
    jobs = 200;
    rounds = 2;
  }

  std::vector<kube::ObjectPtr> cache;
  cache.reserve(static_cast<size_t>(jobs));
  for (int i = 0; i < jobs; ++i) cache.push_back(MakeJob(i, 0));
  MetricsRegistry registry;
  op::JobMetrics metrics(registry);
  const absl::Time now = absl::FromUnixSeconds(1'795'000'000);  // 2026-11-17: a fixed clock

  double start = ThreadCpuSeconds();
  metrics.Refresh(cache, now);
  const double first = ThreadCpuSeconds() - start;

  Timing unchanged;
  start = ThreadCpuSeconds();
  for (int r = 0; r < rounds; ++r) metrics.Refresh(cache, now + absl::Seconds(r + 1));
  unchanged.cpu_seconds = (ThreadCpuSeconds() - start) / rounds;
  unchanged.series = metrics.SeriesCount();

  Timing one_percent;
  const int changed = std::max(1, jobs / 100);
  double spent = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < changed; ++k) {
      const int i = (r * changed + k) % jobs;
      cache[static_cast<size_t>(i)] = MakeJob(i, r + 1);  // outside the measured time
    }
    start = ThreadCpuSeconds();
    metrics.Refresh(cache, now + absl::Seconds(100 + r));
    spent += ThreadCpuSeconds() - start;
  }
  one_percent.cpu_seconds = spent / rounds;
  one_percent.series = metrics.SeriesCount();

  Timing render;
  size_t bytes = 0;
  start = ThreadCpuSeconds();
  for (int r = 0; r < rounds; ++r) bytes = registry.Render().size();
  render.cpu_seconds = (ThreadCpuSeconds() - start) / rounds;
  render.series = unchanged.series;

  std::printf("Job metrics: %d TrainingJobs, %zu series, exposition %.1f MiB (%s build)\n", jobs,
              unchanged.series, static_cast<double>(bytes) / (1 << 20), TJ_BENCH_BUILD_TYPE);
  std::printf("%-40s %12s\n", "figure", "CPU ms/call");
  std::printf("%-40s %12.1f\n", "first refresh (every job new)", first * 1e3);
  std::printf("%-40s %12.1f\n", "refresh, nothing changed", unchanged.cpu_seconds * 1e3);
  std::printf("%-40s %12.1f\n", "refresh, 1 % of jobs changed", one_percent.cpu_seconds * 1e3);
  std::printf("%-40s %12.1f\n", "baseline: render (every scrape)", render.cpu_seconds * 1e3);
  std::printf("refresh, nothing changed / render: %.2f\n",
              unchanged.cpu_seconds / render.cpu_seconds);

  if (!json_path.empty()) {
    json out = {{"machine", MachineDescription()},
                {"load", LoadAverage()},
                {"jobs", jobs},
                {"rounds", rounds},
                {"series", unchanged.series},
                {"exposition_bytes", bytes},
                {"first_refresh_cpu_s", first},
                {"refresh_unchanged_cpu_s", unchanged.cpu_seconds},
                {"refresh_one_percent_cpu_s", one_percent.cpu_seconds},
                {"render_cpu_s", render.cpu_seconds}};
    if (!WriteJsonFile(json_path, out, "tj-bench-job-metrics")) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tj::bench

int main(int argc, char** argv) { return tj::bench::Main(argc, argv); }
