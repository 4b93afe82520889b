#include "trainer/sdk/ps_checkpointer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/match.h"
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
  struct Results {
    explicit Results(size_t n) : responses(n) {}
    absl::Mutex mu;
    std::vector<Response> responses ABSL_GUARDED_BY(mu);
    absl::Status first_error ABSL_GUARDED_BY(mu);
  } results(static_cast<size_t>(num_ps));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(num_ps));
  for (int task = 0; task < num_ps; ++task) {
    threads.emplace_back([&, task] {
      const auto index = static_cast<size_t>(task);
      absl::StatusOr<Response> response = call(task, contexts[index]);
      absl::MutexLock lock(&results.mu);
      if (response.ok()) {
        results.responses[index] = *std::move(response);
      } else if (results.first_error.ok()) {
        results.first_error = response.status();
        for (grpc::ClientContext& context : contexts) context.TryCancel();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  absl::MutexLock lock(&results.mu);
  if (!results.first_error.ok()) return results.first_error;
  return std::move(results.responses);
}

// The first file of `checkpoint`'s chain (its own shards and the earlier files it lists) that is in
// `bad_files` (checkpoint step, name); nullptr when there is none.
const ManifestShard* FileOfChainIn(const Checkpoint& checkpoint,
                                   const std::set<std::pair<int64_t, std::string>>& bad_files) {
  for (const ManifestShard& shard : checkpoint.shards) {
    const int64_t step = shard.checkpoint_step < 0 ? checkpoint.step : shard.checkpoint_step;
    if (bad_files.contains({step, shard.name})) return &shard;
  }
  return nullptr;
}

// A nonzero random id: zero means "no save" on the wire.
uint64_t NewSaveId() {
  absl::BitGen gen;
  uint64_t id = 0;
  while (id == 0) id = absl::Uniform<uint64_t>(gen);
  return id;
}

}  // namespace

PsCheckpointer::PsCheckpointer(std::string dir, int keep,
                               std::vector<std::shared_ptr<PsClient>> ps_tasks, int full_every)
    : dir_(dir),
      location_(OpenCheckpointLocation(std::move(dir), keep, CoordinatorGeneration())),
      ps_(std::move(ps_tasks)),
      full_every_(std::max(full_every, 1)),
      chains_(ps_.size()) {}

std::string PsCheckpointer::ShardName(int task, int num_ps) {
  return absl::StrCat("ps-", task, "-of-", num_ps, ".state");
}

absl::StatusOr<CheckpointLocation*> PsCheckpointer::Location() const {
  if (!location_.ok()) return location_.status();
  return location_->get();
}

absl::StatusOr<SavedCheckpoint> PsCheckpointer::Save(int64_t step, const nlohmann::json& state) {
  const absl::Time start = absl::Now();
  TJ_ASSIGN_OR_RETURN(CheckpointLocation* const location, Location());
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointSave> writer, location->BeginCheckpoint(step));
  const int num_ps = static_cast<int>(ps_.size());
  const uint64_t save_id = NewSaveId();
  std::vector<v1::SaveShardRequest> requests(ps_.size());
  for (int task = 0; task < num_ps; ++task) {
    v1::SaveShardRequest& request = requests[static_cast<size_t>(task)];
    TJ_ASSIGN_OR_RETURN(*request.mutable_path(), writer->ShardPath(ShardName(task, num_ps)));
    request.set_save_id(save_id);
    // A delta while the chain is shorter than full_every files; the PS may still answer with a
    // full save (it restarted, or holds no table), which starts a new chain.
    const std::vector<ManifestShard>& chain = chains_[static_cast<size_t>(task)];
    if (last_save_id_ != 0 && !chain.empty() && static_cast<int>(chain.size()) < full_every_) {
      request.set_since_save_id(last_save_id_);
    }
  }
  // Every PS writes its shard at the same time (to its own disk, or its share of a shared volume's
  // bandwidth); each call is bound by the PS clients' stall timeout, not by a deadline.
  TJ_ASSIGN_OR_RETURN(
      std::vector<v1::SaveShardResponse> saved,
      OnEveryPs<v1::SaveShardResponse>(num_ps, [&](int task, grpc::ClientContext& context) {
        return ps_[static_cast<size_t>(task)]->SaveShard(context,
                                                         requests[static_cast<size_t>(task)]);
      }));
  std::map<std::string, FileDigest> shards;
  std::vector<ManifestShard> earlier;
  std::vector<std::vector<ManifestShard>> chains(ps_.size());
  int64_t bytes = 0;
  int64_t table_bytes = 0;
  absl::Duration table_took;
  int deltas = 0;
  for (int task = 0; task < num_ps; ++task) {
    const auto index = static_cast<size_t>(task);
    const v1::SaveShardResponse& shard = saved[index];
    // The PS computed the digest as it wrote the file; Commit checks the size on disk, and every
    // restore verifies size and CRC-32C before trusting the shard.
    const FileDigest digest{static_cast<uint64_t>(shard.bytes()), shard.crc32c()};
    bytes += shard.bytes();
    table_bytes += shard.table_bytes();
    table_took = std::max(table_took, absl::Microseconds(shard.table_micros()));
    shards.emplace(ShardName(task, num_ps), digest);
    if (shard.delta()) {
      if (!requests[index].since_save_id()) {
        return absl::InternalError(
            absl::StrCat("parameter server task ", task, " saved a delta that was not asked for"));
      }
      ++deltas;
      chains[index] = chains_[index];
      earlier.insert(earlier.end(), chains_[index].begin(), chains_[index].end());
    }
    chains[index].push_back({ShardName(task, num_ps), digest, step});
  }
  nlohmann::json sealed = state;
  sealed[kSaveIdKey] = save_id;
  TJ_RETURN_IF_ERROR(writer->Commit(sealed, shards, earlier));
  last_save_id_ = save_id;
  chains_ = std::move(chains);
  return SavedCheckpoint{step,  writer->dir(), bytes,     absl::Now() - start,
                         deltas, table_bytes,   table_took};
}

absl::StatusOr<std::optional<RestoredCheckpoint>> PsCheckpointer::RestoreLatest(
    const StateCheck& check_state) {
  // From now on the directory is this coordinator's: an older one still running stops saving.
  TJ_ASSIGN_OR_RETURN(CheckpointLocation* const location, Location());
  TJ_RETURN_IF_ERROR(location->Claim());
  // The store checks manifests and shard sizes; each PS checks its shard's CRC-32C as it reads it
  // (one pass over the shard, not a verification pass and then the restore's). A shard that fails
  // there (DataLoss naming the file) sends the restore to the previous checkpoint, as a failed
  // verification would: every PS is then restored again, from that one.
  std::vector<std::string> failures;
  std::vector<std::string> skipped;
  // Files a PS found corrupt or missing, as (checkpoint step, name): a checkpoint whose chain
  // lists one is passed over without another restore attempt.
  std::set<std::pair<int64_t, std::string>> bad_files;
  int64_t before_step = kMaxCheckpointStep + 1;
  while (true) {
    absl::StatusOr<std::optional<Checkpoint>> latest =
        location->LatestValid(ShardCheck::kSizeOnly, before_step);
    if (!latest.ok() || !latest->has_value()) {
      if (failures.empty()) {
        if (!latest.ok()) return latest.status();
        return std::optional<RestoredCheckpoint>();
      }
      if (!latest.ok()) failures.emplace_back(latest.status().message());
      return absl::DataLossError(
          absl::StrCat("no valid checkpoint in ", dir_, ": ", absl::StrJoin(failures, "; ")));
    }
    const Checkpoint& checkpoint = **latest;
    before_step = checkpoint.step;
    if (const ManifestShard* bad = FileOfChainIn(checkpoint, bad_files); bad != nullptr) {
      spdlog::warn("checkpoint {}: skipped without a restore: it builds on {}, found bad above",
                   checkpoint.dir, checkpoint.FilePath(*bad));
      continue;
    }
    absl::Status restored = RestoreInto(checkpoint, check_state);
    if (restored.ok()) {
      nlohmann::json state = checkpoint.state;
      state.erase(kSaveIdKey);
      return std::optional<RestoredCheckpoint>(RestoredCheckpoint{
          checkpoint.step, checkpoint.dir, std::move(state), std::move(skipped)});
    }
    if (!absl::IsDataLoss(restored)) return restored;
    spdlog::warn("checkpoint {}: skipped, falling back to the newest one without the bad file: {}",
                 checkpoint.dir, std::string(restored.message()));
    failures.emplace_back(restored.message());
    skipped.push_back(checkpoint.dir);
    // The PS's error names the file it read, at the path it was sent (RestoreInto).
    for (const ManifestShard& shard : checkpoint.shards) {
      if (absl::StrContains(restored.message(), checkpoint.FilePath(shard))) {
        bad_files.emplace(shard.checkpoint_step < 0 ? checkpoint.step : shard.checkpoint_step,
                          shard.name);
      }
    }
  }
}

absl::Status PsCheckpointer::RestoreInto(const Checkpoint& checkpoint,
                                         const StateCheck& check_state) {
  if (check_state) TJ_RETURN_IF_ERROR(check_state(checkpoint.state, checkpoint.dir));
  const int num_ps = static_cast<int>(ps_.size());
  int own_shards = 0;
  for (const ManifestShard& shard : checkpoint.shards) own_shards += shard.checkpoint_step < 0;
  if (own_shards != num_ps) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", checkpoint.dir, " holds ", own_shards,
                     " parameter-server shard(s) but the job has ", num_ps,
                     " PS task(s); restore it with the same number of PS replicas"));
  }
  // Per task, its files oldest first: the full save, then each delta, this checkpoint's last.
  std::vector<std::vector<ManifestShard>> chains(ps_.size());
  for (int task = 0; task < num_ps; ++task) {
    const std::string name = ShardName(task, num_ps);
    std::vector<ManifestShard>& chain = chains[static_cast<size_t>(task)];
    for (const ManifestShard& shard : checkpoint.shards) {
      if (shard.name != name) continue;
      chain.push_back(shard);
      if (chain.back().checkpoint_step < 0) chain.back().checkpoint_step = checkpoint.step;
    }
    std::sort(chain.begin(), chain.end(), [](const ManifestShard& a, const ManifestShard& b) {
      return a.checkpoint_step < b.checkpoint_step;
    });
    if (chain.empty() || chain.back().checkpoint_step != checkpoint.step) {
      return absl::FailedPreconditionError(absl::StrCat("checkpoint ", checkpoint.dir,
                                                        " has no shard ", name,
                                                        " for parameter server task ", task));
    }
  }
  // Every PS reads its files at the same time, checking each one's digest (the manifest's) from
  // its records' CRCs as it reads it: a corrupt or missing file of the chain is DataLoss naming it.
  TJ_RETURN_IF_ERROR(
      OnEveryPs<v1::RestoreShardResponse>(num_ps, [&](int task, grpc::ClientContext& context) {
        v1::RestoreShardRequest request;
        for (const ManifestShard& shard : chains[static_cast<size_t>(task)]) {
          const std::string path = shard.checkpoint_step == checkpoint.step
                                       ? checkpoint.ShardPath(shard.name)
                                       : checkpoint.FilePath(shard);
          v1::ShardDigest* digest = nullptr;
          if (request.path().empty()) {
            request.set_path(path);
            digest = request.mutable_digest();
          } else {
            request.add_delta_paths(path);
            digest = request.add_delta_digests();
          }
          digest->set_bytes(static_cast<int64_t>(shard.digest.bytes));
          digest->set_crc32c(shard.digest.crc32c);
        }
        return ps_[static_cast<size_t>(task)]->RestoreShard(context, request);
      }).status());
  const auto id = checkpoint.state.find(kSaveIdKey);
  last_save_id_ =
      id != checkpoint.state.end() && id->is_number_unsigned() ? id->get<uint64_t>() : 0;
  chains_ = std::move(chains);
  return absl::OkStatus();
}

}  // namespace tj::sdk
