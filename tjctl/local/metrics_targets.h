// `tjctl run --metrics-targets FILE`: every replica gets its own TJ_METRICS_ADDRESS
// (127.0.0.1:<free port>, PickLocalAddresses apart from the trainer ports: the processes of a
// local run share one host, so one fixed port cannot serve them all) and FILE lists those
// endpoints for Prometheus' file-based discovery (file_sd_configs), labelled as the chart's
// PodMonitor labels a job's pods on Kubernetes, so the jobs dashboard reads a local run and a
// cluster job alike.
#pragma once

#include <string>

#include "api/v1alpha1/types.h"
#include "jobcontrol/replicas.h"

namespace tj::local {

// The file_sd JSON: one target group per replica, labels `namespace` (the job's, else
// "default"), `trainingjob`, `replica_type` ("coordinator", "ps", "worker"), `replica_index`
// and `pod` ("<job>-<type>-<index>").
std::string PrometheusTargetsJson(const v1alpha1::TrainingJob& job,
                                  const ReplicaAddresses& metrics_addresses);

}  // namespace tj::local
