// ShardedPsClient's setup half: the plan checked against each PS task's memory, then every
// variable slice and table created in RPCs of bounded size through the transfer window.
#include <grpcpp/client_context.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/base/std_mutex.h"
#include "coordinator/ps/memory_budget.h"
#include "coordinator/ps/ps_error.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "coordinator/ps/stall_watchdog.h"
#include "coordinator/ps/transfer_window.h"
#include "coordinator/ps/variable_spec.h"

namespace tj {

absl::Status ShardedPsClient::CheckPsMemory() const {
  std::vector<v1::PsHealthResponse> health(static_cast<size_t>(num_ps()));
  for (int task = 0; task < num_ps(); ++task) {
    TJ_ASSIGN_OR_RETURN(health[static_cast<size_t>(task)],
                        ps_[static_cast<size_t>(task)]->Health());
  }
  // Largest first, as placed: the variable named is the one that breaks the budget.
  std::vector<size_t> order(variables_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto& vars = placement_.variables();
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (vars[a].num_bytes != vars[b].num_bytes) return vars[a].num_bytes > vars[b].num_bytes;
    return vars[a].name < vars[b].name;
  });
  std::vector<int64_t> need(static_cast<size_t>(num_ps()), options_.ps_memory_headroom_bytes);
  for (size_t i : order) {
    const VariablePlacement& v = vars[i];
    absl::StatusOr<DenseVariableConfig> config = CheckVariableSpec(variables_[i]);
    const int copies = 1 + (config.ok() ? config->optimizer.num_slots() : 0);
    for (const VariableSlice& slice : v.slices)
      need[static_cast<size_t>(slice.ps_task)] += slice.num_bytes * copies;
    for (int task = 0; task < num_ps(); ++task) {
      const v1::PsHealthResponse& h = health[static_cast<size_t>(task)];
      if (h.memory_limit_bytes() <= 0) continue;  // an older PS, or nothing known: no check
      // Variables the task already holds (a restarted coordinator) count as available to
      // themselves: CreateVariables keeps them.
      const int64_t available = h.memory_available_bytes() + h.dense_bytes();
      if (need[static_cast<size_t>(task)] <= available) continue;
      return absl::ResourceExhaustedError(absl::StrCat(
          "variable '", v.name, "' ", v.spec.ToString(), " (", HumanBytes(v.num_bytes),
          copies > 1 ? absl::StrCat(", ", copies, " copies with its optimizer slots") : "",
          ") does not fit the parameter servers: /job:ps/task:", task, " would need ",
          HumanBytes(need[static_cast<size_t>(task)]),
          " (its slices of this and larger variables, "
          "with slots, plus ",
          HumanBytes(options_.ps_memory_headroom_bytes), " headroom) but has ",
          HumanBytes(available), " available (", h.memory_source(),
          "). Add PS replicas or memory, or make the model smaller"));
    }
  }
  return absl::OkStatus();
}

absl::Status ShardedPsClient::CreateVariables() const {
  TJ_RETURN_IF_ERROR(CheckPsMemory());
  // Requests of at most max_rpc_bytes of variables, one task each: the PS allocates and fills
  // every byte of what it creates (initial value or initializer), so the work of one RPC is
  // bounded like a pull's. No RPC has a deadline of its own: on a loaded PS, a request queued
  // behind others (a PS creates one request at a time) may take longer than the data path's
  // deadline and still be fine. The create fails, as an unreachable PS, only when no request
  // finished for the stall timeout, like a checkpoint's SaveShard.
  struct Call {
    int task = 0;
    grpc::ClientContext context;
    v1::CreateVariablesRequest request;
    v1::CreateVariablesResponse response;
  };
  std::vector<std::unique_ptr<Call>> calls;
  std::vector<int64_t> call_bytes;
  std::vector<int> last_call(static_cast<size_t>(num_ps()), -1);
  auto call_for = [&](int task, int64_t bytes) -> v1::CreateVariablesRequest& {
    int& i = last_call[static_cast<size_t>(task)];
    if (i < 0 || call_bytes[static_cast<size_t>(i)] + bytes > options_.max_rpc_bytes) {
      i = static_cast<int>(calls.size());
      calls.push_back(std::make_unique<Call>());
      calls.back()->task = task;
      call_bytes.push_back(0);
    }
    call_bytes[static_cast<size_t>(i)] += bytes;
    return calls[static_cast<size_t>(i)]->request;
  };
  for (size_t i = 0; i < variables_.size(); ++i) {
    const v1::VariableSpec& spec = variables_[i];
    const VariablePlacement& v = placement_.variables()[i];
    if (!v.split()) {
      *call_for(v.slices[0].ps_task, v.num_bytes + kSliceOverheadBytes).add_variables() = spec;
      continue;
    }
    for (const VariableSlice& slice : v.slices) {
      v1::VariableSpec* out =
          call_for(slice.ps_task, slice.num_bytes + kSliceOverheadBytes).add_variables();
      out->set_name(slice.ps_name);
      *out->mutable_initializer() = spec.initializer();
      *out->mutable_optimizer() = spec.optimizer();
      v1::VariablePartition* partition = out->mutable_partition();
      partition->set_full_name(v.name);
      partition->set_row_offset(slice.row_begin);
      partition->set_full_rows(v.spec.shape[0]);
      const std::vector<int64_t> shape = SliceShape(v.spec, slice);
      if (spec.has_initial_value()) {
        v1::Tensor* value = out->mutable_initial_value();
        value->set_dtype(v1::DTYPE_FLOAT32);
        value->mutable_shape()->Assign(shape.begin(), shape.end());
        value->mutable_data()->assign(spec.initial_value().data(),
                                      static_cast<size_t>(slice.byte_offset),
                                      static_cast<size_t>(slice.num_bytes));
      } else {
        out->mutable_shape()->Assign(shape.begin(), shape.end());
      }
    }
  }
  // Every table lives on every task: its ids are spread over all of them.
  if (!tables_.empty()) {
    for (int task = 0; task < num_ps(); ++task) {
      call_for(task, kSliceOverheadBytes).mutable_tables()->Assign(tables_.begin(), tables_.end());
    }
  }
  StdMutex mu;
  absl::flat_hash_set<Call*> in_flight;  // guarded by mu
  int stalled_task = -1;                 // guarded by mu
  const absl::Duration stall_timeout = ps_.front()->options().shard_stall_timeout;
  StallWatchdog watchdog(
      [&] {
        StdMutexLock lock(mu);
        for (Call* call : in_flight) {
          if (stalled_task < 0 || call->task < stalled_task) stalled_task = call->task;
          call->context.TryCancel();
        }
      },
      stall_timeout);
  absl::Status status = RunWindowed(
      call_bytes, options_.max_bytes_in_flight,
      [&](size_t i, WindowDone done) {
        Call& call = *calls[i];
        {
          StdMutexLock lock(mu);
          in_flight.insert(&call);
        }
        ps_[static_cast<size_t>(call.task)]->CreateAsync(call.context, call.request, call.response,
                                                         std::move(done));
      },
      [&](size_t i, absl::Status call_status) {
        {
          StdMutexLock lock(mu);
          in_flight.erase(calls[i].get());
        }
        watchdog.Progress();
        return call_status;
      });
  watchdog.Stop();
  if (watchdog.stalled() && !status.ok()) {
    StdMutexLock lock(mu);
    const int task = std::max(stalled_task, 0);
    return PsUnavailableError(
        task, ps_[static_cast<size_t>(task)]->address(),
        absl::StrCat("CreateVariables stalled: no request finished for ",
                     absl::FormatDuration(stall_timeout),
                     " (the shard stall timeout); the PS is frozen or out of CPU"));
  }
  return status;
}

}  // namespace tj
