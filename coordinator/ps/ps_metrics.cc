#include "coordinator/ps/ps_metrics.h"

#include <unistd.h>

#include <fstream>

namespace tj {
namespace {

// /proc/self/statm's resident pages, in bytes; -1 when it cannot be read.
int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0;
  int64_t resident = 0;
  if (!(statm >> size >> resident)) return -1;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

double D(int64_t value) { return static_cast<double>(value); }

}  // namespace

PsMetricsSnapshot PsMetricsOf(const PsServer& server) {
  const PsCounters& c = server.counters();
  PsMetricsSnapshot s;
  s.pulled_dense_bytes = PsCounters::Get(c.pulled_bytes);
  s.pushed_dense_bytes = PsCounters::Get(c.pushed_bytes);
  s.looked_up_bytes = PsCounters::Get(c.looked_up_bytes);
  s.sparse_pushed_bytes = PsCounters::Get(c.sparse_pushed_bytes);
  s.rows_looked_up = PsCounters::Get(c.rows_looked_up);
  s.rows_pushed = PsCounters::Get(c.rows_pushed);
  s.dense_bytes = server.store().dense_bytes();
  const VariableStore::TableTotals tables = server.store().table_totals();
  s.table_bytes = tables.bytes;
  s.table_rows = tables.rows;
  s.resident_bytes = ResidentBytes();
  s.budget = ReadMemoryBudget();
  s.held_back_pushes = server.push_window().held_back();
  s.push_window_capacity = server.push_window().capacity();
  s.push_window_peak = server.push_window().peak_bytes();
  return s;
}

void ExportPsMetrics(const PsMetricsSnapshot& s, MetricsRegistry& registry) {
  const std::string pulled = "Bytes of values this PS sent (dense Pull answers, embedding lookups)";
  registry.SetCounter("tj_ps_pulled_bytes_total", pulled, D(s.pulled_dense_bytes),
                      {{"kind", "dense"}});
  registry.SetCounter("tj_ps_pulled_bytes_total", pulled, D(s.looked_up_bytes),
                      {{"kind", "embedding"}});
  const std::string pushed = "Bytes of updates this PS applied (dense Push, sparse PushSparse)";
  registry.SetCounter("tj_ps_pushed_bytes_total", pushed, D(s.pushed_dense_bytes),
                      {{"kind", "dense"}});
  registry.SetCounter("tj_ps_pushed_bytes_total", pushed, D(s.sparse_pushed_bytes),
                      {{"kind", "embedding"}});
  registry.SetCounter("tj_ps_rows_looked_up_total", "Embedding rows looked up",
                      D(s.rows_looked_up));
  registry.SetCounter("tj_ps_rows_pushed_total", "Embedding rows updated by pushes",
                      D(s.rows_pushed));
  registry.SetGauge("tj_ps_rows", "Embedding rows held", D(s.table_rows));
  const std::string held = "Bytes of training state held (values and optimizer slots)";
  registry.SetGauge("tj_ps_memory_bytes", held, D(s.dense_bytes), {{"kind", "dense"}});
  registry.SetGauge("tj_ps_memory_bytes", held, D(s.table_bytes), {{"kind", "tables"}});
  if (s.resident_bytes >= 0) {
    registry.SetGauge("tj_ps_resident_memory_bytes", "Resident memory of the PS process",
                      D(s.resident_bytes));
  }
  if (s.budget.limit_bytes > 0) {
    registry.SetGauge("tj_ps_memory_limit_bytes",
                      "The PS's memory limit (TJ_PS_MEMORY_LIMIT_BYTES, the cgroup's, or RAM)",
                      D(s.budget.limit_bytes));
  }
  if (s.budget.available_bytes > 0) {
    registry.SetGauge("tj_ps_memory_available_bytes", "Memory the PS may still use",
                      D(s.budget.available_bytes));
  }
  registry.SetCounter("tj_ps_pushes_held_back_total",
                      "Pushes answered 'held back' because the push window stayed full",
                      D(s.held_back_pushes));
  if (s.push_window_capacity > 0) {
    registry.SetGauge("tj_ps_push_window_bytes", "Bytes of push bodies received at once, at most",
                      D(s.push_window_capacity));
  }
  registry.SetGauge("tj_ps_push_window_peak_bytes", "The most push-body bytes held at once",
                    D(s.push_window_peak));
}

void CollectPsMetrics(const PsServer& server, MetricsRegistry& registry) {
  registry.AddCollector([&server, &registry] { ExportPsMetrics(PsMetricsOf(server), registry); });
}

}  // namespace tj
