// Memory of an embedding table (row chunks, index slots) straight from the kernel (anonymous mmap)
// rather than from malloc. In a PS, gRPC's threads allocate from malloc's per-thread arenas, and a
// table that grows through them left the freed index arrays and request buffers of one arena
// unusable by the next: a tj-ps held 1.5 x its raw rows where the same table in one thread held
// 1.23 x. Mapped memory costs only the pages touched, and goes back to the kernel when freed.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <utility>

namespace tj {

// `n` Ts, zero-filled (fresh pages), not copyable. T must be trivially constructible.
template <typename T>
class PageArray {
 public:
  PageArray() = default;
  explicit PageArray(size_t n) : size_(n) {
    if (n == 0) return;
    void* p = ::mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();  // IfAdmitted answers RESOURCE_EXHAUSTED
    data_ = static_cast<T*>(p);
  }
  PageArray(PageArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  PageArray& operator=(PageArray&& other) noexcept {
    if (this != &other) {
      Release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~PageArray() { Release(); }

  T* get() const { return data_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) const { return data_[i]; }
  // Bytes of address space (resident only where touched).
  size_t bytes() const { return size_ * sizeof(T); }

 private:
  void Release() {
    if (data_ != nullptr) ::munmap(data_, size_ * sizeof(T));
    data_ = nullptr;
    size_ = 0;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tj
