#include "coordinator/worker/closure_runner.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>

#include "absl/strings/str_cat.h"
#include "coordinator/base/wire_status.h"
#include "coordinator/ps/ps_error.h"

namespace tj {

absl::StatusOr<Args> ClosureRunner::DecodeArgs(const std::string& function,
                                               const std::string& serialized,
                                               bool* resource_missing) const {
  v1::ValueList values;
  if (!values.ParseFromString(serialized)) {
    return absl::InvalidArgumentError(
        absl::StrCat("arguments of function '", function, "' are not a serialized tj.v1.ValueList"));
  }
  std::vector<std::shared_ptr<Resource>> resources(static_cast<size_t>(values.values_size()));
  for (int i = 0; i < values.values_size(); ++i) {
    if (values.values(i).kind_case() != v1::Value::kResource) continue;
    const uint64_t id = values.values(i).resource().resource_id();
    resources[static_cast<size_t>(i)] = resources_->Get(id);
    if (resources[static_cast<size_t>(i)] == nullptr) {
      *resource_missing = true;
      return absl::FailedPreconditionError(absl::StrCat("argument ", i, " of function '", function,
                                                        "' refers to per-worker resource ", id,
                                                        ", which this worker has not built"));
    }
  }
  return Args(function, std::move(values), std::move(resources));
}

void ClosureRunner::Run(const v1::RunRequest& request, const CancellationFlag* cancellation,
                        v1::RunResult* result) const {
  result->set_closure_id(request.closure_id());
  auto fail = [&](v1::FailureKind kind, const absl::Status& status) {
    result->set_failure(kind);
    ToProto(status, result->mutable_status());
  };
  if (cancellation != nullptr && cancellation->cancelled()) {
    fail(v1::FAILURE_KIND_CANCELLED, absl::CancelledError("cancelled before it started"));
    return;
  }
  auto fn = registry_->Find(request.function());
  if (!fn.ok()) {
    fail(v1::FAILURE_KIND_APPLICATION, fn.status());
    return;
  }
  bool resource_missing = false;
  auto args = DecodeArgs(request.function(), request.args(), &resource_missing);
  if (!args.ok()) {
    fail(resource_missing ? v1::FAILURE_KIND_RESOURCE_MISSING : v1::FAILURE_KIND_APPLICATION,
         args.status());
    return;
  }
  FunctionContext ctx(worker_index_, cancellation, ps_);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<v1::Value> output;
  try {
    output = (**fn)(ctx, *args);
  } catch (const std::exception& e) {
    output = absl::InternalError(
        absl::StrCat("function '", request.function(), "' threw an exception: ", e.what()));
  } catch (...) {
    output = absl::InternalError(
        absl::StrCat("function '", request.function(), "' threw a non-standard exception"));
  }
  result->set_exec_micros(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start)
          .count()));
  counters_.runs.fetch_add(1, std::memory_order_relaxed);
  if (output.ok()) {
    *result->mutable_output() = std::move(*output);
    return;
  }
  if (!(ctx.cancelled() && absl::IsCancelled(output.status()))) {
    counters_.run_errors.fetch_add(1, std::memory_order_relaxed);
  }
  if (auto ps_task = PsTaskOf(output.status())) {
    result->set_ps_task(*ps_task);
    fail(v1::FAILURE_KIND_PS_UNAVAILABLE, output.status());
  } else if (ctx.cancelled() && absl::IsCancelled(output.status())) {
    fail(v1::FAILURE_KIND_CANCELLED, output.status());
  } else {
    fail(v1::FAILURE_KIND_APPLICATION, output.status());
  }
}

absl::StatusOr<v1::Value> ClosureRunner::CreateResource(
    const v1::CreateResourceRequest& request) const {
  auto fn = registry_->FindResource(request.function());
  if (!fn.ok()) return fn.status();
  bool resource_missing = false;
  auto args = DecodeArgs(request.function(), request.args(), &resource_missing);
  if (!args.ok()) return args.status();
  FunctionContext ctx(worker_index_, nullptr, ps_);
  absl::StatusOr<std::shared_ptr<Resource>> resource;
  try {
    resource = (**fn)(ctx, *args);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("resource function '", request.function(),
                                            "' threw an exception: ", e.what()));
  }
  if (!resource.ok()) return resource.status();
  if (*resource == nullptr) {
    return absl::InternalError(
        absl::StrCat("resource function '", request.function(), "' returned no resource"));
  }
  v1::Value description = (*resource)->Describe();
  resources_->Put(request.resource_id(), std::move(*resource));
  return description;
}

}  // namespace tj
