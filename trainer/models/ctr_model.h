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

// The output layer over the model's sum s(x) below:
//   kBias:  z = w0 + s(x)      the textbook models
//   kDense: z = w0 + a s(x)    with a learned scalar a too: what Keras' Dense(1) over s(x) is
//                              (examples/tf-ctr/ctr_pss.py), so tj-train can run that model
enum class CtrHead { kBias, kDense };

// The head's parameters w0 and a, or their gradients. a is 1 for kBias (its gradient 0).
struct CtrHeadParams {
  float bias = 0;
  float scale = 1;
};

// For example x (entries id_i with value x_i), with per-id rows:
//   LR: s = sum_i w_i x_i                                       row = [w_i]
//   FM: s = sum_i w_i x_i
//         + 1/2 sum_f [(sum_i v_if x_i)^2 - sum_i v_if^2 x_i^2]  row = [w_i, v_i1 .. v_ik]
//   z from s by the head, p = sigmoid(z), loss = -y log p - (1 - y) log(1 - p), averaged over the
//   batch.
// The FM pairwise term is computed with the O(k * n) identity above instead of O(k * n^2) pairs.
// Factors initialized to exactly 0 get no gradient (every pair term is 0): initialize them with
// small random values.
//
// Every call is O(k * entries) time plus O(k) scratch (k = 0 for LR). Errors (InvalidArgument): a
// dense or empty batch, `ids` not built from this batch, spans of the wrong size, labels not 0/1,
// a kBias head given a scale other than 1.
class CtrModel {
 public:
  // factor_dim is k for the FM (>= 1) and must be 0 for LR.
  static absl::StatusOr<CtrModel> Create(CtrModelType type, int32_t factor_dim,
                                         CtrHead head = CtrHead::kBias);

  CtrModelType type() const { return type_; }
  CtrHead head() const { return head_; }
  int32_t factor_dim() const { return factor_dim_; }
  // Floats per id row: 1 for LR, 1 + k for the FM.
  int32_t row_dim() const { return 1 + factor_dim_; }

  // rows: ids.unique.size() * row_dim() floats, row s for id ids.unique[s]. Writes one logit z per
  // batch row.
  absl::Status Logits(const Batch& batch, const BatchIds& ids, std::span<const float> rows,
                      CtrHeadParams head, std::span<float> logits) const;

  // Click probabilities sigmoid(z), one per batch row.
  absl::Status Predict(const Batch& batch, const BatchIds& ids, std::span<const float> rows,
                       CtrHeadParams head, std::span<float> probabilities) const;

  // Returns the mean log loss; overwrites grad_rows (the layout of rows: an id seen several times
  // in the batch gets the sum of its contributions in its one row) and grad_head.
  absl::StatusOr<double> LossAndGradient(const Batch& batch, const BatchIds& ids,
                                         std::span<const float> rows, CtrHeadParams head,
                                         std::span<float> grad_rows,
                                         CtrHeadParams& grad_head) const;

 private:
  CtrModel(CtrModelType type, int32_t factor_dim, CtrHead head)
      : type_(type), factor_dim_(factor_dim), head_(head) {}

  absl::Status Check(const Batch& batch, const BatchIds& ids, std::span<const float> rows,
                     CtrHeadParams head) const;
  // s for batch row r; for the FM also leaves sum_i v_if x_i in `factor_sums` (k floats), which
  // the gradient reuses.
  float RowSum(const Batch& batch, const BatchIds& ids, std::span<const float> rows, int64_t r,
               std::span<float> factor_sums) const;

  CtrModelType type_;
  int32_t factor_dim_;
  CtrHead head_;
};

// log(1 + exp(z)) - y z, the log loss of sigmoid(z) against y in {0, 1}, without overflow.
double LogLoss(double z, int32_t y);
double Sigmoid(double z);

}  // namespace tj::train
