#include "coordinator/checkpoint/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/base/status_macros.h"

namespace tj {
namespace {

// Dirty bytes after which writeback is started (StartWriteback).
constexpr uint64_t kWritebackBytes = uint64_t{8} << 20;
// How far writeback may lag behind the bytes appended before Append waits for the device. 128 MiB
// rather than 32: the writer then waits for writeback started 16 ranges ago, not 4, so the device
// works through a deeper queue while the PS produces the next bytes (tj-bench-checkpoint, session
// 8: saves ~10 % faster, within that machine's noise), and the page cache still holds at most
// that much of a shard; the final fsync waits for at most 128 MiB (2.7 s at 50 MB/s, far inside a
// 60 s stall timeout).
constexpr uint64_t kWritebackLagBytes = uint64_t{128} << 20;

// 64 random bits: two processes (or a crashed earlier attempt) never pick the same name.
std::string RandomSuffix() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return absl::StrFormat("%016x", rng());
}

}  // namespace

absl::StatusOr<std::unique_ptr<AtomicFile>> AtomicFile::Create(std::string path) {
  std::string temp_path = absl::StrCat(path, ".tmp-", RandomSuffix());
  UniqueFd fd(::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    return ErrnoError(errno, "creating temporary file for", path);
  }
  return std::unique_ptr<AtomicFile>(
      new AtomicFile(std::move(path), std::move(temp_path), std::move(fd)));
}

AtomicFile::AtomicFile(std::string path, std::string temp_path, UniqueFd fd)
    : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(std::move(fd)) {}

AtomicFile::~AtomicFile() {
  if (!committed_ && error_.ok()) Abandon(absl::CancelledError("abandoned")).IgnoreError();
}

absl::Status AtomicFile::CheckWritable() const {
  if (!error_.ok()) return error_;
  if (committed_) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": already committed"));
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Abandon(absl::Status error) {
  fd_.Close(temp_path_).IgnoreError();
  ::unlink(temp_path_.c_str());
  error_ = error;
  return error;
}

absl::Status AtomicFile::Append(std::string_view data) {
  TJ_RETURN_IF_ERROR(CheckWritable());
  absl::Status status = WriteAll(fd_.get(), data, temp_path_);
  if (!status.ok()) return Abandon(std::move(status));
  StartWriteback(data.size());
  return status;
}

void AtomicFile::StartWriteback(size_t bytes) {
  written_ += bytes;
  if (written_ - writeback_start_ < kWritebackBytes) return;
  // Asynchronous: queues the dirty pages for the device and returns, so the disk writes while we
  // produce the next bytes instead of all at once in Commit's fsync (RocksDB's bytes_per_sync).
  // Advice only: an error here shows up again, and is reported, at fsync.
  (void)::sync_file_range(fd_.get(), static_cast<off64_t>(writeback_start_),
                          static_cast<off64_t>(written_ - writeback_start_), SYNC_FILE_RANGE_WRITE);
  writeback_start_ = written_;
  // Waits for what was handed over more than kWritebackLagBytes ago. Without it a slow volume
  // fills the page cache (gigabytes on a large machine) and Commit's fsync then waits minutes with
  // nothing to show; with it the bytes appended, which a streamed save reports as its progress,
  // stay within kWritebackLagBytes of the disk, and the fsync waits for at most that much.
  if (writeback_start_ >= synced_ + kWritebackLagBytes) {
    const uint64_t until = writeback_start_ - kWritebackLagBytes;
    (void)::sync_file_range(
        fd_.get(), static_cast<off64_t>(synced_), static_cast<off64_t>(until - synced_),
        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    synced_ = until;
  }
}

absl::Status AtomicFile::Append(std::span<iovec> pieces) {
  TJ_RETURN_IF_ERROR(CheckWritable());
  size_t bytes = 0;
  for (const iovec& piece : pieces) bytes += piece.iov_len;
  absl::Status status = WriteAll(fd_.get(), pieces, temp_path_);
  if (!status.ok()) return Abandon(std::move(status));
  StartWriteback(bytes);
  return status;
}

absl::Status AtomicFile::Commit() {
  TJ_RETURN_IF_ERROR(CheckWritable());
  if (::fsync(fd_.get()) != 0) return Abandon(ErrnoError(errno, "syncing", temp_path_));
  if (absl::Status closed = fd_.Close(temp_path_); !closed.ok()) return Abandon(closed);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    return Abandon(ErrnoError(errno, absl::StrCat("renaming ", temp_path_, " to"), path_));
  }
  committed_ = true;
  // The file is in place; only the durability of its directory entry remains in doubt.
  return FsyncDirectory(ParentDirectory(path_));
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path));
  TJ_RETURN_IF_ERROR(file->Append(contents));
  return file->Commit();
}

}  // namespace tj
