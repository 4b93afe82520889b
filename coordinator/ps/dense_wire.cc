#include "coordinator/ps/dense_wire.h"

#include <grpc/slice.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/ps/parallel_for.h"
#include "coordinator/ps/proto_wire.h"

namespace tj {
namespace {

using proto_wire::kFixed32;
using proto_wire::kFixed64;
using proto_wire::kLengthDelimited;
using proto_wire::kVarint;
using proto_wire::VarintSize;

// The field numbers of the messages encoded here (proto/tj/v1).
constexpr uint32_t kPullResponseValues = 1;
constexpr uint32_t kPushRequestNames = 1;
constexpr uint32_t kPushRequestDeltas = 2;
constexpr uint32_t kTensorDtype = 1;
constexpr uint32_t kTensorShape = 2;
constexpr uint32_t kTensorData = 3;

// ---- Encoding ----

// Builds a ByteBuffer from framing bytes (copied, in one slice per run) and large payloads (slices
// of their owners' memory, kept alive by a reference until gRPC drops the slice).
class SliceBuilder {
 public:
  void Tag(uint32_t field, proto_wire::WireType type) {
    proto_wire::AppendTag(field, type, pending_);
  }
  void Varint(uint64_t value) { proto_wire::AppendVarint(value, pending_); }
  void Bytes(const char* data, size_t n) { pending_.append(data, n); }
  void Bytes(const std::string& data) { pending_.append(data); }

  // `data` stays valid while `owner` lives.
  void Payload(const char* data, size_t n, std::shared_ptr<const void> owner) {
    if (n < kZeroCopyMinBytes) {
      Bytes(data, n);
      return;
    }
    Flush();
    grpc_slice slice =
        grpc_slice_new_with_user_data(const_cast<char*>(data), n, &ReleaseOwner,
                                      new std::shared_ptr<const void>(std::move(owner)));
    slices_.emplace_back(slice, grpc::Slice::STEAL_REF);
  }

  grpc::ByteBuffer Finish() {
    Flush();
    // A ByteBuffer over no slice at all is not a valid message for gRPC; an empty one is.
    if (slices_.empty()) slices_.emplace_back();
    return grpc::ByteBuffer(slices_.data(), slices_.size());
  }

 private:
  static void ReleaseOwner(void* owner) { delete static_cast<std::shared_ptr<const void>*>(owner); }

  void Flush() {
    if (pending_.empty()) return;
    slices_.emplace_back(pending_);
    pending_.clear();
  }

  std::string pending_;
  std::vector<grpc::Slice> slices_;
};

// A Tensor submessage: dtype and shape serialized by protobuf, then the data field by hand.
void AppendTensor(SliceBuilder& out, uint32_t field, v1::DType dtype,
                  const std::vector<int64_t>& shape, const char* data, size_t num_bytes,
                  std::shared_ptr<const void> owner) {
  v1::Tensor header;
  header.set_dtype(dtype);
  header.mutable_shape()->Assign(shape.begin(), shape.end());
  const std::string header_bytes = header.SerializeAsString();
  const size_t data_field = num_bytes == 0 ? 0
                                           : VarintSize((kTensorData << 3) | kLengthDelimited) +
                                                 VarintSize(num_bytes) + num_bytes;
  out.Tag(field, kLengthDelimited);
  out.Varint(header_bytes.size() + data_field);
  out.Bytes(header_bytes);
  if (num_bytes == 0) return;
  out.Tag(kTensorData, kLengthDelimited);
  out.Varint(num_bytes);
  out.Payload(data, num_bytes, std::move(owner));
}

// ---- Decoding ----

// Reads a message spread over gRPC slices, in order, without gathering it.
class WireReader {
 public:
  explicit WireReader(const std::vector<grpc::Slice>& slices) : slices_(slices) {
    for (const grpc::Slice& slice : slices_) remaining_ += slice.size();
  }

  size_t position() const { return position_; }
  size_t remaining() const { return remaining_; }
  bool at_end() const { return remaining_ == 0; }

  bool Varint(uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      char byte = 0;
      if (!Copy(1, &byte)) return false;
      value |= static_cast<uint64_t>(static_cast<uint8_t>(byte) & 0x7f) << shift;
      if ((static_cast<uint8_t>(byte) & 0x80) == 0) return true;
    }
    return false;  // more than ten bytes: not a varint
  }
  bool Copy(size_t n, char* out) {
    return Consume(n, [&out](const char* p, size_t k) {
      std::memcpy(out, p, k);
      out += k;
    });
  }
  bool Chunks(size_t n, ByteChunks& out) {
    return Consume(n, [&out](const char* p, size_t k) { out.emplace_back(p, k); });
  }
  bool Skip(size_t n) {
    return Consume(n, [](const char*, size_t) {});
  }

 private:
  template <typename Fn>
  bool Consume(size_t n, Fn&& fn) {
    if (n > remaining_) return false;
    remaining_ -= n;
    position_ += n;
    while (n > 0) {
      const grpc::Slice& slice = slices_[index_];
      const size_t k = std::min(n, slice.size() - offset_);
      if (k > 0) fn(reinterpret_cast<const char*>(slice.begin()) + offset_, k);
      offset_ += k;
      n -= k;
      if (offset_ == slice.size()) {
        ++index_;
        offset_ = 0;
      }
    }
    return true;
  }

  const std::vector<grpc::Slice>& slices_;
  size_t index_ = 0;
  size_t offset_ = 0;
  size_t position_ = 0;
  size_t remaining_ = 0;
};

absl::Status Malformed(const char* message_name, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed ", message_name, ": ", what));
}

// Each dimension is one byte on the wire but eight in memory: the rank is bounded.
absl::Status TooManyDims(const char* message_name) {
  return Malformed(message_name,
                   absl::StrCat("a tensor has more than ", kMaxWireTensorRank, " dimensions"));
}

// Each entry is two bytes on the wire but a string or tensor object in memory: the count is
// bounded.
absl::Status TooManyEntries(const char* message_name, const char* what) {
  return Malformed(message_name, absl::StrCat("more than ", kMaxWireEntries, " ", what));
}

struct Tag {
  uint32_t field = 0;
  uint32_t wire_type = 0;
};

bool ReadTag(WireReader& in, Tag& tag) {
  uint64_t value = 0;
  if (!in.Varint(value) || value > UINT32_MAX) return false;
  tag.field = static_cast<uint32_t>(value >> 3);
  tag.wire_type = static_cast<uint32_t>(value & 7);
  return tag.field != 0;
}

// A length prefix that fits before `end` and within the bytes that arrived: whatever a message
// declares, nothing is allocated or skipped for bytes it does not hold, and `position + length`
// cannot overflow.
bool ReadLength(WireReader& in, size_t end, size_t& length) {
  uint64_t value = 0;
  if (!in.Varint(value) || in.position() > end || value > end - in.position() ||
      value > in.remaining()) {
    return false;
  }
  length = static_cast<size_t>(value);
  return true;
}

bool SkipField(WireReader& in, size_t end, uint32_t wire_type) {
  uint64_t ignored = 0;
  size_t length = 0;
  switch (wire_type) {
    case kVarint:
      return in.Varint(ignored);
    case kFixed64:
      return in.Skip(8);
    case kLengthDelimited:
      return ReadLength(in, end, length) && in.Skip(length);
    case kFixed32:
      return in.Skip(4);
    default:  // groups (3, 4) are not used by proto3 messages
      return false;
  }
}

// Parses a Tensor occupying [position, end): dtype and shape into `header` (replacing what it
// held), the data field handed to on_data(in, length), which must consume exactly `length` bytes.
// Returns whether a data field was present.
template <typename OnData>
absl::StatusOr<bool> ParseTensor(WireReader& in, size_t end, v1::Tensor& header,
                                 const char* message_name, OnData&& on_data) {
  header.set_dtype(v1::DTYPE_UNSPECIFIED);
  header.clear_shape();
  bool has_data = false;
  while (in.position() < end) {
    Tag tag;
    if (!ReadTag(in, tag)) return Malformed(message_name, "bad field tag in a tensor");
    if (tag.field == kTensorDtype && tag.wire_type == kVarint) {
      uint64_t dtype = 0;
      if (!in.Varint(dtype)) return Malformed(message_name, "truncated tensor dtype");
      header.set_dtype(static_cast<v1::DType>(static_cast<int32_t>(dtype)));
    } else if (tag.field == kTensorShape && tag.wire_type == kLengthDelimited) {
      size_t length = 0;
      if (!ReadLength(in, end, length)) return Malformed(message_name, "truncated tensor shape");
      const size_t shape_end = in.position() + length;
      while (in.position() < shape_end) {
        uint64_t dim = 0;
        if (!in.Varint(dim) || in.position() > shape_end) {
          return Malformed(message_name, "bad packed tensor shape");
        }
        if (header.shape_size() >= kMaxWireTensorRank) return TooManyDims(message_name);
        header.add_shape(static_cast<int64_t>(dim));
      }
    } else if (tag.field == kTensorShape && tag.wire_type == kVarint) {
      uint64_t dim = 0;
      if (!in.Varint(dim)) return Malformed(message_name, "truncated tensor shape");
      if (header.shape_size() >= kMaxWireTensorRank) return TooManyDims(message_name);
      header.add_shape(static_cast<int64_t>(dim));
    } else if (tag.field == kTensorData && tag.wire_type == kLengthDelimited) {
      size_t length = 0;
      if (!ReadLength(in, end, length)) return Malformed(message_name, "truncated tensor data");
      if (!on_data(in, length)) return Malformed(message_name, "truncated tensor data");
      has_data = true;
    } else if (!SkipField(in, end, tag.wire_type)) {
      return Malformed(message_name, absl::StrCat("bad field ", tag.field, " in a tensor"));
    }
    if (in.position() > end) return Malformed(message_name, "a tensor overruns its length");
  }
  return has_data;
}

// Gathers `pieces` into `out`, large ones on every core: the copy out of gRPC's receive buffers
// is memory-bound, and the pull is not answered to its caller until it is done.
void CopyChunks(const ByteChunks& pieces, char* out) {
  constexpr size_t kGrainBytes = kParallelGrainElements * sizeof(float);
  ParallelFor(TotalBytes(pieces), kGrainBytes, [&](size_t begin, size_t end) {
    char* to = out + begin;
    for (std::span<const char> piece : SubChunks(pieces, begin, end - begin)) {
      std::memcpy(to, piece.data(), piece.size());
      to += piece.size();
    }
  });
}

std::vector<grpc::Slice> SlicesOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  // Dump takes references to the slices; nothing is copied. It fails only for a null buffer,
  // which then reads as an empty message.
  (void)buffer.Dump(&slices);
  return slices;
}

}  // namespace

grpc::ByteBuffer EncodePullResponse(std::vector<PulledValue> values) {
  SliceBuilder out;
  for (PulledValue& value : values) {
    const char* data = reinterpret_cast<const char*>(value.values.data());
    const size_t num_bytes = value.values.num_bytes();
    AppendTensor(out, kPullResponseValues, value.spec.dtype, value.spec.shape, data, num_bytes,
                 std::make_shared<PinnedFloats>(std::move(value.values)));
  }
  return out.Finish();
}

absl::Status DecodePullResponse(const grpc::ByteBuffer& buffer, std::vector<v1::Tensor>& values) {
  constexpr const char* kName = "PullResponse";
  const std::vector<grpc::Slice> slices = SlicesOf(buffer);
  WireReader in(slices);
  size_t count = 0;
  while (!in.at_end()) {
    Tag tag;
    if (!ReadTag(in, tag)) return Malformed(kName, "bad field tag");
    if (tag.field != kPullResponseValues || tag.wire_type != kLengthDelimited) {
      if (!SkipField(in, SIZE_MAX, tag.wire_type)) {
        return Malformed(kName, absl::StrCat("bad field ", tag.field));
      }
      continue;
    }
    size_t length = 0;
    if (!ReadLength(in, SIZE_MAX, length)) return Malformed(kName, "truncated value");
    if (count >= kMaxWireEntries) return TooManyEntries(kName, "values");
    if (values.size() <= count) values.emplace_back();
    v1::Tensor& value = values[count++];
    std::string* data = value.mutable_data();
    auto has_data =
        ParseTensor(in, in.position() + length, value, kName, [data](WireReader& reader, size_t n) {
          // Same size as last time: the memory is reused as it is.
          if (data->size() != n) data->resize(n);
          ByteChunks pieces;
          if (!reader.Chunks(n, pieces)) return false;
          CopyChunks(pieces, data->data());
          return true;
        });
    if (!has_data.ok()) return has_data.status();
    if (!*has_data) data->clear();
  }
  values.resize(count);
  return absl::OkStatus();
}

grpc::ByteBuffer EncodePushRequest(const std::vector<std::string>& names,
                                   std::vector<v1::Tensor> deltas) {
  SliceBuilder out;
  for (const std::string& name : names) {
    out.Tag(kPushRequestNames, kLengthDelimited);
    out.Varint(name.size());
    out.Bytes(name);
  }
  auto owner = std::make_shared<const std::vector<v1::Tensor>>(std::move(deltas));
  for (const v1::Tensor& delta : *owner) {
    const std::vector<int64_t> shape(delta.shape().begin(), delta.shape().end());
    AppendTensor(out, kPushRequestDeltas, delta.dtype(), shape, delta.data().data(),
                 delta.data().size(), owner);
  }
  return out.Finish();
}

absl::StatusOr<DecodedPush> DecodePushRequest(const grpc::ByteBuffer& buffer) {
  constexpr const char* kName = "PushRequest";
  DecodedPush push;
  push.slices = SlicesOf(buffer);
  WireReader in(push.slices);
  while (!in.at_end()) {
    Tag tag;
    if (!ReadTag(in, tag)) return Malformed(kName, "bad field tag");
    if (tag.wire_type == kLengthDelimited &&
        (tag.field == kPushRequestNames || tag.field == kPushRequestDeltas)) {
      size_t length = 0;
      if (!ReadLength(in, SIZE_MAX, length)) return Malformed(kName, "truncated field");
      const size_t entries =
          tag.field == kPushRequestNames ? push.names.size() : push.deltas.size();
      if (entries >= kMaxWireEntries) {
        return TooManyEntries(kName, tag.field == kPushRequestNames ? "names" : "deltas");
      }
      if (tag.field == kPushRequestNames) {
        std::string& name = push.names.emplace_back(length, '\0');
        if (!in.Copy(length, name.data())) return Malformed(kName, "truncated name");
        continue;
      }
      ChunkedTensor& delta = push.deltas.emplace_back();
      auto has_data = ParseTensor(in, in.position() + length, delta.header, kName,
                                  [&delta](WireReader& reader, size_t n) {
                                    delta.data.clear();  // a repeated field: the last one counts
                                    return reader.Chunks(n, delta.data);
                                  });
      if (!has_data.ok()) return has_data.status();
      continue;
    }
    if (!SkipField(in, SIZE_MAX, tag.wire_type)) {
      return Malformed(kName, absl::StrCat("bad field ", tag.field));
    }
  }
  return push;
}

absl::Status DecodePullResponseWith(
    const grpc::ByteBuffer& buffer, std::span<const size_t> sizes,
    const std::function<void(size_t index, const ByteChunks& pieces)>& receive) {
  constexpr const char* kName = "PullResponse";
  const std::vector<grpc::Slice> slices = SlicesOf(buffer);
  WireReader in(slices);
  size_t count = 0;
  v1::Tensor header;
  while (!in.at_end()) {
    Tag tag;
    if (!ReadTag(in, tag)) return Malformed(kName, "bad field tag");
    if (tag.field != kPullResponseValues || tag.wire_type != kLengthDelimited) {
      if (!SkipField(in, SIZE_MAX, tag.wire_type)) {
        return Malformed(kName, absl::StrCat("bad field ", tag.field));
      }
      continue;
    }
    size_t length = 0;
    if (!ReadLength(in, SIZE_MAX, length)) return Malformed(kName, "truncated value");
    if (count >= sizes.size()) {
      return Malformed(kName, absl::StrCat("more than the ", sizes.size(), " values asked for"));
    }
    const size_t index = count++;
    ByteChunks pieces;
    size_t received = 0;
    auto has_data = ParseTensor(in, in.position() + length, header, kName,
                                [&pieces, &received](WireReader& reader, size_t n) {
                                  pieces.clear();
                                  if (!reader.Chunks(n, pieces)) return false;
                                  received = n;
                                  return true;
                                });
    if (!has_data.ok()) return has_data.status();
    // A wrong size or dtype is reported here, before anything is written.
    if (header.dtype() != v1::DTYPE_FLOAT32 || received != sizes[index]) {
      return Malformed(
          kName, absl::StrCat("value ", index, " has dtype ", v1::DType_Name(header.dtype()),
                              " and ", received, " bytes, expected float32 of ", sizes[index]));
    }
    receive(index, pieces);
  }
  if (count != sizes.size()) {
    return Malformed(kName, absl::StrCat(count, " values for a pull of ", sizes.size()));
  }
  return absl::OkStatus();
}

absl::Status DecodePullResponseInto(const grpc::ByteBuffer& buffer,
                                    std::span<const PullTarget> targets) {
  std::vector<size_t> sizes;
  sizes.reserve(targets.size());
  for (const PullTarget& target : targets) sizes.push_back(target.num_bytes);
  return DecodePullResponseWith(buffer, sizes, [&targets](size_t index, const ByteChunks& pieces) {
    CopyChunks(pieces, targets[index].data);
  });
}

grpc::ByteBuffer EncodePushRequest(const std::vector<std::string>& names,
                                   std::span<const DeltaView> deltas,
                                   std::shared_ptr<const void> owner) {
  SliceBuilder out;
  for (const std::string& name : names) {
    out.Tag(kPushRequestNames, kLengthDelimited);
    out.Varint(name.size());
    out.Bytes(name);
  }
  for (const DeltaView& delta : deltas) {
    AppendTensor(out, kPushRequestDeltas, v1::DTYPE_FLOAT32, delta.shape, delta.data,
                 delta.num_bytes, owner);
  }
  return out.Finish();
}

}  // namespace tj
