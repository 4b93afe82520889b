// A small defaulted TrainingJob for the jobcontrol tests: 1 coordinator, 1 PS, 2 workers.
#pragma once

#include <string>

#include "api/v1alpha1/defaults.h"
#include "api/v1alpha1/types.h"

namespace tj::testing_jobs {

inline v1alpha1::TrainingJob SmallJob(int ps = 1, int workers = 2) {
  v1alpha1::TrainingJob job;
  job.api_version = std::string(v1alpha1::kApiVersion);
  job.kind = std::string(v1alpha1::kKind);
  job.metadata.name = "digits";
  job.metadata.namespace_name = "ml";
  job.spec.replica_specs[v1alpha1::ReplicaType::kCoordinator].replicas = 1;
  job.spec.replica_specs[v1alpha1::ReplicaType::kPs].replicas = ps;
  job.spec.replica_specs[v1alpha1::ReplicaType::kWorker].replicas = workers;
  return v1alpha1::WithDefaults(std::move(job));
}

}  // namespace tj::testing_jobs
