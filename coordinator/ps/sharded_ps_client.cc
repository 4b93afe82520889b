#include "coordinator/ps/sharded_ps_client.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/ps/optimizer.h"
#include "coordinator/ps/ps_fan_out.h"
#include "coordinator/ps/status_naming.h"
#include "coordinator/ps/variable_spec.h"

namespace tj {
namespace {

// Bytes of one row (dimension 0 slice) of a variable of `spec`.
int64_t RowBytes(const TensorSpec& spec) {
  if (spec.shape.empty()) return static_cast<int64_t>(sizeof(float));
  const int64_t rows = spec.shape[0];
  return rows == 0 ? 0 : spec.num_elements() / rows * static_cast<int64_t>(sizeof(float));
}

// The shape of rows [begin, end) of `spec`.
std::vector<int64_t> ShardShape(const TensorSpec& spec, const VariableShard& shard) {
  std::vector<int64_t> shape = spec.shape;
  if (!shape.empty()) shape[0] = shard.row_end - shard.row_begin;
  return shape;
}

absl::Status BadAnswer(int task, absl::string_view what) {
  return absl::InternalError(absl::StrCat("parameter server /job:ps/task:", task, " ", what));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardedPsClient>> ShardedPsClient::Create(
    std::vector<std::shared_ptr<PsClient>> ps_tasks, std::vector<v1::VariableSpec> variables,
    std::vector<v1::TableSpec> tables, ShardedPsOptions options) {
  for (const auto& ps : ps_tasks) {
    if (ps == nullptr) return absl::InvalidArgumentError("a PS task has no client");
  }
  TJ_ASSIGN_OR_RETURN(
      PsPlacement placement,
      PsPlacement::Plan(variables, static_cast<int>(ps_tasks.size()), options.max_shard_bytes));
  for (const v1::TableSpec& spec : tables) {
    absl::Status status = CheckTableSpec(spec).status();
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("table '", spec.name(), "': ", status.message()));
    }
  }
  std::unique_ptr<ShardedPsClient> client(new ShardedPsClient(
      std::move(ps_tasks), std::move(placement), std::move(variables), std::move(tables)));
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
                                 std::vector<v1::TableSpec> tables)
    : ps_(std::move(ps)),
      placement_(std::move(placement)),
      variables_(std::move(variables)),
      tables_(std::move(tables)) {}

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

absl::Status ShardedPsClient::CreateVariables() const {
  using Fan = PsFanOut<v1::CreateVariablesRequest, v1::CreateVariablesResponse>;
  Fan fan(num_ps());
  for (size_t i = 0; i < variables_.size(); ++i) {
    const v1::VariableSpec& spec = variables_[i];
    const VariablePlacement& v = placement_.variables()[i];
    if (!v.split()) {
      *fan.To(v.shards[0].ps_task).request.add_variables() = spec;
      continue;
    }
    const int64_t row_bytes = RowBytes(v.spec);
    for (const VariableShard& shard : v.shards) {
      v1::VariableSpec* out = fan.To(shard.ps_task).request.add_variables();
      out->set_name(shard.ps_name);
      *out->mutable_initializer() = spec.initializer();
      *out->mutable_optimizer() = spec.optimizer();
      v1::VariablePartition* partition = out->mutable_partition();
      partition->set_full_name(v.name);
      partition->set_row_offset(shard.row_begin);
      partition->set_full_rows(v.spec.shape[0]);
      const std::vector<int64_t> shape = ShardShape(v.spec, shard);
      if (spec.has_initial_value()) {
        v1::Tensor* value = out->mutable_initial_value();
        value->set_dtype(v1::DTYPE_FLOAT32);
        value->mutable_shape()->Assign(shape.begin(), shape.end());
        value->mutable_data()->assign(spec.initial_value().data(),
                                      static_cast<size_t>(shard.row_begin * row_bytes),
                                      static_cast<size_t>(shard.num_bytes));
      } else {
        out->mutable_shape()->Assign(shape.begin(), shape.end());
      }
    }
  }
  // Every table lives on every task: its ids are spread over all of them.
  if (!tables_.empty()) {
    for (int task = 0; task < num_ps(); ++task) {
      fan.To(task).request.mutable_tables()->Assign(tables_.begin(), tables_.end());
    }
  }
  return fan.Run(ps_, [](const PsClient& ps, Fan::Call& call, PsClient::Done done) {
    ps.CreateAsync(call.context, call.request, call.response, std::move(done));
  });
}

absl::StatusOr<std::vector<v1::Tensor>> ShardedPsClient::Pull(
    const std::vector<std::string>& names) const {
  using Fan = PsFanOut<v1::PullRequest, v1::PullResponse>;
  Fan fan(num_ps());
  std::vector<const VariablePlacement*> placements;
  placements.reserve(names.size());
  // Where each shard's value will be in its task's response: the k-th name sent to that task.
  std::vector<int> slots;
  for (const std::string& name : names) {
    TJ_ASSIGN_OR_RETURN(const VariablePlacement* v, FindVariable(name));
    placements.push_back(v);
    for (const VariableShard& shard : v->shards) {
      v1::PullRequest& request = fan.To(shard.ps_task).request;
      slots.push_back(request.names_size());
      request.add_names(shard.ps_name);
    }
  }
  TJ_RETURN_IF_ERROR(fan.Run(ps_, [](const PsClient& ps, Fan::Call& call, PsClient::Done done) {
    ps.PullAsync(call.context, call.request, call.response, std::move(done));
  }));
  for (int task = 0; task < num_ps(); ++task) {
    const Fan::Call* call = fan.Find(task);
    if (call != nullptr && call->response.values_size() != call->request.names_size()) {
      return BadAnswer(task, absl::StrCat("answered ", call->response.values_size(),
                                          " values to a pull of ", call->request.names_size()));
    }
  }

  std::vector<v1::Tensor> values(names.size());
  size_t next_slot = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const VariablePlacement& v = *placements[i];
    v1::Tensor& out = values[i];
    for (const VariableShard& shard : v.shards) {
      v1::Tensor& part = *fan.Find(shard.ps_task)->response.mutable_values(slots[next_slot++]);
      if (part.dtype() != v1::DTYPE_FLOAT32 ||
          part.data().size() != static_cast<size_t>(shard.num_bytes)) {
        return BadAnswer(shard.ps_task,
                         absl::StrCat("returned ", TensorSpec::Of(part).ToString(), " (",
                                      part.data().size(), " bytes) for '", shard.ps_name, "'"));
      }
      if (!v.split()) {
        out = std::move(part);  // swaps the buffers: no copy
        continue;
      }
      if (shard.row_begin == 0) {
        out.set_dtype(v1::DTYPE_FLOAT32);
        out.mutable_shape()->Assign(v.spec.shape.begin(), v.spec.shape.end());
        out.mutable_data()->reserve(static_cast<size_t>(v.spec.num_elements()) * sizeof(float));
      }
      out.mutable_data()->append(part.data());  // shards are in row order
    }
  }
  return values;
}

absl::Status ShardedPsClient::Push(const std::vector<std::string>& names,
                                   std::vector<v1::Tensor> gradients) const {
  if (names.size() != gradients.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("push has ", names.size(), " names but ", gradients.size(), " gradients"));
  }
  std::vector<const VariablePlacement*> placements;
  placements.reserve(names.size());
  // Everything is checked before anything is sent, so that a bad push changes no shard.
  for (size_t i = 0; i < names.size(); ++i) {
    TJ_ASSIGN_OR_RETURN(const VariablePlacement* v, FindVariable(names[i]));
    const v1::Tensor& grad = gradients[i];
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

  using Fan = PsFanOut<v1::PushRequest, v1::PushResponse>;
  Fan fan(num_ps());
  for (size_t i = 0; i < names.size(); ++i) {
    const VariablePlacement& v = *placements[i];
    if (!v.split()) {
      v1::PushRequest& request = fan.To(v.shards[0].ps_task).request;
      request.add_names(v.shards[0].ps_name);
      *request.add_deltas() = std::move(gradients[i]);  // swaps the buffers: no copy
      continue;
    }
    const int64_t row_bytes = RowBytes(v.spec);
    for (const VariableShard& shard : v.shards) {
      v1::PushRequest& request = fan.To(shard.ps_task).request;
      request.add_names(shard.ps_name);
      v1::Tensor* delta = request.add_deltas();
      delta->set_dtype(v1::DTYPE_FLOAT32);
      const std::vector<int64_t> shape = ShardShape(v.spec, shard);
      delta->mutable_shape()->Assign(shape.begin(), shape.end());
      delta->mutable_data()->assign(gradients[i].data(),
                                    static_cast<size_t>(shard.row_begin * row_bytes),
                                    static_cast<size_t>(shard.num_bytes));
    }
  }
  return fan.Run(ps_, [](const PsClient& ps, Fan::Call& call, PsClient::Done done) {
    ps.PushAsync(call.context, call.request, call.response, std::move(done));
  });
}

}  // namespace tj
