// Large tensor buffers a worker's model hands back when it is destroyed, for the next model of the
// same process to receive into. A coordinator that restarts (after a PS failure) re-creates every
// per-worker model; without this, the new model's first step allocates its values and gradient
// afresh, and faulting in and zeroing 2x the variable took longer than the step's transfer (at
// 2 GiB, 4 GiB of fresh pages per worker: docs/benchmarks.md section 9).
#pragma once

#include <cstddef>
#include <string>

namespace tj {

// Keeps `buffer`'s memory (its capacity, not its contents) for a later TakeSpareBuffer, when it is
// at least kMinSpareBufferBytes and the spares stay within kMaxSpareBufferBytes; otherwise frees it.
void GiveSpareBuffer(std::string&& buffer);
// Moves a spare of capacity >= `size` into `buffer` when `buffer`'s own is smaller (the smallest
// such spare); `buffer` then holds `size` bytes of unspecified contents. False when none fits.
bool TakeSpareBuffer(std::string& buffer, size_t size);
// Bytes of the spares held (tests).
size_t SpareBufferBytes();

inline constexpr size_t kMinSpareBufferBytes = size_t{1} << 20;
inline constexpr size_t kMaxSpareBufferBytes = size_t{64} << 30;

}  // namespace tj
