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
// `dd if=<from> of=<to> bs=1M conv=fsync`: a write of the same bytes as `from` (which should be in
// the page cache). On this VM's disk zeros write 2-3x faster than other bytes (the host keeps them
// sparse), so a checkpoint is compared with a copy of its own bytes, not with /dev/zero.
absl::StatusOr<double> DdCopy(const std::string& from, const std::string& to);
absl::StatusOr<double> DdRead(const std::string& path);

}  // namespace tj::bench
