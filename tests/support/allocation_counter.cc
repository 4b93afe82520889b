#include "tests/support/allocation_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace tj::testing {
namespace {

std::atomic<size_t> largest{0};
std::atomic<size_t> total{0};

void Record(size_t n) {
  total.fetch_add(n, std::memory_order_relaxed);
  size_t seen = largest.load(std::memory_order_relaxed);
  while (n > seen && !largest.compare_exchange_weak(seen, n, std::memory_order_relaxed)) {
  }
}

void* Allocate(size_t n) {
  Record(n);
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void ResetLargestAllocation() {
  largest.store(0, std::memory_order_relaxed);
  total.store(0, std::memory_order_relaxed);
}
size_t LargestAllocationSinceReset() { return largest.load(std::memory_order_relaxed); }
size_t TotalAllocatedSinceReset() { return total.load(std::memory_order_relaxed); }

}  // namespace tj::testing

// The replaced allocation functions (aligned ones keep the library's, which never see these
// decoders' buffers).
void* operator new(size_t n) { return tj::testing::Allocate(n); }
void* operator new[](size_t n) { return tj::testing::Allocate(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  tj::testing::Record(n);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  tj::testing::Record(n);
  return std::malloc(n == 0 ? 1 : n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
