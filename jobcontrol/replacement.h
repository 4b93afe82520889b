// When a replica's replacement may start: replicaSpecs.<T>.replacementPolicy (Kubernetes Job's
// podReplacementPolicy) and the coordinator's wait for a PS that was given notice. Shared by the
// operator (which holds back the new pod's create) and `tjctl run` (which holds back the new
// process's start), so one PS preemption costs one coordinator restart in both. Pure.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "api/v1alpha1/types.h"
#include "jobcontrol/replicas.h"

namespace tj {

// replicaSpecs.<T>.replacementPolicy, else DefaultReplacementPolicy(type).
v1alpha1::ReplacementPolicy ReplacementPolicyFor(const v1alpha1::TrainingJob& job,
                                                 ReplicaType type);

struct ReplacementHold {
  ReplicaKey replica;  // whose new pod or process waits
  ReplicaKey waits_for;
  std::string message;  // "coordinator 0 waits for ps 0, which is terminating, to be replaced"

  friend bool operator==(const ReplacementHold&, const ReplacementHold&) = default;
};

// Of `starting` (replicas about to be created or started again), those that must wait.
// `terminating`: replicas being taken away that are still there (a pod with a deletion
// timestamp, or one given a preemption notice that has not ended; locally a process `tjctl
// preempt` announced that is still running). Rules, for a replica whose policy is Failed:
//  1. It waits while its own predecessor is terminating (the operator's pods have fixed names, so
//     the API server enforces this too; saying it here keeps `tjctl run` and the status honest).
//  2. A coordinator also waits while any PS is terminating: it would restore the checkpoint into
//     the PS about to go, resume, and lose that PS again moments later (a second checkpoint and a
//     second restart for one preemption). It starts once the PS is gone and being replaced.
// Under TerminatingOrFailed nothing waits. At most one hold per replica (the first rule that
// applies), in the order of `starting`.
std::vector<ReplacementHold> HeldReplacements(const v1alpha1::TrainingJob& job,
                                              const std::set<ReplicaKey>& terminating,
                                              const std::vector<ReplicaKey>& starting);

}  // namespace tj
