// The error path of one reconcile, kept apart from the worker loop so it can be tested alone: an
// exception thrown while reconciling one job (nlohmann's get<>/value() on a field of an
// unexpected type) becomes that key's failed result, never a dead worker or a crashed process,
// and every failure gets a bounded `reason` for tj_operator_reconcile_errors_total.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/metrics/metrics_registry.h"
#include "nlohmann/json.hpp"
#include "operator/controller/reconciler_options.h"

namespace tj::op {

struct GuardedReconcile {
  ReconcileResult result;
  bool threw = false;  // result.status is then Internal, naming what was thrown
};

// Runs one write a reconcile handed to the write executor (building the object is part of it) so
// that what it throws becomes that write's failure: the batch then fails as for a refused create
// (a Warning Event, the key requeued with backoff). `threw` is set when it did.
absl::StatusOr<nlohmann::json> RunWriteGuarded(
    const std::function<absl::StatusOr<nlohmann::json>()>& write, bool* threw);

// Runs `reconcile`; whatever it throws becomes a failed result (Internal, with the exception's
// text), so the caller requeues the key with backoff like any other failure.
GuardedReconcile RunReconcileGuarded(const std::function<ReconcileResult()>& reconcile);

// The `reason` label of a failed reconcile: "exception" when it threw, else the status code in
// snake case ("aborted" for a conflict, "unavailable", "deadline_exceeded", ...). A closed set:
// the label never takes a message or a job name.
std::string ReconcileErrorReason(const GuardedReconcile& guarded);

// Adds one to tj_operator_reconcile_errors_total{reason}; `metrics` may be null.
void CountReconcileError(MetricsRegistry* metrics, const std::string& reason);

}  // namespace tj::op
