#include "trainer/data/synthetic_ctr.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace tj::train {
namespace {

// SplitMix64's finalizer: a bijective mix with full avalanche. Hashing chains of (seed, salt,
// index, field) through it gives independent-looking streams without any generator state.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t Hash(uint64_t seed, uint64_t salt, uint64_t a, uint64_t b = 0) {
  return Mix(Mix(Mix(seed ^ Mix(salt)) ^ a) ^ b);
}

// Uniform in [0, 1) from the top 53 bits.
double Uniform(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

double Logistic(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// Distinct salts keep the category, id, weight and label streams independent.
enum Salt : uint64_t { kCategory = 1, kId = 2, kWeight = 3, kLabel = 4 };

}  // namespace

absl::StatusOr<std::unique_ptr<SyntheticCtrDataset>> SyntheticCtrDataset::Create(
    const SyntheticCtrOptions& options) {
  if (options.num_examples < 0 || options.num_fields <= 0 || options.vocab_per_field <= 0 ||
      options.id_space <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("synthetic CTR data needs num_examples >= 0 (got ", options.num_examples,
                     "), num_fields > 0 (got ", options.num_fields, "), vocab_per_field > 0 (got ",
                     options.vocab_per_field, ") and id_space > 0 (got ", options.id_space, ")"));
  }
  if (!(options.weight_stddev >= 0) || !std::isfinite(options.weight_stddev) ||
      !std::isfinite(options.bias)) {
    return absl::InvalidArgumentError(
        "synthetic CTR data needs a finite weight_stddev >= 0 and bias");
  }
  return std::unique_ptr<SyntheticCtrDataset>(new SyntheticCtrDataset(options));
}

int64_t SyntheticCtrDataset::Category(int64_t i, int32_t field) const {
  const double u = Uniform(
      Hash(options_.seed, kCategory, static_cast<uint64_t>(i), static_cast<uint64_t>(field)));
  return static_cast<int64_t>(static_cast<double>(options_.vocab_per_field) * u * u);
}

int64_t SyntheticCtrDataset::Id(int32_t field, int64_t category) const {
  const uint64_t h =
      Hash(options_.seed, kId, static_cast<uint64_t>(field), static_cast<uint64_t>(category));
  return static_cast<int64_t>(h % static_cast<uint64_t>(options_.id_space));
}

double SyntheticCtrDataset::Weight(int32_t field, int64_t category) const {
  // Uniform on [-a, a] has standard deviation a / sqrt(3).
  const double a = options_.weight_stddev * std::sqrt(3.0);
  const uint64_t h =
      Hash(options_.seed, kWeight, static_cast<uint64_t>(field), static_cast<uint64_t>(category));
  return a * (2.0 * Uniform(h) - 1.0);
}

double SyntheticCtrDataset::HiddenLogit(int64_t i) const {
  double logit = options_.bias;
  for (int32_t f = 0; f < options_.num_fields; ++f) logit += Weight(f, Category(i, f));
  return logit;
}

double SyntheticCtrDataset::TrueProbability(int64_t i) const { return Logistic(HiddenLogit(i)); }

absl::Status SyntheticCtrDataset::AppendRange(int64_t begin, int64_t end, Batch& batch) const {
  const int32_t fields = options_.num_fields;
  batch.num_rows += end - begin;
  // No reserve(): a split view appends many short runs, and reserving exactly each time would
  // defeat the vectors' geometric growth (quadratic copying). A reused batch has the capacity.
  for (int64_t i = begin; i < end; ++i) {
    double logit = options_.bias;
    for (int32_t f = 0; f < fields; ++f) {
      const int64_t category = Category(i, f);
      batch.ids.push_back(Id(f, category));
      batch.values.push_back(1.0f);
      batch.fields.push_back(f);
      logit += Weight(f, category);
    }
    batch.row_offsets.push_back(static_cast<int64_t>(batch.ids.size()));
    // The label is a Bernoulli draw with the hidden model's probability, from its own stream.
    const double u = Uniform(Hash(options_.seed, kLabel, static_cast<uint64_t>(i)));
    batch.labels.push_back(u < Logistic(logit) ? 1 : 0);
  }
  return absl::OkStatus();
}

}  // namespace tj::train
