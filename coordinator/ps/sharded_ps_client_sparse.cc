// ShardedPsClient's sparse half: ids routed to their owner task by id hash (PsTaskOfId), one
// request per task written in place, answers stitched back in the order of the ids.
#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/ps/id_hash.h"
#include "coordinator/ps/optimizer.h"
#include "coordinator/ps/ps_fan_out.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "coordinator/ps/status_naming.h"

namespace tj {
namespace {

absl::Status BadAnswer(int task, absl::string_view what) {
  return absl::InternalError(absl::StrCat("parameter server /job:ps/task:", task, " ", what));
}

}  // namespace

absl::StatusOr<std::vector<v1::Tensor>> ShardedPsClient::Lookup(
    std::span<const SparseLookup> lookups) const {
  using Fan = PsFanOut<v1::LookupRequest, v1::LookupResponse>;
  const int num_ps = this->num_ps();
  Fan fan(num_ps);
  std::vector<int64_t> dims;
  dims.reserve(lookups.size());
  // entry[r * num_ps + t]: index of lookup r's ids in task t's request, or -1.
  std::vector<int> entry(lookups.size() * static_cast<size_t>(num_ps), -1);
  std::vector<size_t> counts(static_cast<size_t>(num_ps));
  std::vector<char*> cursors(static_cast<size_t>(num_ps));
  for (size_t r = 0; r < lookups.size(); ++r) {
    const SparseLookup& lookup = lookups[r];
    TJ_ASSIGN_OR_RETURN(int64_t dim, TableDim(lookup.table));
    dims.push_back(dim);
    // Count first, so that each task's ids are written once into bytes of the final size.
    std::fill(counts.begin(), counts.end(), 0);
    if (num_ps == 1) {
      counts[0] = lookup.ids.size();
    } else {
      for (int64_t id : lookup.ids) ++counts[static_cast<size_t>(PsTaskOfId(id, num_ps))];
    }
    for (int t = 0; t < num_ps; ++t) {
      if (counts[static_cast<size_t>(t)] == 0) continue;
      v1::LookupRequest& request = fan.To(t).request;
      entry[r * static_cast<size_t>(num_ps) + static_cast<size_t>(t)] = request.lookups_size();
      v1::TableIds* ids = request.add_lookups();
      ids->set_table(std::string(lookup.table));
      ids->mutable_ids()->resize(counts[static_cast<size_t>(t)] * sizeof(int64_t));
      cursors[static_cast<size_t>(t)] = ids->mutable_ids()->data();
    }
    if (num_ps == 1) {
      if (!lookup.ids.empty()) std::memcpy(cursors[0], lookup.ids.data(), lookup.ids.size_bytes());
      continue;
    }
    for (int64_t id : lookup.ids) {
      char*& cursor = cursors[static_cast<size_t>(PsTaskOfId(id, num_ps))];
      std::memcpy(cursor, &id, sizeof(id));
      cursor += sizeof(id);
    }
  }
  TJ_RETURN_IF_ERROR(fan.Run(ps_, [](const PsClient& ps, Fan::Call& call, PsClient::Done done) {
    ps.LookupAsync(call.context, call.request, call.response, std::move(done));
  }));

  // Check every answer's size before copying anything out of it.
  for (int t = 0; t < num_ps; ++t) {
    const Fan::Call* call = fan.Find(t);
    if (call == nullptr) continue;
    if (call->response.values_size() != call->request.lookups_size()) {
      return BadAnswer(t, absl::StrCat("answered ", call->response.values_size(), " tensors to ",
                                       call->request.lookups_size(), " lookups"));
    }
  }
  std::vector<v1::Tensor> values(lookups.size());
  std::vector<const char*> sources(static_cast<size_t>(num_ps));
  for (size_t r = 0; r < lookups.size(); ++r) {
    const size_t n = lookups[r].ids.size();
    const size_t row_bytes = static_cast<size_t>(dims[r]) * sizeof(float);
    int only_task = -1;
    int tasks_used = 0;
    for (int t = 0; t < num_ps; ++t) {
      const int e = entry[r * static_cast<size_t>(num_ps) + static_cast<size_t>(t)];
      if (e < 0) continue;
      Fan::Call& call = *fan.Find(t);
      const v1::Tensor& part = call.response.values(e);
      const size_t expected = call.request.lookups(e).ids().size() / sizeof(int64_t) * row_bytes;
      if (part.dtype() != v1::DTYPE_FLOAT32 || part.data().size() != expected) {
        return BadAnswer(t, absl::StrCat("returned ", part.data().size(), " bytes of rows of '",
                                         std::string(lookups[r].table), "', expected ", expected));
      }
      sources[static_cast<size_t>(t)] = part.data().data();
      only_task = t;
      ++tasks_used;
    }
    v1::Tensor& out = values[r];
    if (tasks_used == 1) {
      // All ids on one task: its rows are already in request order.
      out = std::move(*fan.Find(only_task)->response.mutable_values(
          entry[r * static_cast<size_t>(num_ps) + static_cast<size_t>(only_task)]));
      continue;
    }
    out.set_dtype(v1::DTYPE_FLOAT32);
    out.add_shape(static_cast<int64_t>(n));
    out.add_shape(dims[r]);
    std::string* data = out.mutable_data();
    data->resize(n * row_bytes);
    char* dst = data->data();
    for (int64_t id : lookups[r].ids) {
      const char*& src = sources[static_cast<size_t>(PsTaskOfId(id, num_ps))];
      std::memcpy(dst, src, row_bytes);
      src += row_bytes;
      dst += row_bytes;
    }
  }
  return values;
}

absl::Status ShardedPsClient::PushSparse(std::span<const SparseUpdate> updates) const {
  const int num_ps = this->num_ps();
  std::vector<int64_t> dims;
  dims.reserve(updates.size());
  for (const SparseUpdate& update : updates) {
    TJ_ASSIGN_OR_RETURN(int64_t dim, TableDim(update.table));
    if (update.gradients.size() != update.ids.size() * static_cast<size_t>(dim)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "push to table '", std::string(update.table), "': ", update.ids.size(), " ids but ",
          update.gradients.size(), " gradient floats; expected ids x dim ", dim, " = ",
          update.ids.size() * static_cast<size_t>(dim)));
    }
    TJ_RETURN_IF_ERROR(
        Naming("push to table", update.table,
               CheckFiniteGradient(reinterpret_cast<const char*>(update.gradients.data()),
                                   update.gradients.size())));
    dims.push_back(dim);
  }

  using Fan = PsFanOut<v1::PushSparseRequest, v1::PushSparseResponse>;
  Fan fan(num_ps);
  std::vector<size_t> counts(static_cast<size_t>(num_ps));
  std::vector<std::pair<char*, char*>> cursors(static_cast<size_t>(num_ps));  // ids, gradients
  for (size_t u = 0; u < updates.size(); ++u) {
    const SparseUpdate& update = updates[u];
    const size_t row_bytes = static_cast<size_t>(dims[u]) * sizeof(float);
    std::fill(counts.begin(), counts.end(), 0);
    if (num_ps == 1) {
      counts[0] = update.ids.size();
    } else {
      for (int64_t id : update.ids) ++counts[static_cast<size_t>(PsTaskOfId(id, num_ps))];
    }
    for (int t = 0; t < num_ps; ++t) {
      const size_t n = counts[static_cast<size_t>(t)];
      if (n == 0) continue;
      v1::SparseGradients* out = fan.To(t).request.add_updates();
      out->set_table(std::string(update.table));
      out->mutable_ids()->resize(n * sizeof(int64_t));
      out->mutable_gradients()->resize(n * row_bytes);
      cursors[static_cast<size_t>(t)] = {out->mutable_ids()->data(),
                                         out->mutable_gradients()->data()};
    }
    if (num_ps == 1) {
      if (update.ids.empty()) continue;
      std::memcpy(cursors[0].first, update.ids.data(), update.ids.size_bytes());
      std::memcpy(cursors[0].second, update.gradients.data(), update.gradients.size_bytes());
      continue;
    }
    const char* grad = reinterpret_cast<const char*>(update.gradients.data());
    for (int64_t id : update.ids) {
      auto& [ids, grads] = cursors[static_cast<size_t>(PsTaskOfId(id, num_ps))];
      std::memcpy(ids, &id, sizeof(id));
      ids += sizeof(id);
      std::memcpy(grads, grad, row_bytes);
      grads += row_bytes;
      grad += row_bytes;
    }
  }
  return fan.Run(ps_, [](const PsClient& ps, Fan::Call& call, PsClient::Done done) {
    ps.PushSparseAsync(call.context, call.request, call.response, std::move(done));
  });
}

}  // namespace tj
