// Thin POSIX file helpers shared by the checkpoint and summary writers: an owned descriptor, writes
// that finish despite EINTR and short writes, and errors that name the path and the errno text.
#pragma once

#include <sys/uio.h>

#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace tj {

// Owns one file descriptor; closes it on destruction (errors there are ignored: callers that care
// call Close()).
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  // Closes now and reports close(2)'s error (on some file systems the first sign of a lost write).
  absl::Status Close(std::string_view path);

 private:
  int fd_ = -1;
};

// "<what> <path>: <strerror(err)>", with the status code errno maps to.
absl::Status ErrnoError(int err, std::string_view what, std::string_view path);

// Writes every byte the iovecs describe, in as few writev(2) calls as the kernel allows. `iov` is
// consumed (advanced in place).
absl::Status WriteAll(int fd, std::span<iovec> iov, std::string_view path);
absl::Status WriteAll(int fd, std::string_view data, std::string_view path);

// Reads exactly `size` bytes at `offset`; a short file is reported through `*read` (bytes actually
// read), not as an error.
absl::Status PreadFully(int fd, void* buffer, size_t size, uint64_t offset, size_t* read,
                        std::string_view path);

// Makes a directory entry change (create, rename, unlink) durable.
absl::Status FsyncDirectory(const std::string& dir);

// The directory part of `path` ("." for a bare name).
std::string ParentDirectory(std::string_view path);

}  // namespace tj
