// Functions every worker binary registers: small, well-defined building blocks used by the demo job,
// the tests and the benchmarks (no-op, arithmetic, cancellable sleep, failures, PS counters,
// per-worker counters, Monte Carlo samples).
#pragma once

#include "absl/status/status.h"
#include "coordinator/worker/function_registry.h"

namespace tj {

absl::Status RegisterBuiltinFunctions(FunctionRegistry& registry);

}  // namespace tj
