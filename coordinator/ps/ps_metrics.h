// A parameter server's /metrics (tj_ps_*; docs/metrics.md): what it served (PsCounters), the
// state it holds against its memory budget, and pushes its push window held back. Served when
// TJ_METRICS_ADDRESS is set for the PS process (ServePsUntilSignalled); read at scrape time.
#pragma once

#include "coordinator/metrics/metrics_registry.h"
#include "coordinator/ps/memory_budget.h"
#include "coordinator/ps/ps_server.h"

namespace tj {

// The figures one scrape exports (PsMetricsOf reads them from a running server).
struct PsMetricsSnapshot {
  int64_t pulled_dense_bytes = 0;
  int64_t pushed_dense_bytes = 0;
  int64_t looked_up_bytes = 0;
  int64_t sparse_pushed_bytes = 0;
  int64_t rows_looked_up = 0;
  int64_t rows_pushed = 0;
  int64_t dense_bytes = 0;  // held: dense variables and their optimizer slots
  int64_t table_bytes = 0;  // held: embedding rows
  int64_t table_rows = 0;
  int64_t resident_bytes = -1;  // the process's RSS; -1: unknown (not exported)
  MemoryBudget budget;          // 0: unknown (not exported)
  int64_t held_back_pushes = 0;
  int64_t push_window_capacity = 0;  // 0: unbounded (not exported)
  int64_t push_window_peak = 0;
};

PsMetricsSnapshot PsMetricsOf(const PsServer& server);
void ExportPsMetrics(const PsMetricsSnapshot& snapshot, MetricsRegistry& registry);
// Registers a collector exporting `server`'s figures at every Render; `server` must outlive the
// registry (or its RemoveCollectors call).
void CollectPsMetrics(const PsServer& server, MetricsRegistry& registry);

}  // namespace tj
