#include "trainer/data/line_reader.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tj::train {
namespace {

// Large reads amortize zlib's per-call cost; a line longer than this grows the buffer.
constexpr size_t kChunkBytes = 1 << 20;

absl::Status OpenError(const std::string& path, int err) {
  const std::string message = absl::StrCat(path, ": cannot open: ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(message);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
  return absl::UnavailableError(message);
}

}  // namespace

absl::StatusOr<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path) {
  errno = 0;
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return OpenError(path, errno != 0 ? errno : ENOMEM);
  gzbuffer(file, kChunkBytes);
  return std::unique_ptr<LineReader>(new LineReader(path, file));
}

LineReader::LineReader(std::string path, void* file)
    : path_(std::move(path)), file_(file), buffer_(kChunkBytes, '\0') {}

LineReader::~LineReader() { gzclose(static_cast<gzFile>(file_)); }

absl::StatusOr<bool> LineReader::Next(std::string_view& line) {
  for (;;) {
    const char* data = buffer_.data();
    const void* newline = std::memchr(data + begin_, '\n', end_ - begin_);
    if (newline != nullptr || (eof_ && begin_ < end_)) {
      const size_t stop = newline != nullptr ? static_cast<const char*>(newline) - data : end_;
      line = std::string_view(data + begin_, stop - begin_);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      begin_ = newline != nullptr ? stop + 1 : stop;
      ++line_number_;
      return true;
    }
    if (eof_) return false;

    // Keep the partial line at the front and fill the rest of the buffer.
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);
    const int n = gzread(static_cast<gzFile>(file_), buffer_.data() + end_,
                         static_cast<unsigned>(buffer_.size() - end_));
    // A truncated gzip stream is not a read error to zlib (it also serves files still being
    // written): gzread returns what it has and flags Z_BUF_ERROR. Fail before parsing any of it,
    // so the last, partial line is never taken for data.
    int code = Z_OK;
    const char* message = gzerror(static_cast<gzFile>(file_), &code);
    if (n < 0 || code != Z_OK) {
      if (code == Z_ERRNO) message = std::strerror(errno);
      if (code == Z_BUF_ERROR) message = "truncated gzip stream (unexpected end of file)";
      return absl::DataLossError(
          absl::StrCat(path_, ": cannot read after line ", line_number_, ": ", message));
    }
    if (n == 0) eof_ = true;
    end_ += static_cast<size_t>(n);
  }
}

}  // namespace tj::train
