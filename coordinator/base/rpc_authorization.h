// Which roles may call which RPC: the one table mapping every method of proto/tj/v1/*.proto to
// the roles allowed, and the check every handler makes first (TJ_AUTHORIZE). A caller whose role
// the table does not allow gets PermissionDenied naming its role and the method; a caller without
// a valid credential gets Unauthenticated (job_token.h). In open mode everything is allowed.
#pragma once

#include <grpcpp/grpcpp.h>

#include <span>

#include "coordinator/base/job_roles.h"
#include "coordinator/base/job_token.h"

namespace tj {

enum class Rpc {
  // tj.v1.Coordination
  kRegisterTask,
  kHeartbeat,
  kKeyValueSet,
  kKeyValueGet,
  kKeyValueDelete,
  kKeyValueList,
  kBarrier,
  kGetTaskStates,
  kPreemptionNotice,
  // tj.v1.ParameterServer
  kPsHealth,
  kCreateVariables,
  kPull,
  kPush,
  kLookup,
  kPushSparse,
  kSaveShard,
  kRestoreShard,
  kStreamSaveShard,
  kStreamRestoreShard,
  // tj.v1.Worker
  kRun,
  kRunStream,
  kCreateResource,
  kWorkerHealth,
};

struct RpcRule {
  Rpc rpc;
  const char* service;  // full name, "tj.v1.ParameterServer"
  const char* method;   // "SaveShard"
  JobRoleSet allowed;
};

// Every RPC exactly once, in the order of the enum.
std::span<const RpcRule> RpcRules();
const RpcRule& RuleOf(Rpc rpc);

// OK when the call's credential is valid and its role may call `rpc` (also when the server does
// not tell roles apart); Unauthenticated or PermissionDenied otherwise. `caller`, when given,
// receives the identity for handlers that check more (PreemptionNotice: whose notice).
grpc::Status AuthorizeCall(const grpc::ServerContext& context, Rpc rpc,
                           CallerIdentity* caller = nullptr);

}  // namespace tj

// First line of every RPC handler of the runtime's services.
#define TJ_AUTHORIZE(context, rpc)                                              \
  do {                                                                          \
    if (grpc::Status authorize_status = ::tj::AuthorizeCall(*(context), (rpc)); \
        !authorize_status.ok()) {                                               \
      return authorize_status;                                                  \
    }                                                                           \
  } while (false)
