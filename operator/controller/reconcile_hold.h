// What the checkpoint hold steps (CheckpointVolumeStep, CheckpointStorageStep) do with the problem
// they found: warn once per distinct problem, and come back while it lasts.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/job_reconcile.h"
#include "operator/controller/per_job.h"
#include "operator/controller/reconcile_step.h"

namespace tj::op {

// Remembers `problem` ("" when nothing holds the job) in `last` as the job's latest; when it is a
// problem other than the one remembered, logs it and records a Warning Event with `reason`: one
// per problem, not one per reconcile. Returns Continue, or RequeueAfter(retry) while held (what
// holds it is not watched).
StepResult WarnOnceAndHold(PerJob<std::string>& last, const JobReconcile& job, EventSink& events,
                           const char* reason, const std::string& problem, absl::Duration retry);

}  // namespace tj::op
