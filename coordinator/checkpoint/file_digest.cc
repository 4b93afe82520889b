#include "coordinator/checkpoint/file_digest.h"

#include <fcntl.h>

#include <cerrno>
#include <memory>

#include "absl/strings/str_format.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/crc32c.h"
#include "coordinator/checkpoint/posix_file.h"

namespace tj {
namespace {

// Large enough that syscalls cost nothing next to the checksum, small enough to stay in cache.
constexpr size_t kChunkBytes = 1 << 20;

}  // namespace

std::string ToString(const FileDigest& digest) {
  return absl::StrFormat("%d bytes, crc32c 0x%08x", digest.bytes, digest.crc32c);
}

absl::StatusOr<FileDigest> ComputeFileDigest(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "opening", path);
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  auto chunk = std::make_unique_for_overwrite<char[]>(kChunkBytes);
  FileDigest digest;
  while (true) {
    size_t got = 0;
    TJ_RETURN_IF_ERROR(PreadFully(fd.get(), chunk.get(), kChunkBytes, digest.bytes, &got, path));
    digest.crc32c = crc32c::Extend(digest.crc32c, chunk.get(), got);
    digest.bytes += got;
    if (got < kChunkBytes) break;
  }
  return digest;
}

}  // namespace tj
