#include "trainer/sdk/program.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "coordinator/base/channel.h"
#include "coordinator/base/job_tls.h"
#include "coordinator/base/job_token.h"
#include "coordinator/base/malloc_tuning.h"
#include "coordinator/base/shutdown_signals.h"
#include "coordinator/base/strings.h"
#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/coordination/coordination_service.h"
#include "coordinator/coordination/coordination_state.h"
#include "coordinator/metrics/coordinator_metrics.h"
#include "coordinator/metrics/metrics_http_server.h"
#include "coordinator/preemption/preemption_handler.h"
#include "coordinator/ps/ps_error.h"
#include "coordinator/ps/ps_process.h"
#include "coordinator/resolver/tf_config_cluster_resolver.h"
#include "coordinator/worker/builtin_functions.h"
#include "coordinator/worker/worker_process.h"
#include "trainer/sdk/training_loop.h"

namespace tj::sdk {
namespace {

// Health of every PS task, waiting for each to come up until `timeout` has passed.
absl::Status WaitForParameterServers(const std::vector<std::shared_ptr<PsClient>>& ps,
                                     absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (const auto& client : ps) {
    auto health = client->WaitForHealth(std::max(deadline - absl::Now(), absl::Milliseconds(1)));
    if (!health.ok()) {
      if (PsTaskOf(health.status()).has_value()) {
        return PsUnavailableError(client->ps_task(), client->address(),
                                  Cat("not answering after ", absl::FormatDuration(timeout), ": ",
                                      health.status().message()));
      }
      return health.status();  // e.g. Unauthenticated: a PS of another job at that address
    }
    spdlog::info("parameter server task {} at {} is up ({} variables, {} tables)",
                 client->ps_task(), client->address(), health->num_variables(),
                 health->num_tables());
  }
  return absl::OkStatus();
}

int RunChief(const Program& program, const ClusterSpec& spec) {
  const absl::Time started = absl::Now();  // the goodput clock's start: waiting for PS counts
  auto settings = JobSettingsFromEnvironment();
  if (!settings.ok()) {
    spdlog::error("{}: {}", program.name, settings.status().ToString());
    return kExitUsage;
  }
  std::vector<std::string> ps_addresses;
  std::vector<std::shared_ptr<PsClient>> ps_clients;
  for (int i = 0; i < spec.num_tasks("ps"); ++i) {
    ps_addresses.push_back(*spec.task_address("ps", i));
    ps_clients.push_back(PsClient::Connect(
        ps_addresses.back(), i, {.shard_stall_timeout = settings->checkpoint_stall_timeout}));
  }
  std::vector<std::string> workers;
  for (int i = 0; i < spec.num_tasks("worker"); ++i)
    workers.push_back(*spec.task_address("worker", i));
  if (workers.empty()) {
    spdlog::error("{}: TF_CONFIG has no \"worker\" tasks: the coordinator has nobody to run on",
                  program.name);
    return kExitUsage;
  }
  spdlog::info("{}: coordinator of job '{}': {} worker(s), {} parameter server(s)", program.name,
               settings->job_name, workers.size(), ps_addresses.size());
  if (absl::Status up = WaitForParameterServers(ps_clients, program.ps_startup_timeout); !up.ok()) {
    return ChiefExitCode(up, *settings, program.name);
  }
  CoordinatorOptions options;
  options.worker_recovery_timeout = settings->worker_recovery_timeout;
  options.transient_ps_failure_threshold = settings->transient_ps_failure_threshold;
  auto coordinator = ClusterCoordinator::Create(workers, options);
  if (!coordinator.ok()) {
    spdlog::error("{}: {}", program.name, coordinator.status().ToString());
    return kExitFailure;
  }
  ChiefContext context(*settings, *std::move(coordinator), ps_addresses, ps_clients, started);

  TerminationConfig termination;
  termination.exit_code = settings->restart_exit_code;
  termination.grace_period = settings->preemption_grace_period;
  if (program.configure_termination) program.configure_termination(termination);
  // Shared with the signal thread, which outlives this function.
  auto preemption_owner = std::make_shared<PreemptionCheckpointHandler>(
      termination, &context.coordinator(), static_cast<int>(workers.size()),
      static_cast<int>(ps_addresses.size()));
  PreemptionCheckpointHandler& preemption = *preemption_owner;
  context.set_preemption(&preemption);
  ProgressReporter* progress = &context.progress();
  MetricsRegistry* metrics = &context.metrics();
  // Events the operator shows (status and Kubernetes Events), newest last, time-stamped.
  auto publish_event = [progress](const std::string& event) {
    const std::string stamped = absl::StrCat(
        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()), " ", event);
    progress->Report([&](v1alpha1::TrainingProgress& p) {
      p.events.push_back(stamped);
      if (p.events.size() > v1alpha1::kMaxProgressEvents) p.events.erase(p.events.begin());
    });
  };
  preemption.SetEventListener([publish_event, metrics](const std::string& event) {
    metrics->AddCounter("tj_preemption_events_total",
                        "Preemption notices, decisions and exits handled by the coordinator");
    publish_event(event);
  });

  // The Coordination service on the coordinator's own address: where tasks heartbeat and where the
  // operator and tjctl send preemption notices.
  CoordinationState coordination;
  // Progress goes to the coordination store too (the operator reads it), until `coordination`
  // goes away: the cleanup runs first, being declared after it.
  progress->set_publisher([&coordination](const std::string& json) {
    (void)coordination.Set(v1alpha1::kProgressKey, json, /*allow_overwrite=*/true);
  });
  absl::Cleanup stop_publishing = [progress] { progress->set_publisher(nullptr); };
  CoordinationService service(&coordination, [&preemption, metrics](
                                                 const v1::PreemptionNoticeRequest& r) {
    CountPreemptionNotice(*metrics, r.task().type());
    const absl::Time deadline = r.deadline_unix_millis() > 0
                                    ? absl::FromUnixMillis(r.deadline_unix_millis())
                                    : absl::InfiniteFuture();
    return preemption.Notice(r.task().type(), r.task().index(), r.reason(), deadline);
  });
  // A worker this coordinator did not start with (the job was scaled up, or TF_CONFIG is older
  // than the job) joins the pool when it registers; the workers it knows are refused as such.
  service.set_registration_sink([&context, publish_event](const v1::RegisterTaskRequest& r) {
    if (r.task().type() != "worker" || r.address().empty()) return;
    auto added = context.coordinator().AddWorker(r.address(), r.task().index());
    if (absl::IsAlreadyExists(added.status())) return;
    if (!added.ok()) {
      spdlog::warn("worker {} registered from {} but cannot join: {}", r.task().index(),
                   r.address(), added.status().ToString());
      return;
    }
    publish_event(absl::StrCat("worker ", *added, " at ", r.address(), " joined"));
  });
  std::unique_ptr<grpc::Server> server;
  if (auto own = spec.task_address("chief", 0); own.ok()) {
    grpc::ServerBuilder builder;
    ConfigureRuntimeServer(builder);
    builder.AddListeningPort(ListenAddressFor(*own), RuntimeServerCredentials());
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    if (server == nullptr) {
      spdlog::error("{}: cannot serve the coordination service on {}", program.name, *own);
      return kExitFailure;
    }
    spdlog::info("{}: coordination service on {}", program.name, *own);
    LogJobTokenMode(program.name);
  }

  std::unique_ptr<MetricsHttpServer> metrics_server;
  if (!settings->metrics_address.empty()) {
    auto started = MetricsHttpServer::Start(settings->metrics_address, &context.metrics());
    if (!started.ok()) {
      spdlog::error("{}: {}", program.name, started.status().ToString());
      return kExitUsage;
    }
    metrics_server = *std::move(started);
    spdlog::info("{}: Prometheus metrics on port {} (GET /metrics)", program.name,
                 metrics_server->port());
  }

  // SIGTERM (the kubelet stopping the pod, tjctl stopping the process) is a preemption notice for
  // the coordinator: checkpoint at the next step boundary, exit with the restart code. Before and
  // after the training loop there is nothing to checkpoint: exit at once, with the restart code.
  std::thread([preemption_owner, name = program.name, code = termination.exit_code] {
    PreemptionCheckpointHandler& preemption = *preemption_owner;
    const sigset_t signals = ShutdownSignalSet();
    while (true) {
      const int signal_number = WaitForSignal(signals);
      if (!preemption.attached()) {
        spdlog::warn("{}: SIG{} outside the training loop: exiting with {}", name,
                     sigabbrev_np(signal_number), code);
        spdlog::default_logger()->flush();
        std::_Exit(code);
      }
      preemption.Notice("chief", 0, Cat("SIG", sigabbrev_np(signal_number)),
                        absl::InfiniteFuture());
    }
  }).detach();

  const absl::Status outcome = program.run_chief(context);
  for (const WorkerStats& worker : context.coordinator().Workers()) {
    spdlog::info("worker {} at {}: {} closure(s) completed, {} put back, {} failure(s)",
                 worker.index, worker.address, worker.completed, worker.put_back, worker.failures);
  }
  if (IsPreempted(outcome) && termination.exit_fn) termination.exit_fn();
  // Callers blocked in the service (a KeyValueGet, a Barrier) get a short while, not forever.
  if (server != nullptr) {
    server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Milliseconds(200)));
  }
  context.progress().Report([&](v1alpha1::TrainingProgress& p) {
    if (!outcome.ok()) {
      p.state = IsPreempted(outcome) ? "preempted" : "failed";
      p.message = std::string(outcome.message());
    }
  });
  // The handler outlives this function (the signal thread holds it); the progress does not.
  preemption.SetEventListener(nullptr);
  return ChiefExitCode(outcome, *settings, program.name);
}

}  // namespace

int ChiefExitCode(const absl::Status& outcome, const JobSettings& settings,
                  const std::string& program) {
  if (outcome.ok()) {
    spdlog::info("{}: training finished", program);
    return 0;
  }
  if (IsPreempted(outcome)) {
    spdlog::warn("{}: {}. Exiting with the restart code {}", program,
                 std::string(outcome.message()), settings.restart_exit_code);
    return settings.restart_exit_code;
  }
  if (IsFinalCheckpointNotSaved(outcome)) {
    spdlog::error(
        "{}: {}. Exiting with the restart code {}: training is done but its state is not saved, so "
        "the job has not succeeded; a restarted coordinator resumes from the newest checkpoint",
        program, outcome.ToString(), settings.restart_exit_code);
    return settings.restart_exit_code;
  }
  if (std::optional<int> ps_task = PsTaskOf(outcome); ps_task.has_value()) {
    spdlog::error(
        "{}: lost parameter server task {}: {}. Exiting with the restart code {}: the job restarts "
        "the coordinator, which restores the last checkpoint",
        program, *ps_task, outcome.ToString(), settings.restart_exit_code);
    return settings.restart_exit_code;
  }
  spdlog::error("{}: {}", program, outcome.ToString());
  return kExitFailure;
}

int RunProgram(const Program& program) {
  // Every role moves tensors: the PS serves them, workers pull and push them.
  TuneMallocForLargeTensors();
  auto resolver = TFConfigClusterResolver::FromEnvironment();
  if (!resolver.ok()) {
    spdlog::error("{}: {}", program.name, resolver.status().ToString());
    return kExitUsage;
  }
  const std::string type = (*resolver)->task_type().value_or("");
  if (type == "ps") {
    auto settings = PsSettingsFromTfConfig();
    if (!settings.ok()) {
      spdlog::error("{}: {}", program.name, settings.status().ToString());
      return kExitUsage;
    }
    return ServePsUntilSignalled(*settings, program.name);
  }
  if (type == "worker") {
    auto settings = WorkerSettingsFromTfConfig();
    if (!settings.ok()) {
      spdlog::error("{}: {}", program.name, settings.status().ToString());
      return kExitUsage;
    }
    FunctionRegistry registry;
    absl::Status registered = RegisterBuiltinFunctions(registry);
    if (registered.ok() && program.register_functions) {
      registered = program.register_functions(registry);
    }
    if (!registered.ok()) {
      spdlog::error("{}: {}", program.name, registered.ToString());
      return kExitFailure;
    }
    return ServeWorkerUntilSignalled(registry, *settings, program.name);
  }
  if (type == "chief") {
    auto spec = (*resolver)->cluster_spec();
    if (!spec.ok()) {
      spdlog::error("{}: {}", program.name, spec.status().ToString());
      return kExitUsage;
    }
    return RunChief(program, *spec);
  }
  spdlog::error(
      "{}: TF_CONFIG task type '{}' is not one this program plays: \"chief\" (the coordinator), "
      "\"ps\" or \"worker\"",
      program.name, type.empty() ? "(none)" : type);
  return kExitUsage;
}

}  // namespace tj::sdk
