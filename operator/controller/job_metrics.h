// Per-job figures for jobs whose pods are not scraped: the operator turns each TrainingJob's
// status (phase and its conditions' times, restarts, preemptions, steps, goodput) into
// tj_trainingjob_* gauges labelled trainingjob_namespace and trainingjob (not `namespace` and
// `job`, which Prometheus' scrape sets to the operator's own namespace and scrape job). A job's
// series go away with the job, so the series count follows the jobs that exist.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/metrics/metrics_registry.h"
#include "operator/kube/object_cache.h"

namespace tj::op {

class JobMetrics {
 public:
  explicit JobMetrics(MetricsRegistry& registry) : registry_(registry) {}

  // Sets every job's gauges from its status as of `now` and removes the series of jobs (and of
  // label values, such as a phase left) that `jobs` no longer has. A figure the status does not
  // give (a job never started, a status from an older operator) is absent, never 0 or made up;
  // negative or non-finite figures are never set. A job whose resourceVersion is the one seen
  // last time is not decoded again: only its figures that move with the clock are set. Called
  // from one thread at a time (the registry's collectors run one at a time): it keeps no lock.
  void Refresh(const std::vector<kube::ObjectPtr>& jobs, absl::Time now);

  // Series set by the last Refresh.
  size_t SeriesCount() const;

 private:
  using Series = std::pair<std::string, MetricLabels>;  // metric name, labels

  // What one job's last decoded version set.
  struct Job {
    std::string resource_version;  // empty: always decoded again
    std::vector<Series> series;
    // The figures that change with `now` alone.
    std::optional<std::pair<MetricLabels, absl::Time>> phase_since;  // labels carry the phase
    std::optional<absl::Time> running_since;  // status.startTime of a job not completed
  };

  // One job's gauges into the registry, recorded in `into`.
  void Collect(const nlohmann::json& job, absl::Time now, Job& into);
  // The figures of `job` that move with the clock.
  void SetClockFigures(const Job& job, absl::Time now, const MetricLabels& labels);
  void Set(const std::string& name, const char* help, double value, const MetricLabels& labels,
           Job& into);

  MetricsRegistry& registry_;
  std::unordered_map<std::string, Job> jobs_;  // by namespace/name
};

}  // namespace tj::op
