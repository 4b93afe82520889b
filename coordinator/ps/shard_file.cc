#include "coordinator/ps/shard_file.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/record_file.h"

namespace tj {

absl::StatusOr<v1::SaveShardResponse> SaveShardFile(const VariableStore& store,
                                                    const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("save shard: empty path");
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<RecordFileWriter> writer, RecordFileWriter::Create(path));
  int64_t records = 0;
  TJ_RETURN_IF_ERROR(
      store.ExportState([&writer, &records](std::span<const std::string_view> record) {
        ++records;
        return writer->Append(record);
      }));
  TJ_ASSIGN_OR_RETURN(FileDigest digest, writer->Finish());
  v1::SaveShardResponse response;
  response.set_records(records);
  response.set_bytes(static_cast<int64_t>(digest.bytes));
  response.set_crc32c(digest.crc32c);
  return response;
}

absl::StatusOr<v1::RestoreShardResponse> RestoreShardFile(VariableStore& store,
                                                          const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("restore shard: empty path");
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<RecordFileReader> reader, RecordFileReader::Open(path));
  absl::StatusOr<StateCounts> counts =
      store.ImportState([&reader](std::string& record) { return reader->Next(&record); });
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
