// The reconciler's EventSink as Kubernetes Events on the job, through the client's EventRecorder
// (non-blocking, repeats aggregated): what `kubectl describe tj` shows. Events are best-effort:
// one background thread posts them from a bounded queue (client-go's broadcaster does the same),
// and an event that finds the queue full is dropped and counted (tj_operator_events_dropped_total).
#pragma once

#include <string>

#include "coordinator/metrics/metrics_registry.h"
#include "operator/controller/event_sink.h"
#include "operator/kube/event_recorder.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class OperatorEventSink : public EventSink {
 public:
  // `client` must outlive the sink.
  OperatorEventSink(kube::KubeClient& client, const std::string& component,
                    const std::string& instance, MetricsRegistry* metrics = nullptr);

  void Record(const nlohmann::json& object, EventType type, const std::string& reason,
              const std::string& message) override;

  kube::EventRecorder& recorder() { return recorder_; }

 private:
  kube::EventRecorder recorder_;
  MetricsRegistry* metrics_;
};

}  // namespace tj::op
