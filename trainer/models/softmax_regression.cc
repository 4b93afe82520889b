#include "trainer/models/softmax_regression.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"

namespace tj::train {

double LogSumExp(std::span<const float> logits) {
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (const float z : logits) sum += std::exp(static_cast<double>(z - max));
  return max + std::log(sum);
}

absl::Status SoftmaxRegression::Check(const Batch& batch, std::span<const float> w,
                                      std::span<const float> b) const {
  if (batch.kind != BatchKind::kDense) {
    return absl::InvalidArgumentError("softmax regression needs a dense batch");
  }
  if (batch.num_rows <= 0) return absl::InvalidArgumentError("softmax regression: empty batch");
  if (batch.dim != dim_) {
    return absl::InvalidArgumentError(
        absl::StrCat("softmax regression over ", dim_, " features got a batch of dim ", batch.dim));
  }
  if (static_cast<int64_t>(batch.dense.size()) != batch.num_rows * batch.dim ||
      static_cast<int64_t>(batch.labels.size()) != batch.num_rows) {
    return absl::InvalidArgumentError(absl::StrCat("malformed batch: ", batch.num_rows, " rows of ",
                                                   batch.dim, " with ", batch.dense.size(),
                                                   " floats and ", batch.labels.size(), " labels"));
  }
  if (static_cast<int64_t>(w.size()) != weights_size() ||
      static_cast<int64_t>(b.size()) != num_classes_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "softmax regression needs W of ", dim_, " x ", num_classes_, " = ", weights_size(),
        " floats and b of ", num_classes_, ", got ", w.size(), " and ", b.size()));
  }
  for (int64_t r = 0; r < batch.num_rows; ++r) {
    const int32_t y = batch.labels[r];
    if (y < 0 || y >= num_classes_) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", y, " of row ", r, " is outside [0, ", num_classes_, ")"));
    }
  }
  return absl::OkStatus();
}

void SoftmaxRegression::Logits(std::span<const float> x, std::span<const float> w,
                               std::span<const float> b, std::span<float> logits) const {
  std::copy(b.begin(), b.end(), logits.begin());
  const size_t k = static_cast<size_t>(num_classes_);
  for (int64_t j = 0; j < dim_; ++j) {
    const float xj = x[j];
    if (xj == 0) continue;
    // Row j of W is contiguous: the inner loop streams it and vectorizes.
    const float* wj = w.data() + j * k;
    for (size_t c = 0; c < k; ++c) logits[c] += xj * wj[c];
  }
}

double SoftmaxRegression::RowLossAndLogitGradient(std::span<const float> x, int32_t y,
                                                  std::span<const float> w,
                                                  std::span<const float> b, float inv_n,
                                                  std::span<float> logits) const {
  Logits(x, w, b, logits);
  const double lse = LogSumExp(logits);
  const double loss = lse - logits[y];
  // d loss / d logit_c = softmax_c - [c == y]; reuse the logits buffer for it.
  for (float& z : logits) z = static_cast<float>(std::exp(z - lse)) * inv_n;
  logits[y] -= inv_n;
  return loss;
}

absl::StatusOr<double> SoftmaxRegression::LossAndGradient(const Batch& batch,
                                                          std::span<const float> w,
                                                          std::span<const float> b,
                                                          std::span<float> dw,
                                                          std::span<float> db) const {
  TJ_RETURN_IF_ERROR(Check(batch, w, b));
  if (dw.size() != w.size() || db.size() != b.size()) {
    return absl::InvalidArgumentError(absl::StrCat("gradient spans have ", dw.size(), " and ",
                                                   db.size(), " floats, expected ", w.size(),
                                                   " and ", b.size()));
  }
  std::fill(dw.begin(), dw.end(), 0.0f);
  std::fill(db.begin(), db.end(), 0.0f);
  const size_t k = static_cast<size_t>(num_classes_);
  std::vector<float> logits(k);
  const float inv_n = 1.0f / static_cast<float>(batch.num_rows);
  double loss = 0;
  for (int64_t r = 0; r < batch.num_rows; ++r) {
    const std::span<const float> x = batch.dense_row(r);
    loss += RowLossAndLogitGradient(x, batch.labels[r], w, b, inv_n, logits);
    for (size_t c = 0; c < k; ++c) db[c] += logits[c];
    for (int64_t j = 0; j < dim_; ++j) {
      const float xj = x[j];
      if (xj == 0) continue;
      float* dwj = dw.data() + j * k;
      for (size_t c = 0; c < k; ++c) dwj[c] += xj * logits[c];
    }
  }
  return loss / static_cast<double>(batch.num_rows);
}

absl::StatusOr<double> SoftmaxRegression::LossAndLogitGradient(const Batch& batch,
                                                               std::span<const float> w,
                                                               std::span<const float> b,
                                                               std::span<float> dlogits,
                                                               std::span<float> db) const {
  TJ_RETURN_IF_ERROR(Check(batch, w, b));
  const size_t k = static_cast<size_t>(num_classes_);
  if (dlogits.size() != static_cast<size_t>(batch.num_rows) * k || db.size() != b.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradient spans have ", dlogits.size(), " and ", db.size(), " floats, expected ",
        static_cast<size_t>(batch.num_rows) * k, " and ", b.size()));
  }
  std::fill(db.begin(), db.end(), 0.0f);
  const float inv_n = 1.0f / static_cast<float>(batch.num_rows);
  double loss = 0;
  for (int64_t r = 0; r < batch.num_rows; ++r) {
    const std::span<float> g = dlogits.subspan(static_cast<size_t>(r) * k, k);
    loss += RowLossAndLogitGradient(batch.dense_row(r), batch.labels[r], w, b, inv_n, g);
    for (size_t c = 0; c < k; ++c) db[c] += g[c];
  }
  return loss / static_cast<double>(batch.num_rows);
}

void SoftmaxRegression::WeightGradientRows(const Batch& batch, std::span<const float> dlogits,
                                           int64_t first_feature, std::span<float> dw_rows) const {
  const size_t k = static_cast<size_t>(num_classes_);
  const int64_t rows = static_cast<int64_t>(dw_rows.size() / k);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j = first_feature + i;
    float* dwj = dw_rows.data() + static_cast<size_t>(i) * k;
    std::fill(dwj, dwj + k, 0.0f);
    // Batch rows in order, as LossAndGradient adds them.
    for (int64_t r = 0; r < batch.num_rows; ++r) {
      const float xj = batch.dense_row(r)[j];
      if (xj == 0) continue;
      const float* g = dlogits.data() + static_cast<size_t>(r) * k;
      for (size_t c = 0; c < k; ++c) dwj[c] += xj * g[c];
    }
  }
}

absl::StatusOr<SoftmaxMetrics> SoftmaxRegression::Evaluate(const Batch& batch,
                                                           std::span<const float> w,
                                                           std::span<const float> b) const {
  TJ_RETURN_IF_ERROR(Check(batch, w, b));
  std::vector<float> logits(static_cast<size_t>(num_classes_));
  double loss = 0;
  int64_t correct = 0;
  for (int64_t r = 0; r < batch.num_rows; ++r) {
    Logits(batch.dense_row(r), w, b, logits);
    const int32_t y = batch.labels[r];
    loss += LogSumExp(logits) - logits[y];
    if (std::max_element(logits.begin(), logits.end()) - logits.begin() == y) ++correct;
  }
  const auto n = static_cast<double>(batch.num_rows);
  return SoftmaxMetrics{.loss = loss / n, .accuracy = static_cast<double>(correct) / n};
}

absl::Status SoftmaxRegression::Predict(const Batch& batch, std::span<const float> w,
                                        std::span<const float> b,
                                        std::span<int32_t> classes) const {
  TJ_RETURN_IF_ERROR(Check(batch, w, b));
  if (static_cast<int64_t>(classes.size()) != batch.num_rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("Predict needs room for ", batch.num_rows, " classes, got ", classes.size()));
  }
  std::vector<float> logits(static_cast<size_t>(num_classes_));
  for (int64_t r = 0; r < batch.num_rows; ++r) {
    Logits(batch.dense_row(r), w, b, logits);
    classes[r] =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  return absl::OkStatus();
}

}  // namespace tj::train
