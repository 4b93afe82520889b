// The stream of byte records a PS shard's state is saved to and restored from (see StateRecord in
// ps.proto for their order). Only the records: framing and files belong to whoever stores them
// (the checkpoint record files of coordinator/checkpoint, or a checkpoint writer).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tj/v1/ps.pb.h"

namespace tj {

// Receives each record; the view is only valid during the call. An error stops the export.
using RecordSink = std::function<absl::Status(std::string_view record)>;
// Fills `record` with the next record and returns true, or returns false at the end of the stream.
using RecordSource = std::function<absl::StatusOr<bool>(std::string& record)>;

inline constexpr char kStateFormat[] = "tj.ps.state";
inline constexpr int kStateVersion = 1;
// Dense values go out in chunks of this many floats (4 MiB) so that no record is huge.
inline constexpr int64_t kStateChunkFloats = int64_t{1} << 20;

// Counts what a sink has been given, for the End record.
class StateWriter {
 public:
  explicit StateWriter(const RecordSink& sink) : sink_(sink) {}
  absl::Status Write(const v1::StateRecord& record) {
    record.SerializeToString(&buffer_);
    ++records_;
    return sink_(buffer_);
  }
  int64_t records() const { return records_; }

 private:
  const RecordSink& sink_;
  std::string buffer_;  // reused: records are serialized one after another
  int64_t records_ = 0;
};

}  // namespace tj
