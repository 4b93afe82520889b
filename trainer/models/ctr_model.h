// The sparse CTR models over hashed ids: logistic regression (a weight per id) and factorization
// machine (a weight and a k-dim factor per id). Model math only: the batch's distinct ids' rows
// arrive as one span pulled from the PS; the gradient leaves as one summed row per id, to push.
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/data/batch.h"
#include "trainer/models/batch_ids.h"

namespace tj::train {

enum class CtrModelType { kLogisticRegression, kFactorizationMachine };

// For example x (entries id_i with value x_i), with bias w0 and per-id rows:
//   LR: z = w0 + sum_i w_i x_i                                   row = [w_i]
//   FM: z = w0 + sum_i w_i x_i
//          + 1/2 sum_f [(sum_i v_if x_i)^2 - sum_i v_if^2 x_i^2]  row = [w_i, v_i1 .. v_ik]
//   p = sigmoid(z), loss = -y log p - (1 - y) log(1 - p), averaged over the batch.
// The FM pairwise term is computed with the O(k * n) identity above instead of O(k * n^2) pairs.
// Factors initialized to exactly 0 get no gradient (every pair term is 0): initialize them with
// small random values.
//
// Every call is O(k * entries) time plus O(k) scratch (k = 0 for LR). Errors (InvalidArgument): a
// dense or empty batch, `ids` not built from this batch, spans of the wrong size, labels not 0/1.
class CtrModel {
 public:
  // factor_dim is k for the FM (>= 1) and must be 0 for LR.
  static absl::StatusOr<CtrModel> Create(CtrModelType type, int32_t factor_dim);

  CtrModelType type() const { return type_; }
  int32_t factor_dim() const { return factor_dim_; }
  // Floats per id row: 1 for LR, 1 + k for the FM.
  int32_t row_dim() const { return 1 + factor_dim_; }

  // rows: ids.unique.size() * row_dim() floats, row s for id ids.unique[s]. Writes one logit z per
  // batch row.
  absl::Status Logits(const Batch& batch, const BatchIds& ids, std::span<const float> rows,
                      float bias, std::span<float> logits) const;

  // Click probabilities sigmoid(z), one per batch row.
  absl::Status Predict(const Batch& batch, const BatchIds& ids, std::span<const float> rows,
                       float bias, std::span<float> probabilities) const;

  // Returns the mean log loss; overwrites grad_rows (the layout of rows: an id seen several times
  // in the batch gets the sum of its contributions in its one row) and grad_bias.
  absl::StatusOr<double> LossAndGradient(const Batch& batch, const BatchIds& ids,
                                         std::span<const float> rows, float bias,
                                         std::span<float> grad_rows, float& grad_bias) const;

 private:
  CtrModel(CtrModelType type, int32_t factor_dim) : type_(type), factor_dim_(factor_dim) {}

  absl::Status Check(const Batch& batch, const BatchIds& ids, std::span<const float> rows) const;
  // z for batch row r; for the FM also leaves sum_i v_if x_i in `factor_sums` (k floats), which
  // the gradient reuses.
  float RowLogit(const Batch& batch, const BatchIds& ids, std::span<const float> rows, float bias,
                 int64_t r, std::span<float> factor_sums) const;

  CtrModelType type_;
  int32_t factor_dim_;
};

// log(1 + exp(z)) - y z, the log loss of sigmoid(z) against y in {0, 1}, without overflow.
double LogLoss(double z, int32_t y);
double Sigmoid(double z);

}  // namespace tj::train
