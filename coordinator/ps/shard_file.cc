#include "coordinator/ps/shard_file.h"

#include <algorithm>
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
  TJ_ASSIGN_OR_RETURN(
      const bool delta,
      store.ExportState(
          [&writer, &records, &pace](std::span<const std::string_view> record) -> absl::Status {
            ++records;
            TJ_RETURN_IF_ERROR(writer->Append(record));
            return pace.Advance(static_cast<int64_t>(writer->bytes()));
          },
          options.save));
  TJ_ASSIGN_OR_RETURN(FileDigest digest, writer->Finish());
  v1::SaveShardResponse response;
  response.set_records(records);
  response.set_bytes(static_cast<int64_t>(digest.bytes));
  response.set_crc32c(digest.crc32c);
  response.set_delta(delta);
  return response;
}

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
  // Every file is opened (and so found) before the store is touched; they are then read one after
  // another as one stream: a full save's records, then each delta's.
  std::vector<std::unique_ptr<RecordFileReader>> readers;
  int64_t total = 0;
  for (const std::string& path : paths) {
    if (path.empty()) return absl::InvalidArgumentError("restore shard: empty delta path");
    TJ_ASSIGN_OR_RETURN(std::unique_ptr<RecordFileReader> reader, RecordFileReader::Open(path));
    total += static_cast<int64_t>(reader->file_size());
    readers.push_back(std::move(reader));
  }
  ShardPace pace(options, total);
  size_t current = 0;
  int64_t done_before = 0;  // bytes of the files read completely
  absl::StatusOr<StateCounts> counts = store.ImportState(
      [&](std::string& record) -> absl::StatusOr<bool> {
        while (current < readers.size()) {
          TJ_ASSIGN_OR_RETURN(bool more, readers[current]->Next(&record));
          if (more) {
            TJ_RETURN_IF_ERROR(pace.Advance(done_before +
                                            static_cast<int64_t>(readers[current]->offset())));
            return true;
          }
          done_before += static_cast<int64_t>(readers[current]->file_size());
          ++current;
        }
        return false;
      });
  if (!counts.ok()) {
    const std::string& path = paths[std::min(current, paths.size() - 1)];
    return absl::Status(counts.status().code(),
                        absl::StrCat("restore from ", path,
                                     paths.size() > 1 ? absl::StrCat(" (file ", current + 1,
                                                                     " of ", paths.size(), ")")
                                                      : "",
                                     ": ", counts.status().message()));
  }
  v1::RestoreShardResponse response;
  response.set_num_variables(counts->num_variables);
  response.set_num_tables(counts->num_tables);
  response.set_num_rows(counts->num_rows);
  return response;
}

}  // namespace tj
