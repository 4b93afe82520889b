// ShardedPsClient::StreamStep: pull, compute and push a variable slice by slice. The unstreamed
// step passes over the variable's bytes five times on the worker (the pull's copy out of gRPC's
// buffers, the model reading values and writing the gradient, the finite check) at three separate
// moments, so each pass comes from memory, and the transfer idles while the model computes. Here
// each slice is copied, computed and checked a few rows at a time while those rows are in cache,
// and pushed while later slices are still arriving. StreamPush is the push half alone, for a model
// whose gradient needs all the values first: each slice's rows are written and checked in cache
// and pushed while the next ones are computed.
#include <grpcpp/client_context.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/ps/dense_wire.h"
#include "coordinator/ps/optimizer.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "coordinator/ps/spare_buffers.h"
#include "coordinator/ps/status_naming.h"
#include "coordinator/ps/transfer_window.h"

namespace tj {
namespace {

// Rows are copied, computed and checked this many bytes at a time: well inside a core's L2
// (2 MiB here), so the gradient's check and the values' use find them in cache.
constexpr size_t kStreamChunkBytes = size_t{128} << 10;
// How long a successful step waits for gRPC to let go of its gradient (as Push).
constexpr absl::Duration kReleaseWait = absl::Seconds(1);

// Sets `tensor` to the variable's dtype and shape, its data to the variable's size (the memory of
// the last step reused as it is: no fresh pages, no zeroing; else a spare a model left behind).
void ShapeLike(const TensorSpec& spec, int64_t num_bytes, v1::Tensor& tensor) {
  tensor.set_dtype(v1::DTYPE_FLOAT32);
  tensor.mutable_shape()->Assign(spec.shape.begin(), spec.shape.end());
  const size_t n = static_cast<size_t>(num_bytes);
  if (tensor.data().size() != n && !TakeSpareBuffer(*tensor.mutable_data(), n)) {
    tensor.mutable_data()->resize(n);
  }
}

// Reads the pieces of one pulled slice in order, a given number of bytes at a time.
class PieceCursor {
 public:
  explicit PieceCursor(const ByteChunks& pieces) : pieces_(pieces) {}
  void CopyTo(char* out, size_t n) {
    while (n > 0) {
      const std::span<const char> piece = pieces_[index_];
      const size_t take = std::min(n, piece.size() - offset_);
      std::memcpy(out, piece.data() + offset_, take);
      out += take;
      n -= take;
      offset_ += take;
      if (offset_ == piece.size()) {
        ++index_;
        offset_ = 0;
      }
    }
  }

 private:
  const ByteChunks& pieces_;
  size_t index_ = 0;
  size_t offset_ = 0;
};

// Elements per chunk of `spec`: whole rows (one row when a row is larger than a chunk).
size_t ChunkElements(const TensorSpec& spec) {
  int64_t row_elements = 1;
  for (size_t d = 1; d < spec.shape.size(); ++d) row_elements *= spec.shape[d];
  return static_cast<size_t>(std::max<int64_t>(
             1, static_cast<int64_t>(kStreamChunkBytes) / (row_elements * int64_t{4}))) *
         static_cast<size_t>(std::max<int64_t>(row_elements, 1));
}

// Runs `fill(first_element, count, gradient)` over `slice` chunk by chunk, each chunk's gradient
// checked finite right after it is written (while in cache).
template <typename Fill>
absl::Status FillChecked(const std::string& name, const VariableSlice& slice, size_t chunk_elements,
                         float* all_gradient, const Fill& fill) {
  const size_t first = static_cast<size_t>(slice.byte_offset) / sizeof(float);
  const size_t n = static_cast<size_t>(slice.num_bytes) / sizeof(float);
  for (size_t begin = 0; begin < n; begin += chunk_elements) {
    const size_t count = std::min(chunk_elements, n - begin);
    float* g = all_gradient + first + begin;
    TJ_RETURN_IF_ERROR(fill(first + begin, count, g));
    const int64_t bad = FirstNonFinite(reinterpret_cast<const char*>(g), count);
    if (bad >= 0) {
      return Naming(
          "push to variable", name,
          NonFiniteError(static_cast<int64_t>(first + begin) + bad, g[static_cast<size_t>(bad)]));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ShardedPsClient::StreamStep(const std::string& name, v1::Tensor& values,
                                         const std::shared_ptr<v1::Tensor>& gradient,
                                         const RangeGradientFn& compute) const {
  TJ_ASSIGN_OR_RETURN(const VariablePlacement* v, FindVariable(name));
  if (gradient == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("step of variable '", name, "': no gradient"));
  }
  ShapeLike(v->spec, v->num_bytes, values);
  ShapeLike(v->spec, v->num_bytes, *gradient);
  float* const all_values = reinterpret_cast<float*>(values.mutable_data()->data());
  float* const all_gradient = reinterpret_cast<float*>(gradient->mutable_data()->data());
  const size_t chunk_elements = ChunkElements(v->spec);
  // Copies, computes and checks one slice's rows chunk by chunk.
  return Stream(
      *v, /*pull=*/true, gradient,
      [&](const VariableSlice& slice, const ByteChunks* pieces) -> absl::Status {
        PieceCursor cursor(*pieces);
        return FillChecked(
            name, slice, chunk_elements, all_gradient, [&](size_t first, size_t count, float* g) {
              float* w = all_values + first;
              cursor.CopyTo(reinterpret_cast<char*>(w), count * sizeof(float));
              return compute(static_cast<int64_t>(first), std::span<const float>(w, count),
                             std::span<float>(g, count));
            });
      });
}

absl::Status ShardedPsClient::StreamPush(const std::string& name,
                                         const std::shared_ptr<v1::Tensor>& gradient,
                                         const RangeGradientOnlyFn& compute) const {
  TJ_ASSIGN_OR_RETURN(const VariablePlacement* v, FindVariable(name));
  if (gradient == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("push to variable '", name, "': no gradient"));
  }
  ShapeLike(v->spec, v->num_bytes, *gradient);
  float* const all_gradient = reinterpret_cast<float*>(gradient->mutable_data()->data());
  const size_t chunk_elements = ChunkElements(v->spec);
  return Stream(*v, /*pull=*/false, gradient,
                [&](const VariableSlice& slice, const ByteChunks*) -> absl::Status {
                  return FillChecked(name, slice, chunk_elements, all_gradient,
                                     [&](size_t first, size_t count, float* g) {
                                       return compute(static_cast<int64_t>(first),
                                                      std::span<float>(g, count));
                                     });
                });
}

absl::Status ShardedPsClient::Stream(const VariablePlacement& placement, bool pull,
                                     const std::shared_ptr<v1::Tensor>& gradient,
                                     const SliceFn& compute_slice) const {
  const VariablePlacement* const v = &placement;
  // gRPC keeps this alive (hence the gradient) for as long as it holds a slice of it; its deleter
  // tells when gRPC has let go of the last one.
  auto released = std::make_shared<absl::Notification>();
  std::shared_ptr<const void> owner(new std::shared_ptr<v1::Tensor>(gradient),
                                    [released](const std::shared_ptr<v1::Tensor>* held) {
                                      delete held;
                                      released->Notify();
                                    });
  struct PullCall {
    grpc::ClientContext context;
    v1::PullRequest request;
    grpc::ByteBuffer response;
  };
  struct PushCall {
    grpc::ClientContext context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
  };
  const std::vector<Batch> batches = Batches({v});
  std::vector<int64_t> bytes;
  bytes.reserve(batches.size());
  for (const Batch& batch : batches) bytes.push_back(batch.bytes);
  // Created as they start, destroyed as they finish: gRPC's receive buffers of at most the window.
  std::vector<std::unique_ptr<PullCall>> pulls(batches.size());
  std::vector<std::unique_ptr<PushCall>> pushes(batches.size());
  const WindowStage stages[] = {
      {[&](size_t i, WindowDone done) {
         pulls[i] = std::make_unique<PullCall>();
         PullCall& call = *pulls[i];
         for (const auto& [unused, k] : batches[i].slices) {
           call.request.add_names(v->slices[k].ps_name);
         }
         ps_[static_cast<size_t>(batches[i].task)]->PullRawAsync(call.context, call.request,
                                                                 call.response, std::move(done));
       },
       [&](size_t i, absl::Status status) -> absl::Status {
         std::unique_ptr<PullCall> call = std::move(pulls[i]);
         TJ_RETURN_IF_ERROR(status);
         std::vector<size_t> sizes;
         for (const auto& [unused, k] : batches[i].slices) {
           sizes.push_back(static_cast<size_t>(v->slices[k].num_bytes));
         }
         absl::Status computed;
         if (absl::Status decoded = DecodePullResponseWith(
                 call->response, sizes,
                 [&](size_t index, const ByteChunks& pieces) {
                   if (!computed.ok()) return;
                   computed = compute_slice(v->slices[batches[i].slices[index].second], &pieces);
                 });
             !decoded.ok()) {
           return absl::InternalError(absl::StrCat(
               "parameter server /job:ps/task:", batches[i].task, " ", decoded.message()));
         }
         return computed;
       }},
      {[&](size_t i, WindowDone done) {
         if (!pull) {
           // Without a pull, the slices' gradient is written here, just before they leave.
           for (const auto& [unused, k] : batches[i].slices) {
             if (absl::Status computed = compute_slice(v->slices[k], nullptr); !computed.ok()) {
               done(std::move(computed));
               return;
             }
           }
         }
         pushes[i] = std::make_unique<PushCall>();
         PushCall& call = *pushes[i];
         std::vector<std::string> slice_names;
         std::vector<DeltaView> views;
         for (const auto& [unused, k] : batches[i].slices) {
           const VariableSlice& slice = v->slices[k];
           slice_names.push_back(slice.ps_name);
           views.push_back(DeltaView{SliceShape(v->spec, slice),
                                     gradient->data().data() + slice.byte_offset,
                                     static_cast<size_t>(slice.num_bytes)});
         }
         call.request = EncodePushRequest(slice_names, views, owner);
         ps_[static_cast<size_t>(batches[i].task)]->PushRawAsync(call.context, call.request,
                                                                 call.response, std::move(done));
       },
       [&](size_t i, absl::Status status) {
         pushes[i].reset();
         return status;
       }}};
  // Without a pull, the push stage alone: its starts compute while earlier pushes are in flight.
  absl::Status status = RunStaged(bytes, options_.max_bytes_in_flight,
                                  pull ? std::span<const WindowStage>(stages)
                                       : std::span<const WindowStage>(stages).subspan(1));
  // As in Push: wait until gRPC's transport has let go of the gradient, so that the caller can
  // write the next step's into the same buffer.
  owner.reset();
  if (status.ok()) released->WaitForNotificationWithTimeout(kReleaseWait);
  return status;
}

}  // namespace tj
