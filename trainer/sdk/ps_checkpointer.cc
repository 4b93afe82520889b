#include "trainer/sdk/ps_checkpointer.h"

#include <spdlog/spdlog.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "coordinator/base/coordinator_generation.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/base/strings.h"
#include "coordinator/checkpoint/file_digest.h"

namespace tj::sdk {

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
  std::map<std::string, FileDigest> shards;
  int64_t bytes = 0;
  for (int task = 0; task < num_ps; ++task) {
    const std::string name = ShardName(task, num_ps);
    TJ_ASSIGN_OR_RETURN(std::string path, writer->ShardPath(name));
    TJ_ASSIGN_OR_RETURN(v1::SaveShardResponse saved, ps_[static_cast<size_t>(task)]->SaveShard(path));
    // The PS computed the digest as it wrote the file; Commit checks the size on disk, and every
    // restore verifies size and CRC-32C before trusting the shard.
    const FileDigest digest{static_cast<uint64_t>(saved.bytes()), saved.crc32c()};
    bytes += saved.bytes();
    shards.emplace(name, digest);
  }
  TJ_RETURN_IF_ERROR(writer->Commit(state, shards));
  return SavedCheckpoint{step, writer->dir(), bytes, absl::Now() - start};
}

absl::StatusOr<std::optional<RestoredCheckpoint>> PsCheckpointer::RestoreLatest(
    const StateCheck& check_state) {
  // From now on the directory is this coordinator's: an older one still running stops saving.
  TJ_RETURN_IF_ERROR(store_.Claim());
  TJ_ASSIGN_OR_RETURN(std::optional<Checkpoint> latest, store_.LatestValid());
  if (!latest.has_value()) return std::optional<RestoredCheckpoint>();
  if (check_state) TJ_RETURN_IF_ERROR(check_state(latest->state, latest->dir));
  const int num_ps = static_cast<int>(ps_.size());
  if (latest->shards.size() != ps_.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", latest->dir, " holds ", latest->shards.size(),
                     " parameter-server shard(s) but the job has ", num_ps,
                     " PS task(s); restore it with the same number of PS replicas"));
  }
  for (int task = 0; task < num_ps; ++task) {
    const std::string name = ShardName(task, num_ps);
    bool present = false;
    for (const ManifestShard& shard : latest->shards) present |= shard.name == name;
    if (!present) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", latest->dir, " has no shard ", name, " for parameter server task ", task));
    }
    TJ_RETURN_IF_ERROR(
        ps_[static_cast<size_t>(task)]->RestoreShard(latest->ShardPath(name)).status());
  }
  return std::optional<RestoredCheckpoint>(
      RestoredCheckpoint{latest->step, latest->dir, latest->state});
}

}  // namespace tj::sdk
