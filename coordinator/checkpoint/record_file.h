// Files of length-delimited, checksummed records (TFRecord framing, see record_framing.h): the
// format of checkpoint shards. The writer commits atomically and reports the file's digest for the
// manifest; the reader reports a truncated or corrupt record as DataLoss with its byte offset.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/checkpoint/atomic_file.h"
#include "coordinator/checkpoint/file_digest.h"
#include "coordinator/checkpoint/posix_file.h"
#include "coordinator/checkpoint/record_writer.h"

namespace tj {

class RecordFileWriter : public RecordWriter {
 public:
  // Nothing appears at `path` until Finish() succeeds.
  static absl::StatusOr<std::unique_ptr<RecordFileWriter>> Create(std::string path);

  const std::string& path() const { return file_->path(); }
  // Bytes appended so far (framing included; the last ones may still be buffered).
  uint64_t bytes() const override { return digest_.bytes; }

  // Small records are gathered in a buffer; a large one (a PS shard's dense variable, tens of MiB)
  // goes out with the buffered bytes and its frame in one writev, never copied, and is read once
  // (its CRC serves both the record and the whole-file digest).
  absl::Status Append(std::string_view record);
  // The same for a record that is the concatenation of `pieces` (a small header and a large view
  // of memory that is never joined into one buffer).
  absl::Status Append(std::span<const std::string_view> pieces) override;

  // Writes what is buffered and commits the file; returns its size and CRC-32C.
  absl::StatusOr<FileDigest> Finish() override;

 private:
  explicit RecordFileWriter(std::unique_ptr<AtomicFile> file);
  absl::Status FlushPending();

  std::unique_ptr<AtomicFile> file_;
  std::string pending_;  // framed small records not yet written
  FileDigest digest_;    // of every byte appended so far, pending ones included
  bool finished_ = false;
};

class RecordFileReader {
 public:
  static absl::StatusOr<std::unique_ptr<RecordFileReader>> Open(std::string path);

  const std::string& path() const { return path_; }
  // Where the next record starts (or, within a record read in pieces, where the current one does).
  uint64_t offset() const { return record_offset_; }
  uint64_t file_size() const { return file_size_; }
  // Size and CRC-32C of the bytes of whole records read so far: once Next() / BeginRecord() has
  // returned false, the whole file's digest (what a checkpoint manifest records), computed from the
  // records' own checksums without a second pass over the file.
  const FileDigest& digest() const { return digest_; }

  // Reads the next record into `*record` (its capacity is reused). false at a clean end of file;
  // DataLoss naming the file and the record's offset when the rest of the file is not a whole,
  // valid record. Errors are sticky.
  absl::StatusOr<bool> Next(std::string* record);

  // The same, a record at a time in pieces, so that its bytes can land straight where they belong
  // (a dense variable's memory): BeginRecord reads the next record's header and gives its size
  // (false at a clean end of file); ReadRecord copies its next `size` bytes to `out`, checksumming
  // them while they are in cache, and once the last byte is read checks the record's checksum
  // (DataLoss naming the file and offset: whatever was copied must then be discarded). A record
  // must be read to its end before the next one begins.
  absl::StatusOr<bool> BeginRecord(uint64_t* size);
  absl::Status ReadRecord(char* out, size_t size);

 private:
  RecordFileReader(std::string path, UniqueFd fd, uint64_t file_size);
  // Copies up to `size` bytes at the read position into `out`; fewer only at end of file. Large
  // reads bypass the buffer and land directly in `out`. With `crc`, extends it over the bytes
  // copied, piece by piece as they arrive.
  absl::StatusOr<size_t> Read(char* out, size_t size, uint32_t* crc = nullptr);
  absl::Status FinishRecord();
  absl::Status Fail(absl::Status error);

  const std::string path_;
  UniqueFd fd_;
  const uint64_t file_size_;  // as of Open(): these files are complete once they exist
  std::unique_ptr<char[]> buffer_;
  size_t buffer_pos_ = 0;
  size_t buffer_len_ = 0;
  uint64_t file_pos_ = 0;  // file offset just past the buffered bytes
  uint64_t record_offset_ = 0;
  // The record being read in pieces: its length, bytes not yet read, and the CRC of those read.
  uint64_t record_length_ = 0;
  uint64_t record_left_ = 0;
  uint32_t record_crc_ = 0;
  uint32_t header_crc_ = 0;  // the file's CRC up to and including the record's header
  bool in_record_ = false;
  FileDigest digest_;
  absl::Status error_;
};

}  // namespace tj
