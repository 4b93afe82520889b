#include "tjctl/local/launch_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/coordination_port.h"
#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/runtime_env.h"
#include "coordinator/base/strings.h"
#include "jobcontrol/tf_config.h"
#include "tjctl/local/container_env.h"
#include "tjctl/local/executable_lookup.h"
#include "tjctl/local/process.h"

namespace tj::local {
namespace {

using v1alpha1::ChildPath;
using v1alpha1::IndexPath;

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

std::string ShellQuote(const std::string& arg) {
  const bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("-_./=:,+@%").find(c) != std::string_view::npos;
  });
  if (plain) return arg;
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

}  // namespace

std::string ShellQuoteCommand(const std::string& binary, const std::vector<std::string>& args) {
  std::string out = ShellQuote(binary);
  for (const std::string& arg : args) absl::StrAppend(&out, " ", ShellQuote(arg));
  return out;
}

ReplicaAddresses PickLocalAddresses(const v1alpha1::TrainingJob& job,
                                    const ReplicaAddresses& taken) {
  std::set<std::string> used;
  for (const auto& [key, address] : taken) used.insert(address);
  ReplicaAddresses addresses;
  for (const Replica& replica : DesiredReplicas(job)) {
    std::string address;
    do {
      address = absl::StrCat("127.0.0.1:", PickFreePort());
    } while (!used.insert(address).second);
    addresses[replica.key] = std::move(address);
  }
  return addresses;
}

LaunchPlan PlanLocalLaunch(const v1alpha1::TrainingJob& job, const ReplicaAddresses& addresses,
                           const RunPaths& paths, const ReplicaAddresses& metrics_addresses) {
  LaunchPlan plan;
  if (job.spec.run_policy.suspend.value_or(false)) {
    plan.errors.push_back(v1alpha1::ForbiddenError(
        "spec.runPolicy.suspend", "tjctl run does not run a suspended job; set it to false"));
  }
  const std::string pod_namespace =
      job.metadata.namespace_name.empty() ? std::string("default") : job.metadata.namespace_name;
  const std::string host = HostName();

  for (const Replica& replica : DesiredReplicas(job)) {
    const std::string type_name(v1alpha1::ReplicaTypeName(replica.key.type));
    const v1alpha1::ReplicaSpec& spec = job.spec.replica_specs.at(replica.key.type);
    const std::string template_path = Cat("spec.replicaSpecs.", type_name, ".template");
    const std::string containers_path = ChildPath(ChildPath(template_path, "spec"), "containers");
    const std::string container_path = IndexPath(containers_path, 0);
    const std::vector<v1alpha1::Container> containers = spec.pod_template.containers();
    // Warnings and errors are per replica type, not per replica: report them on index 0 only.
    const bool first_of_type = replica.key.index == 0;
    if (containers.empty()) {
      if (first_of_type) {
        plan.errors.push_back(v1alpha1::RequiredError(containers_path));
      }
      continue;
    }
    if (first_of_type && containers.size() > 1) {
      plan.warnings.push_back(Cat(containers_path, ": only the first container (\"",
                                  containers[0].name, "\") runs locally; ", containers.size() - 1,
                                  " other container(s) are ignored"));
    }
    const nlohmann::json& raw = spec.pod_template.raw();
    if (first_of_type && raw.contains("spec") && raw["spec"].is_object() &&
        raw["spec"].contains("initContainers")) {
      plan.warnings.push_back(Cat(ChildPath(ChildPath(template_path, "spec"), "initContainers"),
                                  ": init containers do not run locally"));
    }
    const v1alpha1::Container& container = containers[0];

    ReplicaLaunch launch;
    launch.key = replica.key;
    launch.name = replica.name;
    auto address = addresses.find(replica.key);
    launch.address = address != addresses.end() ? address->second : "";
    launch.log_path = Cat(paths.logs_dir, "/", replica.name, ".log");
    if (auto grace = spec.pod_template.termination_grace_period_seconds()) {
      launch.grace_period = std::min(absl::Seconds(std::max<int64_t>(*grace, 0)),
                                     kMaxLocalGracePeriod);
    }

    auto tf_config = RenderTfConfig(job, addresses, replica.key.type, replica.key.index);
    if (!tf_config.ok()) {
      plan.errors.push_back(v1alpha1::FieldError{"", std::string(tf_config.status().message())});
      continue;
    }
    EnvList injected =
        ReplicaEnvironment(job, replica.key, *tf_config, paths.checkpoint_dir);
    injected.emplace_back(v1alpha1::env::kProgressFile, paths.progress_file);
    if (replica.key.type == v1alpha1::ReplicaType::kCoordinator &&
        v1alpha1::CoordinationPort(job).has_value()) {
      launch.coordination_address = absl::StrCat("127.0.0.1:", PickFreePort());
      injected.emplace_back(v1alpha1::env::kCoordinationAddress, launch.coordination_address);
    }
    if (!paths.credentials_dir.empty()) {
      // The replica's own role's credential only (the role is the replica type's lower name).
      injected.emplace_back(kTokenFileEnv, Cat(paths.credentials_dir, "/",
                                               v1alpha1::ReplicaTypeLowerName(replica.key.type)));
      injected.emplace_back(kTokenVerifiersFileEnv, Cat(paths.credentials_dir, "/verifiers"));
    }
    if (!paths.tls_dir.empty()) injected.emplace_back(kTlsDirEnv, paths.tls_dir);
    if (auto metrics = metrics_addresses.find(replica.key); metrics != metrics_addresses.end()) {
      injected.emplace_back(v1alpha1::env::kMetricsAddress, metrics->second);
    }

    const LocalFieldValues values{replica.name, pod_namespace, "127.0.0.1", host};
    v1alpha1::FieldErrors env_errors;
    EnvList user_env =
        ResolveContainerEnv(container.env, values, injected, container_path, env_errors);
    if (first_of_type) plan.errors.insert(plan.errors.end(), env_errors.begin(), env_errors.end());
    launch.env = MergeEnvironment(std::move(user_env), injected);

    const std::string command_path = ChildPath(container_path, "command");
    if (container.command.empty()) {
      if (first_of_type) {
        plan.errors.push_back(v1alpha1::RequiredError(
            command_path, "there is no image entrypoint locally: tjctl run starts the command"));
      }
      continue;
    }
    std::vector<std::string> argv;
    for (const std::string& part : container.command) argv.push_back(ExpandVariables(part, launch.env));
    for (const std::string& part : container.args) argv.push_back(ExpandVariables(part, launch.env));
    auto binary = ResolveExecutable(argv[0]);
    if (!binary.ok()) {
      if (first_of_type) {
        plan.errors.push_back(
            v1alpha1::InvalidError(IndexPath(command_path, 0), argv[0], std::string(binary.status().message())));
      }
      continue;
    }
    launch.binary = *binary;
    launch.args.assign(argv.begin() + 1, argv.end());
    launch.command_line = ShellQuoteCommand(launch.binary, launch.args);
    plan.replicas.push_back(std::move(launch));
  }
  return plan;
}

}  // namespace tj::local
