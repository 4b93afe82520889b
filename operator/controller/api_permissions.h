// Every Kubernetes API call tj-operator makes, as RBAC would name it: the one list of what the
// operator may do. The Helm chart grants exactly these rules (tests/helm/helm_chart_test.cc
// renders the chart and compares), DeclaredKubeClient refuses at run time any call not listed
// here (so a new call fails every test that runs the operator, even with an admin's
// credentials), and tests/operator/controller/operator_process_test.cc compares the API server's
// audit log of the operator's ServiceAccount with this list in both directions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tj::op {

// Where a rule applies.
enum class ApiScope {
  kJobs,            // the watched namespace (--namespace), or every namespace
  kCluster,         // cluster-scoped resources (nodes)
  kLeaseNamespace,  // the leader-election Lease's namespace only
};

// What turns a rule on (an operator flag, a chart value).
enum class ApiFeature {
  kAlways,
  kLeaderElection,             // --leader-elect, leaderElection.enabled
  kVolcano,                    // --gang-scheduler=volcano
  kSchedulerPlugins,           // --gang-scheduler=scheduler-plugins
  kNetworkPolicy,              // --job-network-policy, networkPolicy.enabled
  kKueue,                      // --kueue, kueue.enabled
};

struct ApiPermission {
  std::string_view group;     // "" for the core API
  std::string_view resource;  // "pods", "trainingjobs/status"
  std::vector<std::string_view> verbs;
  ApiScope scope;
  ApiFeature feature;
  // False for a permission the API server checks without the operator calling it
  // (trainingjobs/finalizers: the ownerReferences admission plugin, on pod creates).
  bool called;
  std::string_view why;  // the code that needs it
};

const std::vector<ApiPermission>& OperatorApiPermissions();

// The rule that allows `verb` on group/resource[/subresource], or null. Subresource "" is the
// resource itself.
const ApiPermission* FindApiPermission(std::string_view verb, std::string_view group,
                                       std::string_view resource, std::string_view subresource);

}  // namespace tj::op
