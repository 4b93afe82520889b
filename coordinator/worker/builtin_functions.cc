#include "coordinator/worker/builtin_functions.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/base/values.h"

namespace tj {
namespace {

// A per-worker counter: proves that resources are per worker and rebuilt after a restart.
class CounterResource : public Resource {
 public:
  CounterResource(int worker_index, int64_t start) : worker_index_(worker_index), next_(start) {}
  std::string type_name() const override { return "counter"; }
  v1::Value Describe() const override {
    return StringValue(absl::StrCat("counter on worker ", worker_index_));
  }
  int64_t Next() { return next_.fetch_add(1); }
  int worker_index() const { return worker_index_; }

 private:
  int worker_index_;
  std::atomic<int64_t> next_;
};

absl::StatusOr<v1::Value> Noop(FunctionContext&, const Args&) { return NoneValue(); }

absl::StatusOr<v1::Value> Echo(FunctionContext&, const Args& args) {
  TJ_RETURN_IF_ERROR(args.ExpectCount(1));
  TJ_ASSIGN_OR_RETURN(const v1::Value* value, args.Raw(0));
  return *value;
}

absl::StatusOr<v1::Value> Add(FunctionContext&, const Args& args) {
  TJ_RETURN_IF_ERROR(args.ExpectCount(2));
  TJ_ASSIGN_OR_RETURN(int64_t a, args.Int(0));
  TJ_ASSIGN_OR_RETURN(int64_t b, args.Int(1));
  return IntValue(a + b);
}

absl::StatusOr<v1::Value> WorkerIndex(FunctionContext& ctx, const Args&) {
  return IntValue(ctx.worker_index());
}

// sleep(ms[, marker_path]): sleeps, waking early with Cancelled if the coordinator cancels the call.
// When a marker path is given, the file is created as the sleep begins, so a test can wait for the
// function to be running (a condition, not a guess).
absl::StatusOr<v1::Value> Sleep(FunctionContext& ctx, const Args& args) {
  TJ_ASSIGN_OR_RETURN(int64_t ms, args.Int(0));
  if (args.size() > 1) {
    TJ_ASSIGN_OR_RETURN(std::string_view marker, args.String(1));
    // Written aside and renamed: a test that sees the file also sees the worker index in it.
    const std::string path(marker);
    std::ofstream(path + ".tmp") << ctx.worker_index() << "\n";
    std::error_code ignored;
    std::filesystem::rename(path + ".tmp", path, ignored);
  }
  TJ_RETURN_IF_ERROR(ctx.SleepFor(absl::Milliseconds(ms)));
  return IntValue(ctx.worker_index());
}

absl::StatusOr<v1::Value> Fail(FunctionContext&, const Args& args) {
  std::string message = "failed on purpose";
  if (args.size() > 0) {
    TJ_ASSIGN_OR_RETURN(std::string_view m, args.String(0));
    message = std::string(m);
  }
  return absl::InvalidArgumentError(message);
}

// ps_add(ps_task, variable, delta): adds delta to a scalar float variable on a PS (created at 0 if
// absent, idempotently) and returns nothing. PS connectivity errors carry the PS task.
absl::StatusOr<v1::Value> PsAdd(FunctionContext& ctx, const Args& args) {
  TJ_RETURN_IF_ERROR(args.ExpectCount(3));
  TJ_ASSIGN_OR_RETURN(int64_t task, args.Int(0));
  TJ_ASSIGN_OR_RETURN(std::string_view name, args.String(1));
  TJ_ASSIGN_OR_RETURN(double delta, args.Double(2));
  TJ_ASSIGN_OR_RETURN(PsClient * ps, ctx.ps(static_cast<int>(task)));
  const float zero = 0.0f;
  v1::VariableSpec spec;
  spec.set_name(std::string(name));
  *spec.mutable_initial_value() = FloatTensor({&zero, 1}, {});
  TJ_RETURN_IF_ERROR(ps->CreateVariables({spec}));
  const float d = static_cast<float>(delta);
  TJ_RETURN_IF_ERROR(ps->Push({std::string(name)}, {FloatTensor({&d, 1}, {})}));
  return NoneValue();
}

// ps_read(ps_task, variable): the scalar's value.
absl::StatusOr<v1::Value> PsRead(FunctionContext& ctx, const Args& args) {
  TJ_RETURN_IF_ERROR(args.ExpectCount(2));
  TJ_ASSIGN_OR_RETURN(int64_t task, args.Int(0));
  TJ_ASSIGN_OR_RETURN(std::string_view name, args.String(1));
  TJ_ASSIGN_OR_RETURN(PsClient * ps, ctx.ps(static_cast<int>(task)));
  TJ_ASSIGN_OR_RETURN(auto tensors, ps->Pull({std::string(name)}));
  TJ_ASSIGN_OR_RETURN(auto floats, FloatsOf(tensors.at(0)));
  if (floats.size() != 1) return absl::FailedPreconditionError("ps_read expects a scalar variable");
  return DoubleValue(floats[0]);
}

absl::StatusOr<std::shared_ptr<Resource>> MakeCounter(FunctionContext& ctx, const Args& args) {
  int64_t start = 0;
  if (args.size() > 0) {
    TJ_ASSIGN_OR_RETURN(start, args.Int(0));
  }
  return std::make_shared<CounterResource>(ctx.worker_index(), start);
}

// counter_next(counter): [worker index, next value] from this worker's own counter.
absl::StatusOr<v1::Value> CounterNext(FunctionContext&, const Args& args) {
  TJ_RETURN_IF_ERROR(args.ExpectCount(1));
  TJ_ASSIGN_OR_RETURN(auto counter, args.Resource<CounterResource>(0));
  return ListValue({IntValue(counter->worker_index()), IntValue(counter->Next())});
}

// pi_samples(seed, n): how many of n uniform points in the unit square fall in the quarter circle.
absl::StatusOr<v1::Value> PiSamples(FunctionContext&, const Args& args) {
  TJ_RETURN_IF_ERROR(args.ExpectCount(2));
  TJ_ASSIGN_OR_RETURN(int64_t seed, args.Int(0));
  TJ_ASSIGN_OR_RETURN(int64_t n, args.Int(1));
  if (n < 0) return absl::InvalidArgumentError("pi_samples: n must be >= 0");
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int64_t hits = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = u(rng), y = u(rng);
    hits += (x * x + y * y <= 1.0) ? 1 : 0;
  }
  return IntValue(hits);
}

}  // namespace

absl::Status RegisterBuiltinFunctions(FunctionRegistry& registry) {
  TJ_RETURN_IF_ERROR(registry.Register("noop", Noop));
  TJ_RETURN_IF_ERROR(registry.Register("echo", Echo));
  TJ_RETURN_IF_ERROR(registry.Register("add", Add));
  TJ_RETURN_IF_ERROR(registry.Register("worker_index", WorkerIndex));
  TJ_RETURN_IF_ERROR(registry.Register("sleep", Sleep));
  TJ_RETURN_IF_ERROR(registry.Register("fail", Fail));
  TJ_RETURN_IF_ERROR(registry.Register("ps_add", PsAdd));
  TJ_RETURN_IF_ERROR(registry.Register("ps_read", PsRead));
  TJ_RETURN_IF_ERROR(registry.Register("counter_next", CounterNext));
  TJ_RETURN_IF_ERROR(registry.Register("pi_samples", PiSamples));
  TJ_RETURN_IF_ERROR(registry.RegisterResource("counter", MakeCounter));
  return absl::OkStatus();
}

}  // namespace tj
