#include "coordinator/ps/shard_file.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/record_file.h"

namespace tj {
namespace {

// Reports progress and, in tests, holds the pace down to a given rate.
class ShardPace {
 public:
  ShardPace(const ShardFileOptions& options, int64_t total)
      : options_(options), total_(total), start_(absl::Now()) {}

  absl::Status Advance(int64_t bytes) {
    if (options_.test_bytes_per_second > 0) {
      // Where a volume of that rate would be by now: sleep until then.
      absl::SleepFor(start_ +
                     absl::Seconds(static_cast<double>(bytes) /
                                   static_cast<double>(options_.test_bytes_per_second)) -
                     absl::Now());
    }
    return options_.on_progress ? options_.on_progress(bytes, total_) : absl::OkStatus();
  }

 private:
  const ShardFileOptions& options_;
  const int64_t total_;
  const absl::Time start_;
};

// A Table or Rows record: a serialized StateRecord starts with its oneof field's tag (field 4 or
// 5, length-delimited).
bool IsTableRecord(std::span<const std::string_view> record) {
  constexpr char kTableTag = (4 << 3) | 2;
  constexpr char kRowsTag = (5 << 3) | 2;
  for (std::string_view piece : record) {
    if (!piece.empty()) return piece[0] == kTableTag || piece[0] == kRowsTag;
  }
  return false;
}

}  // namespace

absl::StatusOr<v1::SaveShardResponse> SaveShardFile(const VariableStore& store,
                                                    const std::string& path,
                                                    const ShardFileOptions& options) {
  if (path.empty()) return absl::InvalidArgumentError("save shard: empty path");
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<RecordFileWriter> writer, RecordFileWriter::Create(path));
  return SaveShardRecords(store, *writer, options);
}

absl::StatusOr<v1::SaveShardResponse> SaveShardRecords(const VariableStore& store,
                                                       RecordWriter& writer,
                                                       const ShardFileOptions& options) {
  ShardPace pace(options, 0);
  int64_t records = 0;
  // Tables go out after the dense variables (ExportState): their share of the file and of the time
  // starts at their first record.
  int64_t table_bytes = 0;
  std::optional<absl::Time> tables_start;
  TJ_ASSIGN_OR_RETURN(const bool delta,
                      store.ExportState(
                          [&](std::span<const std::string_view> record) -> absl::Status {
                            ++records;
                            const uint64_t before = writer.bytes();
                            const bool table = IsTableRecord(record);
                            if (table && !tables_start.has_value()) tables_start = absl::Now();
                            TJ_RETURN_IF_ERROR(writer.Append(record));
                            if (table) table_bytes += static_cast<int64_t>(writer.bytes() - before);
                            return pace.Advance(static_cast<int64_t>(writer.bytes()));
                          },
                          options.save));
  TJ_ASSIGN_OR_RETURN(FileDigest digest, writer.Finish());
  v1::SaveShardResponse response;
  response.set_records(records);
  response.set_bytes(static_cast<int64_t>(digest.bytes));
  response.set_crc32c(digest.crc32c);
  response.set_delta(delta);
  response.set_table_bytes(table_bytes);
  if (tables_start.has_value()) {
    response.set_table_micros(absl::ToInt64Microseconds(absl::Now() - *tables_start));
  }
  return response;
}

namespace {

// The shard files as ImportState reads them, one after another as one stream: records in pieces,
// progress reported (and, in tests, the pace held down) as each record starts, and each file's
// digest checked at its end, before the next file is read and before ImportState swaps the new
// state in.
class ShardFilesSource : public RecordPieceSource {
 public:
  ShardFilesSource(std::vector<std::unique_ptr<RecordFileReader>>& readers,
                   const std::vector<std::optional<FileDigest>>& expected, ShardPace& pace)
      : readers_(readers), expected_(expected), pace_(pace) {}

  absl::StatusOr<bool> Begin(uint64_t& size) override {
    while (current_ < readers_.size()) {
      RecordFileReader& reader = *readers_[current_];
      if (reader.offset() > 0) {
        TJ_RETURN_IF_ERROR(pace_.Advance(done_before_ + static_cast<int64_t>(reader.offset())));
      }
      TJ_ASSIGN_OR_RETURN(bool more, reader.BeginRecord(&size));
      if (more) return true;
      const std::optional<FileDigest>& expected = expected_[current_];
      if (expected.has_value() && reader.digest() != *expected) {
        return absl::DataLossError(absl::StrCat(reader.path(), ": digest mismatch: expected ",
                                                ToString(*expected), ", actual ",
                                                ToString(reader.digest())));
      }
      done_before_ += static_cast<int64_t>(reader.file_size());
      ++current_;
    }
    return false;
  }
  absl::Status Read(char* out, size_t size) override {
    return readers_[current_]->ReadRecord(out, size);
  }
  uint64_t bytes_left() const override {
    uint64_t left = 0;
    for (size_t i = current_; i < readers_.size(); ++i) {
      left += readers_[i]->file_size() - readers_[i]->offset();
    }
    return left;
  }
  // The file being read (the last one once all are read).
  size_t current() const { return std::min(current_, readers_.size() - 1); }

 private:
  std::vector<std::unique_ptr<RecordFileReader>>& readers_;
  const std::vector<std::optional<FileDigest>>& expected_;
  ShardPace& pace_;
  size_t current_ = 0;
  int64_t done_before_ = 0;  // bytes of the files read completely
};

}  // namespace

absl::StatusOr<v1::RestoreShardResponse> RestoreShardFile(VariableStore& store,
                                                          const std::string& path,
                                                          const ShardFileOptions& options) {
  return RestoreShardFiles(store, {path}, options);
}

absl::StatusOr<v1::RestoreShardResponse> RestoreShardFiles(VariableStore& store,
                                                           const std::vector<std::string>& paths,
                                                           const ShardFileOptions& options) {
  if (paths.empty() || paths.front().empty()) {
    return absl::InvalidArgumentError("restore shard: empty path");
  }
  if (!options.expected_delta_digests.empty() &&
      options.expected_delta_digests.size() != paths.size() - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("restore shard: ", options.expected_delta_digests.size(),
                     " delta digests for ", paths.size() - 1, " delta files"));
  }
  std::vector<std::optional<FileDigest>> expected(paths.size());
  expected[0] = options.expected_digest;
  for (size_t i = 0; i < options.expected_delta_digests.size(); ++i) {
    expected[i + 1] = options.expected_delta_digests[i];
  }
  // Every file is opened (and so found) and its size checked before the store is touched.
  std::vector<std::unique_ptr<RecordFileReader>> readers;
  int64_t total = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    if (path.empty()) return absl::InvalidArgumentError("restore shard: empty delta path");
    absl::StatusOr<std::unique_ptr<RecordFileReader>> reader = RecordFileReader::Open(path);
    if (!reader.ok()) {
      if (expected[i].has_value() && absl::IsNotFound(reader.status())) {
        // Its checkpoint's manifest lists it: the checkpoint has lost a file.
        return absl::DataLossError(absl::StrCat(path, ": missing (its checkpoint lists it with ",
                                                ToString(*expected[i]),
                                                "): ", reader.status().message()));
      }
      return reader.status();
    }
    if (expected[i].has_value() && (*reader)->file_size() != expected[i]->bytes) {
      return absl::DataLossError(absl::StrCat(path, ": size mismatch: expected ",
                                              expected[i]->bytes, " bytes, actual ",
                                              (*reader)->file_size(), " bytes"));
    }
    total += static_cast<int64_t>((*reader)->file_size());
    readers.push_back(*std::move(reader));
  }
  ShardPace pace(options, total);
  ShardFilesSource source(readers, expected, pace);
  absl::StatusOr<StateCounts> counts = store.ImportState(source);
  if (!counts.ok()) {
    const size_t current = source.current();
    const std::string& path = paths[current];
    return absl::Status(
        counts.status().code(),
        absl::StrCat(
            "restore from ", path,
            paths.size() > 1 ? absl::StrCat(" (file ", current + 1, " of ", paths.size(), ")") : "",
            ": ", counts.status().message()));
  }
  v1::RestoreShardResponse response;
  response.set_num_variables(counts->num_variables);
  response.set_num_tables(counts->num_tables);
  response.set_num_rows(counts->num_rows);
  return response;
}

}  // namespace tj
