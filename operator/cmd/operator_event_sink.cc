#include "operator/cmd/operator_event_sink.h"

namespace tj::op {
namespace {

kube::EventRecorderOptions RecorderOptions(const std::string& component,
                                           const std::string& instance) {
  kube::EventRecorderOptions options;
  options.component = component;
  options.instance = instance;
  return options;
}

}  // namespace

OperatorEventSink::OperatorEventSink(kube::KubeClient& client, const std::string& component,
                                     const std::string& instance, MetricsRegistry* metrics)
    : recorder_(client, RecorderOptions(component, instance)), metrics_(metrics) {}

void OperatorEventSink::Record(const nlohmann::json& object, EventType type,
                               const std::string& reason, const std::string& message) {
  const bool queued = recorder_.Record(
      object, type == EventType::kWarning ? kube::EventType::kWarning : kube::EventType::kNormal,
      reason, message);
  if (!queued && metrics_ != nullptr) {
    metrics_->AddCounter("tj_operator_events_dropped_total",
                         "Events not posted because the event queue was full (best-effort)", 1,
                         {{"reason", reason}});
  }
}

}  // namespace tj::op
