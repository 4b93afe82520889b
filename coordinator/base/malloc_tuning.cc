#include "coordinator/base/malloc_tuning.h"

#include <malloc.h>

#include <algorithm>
#include <thread>

namespace tj {

void TuneMallocForLargeTensors() {
  // Fixed values also turn off glibc's dynamic threshold, which would otherwise only rise after
  // the first large block has been mapped and unmapped once per arena.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  BoundMallocArenas();
}

void BoundMallocArenas() {
  mallopt(M_ARENA_MAX, static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
}

}  // namespace tj
