#include "coordinator/base/malloc_tuning.h"

#include <malloc.h>

namespace tj {

void TuneMallocForLargeTensors() {
  // Fixed values also turn off glibc's dynamic threshold, which would otherwise only rise after
  // the first large block has been mapped and unmapped once per arena.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

}  // namespace tj
