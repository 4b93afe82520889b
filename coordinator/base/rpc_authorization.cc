#include "coordinator/base/rpc_authorization.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace tj {
namespace {

using enum JobRole;

constexpr char kCoordinationService[] = "tj.v1.Coordination";
constexpr char kPsService[] = "tj.v1.ParameterServer";
constexpr char kWorkerService[] = "tj.v1.Worker";

// The model (docs/training.md, "Roles"): only the coordinator changes what the job is (variables,
// checkpoints, progress, functions run on workers); workers read and update parameters and report;
// parameter servers only report; the control role (operator, tjctl) sends preemption notices and
// reads progress. Reads of task states and keys are open to every role of the job.
constexpr std::array<RpcRule, static_cast<size_t>(Rpc::kWorkerHealth) + 1> kRules = {{
    {Rpc::kRegisterTask, kCoordinationService, "RegisterTask", {kCoordinator, kWorker, kPs}},
    {Rpc::kHeartbeat, kCoordinationService, "Heartbeat", {kCoordinator, kWorker, kPs}},
    {Rpc::kKeyValueSet, kCoordinationService, "KeyValueSet", {kCoordinator}},
    {Rpc::kKeyValueGet,
     kCoordinationService,
     "KeyValueGet",
     {kCoordinator, kWorker, kPs, kControl}},
    {Rpc::kKeyValueDelete, kCoordinationService, "KeyValueDelete", {kCoordinator}},
    {Rpc::kKeyValueList,
     kCoordinationService,
     "KeyValueList",
     {kCoordinator, kWorker, kPs, kControl}},
    {Rpc::kBarrier, kCoordinationService, "Barrier", {kCoordinator, kWorker, kPs}},
    {Rpc::kGetTaskStates,
     kCoordinationService,
     "GetTaskStates",
     {kCoordinator, kWorker, kPs, kControl}},
    // A worker or PS may only announce its own kind's preemption (its SIGTERM); the handler
    // checks that. Notices about the coordinator come from the control role alone.
    {Rpc::kPreemptionNotice, kCoordinationService, "PreemptionNotice", {kControl, kWorker, kPs}},
    {Rpc::kPsHealth, kPsService, "Health", {kCoordinator, kWorker}},
    {Rpc::kCreateVariables, kPsService, "CreateVariables", {kCoordinator}},
    {Rpc::kPull, kPsService, "Pull", {kCoordinator, kWorker}},
    {Rpc::kPush, kPsService, "Push", {kCoordinator, kWorker}},
    {Rpc::kLookup, kPsService, "Lookup", {kCoordinator, kWorker}},
    {Rpc::kPushSparse, kPsService, "PushSparse", {kCoordinator, kWorker}},
    {Rpc::kSaveShard, kPsService, "SaveShard", {kCoordinator}},
    {Rpc::kRestoreShard, kPsService, "RestoreShard", {kCoordinator}},
    {Rpc::kStreamSaveShard, kPsService, "StreamSaveShard", {kCoordinator}},
    {Rpc::kStreamRestoreShard, kPsService, "StreamRestoreShard", {kCoordinator}},
    {Rpc::kRun, kWorkerService, "Run", {kCoordinator}},
    {Rpc::kRunStream, kWorkerService, "RunStream", {kCoordinator}},
    {Rpc::kCreateResource, kWorkerService, "CreateResource", {kCoordinator}},
    {Rpc::kWorkerHealth, kWorkerService, "Health", {kCoordinator}},
}};

constexpr bool RulesFollowTheEnum() {
  for (size_t i = 0; i < kRules.size(); ++i) {
    if (static_cast<size_t>(kRules[i].rpc) != i) return false;
  }
  return true;
}
static_assert(RulesFollowTheEnum(), "kRules must list every Rpc once, in the enum's order");

}  // namespace

std::span<const RpcRule> RpcRules() { return kRules; }

const RpcRule& RuleOf(Rpc rpc) { return kRules[static_cast<size_t>(rpc)]; }

grpc::Status AuthorizeCall(const grpc::ServerContext& context, Rpc rpc, CallerIdentity* caller) {
  CallerIdentity identity;
  if (grpc::Status authenticated = AuthenticateCall(context, &identity); !authenticated.ok()) {
    return authenticated;
  }
  if (caller != nullptr) *caller = identity;
  if (!identity.role.has_value()) return grpc::Status::OK;
  const RpcRule& rule = RuleOf(rpc);
  if (rule.allowed.Contains(*identity.role)) return grpc::Status::OK;
  return grpc::Status(
      grpc::StatusCode::PERMISSION_DENIED,
      absl::StrCat("role ", JobRoleName(*identity.role), " may not call ", rule.service, "/",
                   rule.method, " (allowed: ", rule.allowed.ToString(), ")"));
}

}  // namespace tj
