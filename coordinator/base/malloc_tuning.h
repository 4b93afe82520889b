// glibc malloc settings for processes that move large tensors (PS, workers, the training program).
#pragma once

namespace tj {

// gRPC receives a large message into blocks of up to a few MiB, and tensors are strings of up to
// 64 MiB and more. With glibc's defaults such blocks come from fresh mmaps (or heap the allocator
// has just trimmed), so every message pays a page fault per 4 KiB it lands in: most of the data
// path's time on a 64 MiB Pull (docs/benchmarks.md §2). This raises the mmap threshold to its
// maximum (32 MiB) and lets free heap memory up to 256 MiB stay mapped for reuse.
//
// It also bounds malloc's arenas to one per core. gRPC's threads each get an arena by default (8
// per core), and each arena keeps the receive buffers of the transfer window it last served free
// for reuse (up to the trim threshold above): a worker pulling a 400 MiB variable peaked at
// 1,173-1,288 MiB with the default arenas against 1,025 MiB with 2 (docs/benchmarks.md §9, the
// breakdown). Arenas beyond one a core only save lock contention that threads beyond one a core
// cannot have. Call once, early in main(), before threads allocate.
void TuneMallocForLargeTensors();

// Only the arena bound (what a PsServer in any process sets, for its buffers' sake).
void BoundMallocArenas();

}  // namespace tj
