// What a parameter server has served, counted as it serves it (relaxed atomics: one add per call,
// no lock) and read at scrape time by its /metrics endpoint (coordinator/ps/ps_metrics.h).
#pragma once

#include <atomic>
#include <cstdint>

namespace tj {

struct PsCounters {
  // Dense variables: bytes of Pull answers sent and of Push requests applied.
  std::atomic<int64_t> pulled_bytes{0};
  std::atomic<int64_t> pushed_bytes{0};
  // Embedding tables: rows looked up (and the bytes of the answers), rows pushed (and the bytes of
  // those requests).
  std::atomic<int64_t> rows_looked_up{0};
  std::atomic<int64_t> looked_up_bytes{0};
  std::atomic<int64_t> rows_pushed{0};
  std::atomic<int64_t> sparse_pushed_bytes{0};

  static void Add(std::atomic<int64_t>& counter, int64_t n) {
    counter.fetch_add(n, std::memory_order_relaxed);
  }
  static int64_t Get(const std::atomic<int64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
  }
};

}  // namespace tj
