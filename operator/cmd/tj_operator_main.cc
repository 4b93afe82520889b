// tj-operator: the TrainingJob controller as a process. Flags (the Helm chart passes them):
//   --kubeconfig=PATH                  empty: in-cluster config (service account)
//   --namespace=NS                     empty: every namespace
//   --leader-elect=true|false          compete for a Lease; only the leader reconciles
//   --leader-election-namespace=NS     default: $POD_NAMESPACE, else the config's namespace
//   --leader-election-id=NAME          the Lease's name
//   --metrics-address=:8080            GET /metrics
//   --health-address=:8081             GET /healthz, /readyz
//   --workers=N                        concurrent reconciles
//   --gang-scheduler=none|volcano|scheduler-plugins
//   --log-format=json|text
//   --terminating-pod-timeout=5m       force-delete pods stuck Terminating on a lost node after this
//   --write-concurrency=16             API writes (creates) in flight at once
//   --write-queue-capacity=16384       writes waiting for one; beyond, reconciles wait to hand over
//   --shutdown-timeout=25s             how long a signal's orderly stop may take
//   --job-network-policy=false         a NetworkPolicy per job: only its pods and the operator in
//   --operator-pod-labels=k=v,...      (these labels, in $POD_NAMESPACE) reach them
//   --kueue=false                      Kueue admission of jobs labelled kueue.x-k8s.io/queue-name
// SIGTERM/SIGINT: stop reconciling, release the Lease, exit 0. A stop that takes longer than
// --shutdown-timeout (a reconcile stuck on an API server that does not answer) is cut short: the
// process logs what it was waiting for and exits 1, within the pod's grace period (30 s by default,
// in the chart too), instead of running on until the kubelet's SIGKILL.
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "coordinator/base/shutdown_signals.h"
#include "coordinator/metrics/metrics_http_server.h"
#include "coordinator/metrics/metrics_registry.h"
#include "operator/cmd/json_log.h"
#include "operator/cmd/operator_event_sink.h"
#include "operator/controller/controller.h"
#include "operator/controller/coordinator_progress.h"
#include "operator/controller/declared_kube_client.h"
#include "operator/controller/metered_kube_client.h"
#include "operator/controller/preemption_notifier.h"
#include "operator/kube/cpprest_transport.h"
#include "operator/kube/kube_client_impl.h"
#include "operator/kube/kube_config.h"
#include "operator/kube/leader_election.h"
#include "operator/kube/leader_fence.h"
#include "spdlog/spdlog.h"
#include "coordinator/base/std_mutex.h"

namespace {

struct Flags {
  std::string kubeconfig;
  std::string namespace_name;
  bool leader_elect = true;
  std::string leader_election_namespace;
  std::string leader_election_id = "trainingjob-operator";
  std::string metrics_address = ":8080";
  std::string health_address = ":8081";
  int workers = 8;
  std::string gang_scheduler = "none";
  std::string log_format = "json";
  std::string terminating_pod_timeout = "5m";
  int write_concurrency = 16;
  int write_queue_capacity = 16384;
  std::string shutdown_timeout = "25s";
  bool job_network_policy = false;
  bool kueue = false;
  std::string operator_pod_labels;
};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// ":8080" -> "0.0.0.0:8080" for MetricsHttpServer.
std::string ListenAddress(const std::string& flag) {
  return flag.starts_with(":") ? "0.0.0.0" + flag : flag;
}

absl::StatusOr<tj::kube::KubeConfig> LoadConfig(const Flags& flags) {
  if (!flags.kubeconfig.empty()) return tj::kube::LoadKubeConfigFiles({flags.kubeconfig});
  tj::kube::InClusterPaths paths;
  // A test node agent cannot mount at the standard path; it says where the mount is instead.
  if (const std::string dir = Env("TJ_INCLUSTER_DIR"); !dir.empty()) {
    paths.token = dir + "/token";
    paths.ca = dir + "/ca.crt";
    paths.namespace_file = dir + "/namespace";
  }
  return tj::kube::LoadInClusterConfig(paths);
}

// "k=v,k2=v2" -> labels; an error naming the flag.
absl::StatusOr<std::map<std::string, std::string>> ParseLabels(const std::string& flag,
                                                               const std::string& value) {
  std::map<std::string, std::string> labels;
  for (absl::string_view pair : absl::StrSplit(value, ',', absl::SkipEmpty())) {
    const size_t eq = pair.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, "=", value, ": \"", pair, "\" is not key=value"));
    }
    labels[std::string(pair.substr(0, eq))] = std::string(pair.substr(eq + 1));
  }
  return labels;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"tj-operator: the TrainingJob controller"};
  // expected(0, 1): an empty value ("--namespace=", as the Helm chart renders "all namespaces")
  // stays empty; with CLI11's default the option would swallow the next argument as its value.
  app.add_option("--kubeconfig", flags.kubeconfig, "kubeconfig file; empty: in-cluster")
      ->expected(0, 1);
  app.add_option("--namespace", flags.namespace_name, "namespace to watch; empty: all")
      ->expected(0, 1);
  app.add_option("--leader-elect", flags.leader_elect, "compete for leadership on a Lease");
  app.add_option("--leader-election-namespace", flags.leader_election_namespace,
                 "the Lease's namespace (default $POD_NAMESPACE)")
      ->expected(0, 1);
  app.add_option("--leader-election-id", flags.leader_election_id, "the Lease's name");
  app.add_option("--metrics-address", flags.metrics_address, "host:port for /metrics");
  app.add_option("--health-address", flags.health_address, "host:port for /healthz and /readyz");
  app.add_option("--workers", flags.workers, "concurrent reconciles")->check(CLI::Range(1, 64));
  app.add_option("--gang-scheduler", flags.gang_scheduler, "none, volcano or scheduler-plugins")
      ->check(CLI::IsMember({"none", "volcano", "scheduler-plugins"}));
  app.add_option("--log-format", flags.log_format, "json or text")
      ->check(CLI::IsMember({"json", "text"}));
  app.add_option("--terminating-pod-timeout", flags.terminating_pod_timeout,
                 "force-delete pods stuck Terminating on a lost node this long past their "
                 "deadline (e.g. 5m), for replicas with replacementPolicy Failed; others at "
                 "their deadline");
  app.add_option("--write-concurrency", flags.write_concurrency, "API writes in flight at once")
      ->check(CLI::Range(1, 256));
  app.add_option("--write-queue-capacity", flags.write_queue_capacity,
                 "API writes waiting to be sent; beyond this reconciles wait")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--shutdown-timeout", flags.shutdown_timeout,
                 "after SIGTERM, exit anyway when the orderly stop takes longer (e.g. 25s)");
  app.add_option("--kueue", flags.kueue,
                 "Kueue admission: a job labelled kueue.x-k8s.io/queue-name gets a Workload and "
                 "runs only while admitted (docs/kueue.md)");
  app.add_option("--job-network-policy", flags.job_network_policy,
                 "a NetworkPolicy per job admitting only its pods and the operator's");
  app.add_option("--operator-pod-labels", flags.operator_pod_labels,
                 "k=v,... selecting the operator's pods in $POD_NAMESPACE (the job policies "
                 "admit them)")
      ->expected(0, 1);
  CLI11_PARSE(app, argc, argv);

  tj::op::ConfigureLogging(flags.log_format == "json");
  absl::Duration terminating_timeout;
  if (!absl::ParseDuration(flags.terminating_pod_timeout, &terminating_timeout) ||
      terminating_timeout < absl::ZeroDuration()) {
    spdlog::error("--terminating-pod-timeout={}: not a duration like 90s or 5m",
                  flags.terminating_pod_timeout);
    return 2;
  }
  absl::Duration shutdown_timeout;
  if (!absl::ParseDuration(flags.shutdown_timeout, &shutdown_timeout) ||
      shutdown_timeout <= absl::ZeroDuration()) {
    spdlog::error("--shutdown-timeout={}: not a positive duration like 25s",
                  flags.shutdown_timeout);
    return 2;
  }
  auto operator_labels = ParseLabels("--operator-pod-labels", flags.operator_pod_labels);
  if (!operator_labels.ok()) {
    spdlog::error("{}", std::string(operator_labels.status().message()));
    return 2;
  }
  if (flags.job_network_policy && (operator_labels->empty() || Env("POD_NAMESPACE").empty())) {
    spdlog::error(
        "--job-network-policy needs --operator-pod-labels and $POD_NAMESPACE: the policies admit "
        "the operator's pods by them");
    return 2;
  }
  const sigset_t signals = tj::BlockShutdownSignals();

  auto config = LoadConfig(flags);
  if (!config.ok()) {
    spdlog::error("cannot configure the Kubernetes client: {}", config.status().ToString());
    return 1;
  }
  auto transport = tj::kube::CppRestTransport::Create(*config);
  if (!transport.ok()) {
    spdlog::error("cannot configure the Kubernetes client: {}", transport.status().ToString());
    return 1;
  }
  tj::MetricsRegistry metrics;
  const std::shared_ptr<tj::kube::HttpTransport> http(std::move(*transport));
  // Only the calls api_permissions.h declares (what the chart grants) leave the process.
  auto metered = std::make_shared<tj::op::DeclaredKubeClient>(
      std::make_shared<tj::op::MeteredKubeClient>(std::make_shared<tj::kube::KubeClientImpl>(http),
                                                  &metrics));
  // With leader election every write of the controller and its events goes through the fence:
  // none leaves once the Lease's renew deadline has passed without a renewal.
  auto fence = std::make_shared<tj::kube::LeaderFence>();
  std::shared_ptr<tj::kube::KubeClient> client = metered;
  if (flags.leader_elect) client = std::make_shared<tj::kube::FencedKubeClient>(metered, fence);

  std::string identity = Env("POD_NAME");
  if (identity.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    identity = host;
  }
  identity = absl::StrCat(identity, "_", absl::ToUnixNanos(absl::Now()) % 1000000);

  tj::op::GrpcPreemptionNotifierOptions notifier_options;
  notifier_options.on_outcome = [&metrics](const tj::op::NoticeOutcome& outcome) {
    const char* result = outcome.status.ok()
                             ? (outcome.accepted ? "accepted" : "declined")
                             : (absl::IsResourceExhausted(outcome.status) ? "dropped" : "failed");
    metrics.AddCounter("tj_operator_preemption_notices_total",
                       "PreemptionNotice RPCs to coordinators, by result", 1, {{"result", result}});
    if (outcome.status.ok()) {
      spdlog::info("{}: notice for {} {} ({}): {}", outcome.notice.job, outcome.notice.task_type,
                   outcome.notice.task_index, outcome.notice.reason, outcome.decision);
    } else {
      spdlog::warn("{}: {}", outcome.notice.job, outcome.status.ToString());
    }
  };
  tj::op::GrpcPreemptionNotifier notifier(notifier_options);
  tj::op::OperatorEventSink events(*client, "tj-operator", identity, &metrics);

  tj::op::GrpcCoordinatorProgress progress;
  tj::op::ControllerOptions controller_options;
  controller_options.namespace_name = flags.namespace_name;
  controller_options.workers = flags.workers;
  controller_options.write_concurrency = flags.write_concurrency;
  controller_options.write_queue_capacity = static_cast<size_t>(flags.write_queue_capacity);
  controller_options.reconciler.terminating_pod_timeout = terminating_timeout;
  controller_options.reconciler.metrics = &metrics;
  controller_options.reconciler.progress = &progress;
  controller_options.reconciler.network_policy.enabled = flags.job_network_policy;
  controller_options.reconciler.kueue.enabled = flags.kueue;
  controller_options.reconciler.network_policy.operator_namespace = Env("POD_NAMESPACE");
  controller_options.reconciler.network_policy.operator_pod_labels = *operator_labels;
  controller_options.reconciler.pods.gang_scheduler =
      flags.gang_scheduler == "volcano"             ? tj::op::GangScheduler::kVolcano
      : flags.gang_scheduler == "scheduler-plugins" ? tj::op::GangScheduler::kSchedulerPlugins
                                                    : tj::op::GangScheduler::kNone;
  tj::op::Controller controller(client, controller_options, &metrics, events, notifier);

  std::atomic<bool> leading{false};
  std::atomic<bool> lost_leadership{false};
  auto metrics_server =
      tj::MetricsHttpServer::Start(ListenAddress(flags.metrics_address), &metrics);
  auto health_server = tj::MetricsHttpServer::Start(
      ListenAddress(flags.health_address), nullptr,
      {{"/healthz", [] { return absl::OkStatus(); }},
       {"/readyz", [&] {
          // A standby replica is ready (it is healthy and waiting); a leader once its caches
          // hold the cluster.
          if (leading.load() && !controller.Synced()) {
            return absl::UnavailableError("leading, informers not synced yet");
          }
          return absl::OkStatus();
        }}});
  if (!metrics_server.ok() || !health_server.ok()) {
    spdlog::error("cannot serve: {}", (!metrics_server.ok() ? metrics_server.status()
                                                            : health_server.status())
                                          .ToString());
    return 1;
  }
  spdlog::info("tj-operator {} starting: namespace {}, metrics {}, health {}, leader election {}",
               identity, flags.namespace_name.empty() ? "(all)" : flags.namespace_name,
               flags.metrics_address, flags.health_address, flags.leader_elect ? "on" : "off");

  auto stop = std::make_shared<tj::kube::Cancellation>();
  std::atomic<bool> signalled{false};
  struct Stopped {
    tj::StdMutex mu;
    std::condition_variable cv;
    bool stopped ABSL_GUARDED_BY(mu) = false;  // main is about to return
  } main_stopped;
  std::thread signal_thread([&] {
    const int signal = tj::WaitForSignal(signals);
    const bool from_outside = !stop->cancelled();
    if (from_outside) spdlog::info("signal {}: shutting down", signal);
    signalled = true;
    stop->Cancel();
    if (!from_outside) return;
    // The orderly stop waits for reconciles in flight and API calls (the Lease's release); none
    // of them may keep the process past its grace period.
    tj::StdMutexLock lock(main_stopped.mu);
    auto main_returns = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(main_stopped.mu) {
      return main_stopped.stopped;
    };
    if (!main_stopped.cv.wait_for(lock.native(), absl::ToChronoSeconds(shutdown_timeout),
                                  main_returns)) {
      spdlog::error(
          "tj-operator: still stopping {} after signal {} (a reconcile or API call in flight); "
          "exiting without waiting further",
          absl::FormatDuration(shutdown_timeout), signal);
      spdlog::default_logger()->flush();
      std::_Exit(1);
    }
  });

  absl::Status result;
  if (!flags.leader_elect) {
    leading = true;
    result = controller.Run(stop);
  } else {
    tj::kube::LeaderElectionConfig election;
    election.lease_namespace = !flags.leader_election_namespace.empty()
                                   ? flags.leader_election_namespace
                                   : (!Env("POD_NAMESPACE").empty() ? Env("POD_NAMESPACE")
                                                                    : config->namespace_name);
    election.lease_name = flags.leader_election_id;
    election.identity = identity;
    election.fence = fence;
    // The elector's own client: no retries and a request timeout of one Lease call, so a stalled
    // connection is given up on in time (the elector also abandons a call at its deadline).
    tj::kube::RetryPolicy no_retry;
    no_retry.max_attempts = 1;
    auto lease_client = std::make_shared<tj::op::DeclaredKubeClient>(
        std::make_shared<tj::op::MeteredKubeClient>(
            std::make_shared<tj::kube::KubeClientImpl>(http, no_retry,
                                                       tj::kube::LeaseCallTimeout(election)),
            &metrics));
    tj::kube::LeaderCallbacks callbacks;
    callbacks.on_started_leading = [&](std::shared_ptr<tj::kube::Cancellation> lead) {
      spdlog::info("{} is the leader", identity);
      leading = true;
      absl::Status run = controller.Run(lead);
      if (!run.ok()) spdlog::error("controller: {}", run.ToString());
    };
    callbacks.on_stopped_leading = [&] {
      leading = false;
      if (stop->cancelled()) {
        spdlog::info("{} stopped leading", identity);
        return;
      }
      // Leadership lost while running (renewals failed, another holder seen): the controller's
      // informers and queue are spent, and another replica leads. Exit, as client-go controllers
      // do, so a fresh process competes again.
      spdlog::error("{} lost leadership; exiting so that a fresh process competes again",
                    identity);
      lost_leadership = true;
      stop->Cancel();
    };
    callbacks.on_new_leader = [&](const std::string& leader) {
      spdlog::info("leader is now {}", leader.empty() ? "(none)" : leader);
    };
    tj::kube::LeaderElector elector(lease_client, election, callbacks);
    result = elector.Run(stop);
  }
  if (!signalled) {
    // Run returned on its own (a bad configuration, leadership lost): wake the signal thread by
    // signalling ourselves (the signals are blocked, so it takes this one).
    kill(getpid(), SIGTERM);
  }
  {
    tj::StdMutexLock lock(main_stopped.mu);
    main_stopped.stopped = true;
  }
  main_stopped.cv.notify_all();
  signal_thread.join();
  if (!result.ok()) {
    spdlog::error("tj-operator: {}", result.ToString());
    return 1;
  }
  if (lost_leadership) return 1;
  spdlog::info("tj-operator stopped");
  return 0;
}
