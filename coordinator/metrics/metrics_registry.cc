#include "coordinator/metrics/metrics_registry.h"

#include <sstream>
#include <stdexcept>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace tj {
namespace {

// prometheus-cpp 1.0.1 writes HELP text as given; the format wants '\' and newlines escaped (a
// raw newline there makes the whole scrape unparseable).
std::string EscapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

struct MetricsRegistry::Families {
  template <typename T>
  using Builder = prometheus::detail::Builder<T>;

  // The family `name` of type T, registered on first use; null when the name is invalid or
  // already taken by another type (prometheus-cpp throws std::invalid_argument for both).
  template <typename T>
  prometheus::Family<T>* Find(std::map<std::string, prometheus::Family<T>*>& families,
                              Builder<T> builder, const std::string& name, const std::string& help)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = families.find(name);
    if (it != families.end()) return it->second;
    prometheus::Family<T>* family = nullptr;
    try {
      family = &builder.Name(name).Help(EscapeHelp(help)).Register(registry);
    } catch (const std::invalid_argument&) {
    }
    families.emplace(name, family);
    return family;
  }

  prometheus::Registry registry;
  absl::Mutex mu;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> gauges ABSL_GUARDED_BY(mu);
  std::map<std::string, prometheus::Family<prometheus::Counter>*> counters ABSL_GUARDED_BY(mu);
  std::map<std::string, prometheus::Family<prometheus::Histogram>*> histograms ABSL_GUARDED_BY(mu);
  std::map<std::string, std::vector<double>> buckets ABSL_GUARDED_BY(mu);  // by histogram name
  // Apart from `mu`: collectors take it themselves. Held while they run, so RemoveCollectors
  // waits for a scrape in progress.
  absl::Mutex collectors_mu ABSL_ACQUIRED_BEFORE(mu);
  std::vector<std::pair<CollectorId, std::function<void()>>> collectors
      ABSL_GUARDED_BY(collectors_mu);
  CollectorId next_collector ABSL_GUARDED_BY(collectors_mu) = 1;
};

MetricsRegistry::MetricsRegistry() : families_(std::make_unique<Families>()) {}
MetricsRegistry::~MetricsRegistry() = default;

void MetricsRegistry::SetGauge(const std::string& name, const std::string& help, double value,
                               const MetricLabels& labels) {
  absl::MutexLock lock(&families_->mu);
  auto* family = families_->Find(families_->gauges, prometheus::BuildGauge(), name, help);
  if (family == nullptr) return;
  try {
    family->Add(labels).Set(value);
  } catch (const std::invalid_argument&) {  // an invalid label name
  }
}

void MetricsRegistry::RemoveGauge(const std::string& name, const MetricLabels& labels) {
  absl::MutexLock lock(&families_->mu);
  auto it = families_->gauges.find(name);
  if (it == families_->gauges.end() || it->second == nullptr || !it->second->Has(labels)) return;
  it->second->Remove(&it->second->Add(labels));
}

void MetricsRegistry::AddCounter(const std::string& name, const std::string& help, double delta,
                                 const MetricLabels& labels) {
  absl::MutexLock lock(&families_->mu);
  auto* family = families_->Find(families_->counters, prometheus::BuildCounter(), name, help);
  if (family == nullptr) return;
  try {
    family->Add(labels).Increment(delta);
  } catch (const std::invalid_argument&) {
  }
}

void MetricsRegistry::SetCounter(const std::string& name, const std::string& help, double total,
                                 const MetricLabels& labels) {
  absl::MutexLock lock(&families_->mu);
  auto* family = families_->Find(families_->counters, prometheus::BuildCounter(), name, help);
  if (family == nullptr) return;
  try {
    prometheus::Counter& counter = family->Add(labels);
    const double delta = total - counter.Value();
    if (delta > 0) counter.Increment(delta);
  } catch (const std::invalid_argument&) {
  }
}

MetricsRegistry::CollectorId MetricsRegistry::AddCollector(std::function<void()> collect) {
  absl::MutexLock lock(&families_->collectors_mu);
  const CollectorId id = families_->next_collector++;
  families_->collectors.emplace_back(id, std::move(collect));
  return id;
}

void MetricsRegistry::RemoveCollector(CollectorId id) {
  absl::MutexLock lock(&families_->collectors_mu);
  std::erase_if(families_->collectors, [id](const auto& entry) { return entry.first == id; });
}

void MetricsRegistry::RemoveCollectors() {
  absl::MutexLock lock(&families_->collectors_mu);
  families_->collectors.clear();
}

void MetricsRegistry::ObserveHistogram(const std::string& name, const std::string& help,
                                       double value, const std::vector<double>& buckets,
                                       const MetricLabels& labels) {
  absl::MutexLock lock(&families_->mu);
  auto* family = families_->Find(families_->histograms, prometheus::BuildHistogram(), name, help);
  if (family == nullptr) return;
  const std::vector<double>& fixed = families_->buckets.try_emplace(name, buckets).first->second;
  try {
    family->Add(labels, prometheus::Histogram::BucketBoundaries(fixed)).Observe(value);
  } catch (const std::invalid_argument&) {
  }
}

std::string MetricsRegistry::Render() const {
  {
    absl::MutexLock lock(&families_->collectors_mu);
    for (const auto& [id, collect] : families_->collectors) collect();
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families_->registry.Collect());
  return out.str();
}

}  // namespace tj
