// tj-bench-watch-decode: how fast the Kubernetes client turns one watch stream into events. 10,000
// pod events (realistic pods of ~3.5 KiB: labels, annotations, owner references, managedFields,
// two containers, conditions and container statuses) in one stream, delivered by an in-memory
// transport in 16 KiB chunks (an HTTP/TLS-sized read), decoded by KubeClientImpl::Watch on one
// thread. The baseline, measured in the same run on the same bytes: nlohmann::json::parse of each
// line alone, i.e. the floor any JSON watch decoder built on nlohmann pays; the ratio is the
// client's own overhead (framing, chunk reassembly, event envelope, handler call).
// Prints a table and, with --json, writes the figures and the machine description.
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/bench_support.h"
#include "operator/kube/http_transport.h"
#include "operator/kube/kube_client_impl.h"

#ifndef TJ_BENCH_BUILD_TYPE
#define TJ_BENCH_BUILD_TYPE ""
#endif

namespace tj::bench {
namespace {

using json = nlohmann::json;

constexpr double kTargetEventsPerSecond = 20000;

double WallSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// A pod as the API server sends it for a TrainingJob worker (fields as kubectl get -o json shows).
json MakePod(int i) {
  const std::string name = absl::StrCat("mnist-large-worker-", i);
  const std::string uid = absl::StrFormat("5f1c9a3e-%04x-4b7e-9d21-%012x", i & 0xffff, 7919 * i);
  json env = json::array();
  for (const char* var : {"TJ_JOB_NAME", "TJ_REPLICA_TYPE", "TJ_REPLICA_INDEX", "TJ_COORDINATOR",
                          "TF_CONFIG_PATH", "OMP_NUM_THREADS"}) {
    env.push_back({{"name", var}, {"value", absl::StrCat("value-of-", var, "-", i % 97)}});
  }
  json container = {{"name", "trainer"},
                    {"image", "registry.example.com/ml/trainer:2026.11.3"},
                    {"command", {"/usr/local/bin/tj-train"}},
                    {"args", {"--model=mnist", "--batch-size=512", "--checkpoint-dir=/ckpt"}},
                    {"ports", {{{"name", "grpc"}, {"containerPort", 2222}, {"protocol", "TCP"}}}},
                    {"env", env},
                    {"resources",
                     {{"limits", {{"cpu", "4"}, {"memory", "16Gi"}}},
                      {"requests", {{"cpu", "4"}, {"memory", "16Gi"}}}}},
                    {"volumeMounts",
                     {{{"name", "ckpt"}, {"mountPath", "/ckpt"}},
                      {{"name", "kube-api-access-x7k2p"},
                       {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"},
                       {"readOnly", true}}}},
                    {"terminationMessagePath", "/dev/termination-log"},
                    {"terminationMessagePolicy", "File"},
                    {"imagePullPolicy", "IfNotPresent"}};
  json sidecar = {{"name", "metrics"},
                  {"image", "registry.example.com/ml/metrics-agent:1.4.0"},
                  {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "64Mi"}}}}},
                  {"terminationMessagePath", "/dev/termination-log"},
                  {"terminationMessagePolicy", "File"},
                  {"imagePullPolicy", "IfNotPresent"}};
  json status_of = [&](const char* c, int restarts) {
    return json{{"name", c},
                {"ready", true},
                {"restartCount", restarts},
                {"started", true},
                {"image", "registry.example.com/ml/trainer:2026.11.3"},
                {"imageID",
                 "registry.example.com/ml/trainer@sha256:"
                 "3b1f0e4c2d9a8f7e6d5c4b3a29180716f5e4d3c2b1a09f8e7d6c5b4a39281706"},
                {"containerID", absl::StrFormat("containerd://%064x", 1000003 * i + restarts)},
                {"state", {{"running", {{"startedAt", "2026-11-22T10:15:42Z"}}}}}};
  }("trainer", i % 3);
  return json{
      {"kind", "Pod"},
      {"apiVersion", "v1"},
      {"metadata",
       {{"name", name},
        {"namespace", "ml-team"},
        {"uid", uid},
        {"resourceVersion", std::to_string(1000000 + i)},
        {"creationTimestamp", "2026-11-22T10:15:30Z"},
        {"labels",
         {{"trainingjob.dev/job-name", "mnist-large"},
          {"trainingjob.dev/replica-type", "worker"},
          {"trainingjob.dev/replica-index", std::to_string(i)},
          {"app.kubernetes.io/managed-by", "trainingjob-operator"}}},
        {"annotations",
         {{"trainingjob.dev/restart-count", std::to_string(i % 3)},
          {"prometheus.io/scrape", "true"},
          {"prometheus.io/port", "9090"}}},
        {"ownerReferences",
         {{{"apiVersion", "trainingjob.dev/v1alpha1"},
           {"kind", "TrainingJob"},
           {"name", "mnist-large"},
           {"uid", "0d7c2a51-8e44-4f0b-a6b1-2f3e4d5c6b7a"},
           {"controller", true},
           {"blockOwnerDeletion", true}}}},
        {"managedFields",
         {{{"manager", "trainingjob-operator"},
           {"operation", "Update"},
           {"apiVersion", "v1"},
           {"time", "2026-11-22T10:15:30Z"},
           {"fieldsType", "FieldsV1"},
           {"fieldsV1",
            {{"f:metadata",
              {{"f:labels",
                {{".", json::object()}, {"f:trainingjob.dev/job-name", json::object()}}},
               {"f:ownerReferences", {{".", json::object()}}}}},
             {"f:spec", {{"f:containers", json::object()}, {"f:restartPolicy", json::object()}}}}}},
          {{"manager", "kubelet"},
           {"operation", "Update"},
           {"apiVersion", "v1"},
           {"time", "2026-11-22T10:15:42Z"},
           {"fieldsType", "FieldsV1"},
           {"subresource", "status"},
           {"fieldsV1",
            {{"f:status",
              {{"f:conditions", json::object()},
               {"f:containerStatuses", json::object()},
               {"f:podIP", json::object()}}}}}}}}}},
      {"spec",
       {{"containers", {container, sidecar}},
        {"restartPolicy", "Never"},
        {"terminationGracePeriodSeconds", 30},
        {"dnsPolicy", "ClusterFirst"},
        {"serviceAccountName", "default"},
        {"nodeName", absl::StrCat("gpu-node-", i % 64)},
        {"hostname", name},
        {"subdomain", "mnist-large"},
        {"schedulerName", "default-scheduler"},
        {"priority", 0},
        {"tolerations",
         {{{"key", "node.kubernetes.io/not-ready"},
           {"operator", "Exists"},
           {"effect", "NoExecute"},
           {"tolerationSeconds", 300}}}},
        {"volumes",
         {{{"name", "ckpt"}, {"persistentVolumeClaim", {{"claimName", "mnist-ckpt"}}}}}}}},
      {"status",
       {{"phase", "Running"},
        {"conditions",
         {{{"type", "Initialized"},
           {"status", "True"},
           {"lastTransitionTime", "2026-11-22T10:15:31Z"}},
          {{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "2026-11-22T10:15:43Z"}},
          {{"type", "ContainersReady"},
           {"status", "True"},
           {"lastTransitionTime", "2026-11-22T10:15:43Z"}},
          {{"type", "PodScheduled"},
           {"status", "True"},
           {"lastTransitionTime", "2026-11-22T10:15:30Z"}}}},
        {"hostIP", absl::StrCat("10.0.", i % 64, ".1")},
        {"podIP", absl::StrCat("10.244.", (i / 250) % 250, ".", i % 250 + 2)},
        {"podIPs", {{{"ip", absl::StrCat("10.244.", (i / 250) % 250, ".", i % 250 + 2)}}}},
        {"startTime", "2026-11-22T10:15:31Z"},
        {"qosClass", "Burstable"},
        {"containerStatuses", {status_of}}}}};
}

// Serves one prepared watch body from memory in fixed-size chunks, on the calling thread.
class InMemoryWatchTransport : public kube::HttpTransport {
 public:
  InMemoryWatchTransport(const std::string& body, size_t chunk) : body_(body), chunk_(chunk) {}
  absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest&) override {
    return absl::UnimplementedError("watch only");
  }
  absl::StatusOr<kube::HttpResponse> Stream(const kube::HttpRequest&, const kube::StreamOptions&,
                                            const kube::ChunkCallback& on_chunk) override {
    const std::string_view all(body_);
    for (size_t at = 0; at < all.size(); at += chunk_) {
      if (!on_chunk(all.substr(at, chunk_))) break;
    }
    kube::HttpResponse ok;
    ok.status = 200;
    return ok;
  }
  std::string server() const override { return "memory://bench"; }

 private:
  const std::string& body_;
  const size_t chunk_;
};

struct Run {
  double wall = 0;
  double cpu = 0;
  size_t events = 0;
};

}  // namespace
}  // namespace tj::bench

int main(int argc, char** argv) {
  using namespace tj::bench;
  CLI::App app{"tj-bench-watch-decode: watch stream decoding vs plain JSON parsing"};
  int events = 10000;
  int reps = 5;
  size_t chunk = 16 * 1024;
  bool smoke = false;
  std::string json_path;
  app.add_option("--events", events, "pod events in the stream")->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "repetitions (the median is reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--chunk", chunk, "bytes per transport chunk")->check(CLI::PositiveNumber);
  app.add_flag("--smoke", smoke, "a small, fast run (figures not meaningful)");
  app.add_option("--json", json_path, "write the figures to this file");
  CLI11_PARSE(app, argc, argv);
  if (smoke) {
    events = std::min(events, 500);
    reps = 1;
  }

  // The stream: one {"type":"MODIFIED","object":<pod>} line per event.
  std::string body;
  std::vector<std::string_view> lines;
  std::vector<size_t> offsets;
  for (int i = 0; i < events; ++i) {
    offsets.push_back(body.size());
    body += json{{"type", "MODIFIED"}, {"object", MakePod(i)}}.dump();
    body += '\n';
  }
  offsets.push_back(body.size());
  for (int i = 0; i < events; ++i) {
    lines.emplace_back(body.data() + offsets[i], offsets[i + 1] - offsets[i] - 1);
  }
  const double mean_bytes = static_cast<double>(body.size()) / events;

  auto decode = [&]() {
    Run run;
    auto transport = std::make_shared<InMemoryWatchTransport>(body, chunk);
    tj::kube::KubeClientImpl client(transport);
    size_t names = 0;
    const double w0 = WallSeconds(), c0 = ThreadCpuSeconds();
    absl::Status s = client.Watch(
        *tj::kube::Resource("pods", "ml-team"), "", {}, [&](const tj::kube::WatchEvent& e) {
          ++run.events;
          names += e.object["metadata"]["name"].get_ref<const std::string&>().size();
          return true;
        });
    run.wall = WallSeconds() - w0;
    run.cpu = ThreadCpuSeconds() - c0;
    if (!s.ok() || run.events != static_cast<size_t>(events) || names == 0) {
      std::fprintf(stderr, "tj-bench-watch-decode: watch failed: %s (%zu events)\n",
                   s.ToString().c_str(), run.events);
      std::exit(1);
    }
    return run;
  };
  auto parse_only = [&]() {
    Run run;
    size_t names = 0;
    const double w0 = WallSeconds(), c0 = ThreadCpuSeconds();
    for (std::string_view line : lines) {
      json parsed = json::parse(line);
      names += parsed["object"]["metadata"]["name"].get_ref<const std::string&>().size();
      ++run.events;
    }
    run.wall = WallSeconds() - w0;
    run.cpu = ThreadCpuSeconds() - c0;
    if (names == 0) std::exit(1);
    return run;
  };

  // Alternate the two, and which goes first, so both see the same machine load and heap state.
  std::vector<double> watch_rate, parse_rate, watch_cpu_rate, parse_cpu_rate;
  for (int r = 0; r < reps; ++r) {
    Run w, p;
    if (r % 2 == 0) {
      w = decode();
      p = parse_only();
    } else {
      p = parse_only();
      w = decode();
    }
    watch_rate.push_back(w.events / w.wall);
    watch_cpu_rate.push_back(w.events / w.cpu);
    parse_rate.push_back(p.events / p.wall);
    parse_cpu_rate.push_back(p.events / p.cpu);
  }
  const double watch = Median(watch_rate), parse = Median(parse_rate);
  const double watch_cpu = Median(watch_cpu_rate), parse_cpu = Median(parse_cpu_rate);
  const double mib_s = watch * mean_bytes / (1 << 20);

  std::printf(
      "Watch decode: %d pod events in one stream (%.0f bytes each on average, %.1f MiB), "
      "%zu-byte chunks, one thread, median of %d\n",
      events, mean_bytes, body.size() / double(1 << 20), chunk, reps);
  std::printf("  %-44s %12s %14s\n", "", "events/s", "events/CPU-s");
  std::printf("  %-44s %12.0f %14.0f  (%.0f MiB/s)\n", "KubeClientImpl::Watch (framing + decode)",
              watch, watch_cpu, mib_s);
  std::printf("  %-44s %12.0f %14.0f\n", "baseline: nlohmann::json::parse per line", parse,
              parse_cpu);
  std::printf("  overhead over pure parsing: %.1f%% of the CPU time per event (%.1f%% wall)\n",
              100.0 * (parse_cpu / watch_cpu - 1.0), 100.0 * (parse / watch - 1.0));
  // "On one core" is events per CPU-second of the decoding thread: on a shared machine the wall
  // rate also counts the time other processes held the core.
  std::printf(
      "Targets\n  >= %.0f events/s on one core (events per CPU-second): %s (%.0f; wall "
      "rate %.0f)\n",
      kTargetEventsPerSecond, watch_cpu >= kTargetEventsPerSecond ? "met" : "NOT met", watch_cpu,
      watch);

  if (!json_path.empty()) {
    json out = {{"benchmark", "watch_decode"},
                {"build_type", TJ_BENCH_BUILD_TYPE},
                {"smoke", smoke},
                {"events", events},
                {"mean_event_bytes", mean_bytes},
                {"chunk_bytes", chunk},
                {"reps", reps},
                {"watch_events_per_s", watch},
                {"watch_events_per_cpu_s", watch_cpu},
                {"parse_events_per_s", parse},
                {"parse_events_per_cpu_s", parse_cpu},
                {"overhead_fraction_cpu", parse_cpu / watch_cpu - 1.0},
                {"overhead_fraction_wall", parse / watch - 1.0},
                {"target_events_per_s", kTargetEventsPerSecond},
                {"target_met", watch_cpu >= kTargetEventsPerSecond},
                {"machine", MachineDescription()}};
    if (!WriteJsonFile(json_path, out, "tj-bench-watch-decode")) return 1;
  }
  return 0;
}
