#include "coordinator/metrics/metrics_registry.h"

#include <cmath>
#include <cstdio>

namespace tj {
namespace {

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string EscapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}

}  // namespace

MetricsRegistry::Family& MetricsRegistry::FamilyLocked(const std::string& name,
                                                       const std::string& help, const char* type) {
  Family& family = families_[name];
  if (family.type.empty()) {
    family.help = help;
    family.type = type;
  }
  return family;
}

void MetricsRegistry::SetGauge(const std::string& name, const std::string& help, double value,
                               const MetricLabels& labels) {
  absl::MutexLock lock(&mu_);
  FamilyLocked(name, help, "gauge").series[labels] = value;
}

void MetricsRegistry::AddCounter(const std::string& name, const std::string& help, double delta,
                                 const MetricLabels& labels) {
  absl::MutexLock lock(&mu_);
  FamilyLocked(name, help, "counter").series[labels] += delta;
}

std::string MetricsRegistry::Render() const {
  absl::MutexLock lock(&mu_);
  std::string out;
  for (const auto& [name, family] : families_) {
    out += "# HELP " + name + " " + EscapeHelp(family.help) + "\n";
    out += "# TYPE " + name + " " + family.type + "\n";
    for (const auto& [labels, value] : family.series) {
      out += name;
      if (!labels.empty()) {
        out += "{";
        bool first = true;
        for (const auto& [key, label_value] : labels) {
          if (!first) out += ",";
          first = false;
          out += key + "=\"" + EscapeLabelValue(label_value) + "\"";
        }
        out += "}";
      }
      out += " " + FormatValue(value) + "\n";
    }
  }
  return out;
}

}  // namespace tj
