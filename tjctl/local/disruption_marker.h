// How `tjctl preempt` tells `tjctl run` that a replica's coming exit is a preemption (the local
// stand-in for a pod's DisruptionTarget condition): a file <work-dir>/disruptions/<replica-name>,
// written before the process is terminated and consumed when its exit is recorded, so the exit is
// a disruption (restarted, not counted toward backoffLimit) rather than the program's failure.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tj::local {

// How long past its announced grace period a marker still holds a replacement back: as long as
// the operator's default --terminating-pod-timeout lets a pod stuck Terminating hold its
// successor. A `tjctl preempt` killed before it terminated the replica leaves its marker behind;
// without a bound the coordinator's successor would wait for ever.
inline constexpr absl::Duration kDisruptionMarkerSlack = absl::Minutes(5);

std::string DisruptionMarkerPath(const std::string& work_dir, const std::string& replica);
// `grace`: how long the replica is given before it is terminated (written into the marker).
absl::Status WriteDisruptionMarker(const std::string& work_dir, const std::string& replica,
                                   const std::string& reason,
                                   absl::Duration grace = absl::ZeroDuration());
// True (and the marker removed) when the replica's exit was announced as a disruption.
bool ConsumeDisruptionMarker(const std::string& work_dir, const std::string& replica);
// True while a disruption of the replica is announced and its exit not yet recorded: a running
// replica with a marker has been given notice (the local stand-in for a terminating pod). False
// once the marker is older than its grace period plus kDisruptionMarkerSlack.
bool HasDisruptionMarker(const std::string& work_dir, const std::string& replica,
                         absl::Time now = absl::Now());

}  // namespace tj::local
