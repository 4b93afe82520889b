#include "coordinator/checkpoint/record_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/crc32c.h"
#include "coordinator/checkpoint/record_framing.h"

namespace tj {
namespace {

// Records below this are buffered and checksummed a second time as part of the file; above it the
// record is written in place and its CRC folded into the file's with crc32c::Combine.
constexpr size_t kSmallRecordBytes = 64 << 10;
// Buffered bytes written at once.
constexpr size_t kPendingLimitBytes = 1 << 20;
// The reader's buffer; reads at least this large go straight to the caller's memory.
constexpr size_t kReadBufferBytes = 256 << 10;
// Direct reads go in pieces of this size, each checksummed right after it lands (still in cache).
constexpr size_t kDirectPieceBytes = 256 << 10;

}  // namespace

absl::StatusOr<std::unique_ptr<RecordFileWriter>> RecordFileWriter::Create(std::string path) {
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(std::move(path)));
  return std::unique_ptr<RecordFileWriter>(new RecordFileWriter(std::move(file)));
}

RecordFileWriter::RecordFileWriter(std::unique_ptr<AtomicFile> file) : file_(std::move(file)) {}

absl::Status RecordFileWriter::FlushPending() {
  if (pending_.empty()) return absl::OkStatus();
  TJ_RETURN_IF_ERROR(file_->Append(pending_));
  pending_.clear();
  return absl::OkStatus();
}

absl::Status RecordFileWriter::Append(std::string_view record) {
  return Append(std::span<const std::string_view>(&record, 1));
}

absl::Status RecordFileWriter::Append(std::span<const std::string_view> pieces) {
  if (finished_) return absl::FailedPreconditionError(absl::StrCat(path(), ": already finished"));
  size_t size = 0;
  for (std::string_view piece : pieces) size += piece.size();
  if (size < kSmallRecordBytes) {
    std::string joined;
    joined.reserve(size);
    for (std::string_view piece : pieces) joined.append(piece);
    const size_t start = pending_.size();
    AppendFramedRecord(joined, &pending_);
    const size_t framed = pending_.size() - start;
    digest_.crc32c = crc32c::Extend(digest_.crc32c, pending_.data() + start, framed);
    digest_.bytes += framed;
    return pending_.size() >= kPendingLimitBytes ? FlushPending() : absl::OkStatus();
  }
  RecordFrame frame = FrameRecord(pieces);
  std::vector<iovec> all;
  all.reserve(pieces.size() + 3);
  all.push_back({pending_.data(), pending_.size()});
  all.push_back({frame.header.data(), frame.header.size()});
  for (std::string_view piece : pieces) {
    all.push_back({const_cast<char*>(piece.data()), piece.size()});
  }
  all.push_back({frame.footer.data(), frame.footer.size()});
  TJ_RETURN_IF_ERROR(file_->Append(std::span<iovec>(all)));
  pending_.clear();
  uint32_t crc = crc32c::Extend(digest_.crc32c, frame.header.data(), frame.header.size());
  crc = crc32c::Combine(crc, frame.data_crc, size);
  digest_.crc32c = crc32c::Extend(crc, frame.footer.data(), frame.footer.size());
  digest_.bytes += frame.header.size() + size + frame.footer.size();
  return absl::OkStatus();
}

absl::StatusOr<FileDigest> RecordFileWriter::Finish() {
  if (finished_) return absl::FailedPreconditionError(absl::StrCat(path(), ": already finished"));
  finished_ = true;
  TJ_RETURN_IF_ERROR(FlushPending());
  TJ_RETURN_IF_ERROR(file_->Commit());
  return digest_;
}

absl::StatusOr<std::unique_ptr<RecordFileReader>> RecordFileReader::Open(std::string path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "opening", path);
  struct stat info;
  if (::fstat(fd.get(), &info) != 0) return ErrnoError(errno, "inspecting", path);
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<RecordFileReader>(
      new RecordFileReader(std::move(path), std::move(fd), static_cast<uint64_t>(info.st_size)));
}

RecordFileReader::RecordFileReader(std::string path, UniqueFd fd, uint64_t file_size)
    : path_(std::move(path)),
      fd_(std::move(fd)),
      file_size_(file_size),
      buffer_(std::make_unique_for_overwrite<char[]>(kReadBufferBytes)) {}

absl::Status RecordFileReader::Fail(absl::Status error) {
  error_ = error;
  return error;
}

absl::StatusOr<size_t> RecordFileReader::Read(char* out, size_t size, uint32_t* crc) {
  size_t copied = 0;
  while (copied < size) {
    if (buffer_pos_ < buffer_len_) {
      const size_t take = std::min(size - copied, buffer_len_ - buffer_pos_);
      std::memcpy(out + copied, buffer_.get() + buffer_pos_, take);
      if (crc != nullptr) *crc = crc32c::Extend(*crc, out + copied, take);
      buffer_pos_ += take;
      copied += take;
      continue;
    }
    size_t got = 0;
    const size_t wanted = size - copied;
    if (wanted >= kReadBufferBytes) {
      // Straight into `out`, a piece at a time so that each is checksummed while still in cache.
      const size_t piece = std::min(wanted, kDirectPieceBytes);
      TJ_RETURN_IF_ERROR(PreadFully(fd_.get(), out + copied, piece, file_pos_, &got, path_));
      if (crc != nullptr) *crc = crc32c::Extend(*crc, out + copied, got);
      file_pos_ += got;
      copied += got;
      if (got < piece) break;
      continue;
    }
    TJ_RETURN_IF_ERROR(
        PreadFully(fd_.get(), buffer_.get(), kReadBufferBytes, file_pos_, &got, path_));
    file_pos_ += got;
    buffer_pos_ = 0;
    buffer_len_ = got;
    if (got == 0) break;
  }
  return copied;
}

absl::StatusOr<bool> RecordFileReader::Next(std::string* record) {
  uint64_t length = 0;
  TJ_ASSIGN_OR_RETURN(bool more, BeginRecord(&length));
  if (!more) return false;
  // resize() zero-fills new bytes once; a reused string of the same size skips even that.
  record->resize(length);
  TJ_RETURN_IF_ERROR(ReadRecord(record->data(), length));
  return true;
}

absl::StatusOr<bool> RecordFileReader::BeginRecord(uint64_t* size) {
  if (!error_.ok()) return error_;
  if (in_record_) {
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": record at offset ", record_offset_, " not read to its end before the next"));
  }
  const uint64_t start = record_offset_;
  // Bytes appended after Open() are not this reader's concern.
  if (start >= file_size_) return false;
  char header[kRecordHeaderSize];
  absl::StatusOr<size_t> got = Read(header, sizeof(header));
  if (!got.ok()) return Fail(got.status());
  if (*got == 0) return false;
  if (*got < sizeof(header)) {
    return Fail(absl::DataLossError(absl::StrCat(path_, ": truncated record at offset ", start,
                                                 ": header has ", *got, " of ", kRecordHeaderSize,
                                                 " bytes")));
  }
  uint64_t length = 0;
  if (!DecodeRecordHeader(header, &length)) {
    return Fail(absl::DataLossError(absl::StrCat(path_, ": corrupt record header at offset ", start,
                                                 ": length checksum mismatch")));
  }
  // Checked before the caller allocates, so a corrupt length (that survived its CRC) cannot ask
  // for more memory than the file could hold.
  const uint64_t left = file_size_ - std::min(file_size_, start + kRecordHeaderSize);
  if (length > left || left - length < kRecordFooterSize) {
    return Fail(absl::DataLossError(absl::StrCat(
        path_, ": truncated record at offset ", start, ": ", length, " data bytes and a ",
        kRecordFooterSize, "-byte checksum announced, ", left, " bytes left in the file")));
  }
  header_crc_ = crc32c::Extend(digest_.crc32c, header, sizeof(header));
  record_length_ = length;
  record_left_ = length;
  record_crc_ = 0;
  in_record_ = true;
  *size = length;
  if (length == 0) TJ_RETURN_IF_ERROR(FinishRecord());
  return true;
}

absl::Status RecordFileReader::ReadRecord(char* out, size_t size) {
  if (!error_.ok()) return error_;
  if (size == 0) return absl::OkStatus();
  if (!in_record_ || size > record_left_) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_, ": reading ", size, " bytes past the end of the record at offset ",
                     record_offset_));
  }
  absl::StatusOr<size_t> got = Read(out, size, &record_crc_);
  if (!got.ok()) return Fail(got.status());
  if (*got < size) {
    return Fail(absl::DataLossError(absl::StrCat(path_, ": truncated record at offset ",
                                                 record_offset_, " (file shrank while read)")));
  }
  record_left_ -= size;
  return record_left_ == 0 ? FinishRecord() : absl::OkStatus();
}

absl::Status RecordFileReader::FinishRecord() {
  in_record_ = false;
  char footer[kRecordFooterSize];
  absl::StatusOr<size_t> got = Read(footer, sizeof(footer));
  if (!got.ok()) return Fail(got.status());
  if (*got < sizeof(footer)) {
    return Fail(absl::DataLossError(absl::StrCat(path_, ": truncated record at offset ",
                                                 record_offset_, " (file shrank while read)")));
  }
  if (crc32c::Unmask(DecodeFixed32(footer)) != record_crc_) {
    return Fail(absl::DataLossError(absl::StrCat(path_, ": corrupt record at offset ",
                                                 record_offset_, ": data checksum mismatch over ",
                                                 record_length_, " bytes")));
  }
  // The file's digest follows from the record's CRC: no second pass over its data.
  digest_.crc32c = crc32c::Extend(crc32c::Combine(header_crc_, record_crc_, record_length_),
                                  footer, sizeof(footer));
  digest_.bytes += kRecordHeaderSize + record_length_ + kRecordFooterSize;
  record_offset_ = digest_.bytes;
  return absl::OkStatus();
}

}  // namespace tj
