// Creations a reconcile asked for and the informers have not shown yet, per job: client-go's
// ControllerExpectations (k8s.io/kubernetes pkg/controller/controller_utils.go), keyed by object
// name instead of a count, because a job's objects have fixed names.
//
// A reconcile that hands creates to the write executor records them here and returns at once;
// until each is observed (the informer shows it, or its create answered: AlreadyExists counts as
// observed, a failure lowers the expectation) the job's next reconciles create nothing, so a
// cache that lags the writes in flight never makes a second pod for a replica. Expectations
// older than the TTL (5 minutes, as client-go's ExpectationsTimeout) count as satisfied: a lost
// watch event must not stall a job for ever.
//
// Pure bookkeeping (no I/O, the clock passed in), thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::op {

// What an observation did to a job's expectations.
enum class Observation {
  kNotAwaited,  // nobody waited for that object (e.g. the informer's initial list)
  kAwaiting,    // it was awaited, and the job awaits more
  kSatisfied,   // it was the job's last awaited object
};

class CreationExpectations {
 public:
  explicit CreationExpectations(absl::Duration ttl = absl::Minutes(5)) : ttl_(ttl) {}

  // The job `key` ("namespace/name") is about to create `objects` (e.g. "pods/digits-ps-0"):
  // replaces whatever it expected before (call it only when Satisfied).
  void Expect(const std::string& key, const std::vector<std::string>& objects, absl::Time now);

  // `object` of job `key` is no longer awaited: the informer showed it, its create answered
  // AlreadyExists, or its create failed. Unknown keys and objects change nothing.
  Observation Observed(const std::string& key, const std::string& object);

  // Nothing awaited for the job, or what is awaited was expected longer than the TTL ago.
  bool Satisfied(const std::string& key, absl::Time now) const;

  // When the job's expectations expire; nullopt when nothing is awaited.
  std::optional<absl::Time> ExpiresAt(const std::string& key) const;

  // The objects still awaited for the job (sorted), for logs and tests.
  std::vector<std::string> Pending(const std::string& key) const;

  // The job is gone.
  void Forget(const std::string& key);

 private:
  struct Entry {
    std::set<std::string> objects;
    absl::Time since;
  };

  const absl::Duration ttl_;
  mutable StdMutex mu_;
  std::map<std::string, Entry> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tj::op
