// How much memory this process may still use: the PS reports it in its Health answer so that the
// coordinator can refuse a placement that would not fit before anything is allocated, instead of
// the kernel's OOM killer ending the PS mid-job (and the job restarting into the same wall).
#pragma once

#include <cstdint>
#include <string>

namespace tj {

// Kept free of embedding rows and restored state by a PS (PsServer), as
// ShardedPsClientOptions::ps_memory_headroom_bytes is of dense variables: gRPC buffers, a
// checkpoint's records, the allocator's slack.
inline constexpr int64_t kPsMemoryHeadroomBytes = int64_t{128} << 20;

struct MemoryBudget {
  int64_t limit_bytes = 0;      // 0: unknown
  int64_t available_bytes = 0;  // 0: unknown
  std::string source;           // e.g. "cgroup v2 memory.max", for messages
};

// Reads, in order of precedence: TJ_PS_MEMORY_LIMIT_BYTES (an explicit limit; available = limit -
// this process's RSS), the cgroup's limit (v2 memory.max - memory.current, v1 memory.limit_in_bytes
// - memory.usage_in_bytes) when one is set, and /proc/meminfo (MemTotal, MemAvailable); the
// available figure is never more than MemAvailable. `root` prefixes /proc and /sys (tests).
MemoryBudget ReadMemoryBudget(const std::string& root = "");

// "1.5 GiB", "512 MiB", "100 B".
std::string HumanBytes(int64_t bytes);

}  // namespace tj
