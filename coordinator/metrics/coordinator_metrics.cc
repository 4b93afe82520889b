#include "coordinator/metrics/coordinator_metrics.h"

#include <array>
#include <map>

#include "absl/strings/str_cat.h"

namespace tj {
namespace {

void Closures(const ClosureCounts& c, MetricsRegistry& r) {
  r.SetCounter("tj_coordinator_closures_scheduled_total", "Closures accepted by Schedule",
               static_cast<double>(c.scheduled));
  r.SetCounter("tj_coordinator_closures_completed_total",
               "Closures a worker finished (successfully, or stopped on purpose)",
               static_cast<double>(c.completed));
  r.SetCounter("tj_coordinator_closures_failed_total",
               "Closures that ended with an error for the program",
               static_cast<double>(c.failed));
  r.SetCounter("tj_coordinator_closures_retried_total",
               "Closures put back to run again after their worker failed, drained or was preempted",
               static_cast<double>(c.retried));
  r.SetCounter("tj_coordinator_closures_cancelled_total",
               "Closures dropped because an error was raised or the coordinator stopped",
               static_cast<double>(c.cancelled));
}

}  // namespace

void ExportCoordinatorCounters(const CoordinatorCounters& counters, MetricsRegistry& r) {
  Closures(counters.closures, r);
  r.SetGauge("tj_coordinator_closures_queued", "Closures waiting for a worker",
             static_cast<double>(counters.queued));
  r.SetGauge("tj_coordinator_closures_in_flight", "Closures sent to a worker and not answered yet",
             static_cast<double>(counters.inflight));
  std::array<int, kWorkerStateCount> now{};
  for (const WorkerStats& w : counters.workers) ++now[static_cast<size_t>(w.state)];
  for (size_t i = 0; i < kWorkerStateCount; ++i) {
    const MetricLabels state = {
        {"state", std::string(WorkerStateName(static_cast<WorkerState>(i)))}};
    r.SetCounter("tj_coordinator_worker_state_changes_total",
                 "Times a worker connection entered each state",
                 static_cast<double>(counters.state_changes[i]), state);
    r.SetGauge("tj_coordinator_workers", "Worker connections by state", now[i], state);
  }
  for (const auto& [task, totals] : counters.ps_errors) {
    const MetricLabels labels = {{"ps_task", absl::StrCat(task)}};
    r.SetCounter("tj_coordinator_ps_errors_total",
                 "PS-unreachable errors workers reported, by PS task",
                 static_cast<double>(totals.errors), labels);
    r.SetCounter("tj_coordinator_ps_failures_total",
                 "PS-unreachable errors at the transient threshold, raised as a PS failure",
                 static_cast<double>(totals.failures), labels);
  }
  for (const WorkerStats& w : counters.workers) {
    const MetricLabels labels = {{"worker", absl::StrCat(w.index)}};
    r.SetCounter("tj_worker_closures_run_total",
                 "Closures a worker ran to an end (successfully or with an error)",
                 static_cast<double>(w.completed + w.errors), labels);
    r.SetCounter("tj_worker_closure_errors_total",
                 "Closures that ended with an error on a worker (application or PS)",
                 static_cast<double>(w.errors), labels);
  }
}

void CollectCoordinatorMetrics(const ClusterCoordinator& coordinator, MetricsRegistry& registry) {
  registry.AddCollector(
      [&coordinator, &registry] { ExportCoordinatorCounters(coordinator.Counters(), registry); });
}

void CountPreemptionNotice(MetricsRegistry& registry, std::string_view task_type) {
  const bool known = task_type == "chief" || task_type == "worker" || task_type == "ps" ||
                     task_type == "evaluator";
  registry.AddCounter("tj_coordinator_preemption_notices_total",
                      "Preemption notices received, by the type of the task they name", 1,
                      {{"task_type", known ? std::string(task_type) : "other"}});
}

}  // namespace tj
