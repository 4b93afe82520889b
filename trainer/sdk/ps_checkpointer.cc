#include "trainer/sdk/ps_checkpointer.h"

#include <spdlog/spdlog.h>

#include <map>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/base/coordinator_generation.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/base/strings.h"
#include "coordinator/checkpoint/file_digest.h"

namespace tj::sdk {
namespace {

// Runs `call(task, context)` for every PS task at once, one thread each, and waits for them all.
// The first failure cancels the calls still running (a lost PS makes the checkpoint moot; the job
// restarts sooner) and is what is returned: errors after it are its consequences.
template <typename Response>
absl::StatusOr<std::vector<Response>> OnEveryPs(
    int num_ps, const std::function<absl::StatusOr<Response>(int, grpc::ClientContext&)>& call) {
  std::vector<grpc::ClientContext> contexts(static_cast<size_t>(num_ps));
  std::vector<Response> responses(static_cast<size_t>(num_ps));
  absl::Mutex mu;
  absl::Status first_error;  // guarded by mu
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(num_ps));
  for (int task = 0; task < num_ps; ++task) {
    threads.emplace_back([&, task] {
      const auto index = static_cast<size_t>(task);
      absl::StatusOr<Response> response = call(task, contexts[index]);
      absl::MutexLock lock(&mu);
      if (response.ok()) {
        responses[index] = *std::move(response);
      } else if (first_error.ok()) {
        first_error = response.status();
        for (grpc::ClientContext& context : contexts) context.TryCancel();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (!first_error.ok()) return first_error;
  return responses;
}

}  // namespace

PsCheckpointer::PsCheckpointer(std::string dir, int keep,
                               std::vector<std::shared_ptr<PsClient>> ps_tasks)
    : store_(std::move(dir), keep, CoordinatorGeneration()), ps_(std::move(ps_tasks)) {}

std::string PsCheckpointer::ShardName(int task, int num_ps) {
  return absl::StrCat("ps-", task, "-of-", num_ps, ".state");
}

absl::StatusOr<SavedCheckpoint> PsCheckpointer::Save(int64_t step, const nlohmann::json& state) {
  const absl::Time start = absl::Now();
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointWriter> writer, store_.BeginCheckpoint(step));
  const int num_ps = static_cast<int>(ps_.size());
  std::vector<std::string> paths;
  for (int task = 0; task < num_ps; ++task) {
    TJ_ASSIGN_OR_RETURN(std::string path, writer->ShardPath(ShardName(task, num_ps)));
    paths.push_back(std::move(path));
  }
  // Every PS writes its shard at the same time (to its own disk, or its share of a shared volume's
  // bandwidth); each call is bound by the PS clients' stall timeout, not by a deadline.
  TJ_ASSIGN_OR_RETURN(
      std::vector<v1::SaveShardResponse> saved,
      OnEveryPs<v1::SaveShardResponse>(num_ps, [&](int task, grpc::ClientContext& context) {
        return ps_[static_cast<size_t>(task)]->SaveShard(context, paths[static_cast<size_t>(task)]);
      }));
  std::map<std::string, FileDigest> shards;
  int64_t bytes = 0;
  for (int task = 0; task < num_ps; ++task) {
    const v1::SaveShardResponse& shard = saved[static_cast<size_t>(task)];
    // The PS computed the digest as it wrote the file; Commit checks the size on disk, and every
    // restore verifies size and CRC-32C before trusting the shard.
    const FileDigest digest{static_cast<uint64_t>(shard.bytes()), shard.crc32c()};
    bytes += shard.bytes();
    shards.emplace(ShardName(task, num_ps), digest);
  }
  TJ_RETURN_IF_ERROR(writer->Commit(state, shards));
  return SavedCheckpoint{step, writer->dir(), bytes, absl::Now() - start};
}

absl::StatusOr<std::optional<RestoredCheckpoint>> PsCheckpointer::RestoreLatest(
    const StateCheck& check_state) {
  // From now on the directory is this coordinator's: an older one still running stops saving.
  TJ_RETURN_IF_ERROR(store_.Claim());
  // The store checks manifests and shard sizes; each PS checks its shard's CRC-32C as it reads it
  // (one pass over the shard, not a verification pass and then the restore's). A shard that fails
  // there (DataLoss naming the file) sends the restore to the previous checkpoint, as a failed
  // verification would: every PS is then restored again, from that one.
  std::vector<std::string> failures;
  int64_t before_step = kMaxCheckpointStep + 1;
  while (true) {
    absl::StatusOr<std::optional<Checkpoint>> latest =
        store_.LatestValid(ShardCheck::kSizeOnly, before_step);
    if (!latest.ok() || !latest->has_value()) {
      if (failures.empty()) {
        if (!latest.ok()) return latest.status();
        return std::optional<RestoredCheckpoint>();
      }
      if (!latest.ok()) failures.emplace_back(latest.status().message());
      return absl::DataLossError(absl::StrCat("no valid checkpoint in ", store_.dir(), ": ",
                                              absl::StrJoin(failures, "; ")));
    }
    const Checkpoint& checkpoint = **latest;
    absl::Status restored = RestoreInto(checkpoint, check_state);
    if (restored.ok()) {
      return std::optional<RestoredCheckpoint>(
          RestoredCheckpoint{checkpoint.step, checkpoint.dir, checkpoint.state});
    }
    if (!absl::IsDataLoss(restored)) return restored;
    spdlog::warn("checkpoint {}: skipped, falling back to the previous one: {}", checkpoint.dir,
                 std::string(restored.message()));
    failures.emplace_back(restored.message());
    before_step = checkpoint.step;
  }
}

absl::Status PsCheckpointer::RestoreInto(const Checkpoint& checkpoint,
                                         const StateCheck& check_state) {
  if (check_state) TJ_RETURN_IF_ERROR(check_state(checkpoint.state, checkpoint.dir));
  const int num_ps = static_cast<int>(ps_.size());
  if (checkpoint.shards.size() != ps_.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", checkpoint.dir, " holds ", checkpoint.shards.size(),
                     " parameter-server shard(s) but the job has ", num_ps,
                     " PS task(s); restore it with the same number of PS replicas"));
  }
  std::vector<FileDigest> digests;
  for (int task = 0; task < num_ps; ++task) {
    const std::string name = ShardName(task, num_ps);
    const ManifestShard* found = nullptr;
    for (const ManifestShard& shard : checkpoint.shards) {
      if (shard.name == name) found = &shard;
    }
    if (found == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", checkpoint.dir, " has no shard ", name, " for parameter server task ",
          task));
    }
    digests.push_back(found->digest);
  }
  // Every PS reads its shard at the same time.
  return OnEveryPs<v1::RestoreShardResponse>(num_ps, [&](int task, grpc::ClientContext& context) {
           const auto index = static_cast<size_t>(task);
           return ps_[index]->RestoreShard(context, checkpoint.ShardPath(ShardName(task, num_ps)),
                                           {}, digests[index]);
         })
      .status();
}

}  // namespace tj::sdk
