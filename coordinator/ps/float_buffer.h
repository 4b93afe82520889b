// The storage of a dense variable's values: one contiguous float32 array that responses can send
// straight from (zero-copy) while the variable moves on to another buffer (copy-on-write).
//
// Large buffers are 2 MiB aligned and advised for transparent huge pages, and freed buffers go back
// to a small process-wide pool: a 64 MiB variable touched for the first time costs 32 page faults
// instead of 16,384, and a copy-on-write reuses the previous buffer instead of faulting in a new
// one (page faults on fresh buffers were most of the PS data path's time, docs/benchmarks.md §2).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tj {

class FloatBuffer {
 public:
  // `n` floats, contents unspecified (recycled buffers keep old values).
  static std::shared_ptr<FloatBuffer> Allocate(size_t n);
  // Large blocks taken from the system rather than the pool since the process started: a PS that
  // updates its variables step after step reuses the same blocks, so this stops growing after
  // the first step (tests check it; a new block per step is fresh memory the size of the model).
  static uint64_t LargeBlocksFromSystem();

  FloatBuffer(const FloatBuffer&) = delete;
  FloatBuffer& operator=(const FloatBuffer&) = delete;
  ~FloatBuffer();

  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return size_; }
  size_t num_bytes() const { return size_ * sizeof(float); }

  // Pins count readers outside the owner's lock (a response being sent). The owner pins under its
  // lock and, holding it exclusively, writes only into an unpinned buffer; Unpin's release and
  // pinned()'s acquire order the readers' last reads before the owner's next write.
  void Pin() { pins_.fetch_add(1, std::memory_order_relaxed); }
  void Unpin() { pins_.fetch_sub(1, std::memory_order_release); }
  bool pinned() const { return pins_.load(std::memory_order_acquire) != 0; }

 private:
  FloatBuffer(float* data, size_t size, size_t capacity_bytes)
      : data_(data), size_(size), capacity_bytes_(capacity_bytes) {}

  float* const data_;
  const size_t size_;
  const size_t capacity_bytes_;
  std::atomic<int> pins_{0};
};

// A pinned view of a buffer: keeps it alive and unwritten until destroyed. Movable, not copyable.
class PinnedFloats {
 public:
  PinnedFloats() = default;
  explicit PinnedFloats(std::shared_ptr<FloatBuffer> buffer) : buffer_(std::move(buffer)) {
    if (buffer_ != nullptr) buffer_->Pin();
  }
  PinnedFloats(PinnedFloats&& other) noexcept = default;
  PinnedFloats& operator=(PinnedFloats&& other) noexcept {
    Reset();
    buffer_ = std::move(other.buffer_);
    return *this;
  }
  ~PinnedFloats() { Reset(); }

  const float* data() const { return buffer_->data(); }
  size_t num_bytes() const { return buffer_->num_bytes(); }

 private:
  void Reset() {
    if (buffer_ != nullptr) buffer_->Unpin();
    buffer_.reset();
  }
  std::shared_ptr<FloatBuffer> buffer_;
};

// Bytes of freed large buffers the pool keeps for reuse (the rest go back to the system).
inline constexpr size_t kFloatBufferPoolBytes = size_t{512} << 20;

}  // namespace tj
