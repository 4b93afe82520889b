#include "coordinator/ps/shard_file.h"

#include <memory>

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

}  // namespace

absl::StatusOr<v1::SaveShardResponse> SaveShardFile(const VariableStore& store,
                                                    const std::string& path,
                                                    const ShardFileOptions& options) {
  if (path.empty()) return absl::InvalidArgumentError("save shard: empty path");
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<RecordFileWriter> writer, RecordFileWriter::Create(path));
  ShardPace pace(options, 0);
  int64_t records = 0;
  TJ_RETURN_IF_ERROR(store.ExportState(
      [&writer, &records, &pace](std::span<const std::string_view> record) -> absl::Status {
        ++records;
        TJ_RETURN_IF_ERROR(writer->Append(record));
        return pace.Advance(static_cast<int64_t>(writer->bytes()));
      }));
  TJ_ASSIGN_OR_RETURN(FileDigest digest, writer->Finish());
  v1::SaveShardResponse response;
  response.set_records(records);
  response.set_bytes(static_cast<int64_t>(digest.bytes));
  response.set_crc32c(digest.crc32c);
  return response;
}

namespace {

// The shard file as ImportState reads it: records in pieces, progress reported (and, in tests, the
// pace held down) as each record starts, and the whole file's digest checked at its end, before
// ImportState swaps the new state in.
class ShardFileSource : public RecordPieceSource {
 public:
  ShardFileSource(RecordFileReader& reader, ShardPace& pace,
                  const std::optional<FileDigest>& expected)
      : reader_(reader), pace_(pace), expected_(expected) {}

  absl::StatusOr<bool> Begin(uint64_t& size) override {
    if (reader_.offset() > 0) {
      TJ_RETURN_IF_ERROR(pace_.Advance(static_cast<int64_t>(reader_.offset())));
    }
    TJ_ASSIGN_OR_RETURN(bool more, reader_.BeginRecord(&size));
    if (!more && expected_.has_value() && reader_.digest() != *expected_) {
      return absl::DataLossError(absl::StrCat(reader_.path(), ": digest mismatch: expected ",
                                              ToString(*expected_), ", actual ",
                                              ToString(reader_.digest())));
    }
    return more;
  }
  absl::Status Read(char* out, size_t size) override { return reader_.ReadRecord(out, size); }
  uint64_t bytes_left() const override { return reader_.file_size() - reader_.offset(); }

 private:
  RecordFileReader& reader_;
  ShardPace& pace_;
  const std::optional<FileDigest>& expected_;
};

}  // namespace

absl::StatusOr<v1::RestoreShardResponse> RestoreShardFile(VariableStore& store,
                                                          const std::string& path,
                                                          const ShardFileOptions& options) {
  if (path.empty()) return absl::InvalidArgumentError("restore shard: empty path");
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<RecordFileReader> reader, RecordFileReader::Open(path));
  if (options.expected_digest.has_value() &&
      reader->file_size() != options.expected_digest->bytes) {
    return absl::DataLossError(absl::StrCat(path, ": size mismatch: expected ",
                                            options.expected_digest->bytes, " bytes, actual ",
                                            reader->file_size(), " bytes"));
  }
  ShardPace pace(options, static_cast<int64_t>(reader->file_size()));
  ShardFileSource source(*reader, pace, options.expected_digest);
  absl::StatusOr<StateCounts> counts = store.ImportState(source);
  if (!counts.ok()) {
    return absl::Status(counts.status().code(),
                        absl::StrCat("restore from ", path, ": ", counts.status().message()));
  }
  v1::RestoreShardResponse response;
  response.set_num_variables(counts->num_variables);
  response.set_num_tables(counts->num_tables);
  response.set_num_rows(counts->num_rows);
  return response;
}

}  // namespace tj
