#include "coordinator/ps/optimizer.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif
#include "coordinator/ps/parallel_for.h"

namespace tj {
namespace {

// Wire bytes carry no alignment guarantee, so each element is memcpy'd out; compilers turn this
// into unaligned vector loads.
inline float Load(const char* data, size_t i) {
  float x;
  std::memcpy(&x, data + i * sizeof(float), sizeof(float));
  return x;
}

absl::Status CheckLearningRate(float lr) {
  if (std::isfinite(lr) && lr > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer needs a finite learning_rate > 0, got ", lr));
}

absl::Status CheckInRange(const char* what, float value, float low, float high, bool high_open) {
  const bool ok =
      std::isfinite(value) && value >= low && (high_open ? value < high : value <= high);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("optimizer ", what, " must be in [", low, ", ",
                                                 high, high_open ? ")" : "]", ", got ", value));
}

}  // namespace

absl::StatusOr<OptimizerConfig> OptimizerConfig::FromProto(const v1::Optimizer& proto) {
  OptimizerConfig c;
  absl::Status status;
  constexpr float kHuge = 3.0e38f;
  switch (proto.kind_case()) {
    case v1::Optimizer::KIND_NOT_SET:
    case v1::Optimizer::kAssignAdd:
      return c;
    case v1::Optimizer::kSgd:
      c.kind = OptimizerKind::kSgd;
      c.learning_rate = proto.sgd().learning_rate();
      status = CheckLearningRate(c.learning_rate);
      break;
    case v1::Optimizer::kAdagrad: {
      const auto& p = proto.adagrad();
      c.kind = OptimizerKind::kAdagrad;
      c.learning_rate = p.learning_rate();
      if (p.has_initial_accumulator_value())
        c.initial_accumulator_value = p.initial_accumulator_value();
      if (p.has_epsilon()) c.epsilon = p.epsilon();
      status = CheckLearningRate(c.learning_rate);
      if (status.ok()) {
        status =
            CheckInRange("initial_accumulator_value", c.initial_accumulator_value, 0, kHuge, false);
      }
      if (status.ok()) status = CheckInRange("epsilon", c.epsilon, 0, kHuge, false);
      break;
    }
    case v1::Optimizer::kAdam: {
      const auto& p = proto.adam();
      c.kind = OptimizerKind::kAdam;
      c.learning_rate = p.learning_rate();
      if (p.has_beta1()) c.beta1 = p.beta1();
      if (p.has_beta2()) c.beta2 = p.beta2();
      if (p.has_epsilon()) c.epsilon = p.epsilon();
      status = CheckLearningRate(c.learning_rate);
      if (status.ok()) status = CheckInRange("beta1", c.beta1, 0, 1, true);
      if (status.ok()) status = CheckInRange("beta2", c.beta2, 0, 1, true);
      if (status.ok()) status = CheckInRange("epsilon", c.epsilon, 0, kHuge, false);
      break;
    }
  }
  if (!status.ok()) return status;
  return c;
}

v1::Optimizer OptimizerConfig::ToProto() const {
  v1::Optimizer proto;
  switch (kind) {
    case OptimizerKind::kAssignAdd:
      proto.mutable_assign_add();
      break;
    case OptimizerKind::kSgd:
      proto.mutable_sgd()->set_learning_rate(learning_rate);
      break;
    case OptimizerKind::kAdagrad: {
      auto* p = proto.mutable_adagrad();
      p->set_learning_rate(learning_rate);
      p->set_initial_accumulator_value(initial_accumulator_value);
      p->set_epsilon(epsilon);
      break;
    }
    case OptimizerKind::kAdam: {
      auto* p = proto.mutable_adam();
      p->set_learning_rate(learning_rate);
      p->set_beta1(beta1);
      p->set_beta2(beta2);
      p->set_epsilon(epsilon);
      break;
    }
  }
  return proto;
}

int OptimizerConfig::num_slots() const {
  switch (kind) {
    case OptimizerKind::kAdagrad:
      return 1;
    case OptimizerKind::kAdam:
      return 2;
    default:
      return 0;
  }
}

float OptimizerConfig::slot_initial_value(int /*slot*/) const {
  return kind == OptimizerKind::kAdagrad ? initial_accumulator_value : 0.0f;
}

std::string OptimizerConfig::ToString() const {
  switch (kind) {
    case OptimizerKind::kAssignAdd:
      return "assign_add";
    case OptimizerKind::kSgd:
      return absl::StrCat("sgd(lr=", learning_rate, ")");
    case OptimizerKind::kAdagrad:
      return absl::StrCat("adagrad(lr=", learning_rate,
                          ", initial_accumulator_value=", initial_accumulator_value,
                          ", epsilon=", epsilon, ")");
    case OptimizerKind::kAdam:
      return absl::StrCat("adam(lr=", learning_rate, ", beta1=", beta1, ", beta2=", beta2,
                          ", epsilon=", epsilon, ")");
  }
  return "unknown";
}

void ApplyUpdate(const OptimizerConfig& c, int64_t step, size_t n, const char* grad, float* values,
                 float* slot0, float* slot1) {
  switch (c.kind) {
    case OptimizerKind::kAssignAdd:
      for (size_t i = 0; i < n; ++i) values[i] += Load(grad, i);
      return;
    case OptimizerKind::kSgd: {
      const float lr = c.learning_rate;
      for (size_t i = 0; i < n; ++i) values[i] -= lr * Load(grad, i);
      return;
    }
    case OptimizerKind::kAdagrad: {
      const float lr = c.learning_rate;
      const float eps = c.epsilon;
      float* acc = slot0;
      for (size_t i = 0; i < n; ++i) {
        const float g = Load(grad, i);
        acc[i] += g * g;
        values[i] -= lr * g / (std::sqrt(acc[i]) + eps);
      }
      return;
    }
    case OptimizerKind::kAdam: {
      // The bias corrections of step t = step + 1, folded into the learning rate (Keras), computed
      // in double: beta^t underflows gracefully and 1 - beta^t keeps its digits.
      const double t = static_cast<double>(step + 1);
      const float lr_t =
          static_cast<float>(c.learning_rate * std::sqrt(1.0 - std::pow(double{c.beta2}, t)) /
                             (1.0 - std::pow(double{c.beta1}, t)));
      const float b1 = c.beta1;
      const float b2 = c.beta2;
      const float eps = c.epsilon;
      float* m = slot0;
      float* v = slot1;
      for (size_t i = 0; i < n; ++i) {
        const float g = Load(grad, i);
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        values[i] -= lr_t * m[i] / (std::sqrt(v[i]) + eps);
      }
      return;
    }
  }
}

int64_t ApplyOutOfPlace(const OptimizerConfig& c, size_t n, const char* grad, const float* values,
                        float* out) {
  // The finiteness test is FirstNonFinite's, on the bits, so that the loop vectorizes.
  uint32_t carry = 0;
  const float scale = c.kind == OptimizerKind::kSgd ? -c.learning_rate : 1.0f;
  auto one = [&](size_t i) {
    uint32_t bits;
    std::memcpy(&bits, grad + i * sizeof(uint32_t), sizeof(bits));
    carry |= (bits & 0x7f800000u) + 0x00800000u;
    out[i] = values[i] + scale * Load(grad, i);
  };
  size_t i = 0;
#if defined(__SSE2__)
  // `out` is a fresh buffer that nothing reads before the update is installed: non-temporal
  // stores write it around the cache and save reading every line of it first (a quarter of the
  // memory traffic of this memory-bound loop). The same IEEE operations as `one`, so the results
  // are bit for bit those of the in-place update.
  for (; i < n && (reinterpret_cast<uintptr_t>(out + i) & 15) != 0; ++i) one(i);
  const __m128 vscale = _mm_set1_ps(scale);
  const __m128i exponent = _mm_set1_epi32(0x7f800000);
  const __m128i exponent_one = _mm_set1_epi32(0x00800000);
  __m128i vcarry = _mm_setzero_si128();
  for (; i + 4 <= n; i += 4) {
    const __m128i bits =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(grad + i * sizeof(float)));
    vcarry = _mm_or_si128(vcarry, _mm_add_epi32(_mm_and_si128(bits, exponent), exponent_one));
    const __m128 updated =
        _mm_add_ps(_mm_loadu_ps(values + i), _mm_mul_ps(vscale, _mm_castsi128_ps(bits)));
    _mm_stream_ps(out + i, updated);
  }
  alignas(16) uint32_t lanes[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), vcarry);
  carry |= lanes[0] | lanes[1] | lanes[2] | lanes[3];
  // Non-temporal stores are weakly ordered: fence them before the buffer is handed on.
  _mm_sfence();
#endif
  for (; i < n; ++i) one(i);
  return (carry & 0x80000000u) == 0 ? -1 : FirstNonFinite(grad, n);
}

int64_t FirstNonFinite(const char* data, size_t n) {
  // Branch-free scan first, on the bits: a float is NaN or infinite exactly when its exponent is
  // all ones, and then adding one to the exponent carries into the top bit. AND, ADD and OR
  // vectorize (this file is built with -O3), so the scan runs at memory speed; the index is only
  // looked for when something is wrong.
  uint32_t carry = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, data + i * sizeof(uint32_t), sizeof(bits));
    carry |= (bits & 0x7f800000u) + 0x00800000u;
  }
  if ((carry & 0x80000000u) == 0) return -1;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(Load(data, i))) return static_cast<int64_t>(i);
  }
  return -1;
}

absl::Status NonFiniteError(int64_t index, float value) {
  return absl::InvalidArgumentError(absl::StrCat("gradient element ", index, " is ",
                                                 std::isnan(value) ? "NaN" : "infinite",
                                                 "; non-finite updates are rejected"));
}

absl::Status CheckFiniteGradient(const char* data, size_t n) {
  const int64_t bad = FirstNonFinite(data, n);
  if (bad < 0) return absl::OkStatus();
  return NonFiniteError(bad, Load(data, static_cast<size_t>(bad)));
}

absl::Status CheckFiniteGradient(const ByteChunks& grad) {
  // Each part records its first non-finite element; the lowest index over all parts is reported.
  struct Found {
    int64_t index = -1;
    float value = 0;
  };
  const size_t n = TotalBytes(grad) / sizeof(float);
  std::vector<Found> found((n + kParallelGrainElements - 1) / kParallelGrainElements + 1);
  ParallelFor(n, kParallelGrainElements, [&](size_t begin, size_t end) {
    Found& mine = found[begin / kParallelGrainElements];
    const ByteChunks part = SubChunks(grad, begin * sizeof(float), (end - begin) * sizeof(float));
    ForEachElementRun<sizeof(float)>(part, [&](size_t first, const char* bytes, size_t count) {
      if (mine.index >= 0) return;
      const int64_t in_run = FirstNonFinite(bytes, count);
      if (in_run < 0) return;
      mine.index = static_cast<int64_t>(begin + first) + in_run;
      mine.value = Load(bytes, static_cast<size_t>(in_run));
    });
  });
  for (const Found& f : found) {
    if (f.index >= 0) return NonFiniteError(f.index, f.value);
  }
  return absl::OkStatus();
}

}  // namespace tj
