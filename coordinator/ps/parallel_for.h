// Splits element-wise work over a large tensor (a 64 MiB gradient's non-finite scan and update)
// across the machine's cores: one core reads memory at a fraction of what several do, and a push
// waits for this work before it is answered.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace tj {

// Below this many elements per part, starting a thread costs more than it saves.
inline constexpr size_t kParallelGrainElements = size_t{1} << 20;

// Calls fn(begin, end) over consecutive ranges covering [0, n): as many ranges as there are cores
// (at most 8) while each keeps at least `grain` elements; the first range runs on the calling
// thread. Returns when every range is done. `fn` must be safe to run concurrently on disjoint
// ranges.
template <typename Fn>
void ParallelFor(size_t n, size_t grain, Fn&& fn) {
  const size_t cores = std::max<size_t>(1, std::thread::hardware_concurrency());
  const size_t parts =
      std::clamp<size_t>(n / std::max<size_t>(grain, 1), 1, std::min<size_t>(cores, 8));
  if (parts == 1) {
    fn(size_t{0}, n);
    return;
  }
  const size_t per_part = (n + parts - 1) / parts;
  std::vector<std::thread> helpers;
  helpers.reserve(parts - 1);
  for (size_t p = 1; p < parts; ++p) {
    const size_t begin = std::min(n, p * per_part);
    const size_t end = std::min(n, begin + per_part);
    helpers.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  fn(size_t{0}, std::min(n, per_part));
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace tj
