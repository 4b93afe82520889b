// Reads a text file line by line, transparently inflating gzip: zlib recognizes a gzip file by
// its magic bytes (1f 8b) and reads anything else as plain text. Shared by the CSV and LibSVM
// readers so both accept "file.csv" and "file.csv.gz" alike.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tj::train {

class LineReader {
 public:
  // NotFound / PermissionDenied / Unavailable (with the OS reason) if the file cannot be opened.
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Sets `line` to the next line, without its "\n" or "\r\n", and returns true; false at the end
  // of the file. `line` stays valid until the next call. DataLoss naming the file if the data
  // cannot be read or a gzip stream is corrupt or truncated.
  absl::StatusOr<bool> Next(std::string_view& line);

  // 1-based number of the line Next() returned last.
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }

 private:
  LineReader(std::string path, void* file);

  std::string path_;
  void* file_;  // a gzFile; void* keeps zlib.h out of this header
  std::string buffer_;
  size_t begin_ = 0;  // unread data is buffer_[begin_, end_)
  size_t end_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
};

}  // namespace tj::train
