// A container's environment as `tjctl run` gives it to a local process: the template's `env` in
// order, `valueFrom` resolved for the fieldRefs that have a local meaning (Kubernetes' downward
// API), and Kubernetes' $(VAR) references expanded in values, command and args.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/v1alpha1/field_error.h"
#include "api/v1alpha1/pod_template.h"
#include "jobcontrol/replica_env.h"

namespace tj::local {

// What the downward API gives a pod, for a local process.
struct LocalFieldValues {
  std::string pod_name;        // metadata.name: the replica name, "<job>-<type>-<index>"
  std::string pod_namespace;   // metadata.namespace: the job's namespace, or "default"
  std::string pod_ip;          // status.podIP: 127.0.0.1
  std::string node_name;       // spec.nodeName: this machine's host name
};

// The fieldPaths a local valueFrom.fieldRef may name.
std::vector<std::string_view> SupportedLocalFieldPaths();

// The container's env, in order. A `value` is expanded against the variables defined before it
// and `injected` (TF_CONFIG, TJ_*: those win, as MergeEnvironment makes them win). A `valueFrom`
// other than a supported fieldRef is an error at `<container_path>.env[j].valueFrom...`.
EnvList ResolveContainerEnv(const std::vector<v1alpha1::EnvVar>& env,
                            const LocalFieldValues& values, const EnvList& injected,
                            const std::string& container_path, v1alpha1::FieldErrors& errors);

// Kubernetes' expansion: "$(NAME)" becomes NAME's value when `vars` defines it (the last
// definition wins) and stays as written otherwise; "$$" is a literal "$".
std::string ExpandVariables(std::string_view input, const EnvList& vars);

}  // namespace tj::local
