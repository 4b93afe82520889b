#include "coordinator/checkpoint/posix_file.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tj {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

int UniqueFd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

absl::Status UniqueFd::Close(std::string_view path) {
  const int fd = release();
  // Linux releases the descriptor even when close fails, so retrying on EINTR would be wrong.
  if (fd >= 0 && ::close(fd) != 0) return ErrnoError(errno, "closing", path);
  return absl::OkStatus();
}

absl::Status ErrnoError(int err, std::string_view what, std::string_view path) {
  return absl::ErrnoToStatus(err, absl::StrCat(std::string(what), " ", std::string(path)));
}

absl::Status WriteAll(int fd, std::span<iovec> iov, std::string_view path) {
  while (!iov.empty()) {
    if (iov.front().iov_len == 0) {
      iov = iov.subspan(1);
      continue;
    }
    const int count = static_cast<int>(std::min<size_t>(iov.size(), IOV_MAX));
    const ssize_t n = ::writev(fd, iov.data(), count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "writing", path);
    }
    // Short write (signal, full pipe, quota edge): skip what was written and go on.
    size_t done = static_cast<size_t>(n);
    while (done > 0) {
      iovec& first = iov.front();
      const size_t step = std::min(done, first.iov_len);
      first.iov_base = static_cast<char*>(first.iov_base) + step;
      first.iov_len -= step;
      done -= step;
      if (first.iov_len == 0) iov = iov.subspan(1);
    }
  }
  return absl::OkStatus();
}

absl::Status WriteAll(int fd, std::string_view data, std::string_view path) {
  iovec one{const_cast<char*>(data.data()), data.size()};
  return WriteAll(fd, std::span<iovec>(&one, 1), path);
}

absl::Status PreadFully(int fd, void* buffer, size_t size, uint64_t offset, size_t* read,
                        std::string_view path) {
  auto* out = static_cast<char*>(buffer);
  size_t total = 0;
  while (total < size) {
    const ssize_t n = ::pread(fd, out + total, size - total, static_cast<off_t>(offset + total));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "reading", path);
    }
    if (n == 0) break;
    total += static_cast<size_t>(n);
  }
  *read = total;
  return absl::OkStatus();
}

absl::Status FsyncDirectory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "opening directory", dir);
  if (::fsync(fd.get()) != 0) return ErrnoError(errno, "syncing directory", dir);
  return fd.Close(dir);
}

std::string ParentDirectory(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

}  // namespace tj
