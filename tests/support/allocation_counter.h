// The largest single allocation (global operator new) a test binary made since a reset, and the
// total, so tests
// of hostile input can assert that a decoder allocated for the bytes that arrived and not for the
// length a message declared. Linking tj_allocation_counter replaces the binary's operator new.
#pragma once

#include <cstddef>

namespace tj::testing {

void ResetLargestAllocation();  // also resets the total below
size_t LargestAllocationSinceReset();
// Every byte allocated since the reset, freed or not: what a decoder cost in all.
size_t TotalAllocatedSinceReset();

}  // namespace tj::testing
