#include "coordinator/ps/float_buffer.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <new>

#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj {
namespace {

// Below this a buffer is an ordinary heap block: malloc already recycles small blocks well.
constexpr size_t kLargeBytes = size_t{1} << 20;
constexpr size_t kHugePage = size_t{2} << 20;

size_t CapacityFor(size_t num_bytes) {
  if (num_bytes < kLargeBytes) return num_bytes == 0 ? sizeof(float) : num_bytes;
  return (num_bytes + kHugePage - 1) / kHugePage * kHugePage;
}

// Freed large blocks by capacity. Variables have fixed sizes, so an exact-capacity match is what
// copy-on-write and re-created variables ask for.
class LargeBlockPool {
 public:
  void* Take(size_t capacity) {
    StdMutexLock lock(mu_);
    auto it = free_.find(capacity);
    if (it == free_.end()) return nullptr;
    void* block = it->second;
    free_.erase(it);
    kept_bytes_ -= capacity;
    return block;
  }

  // Keeps `block` if there is room, else frees it.
  void Give(void* block, size_t capacity) {
    {
      StdMutexLock lock(mu_);
      if (kept_bytes_ + capacity <= kFloatBufferPoolBytes) {
        free_.emplace(capacity, block);
        kept_bytes_ += capacity;
        return;
      }
    }
    std::free(block);
  }

 private:
  StdMutex mu_;
  std::multimap<size_t, void*> free_ ABSL_GUARDED_BY(mu_);
  size_t kept_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

LargeBlockPool& Pool() {
  // Never destroyed: buffers may be freed by threads still running at exit.
  static LargeBlockPool* pool = new LargeBlockPool();
  return *pool;
}

std::atomic<uint64_t> large_blocks_from_system{0};

void* AllocateBlock(size_t capacity) {
  if (capacity < kLargeBytes) return std::malloc(capacity);
  if (void* block = Pool().Take(capacity)) return block;
  large_blocks_from_system.fetch_add(1, std::memory_order_relaxed);
  void* block = std::aligned_alloc(kHugePage, capacity);
  // Advice only: without transparent huge pages the buffer simply uses small pages.
  if (block != nullptr) (void)madvise(block, capacity, MADV_HUGEPAGE);
  return block;
}

}  // namespace

std::shared_ptr<FloatBuffer> FloatBuffer::Allocate(size_t n) {
  const size_t capacity = CapacityFor(n * sizeof(float));
  void* block = AllocateBlock(capacity);
  if (block == nullptr) throw std::bad_alloc();
  return std::shared_ptr<FloatBuffer>(new FloatBuffer(static_cast<float*>(block), n, capacity));
}

uint64_t FloatBuffer::LargeBlocksFromSystem() {
  return large_blocks_from_system.load(std::memory_order_relaxed);
}

FloatBuffer::~FloatBuffer() {
  if (capacity_bytes_ < kLargeBytes) {
    std::free(data_);
  } else {
    Pool().Give(data_, capacity_bytes_);
  }
}

}  // namespace tj
