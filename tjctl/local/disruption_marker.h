// How `tjctl preempt` tells `tjctl run` that a replica's coming exit is a preemption (the local
// stand-in for a pod's DisruptionTarget condition): a file <work-dir>/disruptions/<replica-name>,
// written before the process is terminated and consumed when its exit is recorded, so the exit is
// a disruption (restarted, not counted toward backoffLimit) rather than the program's failure.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace tj::local {

std::string DisruptionMarkerPath(const std::string& work_dir, const std::string& replica);
absl::Status WriteDisruptionMarker(const std::string& work_dir, const std::string& replica,
                                   const std::string& reason);
// True (and the marker removed) when the replica's exit was announced as a disruption.
bool ConsumeDisruptionMarker(const std::string& work_dir, const std::string& replica);

}  // namespace tj::local
