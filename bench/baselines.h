// The baselines several benchmarks measure their figures against: loopback TCP (iperf3) and the
// disk (dd), plus evicting a file from the page cache so that a read of it comes from the disk.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tj::bench {

// Loopback TCP bandwidth measured by iperf3 (one stream, its default 128 KiB writes).
struct IperfResult {
  bool available = false;
  std::string note;  // why not, when unavailable
  double bits_per_second = 0;
  double mib_per_second() const { return bits_per_second / 8 / (1 << 20); }
};
IperfResult RunIperf(int seconds);

// Evicts `path`'s clean pages from the page cache (its own pages only: nothing else is disturbed).
void DropFromPageCache(const std::string& path);

// `dd if=/dev/zero of=<path> bs=1M count=<mib> conv=fsync` / `dd if=<path> of=/dev/null bs=1M`,
// timed from fork to exit: seconds.
absl::StatusOr<double> DdWrite(const std::string& path, int64_t mib);
absl::StatusOr<double> DdRead(const std::string& path);

}  // namespace tj::bench
