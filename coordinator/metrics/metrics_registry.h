// The process's Prometheus metrics: counters, gauges and histograms with labels, rendered in the
// text exposition format (version 0.0.4) that Prometheus scrapes and `promtool check metrics`
// accepts. A thin front over prometheus-cpp (Debian's prometheus-cpp-dev) so callers name a metric
// where they update it, without registering families first.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tj {

using MetricLabels = std::map<std::string, std::string>;

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Names must match [a-zA-Z_:][a-zA-Z0-9_:]*; counters end in "_total". A second call with the
  // same name and labels updates the same series. The first call for a name fixes its help and
  // type; a call with an invalid name, or another type for a known name, is dropped.
  void SetGauge(const std::string& name, const std::string& help, double value,
                const MetricLabels& labels = {});
  void AddCounter(const std::string& name, const std::string& help, double delta = 1,
                  const MetricLabels& labels = {});
  // Drops one gauge series (a job that went away): it is no longer rendered. Nothing happens when
  // it does not exist.
  void RemoveGauge(const std::string& name, const MetricLabels& labels);
  // A counter kept elsewhere (a component's own tally, read at scrape time): raises the series to
  // `total`; a smaller `total` is ignored, so the exported counter never goes down.
  void SetCounter(const std::string& name, const std::string& help, double total,
                  const MetricLabels& labels = {});

  // A histogram observation: cumulative `le` buckets (upper bounds, ascending; +Inf is implied),
  // `_sum` and `_count`. The first call for a name fixes its buckets.
  void ObserveHistogram(const std::string& name, const std::string& help, double value,
                        const std::vector<double>& buckets, const MetricLabels& labels = {});

  // Runs before every Render, on the rendering thread, without the registry's lock held: it
  // copies figures that live elsewhere into the registry (SetGauge, SetCounter). Collectors run
  // one at a time, whatever the number of threads rendering. Must stay valid until the registry
  // goes away or it is removed: RemoveCollector with the id returned here, or RemoveCollectors.
  using CollectorId = uint64_t;
  CollectorId AddCollector(std::function<void()> collect);
  // Returns once the collector cannot run any more (a scrape running it is waited for).
  void RemoveCollector(CollectorId id);
  void RemoveCollectors();

  // The text exposition of every metric (after running the collectors).
  std::string Render() const;

 private:
  struct Families;  // prometheus-cpp stays out of this header
  std::unique_ptr<Families> families_;
};

}  // namespace tj
