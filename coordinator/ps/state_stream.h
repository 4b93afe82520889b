// The stream of byte records a PS shard's state is saved to and restored from (see StateRecord in
// ps.proto for their order). Only the records: framing and files belong to whoever stores them
// (the checkpoint record files of coordinator/checkpoint, or a checkpoint writer).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tj/v1/ps.pb.h"

namespace tj {

// Receives each record as the concatenation of `pieces` (usually one; a dense chunk comes as its
// framing and a view of the variable's memory, so that nobody copies it before the file does). The
// views are only valid during the call. An error stops the export.
using RecordSink = std::function<absl::Status(std::span<const std::string_view> pieces)>;
// Fills `record` with the next record and returns true, or returns false at the end of the stream.
using RecordSource = std::function<absl::StatusOr<bool>(std::string& record)>;

// A source that hands out each record in pieces, so that the bulk of a dense chunk is read straight
// into the variable's memory (a record file, RecordFileReader::BeginRecord / ReadRecord).
class RecordPieceSource {
 public:
  virtual ~RecordPieceSource() = default;
  // Starts the next record and gives its size; false at the end of the stream.
  virtual absl::StatusOr<bool> Begin(uint64_t& size) = 0;
  // The record's next `size` bytes; an error (a checksum mismatch once the last byte is read) means
  // everything read from this record is to be discarded.
  virtual absl::Status Read(char* out, size_t size) = 0;
  // At most this many bytes are left in the stream: bounds what a record's counts may reserve.
  virtual uint64_t bytes_left() const = 0;
};

// What an export writes (incremental checkpoints). A table remembers, per row, whether it changed
// (created or updated) since its last export, and whether it was written by that export or changed
// before it since the export before: a save that was written but never committed then still finds
// its rows in the next delta. A dense variable remembers its step at those two exports and, when it
// has not changed since the one asked for, goes out as a Variable record marked `unchanged`.
enum class RowsToExport {
  kAll,                   // a full snapshot
  kChangedSinceLast,      // rows (and variables) changed since the last export
  kChangedSincePrevious,  // rows (and variables) changed since the export before the last one
};

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
    const std::string_view whole = buffer_;
    return sink_(std::span<const std::string_view>(&whole, 1));
  }
  // A StateRecord holding DenseChunk{slot, offset, data}, byte for byte what Write would produce,
  // with `data` passed to the sink in place instead of copied into the record.
  absl::Status WriteDenseChunk(int32_t slot, int64_t offset, std::string_view data);
  int64_t records() const { return records_; }

 private:
  const RecordSink& sink_;
  std::string buffer_;  // reused: records are serialized one after another
  int64_t records_ = 0;
};

// A DenseChunk or Rows record seen in place in the record's bytes: restoring a shard copies the
// floats once, into the variable or table, instead of first into a parsed message.
struct DenseChunkView {
  int32_t slot = 0;
  int64_t offset = 0;
  std::string_view data;
};
struct RowsView {
  std::string_view ids;
  std::string_view data;
  std::string_view steps;
};

// The record as a dense chunk / rows when it is one made only of that message's known fields (how
// StateWriter and protobuf write it; a field repeated is last-wins, as protobuf reads it); nullopt
// for any other record or anything unusual (an unknown field, a bad length), which callers then
// parse with protobuf. The views point into `record`.
std::optional<DenseChunkView> ViewDenseChunk(std::string_view record);

// The start of a dense chunk record as StateWriter writes it (slot and offset, if any, then the
// data to the record's end), seen in its first bytes (`head`, at least kDenseChunkHeadBytes of them
// unless the record is shorter) out of `record_size`; nullopt for anything else.
inline constexpr size_t kDenseChunkHeadBytes = 64;
struct DenseChunkHead {
  int32_t slot = 0;
  int64_t offset = 0;
  size_t data_start = 0;  // where the floats start in the record
  uint64_t data_size = 0;
};
std::optional<DenseChunkHead> ViewDenseChunkHead(std::string_view head, uint64_t record_size);
std::optional<RowsView> ViewRows(std::string_view record);

}  // namespace tj
