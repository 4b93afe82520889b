#include "coordinator/ps/sharded_ps_client.h"

#include <grpcpp/client_context.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/ps/dense_wire.h"
#include "coordinator/ps/optimizer.h"
#include "coordinator/ps/spare_buffers.h"
#include "coordinator/ps/status_naming.h"
#include "coordinator/ps/transfer_window.h"
#include "coordinator/ps/variable_spec.h"

namespace tj {
namespace {

absl::Status BadAnswer(int task, absl::string_view what) {
  return absl::InternalError(absl::StrCat("parameter server /job:ps/task:", task, " ", what));
}

// How long a successful push waits for gRPC to let go of its gradients (normally microseconds).
constexpr absl::Duration kReleaseWait = absl::Seconds(1);

}  // namespace

std::vector<int64_t> ShardedPsClient::SliceShape(const TensorSpec& spec,
                                                 const VariableSlice& slice) {
  std::vector<int64_t> shape = spec.shape;
  if (!shape.empty()) shape[0] = slice.row_end - slice.row_begin;
  return shape;
}

absl::StatusOr<std::unique_ptr<ShardedPsClient>> ShardedPsClient::Create(
    std::vector<std::shared_ptr<PsClient>> ps_tasks, std::vector<v1::VariableSpec> variables,
    std::vector<v1::TableSpec> tables, ShardedPsOptions options) {
  for (const auto& ps : ps_tasks) {
    if (ps == nullptr) return absl::InvalidArgumentError("a PS task has no client");
  }
  if (options.max_rpc_bytes < 1 || options.max_bytes_in_flight < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_rpc_bytes and max_bytes_in_flight must be positive, got ",
                     options.max_rpc_bytes, " and ", options.max_bytes_in_flight));
  }
  TJ_ASSIGN_OR_RETURN(
      PsPlacement placement,
      PsPlacement::Plan(variables, static_cast<int>(ps_tasks.size()), options.placement));
  for (const v1::TableSpec& spec : tables) {
    absl::Status status = CheckTableSpec(spec).status();
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("table '", spec.name(), "': ", status.message()));
    }
  }
  std::unique_ptr<ShardedPsClient> client(new ShardedPsClient(
      std::move(ps_tasks), std::move(placement), std::move(variables), std::move(tables), options));
  for (const v1::TableSpec& spec : client->tables_) {
    if (!client->table_dims_.emplace(spec.name(), spec.dim()).second) {
      return absl::InvalidArgumentError(absl::StrCat("table '", spec.name(), "' is given twice"));
    }
  }
  return client;
}

absl::StatusOr<std::unique_ptr<ShardedPsClient>> ShardedPsClient::Connect(
    const std::vector<std::string>& addresses, std::vector<v1::VariableSpec> variables,
    std::vector<v1::TableSpec> tables, ShardedPsOptions options, PsClientOptions client_options) {
  std::vector<std::shared_ptr<PsClient>> ps;
  for (size_t i = 0; i < addresses.size(); ++i) {
    ps.push_back(PsClient::Connect(addresses[i], static_cast<int>(i), client_options));
  }
  return Create(std::move(ps), std::move(variables), std::move(tables), options);
}

ShardedPsClient::ShardedPsClient(std::vector<std::shared_ptr<PsClient>> ps, PsPlacement placement,
                                 std::vector<v1::VariableSpec> variables,
                                 std::vector<v1::TableSpec> tables, ShardedPsOptions options)
    : ps_(std::move(ps)),
      placement_(std::move(placement)),
      variables_(std::move(variables)),
      tables_(std::move(tables)),
      options_(options) {}

std::vector<ShardedPsClient::Batch> ShardedPsClient::Batches(
    const std::vector<const VariablePlacement*>& placements) const {
  std::vector<std::vector<Batch>> per_task(static_cast<size_t>(num_ps()));
  for (size_t v = 0; v < placements.size(); ++v) {
    const std::vector<VariableSlice>& slices = placements[v]->slices;
    for (size_t k = 0; k < slices.size(); ++k) {
      std::vector<Batch>& batches = per_task[static_cast<size_t>(slices[k].ps_task)];
      const int64_t bytes = slices[k].num_bytes + kSliceOverheadBytes;
      if (batches.empty() || batches.back().bytes + bytes > options_.max_rpc_bytes) {
        batches.push_back(Batch{slices[k].ps_task, 0, {}});
      }
      batches.back().bytes += bytes;
      batches.back().slices.emplace_back(v, k);
    }
  }
  // Round robin over the tasks: the first batches in the window go to as many tasks as possible.
  std::vector<Batch> out;
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (std::vector<Batch>& batches : per_task) {
      if (round >= batches.size()) continue;
      out.push_back(std::move(batches[round]));
      any = true;
    }
    if (!any) break;
  }
  return out;
}

absl::StatusOr<int64_t> ShardedPsClient::TableDim(std::string_view table) const {
  auto it = table_dims_.find(absl::string_view(table.data(), table.size()));
  if (it == table_dims_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "table '", std::string(table), "' is not among the tables this client was created with"));
  }
  return it->second;
}

absl::StatusOr<const VariablePlacement*> ShardedPsClient::FindVariable(
    const std::string& name) const {
  const VariablePlacement* v = placement_.Find(name);
  if (v == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "variable '", name, "' is not among the variables this client was created with"));
  }
  return v;
}

absl::StatusOr<std::vector<v1::Tensor>> ShardedPsClient::Pull(
    const std::vector<std::string>& names) const {
  std::vector<v1::Tensor> values;
  TJ_RETURN_IF_ERROR(PullInto(names, values));
  return values;
}

absl::Status ShardedPsClient::PullInto(const std::vector<std::string>& names,
                                       std::vector<v1::Tensor>& values) const {
  std::vector<const VariablePlacement*> placements;
  placements.reserve(names.size());
  for (const std::string& name : names) {
    TJ_ASSIGN_OR_RETURN(const VariablePlacement* v, FindVariable(name));
    placements.push_back(v);
  }
  values.resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const VariablePlacement& v = *placements[i];
    v1::Tensor& out = values[i];
    out.set_dtype(v1::DTYPE_FLOAT32);
    out.mutable_shape()->Assign(v.spec.shape.begin(), v.spec.shape.end());
    // Same size as last time: the memory is reused as it is (no fresh pages, no zeroing); else a
    // spare a model left behind, before fresh memory.
    const size_t n = static_cast<size_t>(v.num_bytes);
    if (out.data().size() != n && !TakeSpareBuffer(*out.mutable_data(), n)) {
      out.mutable_data()->resize(n);
    }
  }

  struct Call {
    grpc::ClientContext context;
    v1::PullRequest request;
    grpc::ByteBuffer response;
    std::vector<PullTarget> targets;
  };
  const std::vector<Batch> batches = Batches(placements);
  std::vector<int64_t> bytes;
  bytes.reserve(batches.size());
  for (const Batch& batch : batches) bytes.push_back(batch.bytes);
  // Created as they start, destroyed as they finish: gRPC's receive buffers of at most the window.
  std::vector<std::unique_ptr<Call>> calls(batches.size());
  return RunWindowed(
      bytes, options_.max_bytes_in_flight,
      [&](size_t i, WindowDone done) {
        calls[i] = std::make_unique<Call>();
        Call& call = *calls[i];
        for (const auto& [v, k] : batches[i].slices) {
          const VariableSlice& slice = placements[v]->slices[k];
          call.request.add_names(slice.ps_name);
          call.targets.push_back(PullTarget{values[v].mutable_data()->data() + slice.byte_offset,
                                            static_cast<size_t>(slice.num_bytes)});
        }
        ps_[static_cast<size_t>(batches[i].task)]->PullRawAsync(call.context, call.request,
                                                                call.response, std::move(done));
      },
      [&](size_t i, absl::Status status) {
        std::unique_ptr<Call> call = std::move(calls[i]);
        TJ_RETURN_IF_ERROR(status);
        if (absl::Status decoded = DecodePullResponseInto(call->response, call->targets);
            !decoded.ok()) {
          return BadAnswer(batches[i].task, decoded.message());
        }
        return absl::OkStatus();
      });
}

absl::Status ShardedPsClient::Push(const std::vector<std::string>& names,
                                   std::vector<v1::Tensor> gradients) const {
  std::vector<std::shared_ptr<const v1::Tensor>> shared;
  shared.reserve(gradients.size());
  // Moving an arena-less message swaps its buffers: no copy.
  for (v1::Tensor& g : gradients) shared.push_back(std::make_shared<v1::Tensor>(std::move(g)));
  return Push(names, shared);
}

absl::Status ShardedPsClient::Push(
    const std::vector<std::string>& names,
    const std::vector<std::shared_ptr<const v1::Tensor>>& gradients) const {
  if (names.size() != gradients.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("push has ", names.size(), " names but ", gradients.size(), " gradients"));
  }
  std::vector<const VariablePlacement*> placements;
  placements.reserve(names.size());
  // Everything is checked before anything is sent, so that a bad push changes no slice.
  for (size_t i = 0; i < names.size(); ++i) {
    TJ_ASSIGN_OR_RETURN(const VariablePlacement* v, FindVariable(names[i]));
    if (gradients[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("push to variable '", names[i], "': no gradient"));
    }
    const v1::Tensor& grad = *gradients[i];
    TJ_RETURN_IF_ERROR(Naming("push to variable", names[i], CheckWellFormed(grad)));
    if (!v->spec.Matches(grad)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "push to variable '", names[i], "': gradient is ", TensorSpec::Of(grad).ToString(),
          " but the variable is ", v->spec.ToString()));
    }
    TJ_RETURN_IF_ERROR(
        Naming("push to variable", names[i],
               CheckFiniteGradient(grad.data().data(), grad.data().size() / sizeof(float))));
    placements.push_back(v);
  }

  // gRPC keeps this alive (hence the gradients) for as long as it holds a slice of them; its
  // deleter tells when gRPC has let go of the last one.
  auto released = std::make_shared<absl::Notification>();
  std::shared_ptr<const void> owner(
      new std::vector<std::shared_ptr<const v1::Tensor>>(gradients),
      [released](const std::vector<std::shared_ptr<const v1::Tensor>>* held) {
        delete held;
        released->Notify();
      });
  struct Call {
    grpc::ClientContext context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
  };
  const std::vector<Batch> batches = Batches(placements);
  std::vector<int64_t> bytes;
  bytes.reserve(batches.size());
  for (const Batch& batch : batches) bytes.push_back(batch.bytes);
  std::vector<std::unique_ptr<Call>> calls(batches.size());
  absl::Status status = RunWindowed(
      bytes, options_.max_bytes_in_flight,
      [&](size_t i, WindowDone done) {
        calls[i] = std::make_unique<Call>();
        Call& call = *calls[i];
        std::vector<std::string> slice_names;
        std::vector<DeltaView> views;
        for (const auto& [v, k] : batches[i].slices) {
          const VariableSlice& slice = placements[v]->slices[k];
          slice_names.push_back(slice.ps_name);
          views.push_back(DeltaView{SliceShape(placements[v]->spec, slice),
                                    gradients[v]->data().data() + slice.byte_offset,
                                    static_cast<size_t>(slice.num_bytes)});
        }
        call.request = EncodePushRequest(slice_names, views, owner);
        ps_[static_cast<size_t>(batches[i].task)]->PushRawAsync(call.context, call.request,
                                                                call.response, std::move(done));
      },
      [&](size_t i, absl::Status call_status) {
        calls[i].reset();
        return call_status;
      });
  // Every call has answered, but gRPC's transport may still hold the request slices for a moment
  // (its write completion runs after the answer can arrive). Waiting for it here lets the caller
  // write the next step's gradients into the same buffers (use_count() == 1) instead of taking
  // fresh ones and holding a third copy of the model. After a failure the transport may hold them
  // until the connection gives up: no wait, and the caller takes a fresh buffer.
  owner.reset();
  if (status.ok()) released->WaitForNotificationWithTimeout(kReleaseWait);
  return status;
}

}  // namespace tj
