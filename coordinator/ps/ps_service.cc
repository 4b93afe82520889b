#include "coordinator/ps/ps_service.h"

#include <google/protobuf/descriptor.h>
#include <grpcpp/support/method_handler.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/base/rpc_authorization.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/base/wire_status.h"
#include "coordinator/checkpoint/checkpoint_store.h"
#include "coordinator/ps/admitted_call.h"
#include "coordinator/ps/checkpoint_path.h"
#include "coordinator/ps/memory_budget.h"
#include "coordinator/ps/object_shard_file.h"
#include "coordinator/ps/ps_channel.h"
#include "coordinator/ps/ps_dense_methods.h"
#include "coordinator/ps/push_admission.h"
#include "coordinator/ps/shard_file.h"
#include "spdlog/spdlog.h"

namespace tj {
namespace {

// What a restore request asks to be checked beyond the records' own CRCs.
FileDigest ToFileDigest(const v1::ShardDigest& digest) {
  return FileDigest{static_cast<uint64_t>(digest.bytes()), digest.crc32c()};
}

// The digests a restore request asks the files to match (the checkpoint manifest's).
void SetExpectedDigests(const v1::RestoreShardRequest& request, ShardFileOptions& options) {
  if (request.has_digest()) options.expected_digest = ToFileDigest(request.digest());
  options.expected_delta_digests.clear();
  for (const v1::ShardDigest& digest : request.delta_digests()) {
    options.expected_delta_digests.push_back(ToFileDigest(digest));
  }
}

uint64_t NewIncarnation() {
  absl::BitGen gen;
  uint64_t incarnation = 0;
  // Zero is what an unset proto field reads as; never hand it out.
  while (incarnation == 0) incarnation = absl::Uniform<uint64_t>(gen);
  return incarnation;
}

// The index of `method` in the service, which is the generated code's method index.
int MethodIndex(const char* method) {
  // ps.proto is linked in, so the pool has the service; a method renamed there fails loudly here.
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::ParameterServer::service_full_name());
  const google::protobuf::MethodDescriptor* descriptor =
      service == nullptr ? nullptr : service->FindMethodByName(method);
  if (descriptor == nullptr) {
    spdlog::critical("tj.v1.ParameterServer has no method {}", method);
    std::abort();
  }
  return descriptor->index();
}

// The files a restore reads: the full save, then its deltas.
std::vector<std::string> Paths(const v1::RestoreShardRequest& request) {
  std::vector<std::string> paths = {request.path()};
  paths.insert(paths.end(), request.delta_paths().begin(), request.delta_paths().end());
  return paths;
}

absl::Status CheckShardPaths(const v1::RestoreShardRequest& request) {
  for (const std::string& path : Paths(request)) TJ_RETURN_IF_ERROR(CheckShardPath(path));
  return absl::OkStatus();
}

// A test-only rate from `name`: a positive integer, else 0 (anything else is ignored with a
// warning).
int64_t TestRateFromEnvironment(const char* name, const char* what) {
  const char* rate = std::getenv(name);
  if (rate == nullptr || *rate == '\0') return 0;
  int64_t value = 0;
  if (!absl::SimpleAtoi(rate, &value) || value <= 0) {
    spdlog::warn("{}='{}' ignored: not a positive integer", name, rate);
    return 0;
  }
  spdlog::warn("{}={}: {} at most this fast (a test setting)", name, value, what);
  return value;
}

}  // namespace

PsServiceOptions PsServiceOptionsFromEnvironment() {
  PsServiceOptions options;
  options.push_window_bytes = PushWindowBytesFromEnvironment();
  options.grpc_memory_bytes = GrpcMemoryBytesFromEnvironment(options.push_window_bytes);
  options.test_shard_bytes_per_second = TestRateFromEnvironment(
      "TJ_TEST_SHARD_BYTES_PER_SECOND", "checkpoint shards are written and read");
  options.test_create_bytes_per_second =
      TestRateFromEnvironment("TJ_TEST_CREATE_BYTES_PER_SECOND", "variables are created");
  return options;
}

PsService::PsService(int ps_task, VariableStore& store, PsServiceOptions options)
    : ps_task_(ps_task),
      incarnation_(NewIncarnation()),
      options_(options),
      store_(store),
      push_window_(options.push_window_bytes) {
  MarkMethodStreamed(MethodIndex("Pull"),
                     new grpc::internal::StreamedUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>(
                         [this](grpc::ServerContext* context, RawUnaryStream* stream) {
                           TJ_AUTHORIZE(context, Rpc::kPull);
                           return IfAdmitted(drain_, [&] {
                             return ServeRawPull(store_, *stream, counters_);
                           });
                         }));
  MarkMethodStreamed(MethodIndex("Push"),
                     new grpc::internal::StreamedUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>(
                         [this](grpc::ServerContext* context, RawUnaryStream* stream) {
                           TJ_AUTHORIZE(context, Rpc::kPush);
                           return IfAdmitted(drain_, [&] { return ServePush(*context, *stream); });
                         }));
}

grpc::Status PsService::ServePush(grpc::ServerContext& context, RawUnaryStream& stream) {
  PushAdmissionOptions admission;
  admission.ps_task = ps_task_;
  admission.hold = options_.push_hold;
  admission.max_message_bytes = kPsMaxMessageBytes;
  admission.largest_push_bytes =
      LargestPushBytes(options_.grpc_memory_bytes, options_.push_window_bytes);
  return ServeAdmittedPush(push_window_, store_, counters_, context, stream, admission);
}

grpc::Status PsService::Health(grpc::ServerContext* context, const v1::PsHealthRequest* /*request*/,
                               v1::PsHealthResponse* response) {
  TJ_AUTHORIZE(context, Rpc::kPsHealth);
  return IfAdmitted(drain_, [&] {
    response->set_ps_task(ps_task_);
    response->set_incarnation(incarnation_);
    response->set_num_variables(store_.num_variables());
    response->set_num_tables(store_.num_tables());
    const MemoryBudget memory = ReadMemoryBudget();
    response->set_memory_limit_bytes(memory.limit_bytes);
    response->set_memory_available_bytes(memory.available_bytes);
    response->set_memory_source(memory.source);
    response->set_dense_bytes(store_.dense_bytes());
    return grpc::Status::OK;
  });
}

grpc::Status PsService::AdmitCoordinator(const grpc::ServerContext& context,
                                         absl::string_view what) {
  // A PS that restarted has seen no coordinator yet; the claim the newest one left in the
  // checkpoint directory (when it restored or saved) still fences out the older ones. Read at
  // every fenced call, which are rare, so the claim a successor makes later counts too.
  if (const std::optional<std::string>& root = ShardPathRoot(); root.has_value()) {
    fence_.Raise(ClaimedGenerationAnywhere(*root));
  }
  return fence_.Admit(context, what);
}

grpc::Status PsService::CreateVariables(grpc::ServerContext* context,
                                        const v1::CreateVariablesRequest* request,
                                        v1::CreateVariablesResponse* /*response*/) {
  TJ_AUTHORIZE(context, Rpc::kCreateVariables);
  if (grpc::Status fenced = AdmitCoordinator(*context, "CreateVariables"); !fenced.ok())
    return fenced;
  return IfAdmitted(drain_, [&] {
    const absl::Status created = store_.Create(*request);
    if (options_.test_create_bytes_per_second > 0) PaceCreate(*context, *request);
    return ToGrpc(created);
  });
}

void PsService::PaceCreate(const grpc::ServerContext& context,
                           const v1::CreateVariablesRequest& request) const {
  int64_t bytes = 0;
  for (const v1::VariableSpec& spec : request.variables()) {
    int64_t elements = 1;
    for (int64_t d : spec.shape()) elements *= d;
    if (spec.has_initial_value()) {
      elements = static_cast<int64_t>(spec.initial_value().data().size() / sizeof(float));
    }
    bytes += elements * static_cast<int64_t>(sizeof(float));
  }
  const absl::Time until =
      absl::Now() + absl::Seconds(static_cast<double>(bytes) /
                                  static_cast<double>(options_.test_create_bytes_per_second));
  // In steps, so that a caller that gave up does not keep the handler (and shutdown) waiting.
  while (absl::Now() < until && !context.IsCancelled()) {
    absl::SleepFor(std::min(absl::Milliseconds(20), until - absl::Now()));
  }
}

grpc::Status PsService::Lookup(grpc::ServerContext* context, const v1::LookupRequest* request,
                               v1::LookupResponse* response) {
  TJ_AUTHORIZE(context, Rpc::kLookup);
  return IfAdmitted(drain_, [&] {
    const absl::Status looked_up = store_.Lookup(*request, *response);
    if (looked_up.ok()) {
      int64_t rows = 0;
      for (const v1::TableIds& lookup : request->lookups()) {
        rows += static_cast<int64_t>(lookup.ids().size() / sizeof(int64_t));
      }
      PsCounters::Add(counters_.rows_looked_up, rows);
      PsCounters::Add(counters_.looked_up_bytes, static_cast<int64_t>(response->ByteSizeLong()));
    }
    return ToGrpc(looked_up);
  });
}

grpc::Status PsService::PushSparse(grpc::ServerContext* context,
                                   const v1::PushSparseRequest* request,
                                   v1::PushSparseResponse* /*response*/) {
  TJ_AUTHORIZE(context, Rpc::kPushSparse);
  return IfAdmitted(drain_, [&] {
    const absl::Status pushed = store_.PushSparse(*request);
    if (pushed.ok()) {
      int64_t rows = 0;
      for (const v1::SparseGradients& update : request->updates()) {
        rows += static_cast<int64_t>(update.ids().size() / sizeof(int64_t));
      }
      PsCounters::Add(counters_.rows_pushed, rows);
      PsCounters::Add(counters_.sparse_pushed_bytes, static_cast<int64_t>(request->ByteSizeLong()));
    }
    return ToGrpc(pushed);
  });
}

grpc::Status PsService::SaveShard(grpc::ServerContext* context, const v1::SaveShardRequest* request,
                                  v1::SaveShardResponse* response) {
  TJ_AUTHORIZE(context, Rpc::kSaveShard);
  if (grpc::Status fenced = AdmitCoordinator(*context, "SaveShard"); !fenced.ok()) return fenced;
  if (absl::Status confined = CheckShardPath(request->path()); !confined.ok())
    return ToGrpc(confined);
  return IfAdmitted(drain_, [&] {
    ShardFileOptions options;
    options.save = {request->save_id(), request->since_save_id()};
    absl::StatusOr<v1::SaveShardResponse> saved =
        SaveShardAnywhere(store_, request->path(), options);
    if (saved.ok()) *response = *std::move(saved);
    return ToGrpc(saved.status());
  });
}

grpc::Status PsService::RestoreShard(grpc::ServerContext* context,
                                     const v1::RestoreShardRequest* request,
                                     v1::RestoreShardResponse* response) {
  TJ_AUTHORIZE(context, Rpc::kRestoreShard);
  if (grpc::Status fenced = AdmitCoordinator(*context, "RestoreShard"); !fenced.ok()) return fenced;
  if (absl::Status confined = CheckShardPaths(*request); !confined.ok()) return ToGrpc(confined);
  return IfAdmitted(drain_, [&] {
    ShardFileOptions options;
    SetExpectedDigests(*request, options);
    absl::StatusOr<v1::RestoreShardResponse> restored =
        RestoreShardsAnywhere(store_, Paths(*request), options);
    if (restored.ok()) *response = *std::move(restored);
    return ToGrpc(restored.status());
  });
}

template <typename Message>
ShardFileOptions PsService::ShardOptions(grpc::ServerContext* context,
                                         grpc::ServerWriter<Message>* writer,
                                         absl::Time& last_report) const {
  ShardFileOptions shard_options;
  shard_options.test_bytes_per_second = options_.test_shard_bytes_per_second;
  shard_options.on_progress = [this, context, writer, &last_report](int64_t bytes, int64_t total) {
    // A caller that cancelled (its stall timeout, another PS failed) gets no more of our disk.
    if (context->IsCancelled()) return absl::CancelledError("the caller cancelled");
    const absl::Time now = absl::Now();
    if (now - last_report < options_.shard_progress_interval) return absl::OkStatus();
    last_report = now;
    Message message;
    message.mutable_progress()->set_bytes(bytes);
    message.mutable_progress()->set_total_bytes(total);
    if (!writer->Write(message)) return absl::CancelledError("the caller went away");
    return absl::OkStatus();
  };
  return shard_options;
}

grpc::Status PsService::StreamSaveShard(grpc::ServerContext* context,
                                        const v1::SaveShardRequest* request,
                                        grpc::ServerWriter<v1::SaveShardProgress>* writer) {
  TJ_AUTHORIZE(context, Rpc::kStreamSaveShard);
  if (grpc::Status fenced = AdmitCoordinator(*context, "StreamSaveShard"); !fenced.ok())
    return fenced;
  if (absl::Status confined = CheckShardPath(request->path()); !confined.ok())
    return ToGrpc(confined);
  return IfAdmitted(drain_, [&] {
    const absl::Time start = absl::Now();
    absl::Time last_report = start;
    ShardFileOptions options = ShardOptions(context, writer, last_report);
    options.save = {request->save_id(), request->since_save_id()};
    absl::StatusOr<v1::SaveShardResponse> saved =
        SaveShardAnywhere(store_, request->path(), options);
    if (!saved.ok()) {
      spdlog::warn("ps task {}: save of {} failed: {}", ps_task_, request->path(),
                   saved.status().ToString());
      return ToGrpc(saved.status());
    }
    spdlog::info("ps task {}: saved {} ({}, {} bytes, {} records) in {}", ps_task_, request->path(),
                 saved->delta() ? "delta" : "full", saved->bytes(), saved->records(),
                 absl::FormatDuration(absl::Now() - start));
    v1::SaveShardProgress done;
    *done.mutable_done() = *std::move(saved);
    if (!writer->Write(done)) return grpc::Status(grpc::StatusCode::CANCELLED, "caller went away");
    return grpc::Status::OK;
  });
}

grpc::Status PsService::StreamRestoreShard(grpc::ServerContext* context,
                                           const v1::RestoreShardRequest* request,
                                           grpc::ServerWriter<v1::RestoreShardProgress>* writer) {
  TJ_AUTHORIZE(context, Rpc::kStreamRestoreShard);
  if (grpc::Status fenced = AdmitCoordinator(*context, "StreamRestoreShard"); !fenced.ok())
    return fenced;
  if (absl::Status confined = CheckShardPaths(*request); !confined.ok()) return ToGrpc(confined);
  return IfAdmitted(drain_, [&] {
    const absl::Time start = absl::Now();
    absl::Time last_report = start;
    ShardFileOptions options = ShardOptions(context, writer, last_report);
    SetExpectedDigests(*request, options);
    absl::StatusOr<v1::RestoreShardResponse> restored =
        RestoreShardsAnywhere(store_, Paths(*request), options);
    if (!restored.ok()) {
      spdlog::warn("ps task {}: restore from {} failed: {}", ps_task_, request->path(),
                   restored.status().ToString());
      return ToGrpc(restored.status());
    }
    spdlog::info("ps task {}: restored {} (+{} deltas; {} variables, {} tables, {} rows) in {}",
                 ps_task_, request->path(), request->delta_paths_size(), restored->num_variables(),
                 restored->num_tables(), restored->num_rows(),
                 absl::FormatDuration(absl::Now() - start));
    v1::RestoreShardProgress done;
    *done.mutable_done() = *std::move(restored);
    if (!writer->Write(done)) return grpc::Status(grpc::StatusCode::CANCELLED, "caller went away");
    return grpc::Status::OK;
  });
}

}  // namespace tj
