// A deterministic synthetic click-through data set for large sparse runs: example i is computed
// from (seed, i) alone, so any range is generated independently, on any worker, with no storage.
// Labels come from a hidden logistic model over the ids, so a sparse model can learn them.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "trainer/data/dataset.h"

namespace tj::train {

struct SyntheticCtrOptions {
  uint64_t seed = 1;
  int64_t num_examples = 1'000'000;
  // Categorical fields per example; each contributes exactly one (field, id) entry.
  int32_t num_fields = 8;
  // Distinct categories per field. Category c of an example is floor(vocab * u^2) for a uniform
  // u, so low categories are frequent, like the head of a real CTR log.
  int64_t vocab_per_field = 1000;
  // Ids are hash(seed, field, category) mod id_space: collisions happen, as with real hashing.
  int64_t id_space = int64_t{1} << 22;
  // The hidden model: logit = bias + sum over fields of w(field, category), where each w is
  // uniform with mean 0 and this standard deviation.
  double weight_stddev = 1.0;
  double bias = -1.0;
};

class SyntheticCtrDataset : public Dataset {
 public:
  // InvalidArgument if a size is not positive.
  static absl::StatusOr<std::unique_ptr<SyntheticCtrDataset>> Create(
      const SyntheticCtrOptions& options);

  int64_t num_examples() const override { return options_.num_examples; }
  BatchKind kind() const override { return BatchKind::kSparse; }
  int64_t dim() const override { return options_.id_space; }
  int32_t num_classes() const override { return 2; }

  // The hidden model's click probability for example i: what a perfect model would predict. Tests
  // use it to bound the AUC a learned model can reach.
  double TrueProbability(int64_t i) const;

 protected:
  // O((end - begin) * num_fields) hashes; no allocation beyond the batch's growth.
  absl::Status AppendRange(int64_t begin, int64_t end, Batch& batch) const override;

 private:
  explicit SyntheticCtrDataset(const SyntheticCtrOptions& options) : options_(options) {}

  int64_t Category(int64_t i, int32_t field) const;
  int64_t Id(int32_t field, int64_t category) const;
  double Weight(int32_t field, int64_t category) const;
  double HiddenLogit(int64_t i) const;

  SyntheticCtrOptions options_;
};

}  // namespace tj::train
