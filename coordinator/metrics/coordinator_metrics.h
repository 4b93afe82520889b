// The coordinator's runtime metrics (tj_coordinator_*, tj_worker_*; docs/metrics.md): closures,
// the queue, worker states, PS errors and preemption notices. The coordinator counts them itself
// (ClusterCoordinator::Counters, plain integers under locks it already takes), so neither its hot
// path nor coordinator/cluster depends on the registry; they are copied into it at scrape time.
#pragma once

#include <string>
#include <string_view>

#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/metrics/metrics_registry.h"

namespace tj {

// Writes `counters` into `registry`.
void ExportCoordinatorCounters(const CoordinatorCounters& counters, MetricsRegistry& registry);

// Registers a collector that exports `coordinator`'s counters at every Render; `coordinator` must
// outlive the registry (or its RemoveCollectors call).
void CollectCoordinatorMetrics(const ClusterCoordinator& coordinator, MetricsRegistry& registry);

// A preemption notice received for a task of `task_type` (tj_coordinator_preemption_notices_total).
// Types other than chief, worker, ps and evaluator count as "other", so a caller's typo cannot
// grow the number of series.
void CountPreemptionNotice(MetricsRegistry& registry, std::string_view task_type);

}  // namespace tj
