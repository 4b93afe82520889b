#include "coordinator/ps/spare_buffers.h"

#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj {
namespace {

struct Spares {
  StdMutex mu;
  std::vector<std::string> buffers ABSL_GUARDED_BY(mu);
  size_t bytes ABSL_GUARDED_BY(mu) = 0;
};

Spares& TheSpares() {
  static Spares* spares = new Spares();  // never destroyed: used until the process exits
  return *spares;
}

}  // namespace

void GiveSpareBuffer(std::string&& buffer) {
  const size_t capacity = buffer.capacity();
  if (capacity < kMinSpareBufferBytes) return;
  Spares& spares = TheSpares();
  StdMutexLock lock(spares.mu);
  if (spares.bytes + capacity > kMaxSpareBufferBytes) return;
  spares.bytes += capacity;
  spares.buffers.push_back(std::move(buffer));
}

bool TakeSpareBuffer(std::string& buffer, size_t size) {
  if (buffer.capacity() >= size || size < kMinSpareBufferBytes) return false;
  std::string taken;
  {
    Spares& spares = TheSpares();
    StdMutexLock lock(spares.mu);
    size_t best = spares.buffers.size();
    for (size_t i = 0; i < spares.buffers.size(); ++i) {
      const size_t capacity = spares.buffers[i].capacity();
      if (capacity >= size && (best == spares.buffers.size() ||
                               capacity < spares.buffers[best].capacity())) {
        best = i;
      }
    }
    if (best == spares.buffers.size()) return false;
    taken = std::move(spares.buffers[best]);
    spares.buffers.erase(spares.buffers.begin() + static_cast<std::ptrdiff_t>(best));
    spares.bytes -= taken.capacity();
  }
  // Within its capacity, resize writes only the bytes beyond the old size: the spare keeps its
  // full size, so nothing is written at all when it is shrunk or grown back to it.
  taken.resize(size);
  buffer.swap(taken);
  return true;
}

size_t SpareBufferBytes() {
  Spares& spares = TheSpares();
  StdMutexLock lock(spares.mu);
  return spares.bytes;
}

}  // namespace tj
