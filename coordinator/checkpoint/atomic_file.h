// A file that appears at its final path complete or not at all: bytes go to `<path>.tmp-<random>`,
// which is fsynced and renamed over the target, and the directory is fsynced so the rename survives
// a crash. Anything that fails on the way removes the temporary file.
#pragma once

#include <sys/uio.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/checkpoint/posix_file.h"

namespace tj {

class AtomicFile {
 public:
  // Creates the temporary file next to `path` (same directory, so the rename stays atomic).
  static absl::StatusOr<std::unique_ptr<AtomicFile>> Create(std::string path);

  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Without a successful Commit() the target is left untouched and the temporary file removed.
  ~AtomicFile();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

  // Appends bytes. The iovec form writes scattered pieces (header, payload, footer) with one
  // writev call and no copy. After an error the file is abandoned and every later call fails.
  absl::Status Append(std::string_view data);
  absl::Status Append(std::span<iovec> pieces);

  // fsync, close, rename over path(), fsync the directory.
  absl::Status Commit();

 private:
  AtomicFile(std::string path, std::string temp_path, UniqueFd fd);
  // Removes the temporary file and remembers `error` for later calls; returns it.
  absl::Status Abandon(absl::Status error);
  absl::Status CheckWritable() const;
  // Counts `bytes` just written and starts the device writing back what has piled up.
  void StartWriteback(size_t bytes);

  const std::string path_;
  const std::string temp_path_;
  UniqueFd fd_;
  absl::Status error_;
  bool committed_ = false;
  uint64_t written_ = 0;         // bytes appended so far
  uint64_t writeback_start_ = 0;  // bytes before this offset have been handed to writeback
  uint64_t synced_ = 0;  // bytes before this offset have reached the device (sync_file_range)
};

// Writes `contents` to `path` through an AtomicFile.
absl::Status WriteFileAtomically(const std::string& path, std::string_view contents);

}  // namespace tj
