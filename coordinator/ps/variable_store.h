// The variables one parameter-server task holds, by name, and the request-level semantics of
// CreateVariables, Pull and Push. Knows nothing of gRPC: PsService is the glue around it.
#pragma once

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/ps/dense_variable.h"
#include "tj/v1/ps.pb.h"

namespace tj {

// Thread-safe. The name map has a reader/writer lock held only to look names up (and, exclusively,
// to create variables, which happens rarely); each variable has its own lock, so pushes to
// different variables run in parallel. Every request is all-or-nothing: one bad entry and nothing
// is applied.
class VariableStore {
 public:
  VariableStore() = default;
  VariableStore(const VariableStore&) = delete;
  VariableStore& operator=(const VariableStore&) = delete;

  // Creates each variable from its initial value. Idempotent: a variable that already exists with
  // the same dtype and shape keeps its current value. A different dtype or shape is AlreadyExists
  // naming the variable and both specs. Only float32 variables are supported for now.
  absl::Status Create(const v1::CreateVariablesRequest& request);

  // Fills `response` with the values of request.names(), in order. Unknown name: NotFound. Each
  // value is read whole under its variable's lock, but two variables may straddle a concurrent
  // push.
  absl::Status Pull(const v1::PullRequest& request, v1::PullResponse& response) const;

  // Adds each delta element-wise to its variable. Unknown name: NotFound; a delta of the wrong
  // dtype, shape or byte size: InvalidArgument. Errors name the variable.
  absl::Status Push(const v1::PushRequest& request);

  int64_t num_variables() const;

 private:
  using VariablePtr = std::shared_ptr<DenseVariable>;

  // Resolves every name, or NotFound naming the first unknown one. Variables are handed out as
  // shared_ptr so that a later milestone can drop or replace them (restore) under a caller's feet.
  absl::StatusOr<std::vector<VariablePtr>> Find(
      const google::protobuf::RepeatedPtrField<std::string>& names) const;

  // A std::shared_mutex for the same reason as DenseVariable's: TSan can see it.
  mutable std::shared_mutex mu_;
  absl::flat_hash_map<std::string, VariablePtr> variables_;  // guarded by mu_
};

}  // namespace tj
