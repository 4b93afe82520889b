#include "coordinator/checkpoint/object_transfer.h"

#include <fcntl.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/atomic_file.h"
#include "coordinator/checkpoint/crc32c.h"
#include "coordinator/checkpoint/posix_file.h"

namespace tj {
namespace {

// Large enough that a request's overhead is small next to its transfer, small next to a part.
constexpr size_t kChunkBytes = 8 << 20;

// Reads `key` in chunks, handing each to `sink` in order.
template <typename Sink>
absl::StatusOr<FileDigest> ReadObject(ObjectStore& store, std::string_view key, Sink sink) {
  auto buffer = std::make_unique<char[]>(kChunkBytes);
  FileDigest digest;
  while (true) {
    TJ_ASSIGN_OR_RETURN(const size_t n, store.ReadAt(key, digest.bytes, buffer.get(), kChunkBytes));
    if (n == 0) break;
    digest.crc32c = crc32c::Extend(digest.crc32c, buffer.get(), n);
    digest.bytes += n;
    TJ_RETURN_IF_ERROR(sink(std::string_view(buffer.get(), n)));
    if (n < kChunkBytes) break;
  }
  return digest;
}

}  // namespace

absl::StatusOr<FileDigest> UploadFile(ObjectStore& store, const std::string& path,
                                      std::string_view key) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "opening", path);
  TJ_ASSIGN_OR_RETURN(ObjectUploadPtr upload, store.BeginUpload(key));
  auto buffer = std::make_unique<char[]>(kChunkBytes);
  FileDigest digest;
  while (true) {
    size_t n = 0;
    TJ_RETURN_IF_ERROR(PreadFully(fd.get(), buffer.get(), kChunkBytes, digest.bytes, &n, path));
    if (n == 0) break;
    digest.crc32c = crc32c::Extend(digest.crc32c, buffer.get(), n);
    digest.bytes += n;
    TJ_RETURN_IF_ERROR(upload->Append(std::string_view(buffer.get(), n)));
    if (n < kChunkBytes) break;
  }
  TJ_RETURN_IF_ERROR(upload->Finish());
  return digest;
}

absl::StatusOr<FileDigest> ComputeObjectDigest(ObjectStore& store, std::string_view key) {
  return ReadObject(store, key, [](std::string_view) { return absl::OkStatus(); });
}

absl::Status DownloadFile(ObjectStore& store, std::string_view key, const std::string& path,
                          std::optional<FileDigest> expected) {
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path));
  TJ_ASSIGN_OR_RETURN(const FileDigest actual, ReadObject(store, key, [&](std::string_view chunk) {
                        return file->Append(chunk);
                      }));
  if (expected.has_value() && actual != *expected) {
    return absl::DataLossError(absl::StrCat(store.Describe(key), ": expected ", ToString(*expected),
                                            ", actual ", ToString(actual)));
  }
  return file->Commit();
}

}  // namespace tj
