// Multinomial logistic regression (softmax) over dense batches: loss, gradient, predictions and
// accuracy. Model math only: the parameters arrive as raw float spans because they live on the
// parameter servers; the caller pulls them and pushes the gradients back.
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/data/batch.h"

namespace tj::train {

struct SoftmaxMetrics {
  double loss = 0;      // mean cross-entropy over the batch
  double accuracy = 0;  // fraction of rows whose argmax is the label
};

// logits = x W + b, with W of shape [dim x num_classes], row-major (row j: feature j's weight for
// every class) and b of shape [num_classes]. Every call is O(rows * dim * num_classes) time, skips
// zero features, and allocates only O(num_classes) scratch. Loss and gradient are means over the
// batch. Errors (InvalidArgument): a sparse or empty batch, batch.dim != dim, a span of the wrong
// size, a label outside [0, num_classes).
class SoftmaxRegression {
 public:
  SoftmaxRegression(int64_t dim, int32_t num_classes) : dim_(dim), num_classes_(num_classes) {}

  int64_t dim() const { return dim_; }
  int32_t num_classes() const { return num_classes_; }
  int64_t weights_size() const { return dim_ * num_classes_; }

  // Returns the mean loss; overwrites dw ([dim x num_classes]) and db ([num_classes]) with its
  // gradient.
  absl::StatusOr<double> LossAndGradient(const Batch& batch, std::span<const float> w,
                                         std::span<const float> b, std::span<float> dw,
                                         std::span<float> db) const;

  // LossAndGradient in two halves, for a caller that writes dw a few rows at a time while it pushes
  // them (ShardedPsClient::StreamPush): first the mean loss, db, and each batch row's gradient of
  // its logits, (softmax - one-hot) / rows, into dlogits ([batch.num_rows x num_classes]); ...
  absl::StatusOr<double> LossAndLogitGradient(const Batch& batch, std::span<const float> w,
                                              std::span<const float> b, std::span<float> dlogits,
                                              std::span<float> db) const;
  // ... then any whole rows of dw, from feature `first_feature` on, from those: the same products
  // added in the same order as LossAndGradient, so the same floats bit for bit. `batch` and
  // `dlogits` as given to LossAndLogitGradient.
  void WeightGradientRows(const Batch& batch, std::span<const float> dlogits, int64_t first_feature,
                          std::span<float> dw_rows) const;

  // Mean loss and accuracy, no gradient.
  absl::StatusOr<SoftmaxMetrics> Evaluate(const Batch& batch, std::span<const float> w,
                                          std::span<const float> b) const;

  // The most likely class of every row (the lowest index on ties); `classes` has batch.num_rows
  // elements.
  absl::Status Predict(const Batch& batch, std::span<const float> w, std::span<const float> b,
                       std::span<int32_t> classes) const;

 private:
  absl::Status Check(const Batch& batch, std::span<const float> w, std::span<const float> b) const;
  // logits = b + x W for one row, skipping zero features: O(dim * num_classes).
  void Logits(std::span<const float> x, std::span<const float> w, std::span<const float> b,
              std::span<float> logits) const;
  // Row x's loss (label y); overwrites `logits` with its gradient: (softmax - one-hot) * inv_n.
  double RowLossAndLogitGradient(std::span<const float> x, int32_t y, std::span<const float> w,
                                 std::span<const float> b, float inv_n,
                                 std::span<float> logits) const;

  int64_t dim_;
  int32_t num_classes_;
};

// log(sum(exp(logits))), computed as max + log(sum(exp(logits - max))) so it never overflows.
double LogSumExp(std::span<const float> logits);

}  // namespace tj::train
