#include "trainer/models/ctr_model.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"

namespace tj::train {

double LogLoss(double z, int32_t y) {
  // softplus(z) = max(z, 0) + log1p(exp(-|z|)) never exponentiates a positive number.
  return std::max(z, 0.0) + std::log1p(std::exp(-std::fabs(z))) - (y != 0 ? z : 0.0);
}

double Sigmoid(double z) {
  if (z >= 0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

absl::StatusOr<CtrModel> CtrModel::Create(CtrModelType type, int32_t factor_dim, CtrHead head) {
  if (type == CtrModelType::kLogisticRegression && factor_dim != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("logistic regression has no factors, got factor_dim ", factor_dim));
  }
  if (type == CtrModelType::kFactorizationMachine && factor_dim < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a factorization machine needs factor_dim >= 1, got ", factor_dim));
  }
  return CtrModel(type, factor_dim, head);
}

absl::Status CtrModel::Check(const Batch& batch, const BatchIds& ids, std::span<const float> rows,
                             CtrHeadParams head) const {
  if (head_ == CtrHead::kBias && head.scale != 1.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("a model with a bias head has no scale, got scale ", head.scale));
  }
  if (batch.kind != BatchKind::kSparse) {
    return absl::InvalidArgumentError("the CTR model needs a sparse batch");
  }
  if (batch.num_rows <= 0) return absl::InvalidArgumentError("the CTR model got an empty batch");
  if (static_cast<int64_t>(batch.row_offsets.size()) != batch.num_rows + 1 ||
      batch.row_offsets.back() != batch.num_entries() || batch.values.size() != batch.ids.size() ||
      static_cast<int64_t>(batch.labels.size()) != batch.num_rows) {
    return absl::InvalidArgumentError("malformed sparse batch (CSR arrays disagree in size)");
  }
  if (ids.slots.size() != batch.ids.size()) {
    return absl::InvalidArgumentError(absl::StrCat("BatchIds has ", ids.slots.size(),
                                                   " slots for a batch of ", batch.ids.size(),
                                                   " entries: was it built from this batch?"));
  }
  for (const int32_t slot : ids.slots) {
    if (slot < 0 || static_cast<size_t>(slot) >= ids.unique.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("BatchIds slot ", slot, " is outside [0, ", ids.unique.size(), ")"));
    }
  }
  const size_t want = ids.unique.size() * static_cast<size_t>(row_dim());
  if (rows.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat("rows has ", rows.size(), " floats, expected ",
                                                   ids.unique.size(), " ids x ", row_dim()));
  }
  for (const int32_t y : batch.labels) {
    if (y != 0 && y != 1) {
      return absl::InvalidArgumentError(absl::StrCat("the CTR model needs 0/1 labels, got ", y));
    }
  }
  return absl::OkStatus();
}

float CtrModel::RowSum(const Batch& batch, const BatchIds& ids, std::span<const float> rows,
                       int64_t r, std::span<float> factor_sums) const {
  const size_t width = static_cast<size_t>(row_dim());
  const size_t k = static_cast<size_t>(factor_dim_);
  float sum = 0;
  float squares = 0;  // sum_f sum_i v_if^2 x_i^2
  std::fill(factor_sums.begin(), factor_sums.end(), 0.0f);
  for (int64_t e = batch.row_offsets[r]; e < batch.row_offsets[r + 1]; ++e) {
    const float x = batch.values[e];
    const float* row = rows.data() + static_cast<size_t>(ids.slots[e]) * width;
    sum += row[0] * x;
    for (size_t f = 0; f < k; ++f) {
      const float vx = row[1 + f] * x;
      factor_sums[f] += vx;
      squares += vx * vx;
    }
  }
  if (k > 0) {
    float pairs = 0;
    for (size_t f = 0; f < k; ++f) pairs += factor_sums[f] * factor_sums[f];
    sum += 0.5f * (pairs - squares);
  }
  return sum;
}

absl::Status CtrModel::Logits(const Batch& batch, const BatchIds& ids, std::span<const float> rows,
                              CtrHeadParams head, std::span<float> logits) const {
  TJ_RETURN_IF_ERROR(Check(batch, ids, rows, head));
  if (static_cast<int64_t>(logits.size()) != batch.num_rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("need room for ", batch.num_rows, " outputs, got ", logits.size()));
  }
  std::vector<float> factor_sums(static_cast<size_t>(factor_dim_));
  for (int64_t r = 0; r < batch.num_rows; ++r) {
    logits[r] = head.bias + head.scale * RowSum(batch, ids, rows, r, factor_sums);
  }
  return absl::OkStatus();
}

absl::Status CtrModel::Predict(const Batch& batch, const BatchIds& ids, std::span<const float> rows,
                               CtrHeadParams head, std::span<float> probabilities) const {
  TJ_RETURN_IF_ERROR(Logits(batch, ids, rows, head, probabilities));
  for (float& p : probabilities) p = static_cast<float>(Sigmoid(p));
  return absl::OkStatus();
}

absl::StatusOr<double> CtrModel::LossAndGradient(const Batch& batch, const BatchIds& ids,
                                                 std::span<const float> rows, CtrHeadParams head,
                                                 std::span<float> grad_rows,
                                                 CtrHeadParams& grad_head) const {
  TJ_RETURN_IF_ERROR(Check(batch, ids, rows, head));
  if (grad_rows.size() != rows.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("grad_rows has ", grad_rows.size(), " floats, expected ", rows.size()));
  }
  std::fill(grad_rows.begin(), grad_rows.end(), 0.0f);
  grad_head = CtrHeadParams{.bias = 0, .scale = 0};
  const size_t width = static_cast<size_t>(row_dim());
  const size_t k = static_cast<size_t>(factor_dim_);
  std::vector<float> factor_sums(k);
  const double inv_n = 1.0 / static_cast<double>(batch.num_rows);
  double loss = 0;
  for (int64_t r = 0; r < batch.num_rows; ++r) {
    const float s = RowSum(batch, ids, rows, r, factor_sums);
    const float z = head.bias + head.scale * s;
    const int32_t y = batch.labels[r];
    loss += LogLoss(z, y);
    // d loss / d z = sigmoid(z) - y, scaled for the batch mean; d z / d s = scale.
    const auto g = static_cast<float>((Sigmoid(z) - y) * inv_n);
    grad_head.bias += g;
    if (head_ == CtrHead::kDense) grad_head.scale += g * s;
    const float gs = g * head.scale;
    for (int64_t e = batch.row_offsets[r]; e < batch.row_offsets[r + 1]; ++e) {
      const float x = batch.values[e];
      const size_t offset = static_cast<size_t>(ids.slots[e]) * width;
      const float* row = rows.data() + offset;
      float* grad = grad_rows.data() + offset;
      const float gx = gs * x;
      grad[0] += gx;
      // d z / d v_if = x_i (sum_j v_jf x_j - v_if x_i).
      for (size_t f = 0; f < k; ++f) grad[1 + f] += gx * (factor_sums[f] - row[1 + f] * x);
    }
  }
  return loss * inv_n;
}

}  // namespace tj::train
