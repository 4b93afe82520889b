// glibc malloc settings for processes that move large tensors (PS, workers, the training program).
#pragma once

namespace tj {

// gRPC receives a large message into blocks of up to a few MiB, and tensors are strings of up to
// 64 MiB and more. With glibc's defaults such blocks come from fresh mmaps (or heap the allocator
// has just trimmed), so every message pays a page fault per 4 KiB it lands in: most of the data
// path's time on a 64 MiB Pull (docs/benchmarks.md §2). This raises the mmap threshold to its
// maximum (32 MiB) and lets free heap memory up to 256 MiB stay mapped for reuse. Call once, early
// in main(), before threads allocate.
void TuneMallocForLargeTensors();

}  // namespace tj
