#include "coordinator/ps/initializer.h"

#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "coordinator/ps/id_hash.h"

namespace tj {
namespace {

// TensorFlow redraws truncated-normal samples beyond two standard deviations.
constexpr double kTruncation = 2.0;
// A redraw succeeds with probability 0.95, so 64 failures in a row never happen in practice; the
// bound only keeps the loop finite.
constexpr int kMaxRedraws = 64;

// 64 random bits for counter `counter` of stream `stream`.
uint64_t Draw(uint64_t stream, uint64_t counter) { return Mix64(stream ^ SplitMix64(counter)); }

// Uniform in [0, 1) with 53 bits of precision.
double UnitInterval(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// A standard normal sample for element `i` (Box-Muller over two draws of the stream).
double StandardNormal(uint64_t stream, uint64_t i) {
  const double u1 = 1.0 - UnitInterval(Draw(stream, 2 * i));  // (0, 1]: log stays finite
  const double u2 = UnitInterval(Draw(stream, 2 * i + 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double TruncatedStandardNormal(uint64_t stream, uint64_t i) {
  double z = 0;
  for (int attempt = 0; attempt < kMaxRedraws; ++attempt) {
    z = StandardNormal(Mix64(stream + static_cast<uint64_t>(attempt)), i);
    if (std::abs(z) <= kTruncation) return z;
  }
  return std::copysign(kTruncation, z);
}

}  // namespace

absl::Status ValidateInitializer(const v1::Initializer& init) {
  for (float parameter : {init.value(), init.minval(), init.maxval(), init.mean(), init.stddev()}) {
    if (!std::isfinite(parameter)) {
      return absl::InvalidArgumentError("initializer has a non-finite parameter");
    }
  }
  switch (init.kind()) {
    case v1::Initializer::ZEROS:
    case v1::Initializer::CONSTANT:
      return absl::OkStatus();
    case v1::Initializer::RANDOM_UNIFORM:
      if (init.minval() > init.maxval()) {
        return absl::InvalidArgumentError(absl::StrCat("uniform initializer has minval ",
                                                       init.minval(), " > maxval ", init.maxval()));
      }
      return absl::OkStatus();
    case v1::Initializer::RANDOM_NORMAL:
    case v1::Initializer::TRUNCATED_NORMAL:
      if (init.stddev() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("normal initializer has a negative stddev ", init.stddev()));
      }
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unknown initializer kind ", static_cast<int>(init.kind())));
  }
}

uint64_t InitializerStream(const v1::Initializer& initializer, std::string_view name) {
  return Mix64(SplitMix64(initializer.seed()) ^ Fingerprint64(name));
}

uint64_t RowStream(uint64_t table_stream, int64_t id) {
  return Mix64(table_stream ^ SplitMix64(static_cast<uint64_t>(id) + 0x632be59bd9b4e019ULL));
}

void FillInitialValues(const v1::Initializer& init, uint64_t stream, uint64_t first,
                       std::span<float> out) {
  switch (init.kind()) {
    case v1::Initializer::CONSTANT:
      for (float& x : out) x = init.value();
      return;
    case v1::Initializer::RANDOM_UNIFORM: {
      const double low = init.minval();
      const double width = static_cast<double>(init.maxval()) - low;
      for (size_t i = 0; i < out.size(); ++i) {
        out[i] = static_cast<float>(low + width * UnitInterval(Draw(stream, first + i)));
      }
      return;
    }
    case v1::Initializer::RANDOM_NORMAL:
      for (size_t i = 0; i < out.size(); ++i) {
        out[i] =
            static_cast<float>(init.mean() + init.stddev() * StandardNormal(stream, first + i));
      }
      return;
    case v1::Initializer::TRUNCATED_NORMAL:
      for (size_t i = 0; i < out.size(); ++i) {
        out[i] = static_cast<float>(init.mean() +
                                    init.stddev() * TruncatedStandardNormal(stream, first + i));
      }
      return;
    default:  // ZEROS; validation rejected anything unknown
      for (float& x : out) x = 0.0f;
      return;
  }
}

}  // namespace tj
