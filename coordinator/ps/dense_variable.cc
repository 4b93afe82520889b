#include "coordinator/ps/dense_variable.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/ps/initializer.h"
#include "coordinator/ps/parallel_for.h"
#include "spdlog/spdlog.h"

namespace tj {
namespace {

void CheckOrDie(bool ok, const DenseVariableConfig& config, const v1::Tensor& tensor,
                const char* what) {
  if (ok) return;
  spdlog::critical(
      "DenseVariable::{}: {} does not fit variable '{}' {} (caller skipped validation)", what,
      TensorSpec::Of(tensor).ToString(), config.name, config.spec.ToString());
  std::abort();
}

}  // namespace

DenseVariable::DenseVariable(DenseVariableConfig config)
    : config_(std::move(config)),
      num_elements_(static_cast<size_t>(config_.spec.num_elements())),
      values_(FloatBuffer::Allocate(num_elements_)) {
  slots_.reserve(static_cast<size_t>(config_.optimizer.num_slots()));
  for (int s = 0; s < config_.optimizer.num_slots(); ++s) {
    slots_.emplace_back(num_elements_, config_.optimizer.slot_initial_value(s));
  }
}

DenseVariable::DenseVariable(DenseVariableConfig config, const v1::VariableSpec& spec)
    : DenseVariable(std::move(config)) {
  // No lock: nothing else can see this object while it is being constructed.
  if (spec.has_initial_value()) {
    const v1::Tensor& value = spec.initial_value();
    CheckOrDie(config_.spec.dtype == v1::DTYPE_FLOAT32 &&
                   value.data().size() == num_elements_ * sizeof(float),
               config_, value, "DenseVariable");
    std::memcpy(values_->data(), value.data().data(), value.data().size());
  } else {
    FillInitialValues(spec.initializer(),
                      InitializerStream(spec.initializer(), InitializerName(spec)),
                      config_.first_element, std::span<float>(values_->data(), num_elements_));
  }
}

int64_t DenseVariable::step() const {
  StdReaderLock lock(mu_);
  return step_;
}

void DenseVariable::CopyTo(v1::Tensor& out) const {
  out.set_dtype(config_.spec.dtype);
  out.mutable_shape()->Assign(config_.spec.shape.begin(), config_.spec.shape.end());
  std::string* data = out.mutable_data();
  const size_t num_bytes = num_elements_ * sizeof(float);
  // Allocate before taking the lock so that pushes wait only for the copy itself.
  data->clear();
  data->reserve(num_bytes);
  StdReaderLock lock(mu_);
  data->assign(reinterpret_cast<const char*>(values_->data()), num_bytes);
}

PinnedFloats DenseVariable::PinValues() const {
  StdReaderLock lock(mu_);
  return PinnedFloats(values_);
}

float* DenseVariable::WritableValuesLocked() {
  if (values_->pinned()) {
    std::shared_ptr<FloatBuffer> copy = FloatBuffer::Allocate(num_elements_);
    std::memcpy(copy->data(), values_->data(), values_->num_bytes());
    // The pinned buffer lives on with its readers and goes back to the pool after them.
    values_ = std::move(copy);
  }
  return values_->data();
}

void DenseVariable::Apply(const ByteChunks& grad) {
  if (TotalBytes(grad) != num_elements_ * sizeof(float)) {
    spdlog::critical(
        "DenseVariable::Apply: {} bytes of gradient for variable '{}' {} (caller "
        "skipped validation)",
        TotalBytes(grad), config_.name, config_.spec.ToString());
    std::abort();
  }
  StdWriterLock lock(mu_);
  float* values = WritableValuesLocked();
  float* slot0 = slots_.empty() ? nullptr : slots_[0].data();
  float* slot1 = slots_.size() < 2 ? nullptr : slots_[1].data();
  const int64_t step = step_;  // read here: the lambda below is not seen to hold mu_
  // The optimizers are element-wise, so applying the gradient piece by piece is the same update.
  ForEachElementRun<sizeof(float)>(grad, [&](size_t first, const char* bytes, size_t n) {
    ApplyUpdate(config_.optimizer, step, n, bytes, values + first,
                slot0 == nullptr ? nullptr : slot0 + first,
                slot1 == nullptr ? nullptr : slot1 + first);
  });
  ++step_;
}

absl::StatusOr<std::shared_ptr<FloatBuffer>> DenseVariable::PrepareLocked(
    const ByteChunks& grad) const {
  if (!updates_out_of_place() || TotalBytes(grad) != num_elements_ * sizeof(float)) {
    spdlog::critical(
        "DenseVariable::PrepareLocked: {} bytes of gradient for variable '{}' {} "
        "with {} (caller skipped validation)",
        TotalBytes(grad), config_.name, config_.spec.ToString(), config_.optimizer.ToString());
    std::abort();
  }
  std::shared_ptr<FloatBuffer> updated = FloatBuffer::Allocate(num_elements_);
  const float* in = values_->data();
  float* out = updated->data();
  std::atomic<bool> non_finite{false};
  ParallelFor(num_elements_, kParallelGrainElements, [&](size_t begin, size_t end) {
    const ByteChunks part = SubChunks(grad, begin * sizeof(float), (end - begin) * sizeof(float));
    ForEachElementRun<sizeof(float)>(part, [&](size_t first, const char* bytes, size_t n) {
      const size_t at = begin + first;
      if (ApplyOutOfPlace(config_.optimizer, n, bytes, in + at, out + at) >= 0) non_finite = true;
    });
  });
  // The rare failure is described by a second scan, which finds the first bad element.
  if (non_finite) return CheckFiniteGradient(grad);
  return updated;
}

void DenseVariable::CommitLocked(std::shared_ptr<FloatBuffer> values) {
  values_ = std::move(values);
  ++step_;
}

v1::VariableSpec DenseVariable::SpecWithoutValue() const {
  v1::VariableSpec spec;
  spec.set_name(config_.name);
  spec.mutable_shape()->Assign(config_.spec.shape.begin(), config_.spec.shape.end());
  *spec.mutable_optimizer() = config_.optimizer.ToProto();
  if (!config_.partition.full_name().empty()) *spec.mutable_partition() = config_.partition;
  return spec;
}

absl::Status DenseVariable::Export(StateWriter& writer, RowsToExport which,
                                   bool mark_exported) const {
  v1::StateRecord record;
  StdReaderLock lock(mu_);
  v1::StateRecord::Variable* variable = record.mutable_variable();
  *variable->mutable_spec() = SpecWithoutValue();
  variable->set_step(step_);
  const int64_t since = which == RowsToExport::kChangedSinceLast       ? saved_step_.load()
                        : which == RowsToExport::kChangedSincePrevious ? saved_step_before_.load()
                                                                       : -1;
  const bool unchanged = since >= 0 && step_ == since;
  if (unchanged) variable->set_unchanged(true);
  TJ_RETURN_IF_ERROR(writer.Write(record));
  if (!unchanged) TJ_RETURN_IF_ERROR(ExportChunksLocked(writer));
  if (!mark_exported) return absl::OkStatus();
  // As the change bits of a table's rows: written, the variable counts as exported; on an error
  // above nothing is recorded, and the next delta compares with an older save's step (one that
  // still matches only if the variable is unchanged since before the base).
  switch (which) {
    case RowsToExport::kAll:
      saved_step_before_ = -1;
      break;
    case RowsToExport::kChangedSinceLast:
      saved_step_before_ = saved_step_.load();
      break;
    case RowsToExport::kChangedSincePrevious:
      break;  // the save before the last stays the base
  }
  saved_step_ = step_;
  return absl::OkStatus();
}

void DenseVariable::MarkRestored() const {
  StdReaderLock lock(mu_);
  saved_step_ = step_;
  saved_step_before_ = -1;
}

absl::Status DenseVariable::ExportChunksLocked(StateWriter& writer) const {
  for (size_t slot = 0; slot <= slots_.size(); ++slot) {
    const std::span<const float> source =
        slot == 0 ? std::span<const float>(values_->data(), num_elements_)
                  : std::span<const float>(slots_[slot - 1]);
    // An empty variable still gets one (empty) chunk per array, so that import sees every slot.
    for (size_t offset = 0; offset == 0 || offset < source.size();
         offset += static_cast<size_t>(kStateChunkFloats)) {
      const size_t n = std::min(source.size() - offset, static_cast<size_t>(kStateChunkFloats));
      // The chunk's floats go to the file straight from the variable (no copy into the record).
      TJ_RETURN_IF_ERROR(writer.WriteDenseChunk(
          static_cast<int32_t>(slot), static_cast<int64_t>(offset),
          std::string_view(reinterpret_cast<const char*>(source.data() + offset),
                           n * sizeof(float))));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<char*> DenseVariable::ChunkTarget(int32_t slot, int64_t offset, uint64_t bytes) {
  if (slot < 0 || static_cast<size_t>(slot) > slots_.size()) {
    return absl::DataLossError(absl::StrCat("variable '", config_.name, "' has no slot ", slot,
                                            " under ", config_.optimizer.ToString()));
  }
  const std::span<float> target = slot == 0
                                       ? std::span<float>(values_->data(), num_elements_)
                                       : std::span<float>(slots_[static_cast<size_t>(slot - 1)]);
  const uint64_t n = bytes / sizeof(float);
  if (bytes % sizeof(float) != 0 || offset < 0 || static_cast<size_t>(offset) > target.size() ||
      n > target.size() - static_cast<size_t>(offset)) {
    return absl::DataLossError(absl::StrCat("chunk of ", bytes, " bytes at ", offset,
                                            " does not fit variable '", config_.name, "' ",
                                            config_.spec.ToString()));
  }
  return reinterpret_cast<char*>(target.data() + offset);
}

absl::Status DenseVariable::ImportChunk(const DenseChunkView& chunk) {
  TJ_ASSIGN_OR_RETURN(char* target, ChunkTarget(chunk.slot, chunk.offset, chunk.data.size()));
  if (!chunk.data.empty()) std::memcpy(target, chunk.data.data(), chunk.data.size());
  return absl::OkStatus();
}

}  // namespace tj
