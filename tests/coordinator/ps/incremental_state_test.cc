// Incremental saves of a VariableStore (ExportOptions): a delta holds exactly the rows changed
// since the save it names, a full save plus its deltas restores the very state a full save would
// (values, optimizer slots, steps, rows created by lookups), a save that was never committed does
// not lose rows from the next delta, and chains that do not fit together are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coordinator/base/values.h"
#include "coordinator/ps/shard_file.h"
#include "coordinator/ps/variable_store.h"
#include "tests/coordinator/ps/ps_state_view.h"
#include "tests/coordinator/ps/ps_test_values.h"
#include "tests/support/temp_dir.h"

namespace tj {
namespace {

// A refused restore leaves nothing half-restored: the state held before was released when the
// restore started, and the store holds nothing until a restore succeeds.
void ExpectHoldsNothing(const VariableStore& store) {
  EXPECT_EQ(store.num_variables(), 0);
  EXPECT_EQ(store.num_tables(), 0);
}

using testing::AdamOptimizer;
using testing::CreateRequest;
using ::testing::HasSubstr;
using testing::InitializedVariable;
using testing::NormalInit;
using testing::SparsePush;
using testing::Table;
using testing::ViewOf;

struct Saved {
  std::vector<std::string> records;
  bool delta = false;
};

Saved Save(const VariableStore& store, uint64_t save_id, uint64_t since = 0) {
  Saved saved;
  absl::StatusOr<bool> delta = store.ExportState(
      [&](std::span<const std::string_view> pieces) {
        std::string& record = saved.records.emplace_back();
        for (std::string_view piece : pieces) record.append(piece);
        return absl::OkStatus();
      },
      {save_id, since});
  EXPECT_TRUE(delta.ok()) << delta.status();
  saved.delta = delta.value_or(false);
  return saved;
}

// The records of several saves read as one stream (a full save, then deltas).
absl::StatusOr<StateCounts> Restore(VariableStore& store, const std::vector<Saved>& saves) {
  auto all = std::make_shared<std::vector<std::string>>();
  for (const Saved& saved : saves)
    all->insert(all->end(), saved.records.begin(), saved.records.end());
  return store.ImportState(testing::SourceOf(*all));
}

// Rows in the saved stream (all Rows records).
int64_t RowsIn(const Saved& saved) {
  int64_t rows = 0;
  for (const std::string& bytes : saved.records) {
    v1::StateRecord record;
    EXPECT_TRUE(record.ParseFromString(bytes));
    if (record.has_rows()) rows += static_cast<int64_t>(record.rows().ids().size() / 8);
  }
  return rows;
}

// Dense chunk records in the saved stream, and whether variable `name` went out as unchanged.
int64_t DenseChunksIn(const Saved& saved) {
  int64_t chunks = 0;
  for (const std::string& bytes : saved.records) {
    v1::StateRecord record;
    EXPECT_TRUE(record.ParseFromString(bytes));
    chunks += record.has_dense_chunk();
  }
  return chunks;
}
bool UnchangedIn(const Saved& saved, const std::string& name) {
  for (const std::string& bytes : saved.records) {
    v1::StateRecord record;
    EXPECT_TRUE(record.ParseFromString(bytes));
    if (record.has_variable() && record.variable().spec().name() == name) {
      return record.variable().unchanged();
    }
  }
  ADD_FAILURE() << "no variable " << name << " in the save";
  return false;
}

std::vector<int64_t> Ids(int64_t first, int64_t n) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back((first + i) * 7919 - 3);
  return ids;
}

void PushRows(VariableStore& store, const std::string& table, const std::vector<int64_t>& ids,
              float scale) {
  std::vector<float> grads;
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int j = 0; j < 4; ++j) grads.push_back(scale * static_cast<float>((i % 5) + 1) - 0.3f * j);
  }
  ASSERT_TRUE(store.PushSparse(SparsePush(table, ids, grads)).ok());
}

void LookUp(VariableStore& store, const std::string& table, const std::vector<int64_t>& ids) {
  v1::LookupResponse response;
  ASSERT_TRUE(store.Lookup(testing::LookupRequest({{table, ids}}), response).ok());
}

void PushDense(VariableStore& store, float value) {
  ASSERT_TRUE(store
                  .Push(testing::PushRequest(
                      "dense", FloatTensor(std::vector<float>{value, 1, -value, 2}, {2, 2})))
                  .ok());
}

// Adam (two slots and a step per row) for the table and the dense variable: the hardest case.
void Create(VariableStore& store) {
  v1::CreateVariablesRequest create =
      CreateRequest({InitializedVariable("dense", {2, 2}, NormalInit(1), AdamOptimizer(0.01f))});
  *create.add_tables() = Table("emb", 4, NormalInit(4), AdamOptimizer(0.05f));
  *create.add_tables() = Table("sgd", 4, NormalInit(5), testing::SgdOptimizer(0.5f));
  ASSERT_TRUE(store.Create(create).ok());
}

TEST(IncrementalStateTest, FullSavePlusDeltasRestoresExactlyWhatAFullSaveWould) {
  VariableStore store;
  Create(store);
  PushRows(store, "emb", Ids(0, 2000), 1.0f);
  PushRows(store, "sgd", Ids(0, 500), 1.0f);
  PushDense(store, 1);
  const Saved full = Save(store, 11);
  EXPECT_FALSE(full.delta);
  EXPECT_EQ(RowsIn(full), 2500);

  // Between saves: updates to old rows, rows created by a lookup only, new rows by a push.
  PushRows(store, "emb", Ids(100, 30), 2.0f);
  LookUp(store, "emb", Ids(5000, 7));
  PushRows(store, "sgd", Ids(9000, 3), 1.0f);
  LookUp(store, "emb", Ids(0, 50));  // reads only: not changes
  PushDense(store, 2);
  const Saved first = Save(store, 12, 11);
  EXPECT_TRUE(first.delta);
  EXPECT_EQ(RowsIn(first), 30 + 7 + 3);

  PushRows(store, "emb", Ids(100, 5), -1.0f);  // again, the same rows
  PushRows(store, "sgd", Ids(0, 2), 3.0f);
  const Saved second = Save(store, 13, 12);
  EXPECT_TRUE(second.delta);
  EXPECT_EQ(RowsIn(second), 5 + 2);

  VariableStore restored;
  absl::StatusOr<StateCounts> counts = Restore(restored, {full, first, second});
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->num_rows, 2000 + 7 + 500 + 3);
  EXPECT_TRUE(ViewOf(restored) == ViewOf(store));
  // And the same as the full save of that moment.
  VariableStore from_full;
  ASSERT_TRUE(Restore(from_full, {Save(store, 0)}).ok());
  EXPECT_TRUE(ViewOf(restored) == ViewOf(from_full));

  // The restored store continues the chain: its next delta is since the last save it read.
  PushRows(restored, "emb", Ids(0, 1), 1.0f);
  const Saved third = Save(restored, 14, 13);
  EXPECT_TRUE(third.delta);
  EXPECT_EQ(RowsIn(third), 1);
}

TEST(IncrementalStateTest, ASaveNeverCommittedLeavesItsRowsToTheNextDelta) {
  VariableStore store;
  Create(store);
  PushRows(store, "emb", Ids(0, 100), 1.0f);
  const Saved full = Save(store, 21);
  PushRows(store, "emb", Ids(0, 10), 1.0f);
  const Saved lost = Save(store, 22, 21);  // written, but its checkpoint never committed
  EXPECT_EQ(RowsIn(lost), 10);
  PushRows(store, "emb", Ids(50, 4), 1.0f);
  // The coordinator's newest checkpoint is still the full save: the delta is since it.
  const Saved retry = Save(store, 23, 21);
  EXPECT_TRUE(retry.delta);
  EXPECT_EQ(RowsIn(retry), 14);
  VariableStore restored;
  ASSERT_TRUE(Restore(restored, {full, retry}).ok());
  EXPECT_TRUE(ViewOf(restored) == ViewOf(store));
  // A second failure in a row: still since 21.
  PushRows(store, "emb", Ids(70, 1), 1.0f);
  const Saved again = Save(store, 24, 21);
  EXPECT_TRUE(again.delta);
  VariableStore restored_again;
  ASSERT_TRUE(Restore(restored_again, {full, again}).ok());
  EXPECT_TRUE(ViewOf(restored_again) == ViewOf(store));
}

TEST(IncrementalStateTest, ASaveItCannotBuildOnIsWrittenWhole) {
  VariableStore store;
  Create(store);
  PushRows(store, "emb", Ids(0, 100), 1.0f);
  const Saved unknown = Save(store, 31, 999);  // a save this PS never made (it restarted since)
  EXPECT_FALSE(unknown.delta);
  EXPECT_EQ(RowsIn(unknown), 100);
  const Saved delta = Save(store, 32, 31);
  EXPECT_TRUE(delta.delta);
  EXPECT_EQ(RowsIn(delta), 0);
  // A plain export (not a checkpoint save) changes nothing of that bookkeeping.
  PushRows(store, "emb", Ids(0, 3), 1.0f);
  (void)testing::ExportRecords(store);
  EXPECT_EQ(RowsIn(Save(store, 33, 32)), 3);

  VariableStore dense_only;
  ASSERT_TRUE(dense_only
                  .Create(CreateRequest(
                      {InitializedVariable("dense", {2, 2}, NormalInit(1), AdamOptimizer(0.01f))}))
                  .ok());
  EXPECT_FALSE(Save(dense_only, 34).delta);
  EXPECT_FALSE(Save(dense_only, 35, 34).delta);
}

TEST(IncrementalStateTest, ChainsThatDoNotFitTogetherAreRefusedAndLeaveNothingHalfRestored) {
  VariableStore store;
  Create(store);
  PushRows(store, "emb", Ids(0, 10), 1.0f);
  const Saved full = Save(store, 41);
  PushRows(store, "emb", Ids(0, 2), 1.0f);
  const Saved first = Save(store, 42, 41);
  PushRows(store, "emb", Ids(0, 2), 1.0f);
  const Saved second = Save(store, 43, 42);

  VariableStore target;
  Create(target);
  LookUp(target, "emb", {1, 2, 3});
  absl::StatusOr<StateCounts> alone = Restore(target, {first});
  EXPECT_EQ(alone.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(alone.status().message(), HasSubstr("without the full save it builds on"));
  absl::StatusOr<StateCounts> gap = Restore(target, {full, second});
  EXPECT_EQ(gap.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(gap.status().message(), HasSubstr("is not a delta of the save before it (41)"));
  absl::StatusOr<StateCounts> two_full = Restore(target, {full, full});
  EXPECT_EQ(two_full.status().code(), absl::StatusCode::kDataLoss);
  Saved truncated = first;
  truncated.records.pop_back();  // no end record
  EXPECT_EQ(Restore(target, {full, truncated, second}).status().code(),
            absl::StatusCode::kDataLoss);
  ExpectHoldsNothing(target);
}

TEST(IncrementalStateTest, ShardFilesRestoreAsAChainAndNameTheFileAtFault) {
  testing::TempDir dir;
  VariableStore store;
  Create(store);
  PushRows(store, "emb", Ids(0, 300), 1.0f);
  ShardFileOptions options;
  options.save = {51, 0};
  auto full = SaveShardFile(store, dir.Join("full"), options);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_FALSE(full->delta());
  PushRows(store, "emb", Ids(10, 3), 1.0f);
  options.save = {52, 51};
  auto delta = SaveShardFile(store, dir.Join("delta"), options);
  ASSERT_TRUE(delta.ok()) << delta.status();
  EXPECT_TRUE(delta->delta());
  EXPECT_LT(delta->bytes(), full->bytes() / 10);
  // The tables' share: all of the rows, none of the dense variable's chunks.
  EXPECT_GT(full->table_bytes(), 300 * 4 * 3 * 4);
  EXPECT_LT(full->table_bytes(), full->bytes() - 4 * 3 * 4);
  EXPECT_GT(delta->table_bytes(), 3 * 4 * 3 * 4);
  EXPECT_LT(delta->table_bytes(), full->table_bytes() / 10);

  VariableStore restored;
  auto counts = RestoreShardFiles(restored, {dir.Join("full"), dir.Join("delta")});
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->num_rows(), 300);
  EXPECT_TRUE(ViewOf(restored) == ViewOf(store));

  auto reversed = RestoreShardFiles(restored, {dir.Join("delta"), dir.Join("full")});
  EXPECT_EQ(reversed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(reversed.status().message(), HasSubstr(dir.Join("delta")));
  auto missing = RestoreShardFiles(restored, {dir.Join("full"), dir.Join("gone")});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(dir.Join("gone")));
}

// A restore told the manifest's digests checks each file of the chain, deltas included: a delta
// of the right size but another CRC, or missing though its manifest lists it, is DataLoss naming
// that delta, and nothing of the chain is left half-restored.
TEST(IncrementalStateTest, EachDeltaOfAChainIsCheckedAgainstItsDigest) {
  testing::TempDir dir;
  VariableStore store;
  Create(store);
  PushRows(store, "emb", Ids(0, 200), 1.0f);
  ShardFileOptions options;
  options.save = {61, 0};
  auto full = SaveShardFile(store, dir.Join("full"), options);
  ASSERT_TRUE(full.ok()) << full.status();
  PushRows(store, "emb", Ids(5, 4), 2.0f);
  options.save = {62, 61};
  auto delta = SaveShardFile(store, dir.Join("delta"), options);
  ASSERT_TRUE(delta.ok()) << delta.status();
  ASSERT_TRUE(delta->delta());
  const FileDigest full_digest{static_cast<uint64_t>(full->bytes()), full->crc32c()};
  const FileDigest delta_digest{static_cast<uint64_t>(delta->bytes()), delta->crc32c()};

  VariableStore target;
  Create(target);
  ShardFileOptions restore;
  restore.expected_digest = full_digest;
  restore.expected_delta_digests = {FileDigest{delta_digest.bytes, delta_digest.crc32c ^ 1}};
  auto wrong = RestoreShardFiles(target, {dir.Join("full"), dir.Join("delta")}, restore);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kDataLoss) << wrong.status();
  EXPECT_THAT(wrong.status().message(), HasSubstr(dir.Join("delta") + ": digest mismatch"));
  ExpectHoldsNothing(target);

  restore.expected_delta_digests = {delta_digest};
  auto missing = RestoreShardFiles(target, {dir.Join("full"), dir.Join("gone")}, restore);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kDataLoss) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr(dir.Join("gone")));
  restore.expected_delta_digests = {};
  restore.expected_delta_digests.resize(2);
  EXPECT_EQ(
      RestoreShardFiles(target, {dir.Join("full"), dir.Join("delta")}, restore).status().code(),
      absl::StatusCode::kInvalidArgument);
  ExpectHoldsNothing(target);

  restore.expected_delta_digests = {delta_digest};
  auto counts = RestoreShardFiles(target, {dir.Join("full"), dir.Join("delta")}, restore);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_TRUE(ViewOf(target) == ViewOf(store));
}

// A dense variable not pushed since the save a delta builds on is only named in it (`unchanged`),
// not rewritten; one pushed is whole. The chain restores the very bytes a full save of the same
// moment holds.
TEST(IncrementalStateTest, DenseVariablesNotPushedSinceTheBaseAreNotRewritten) {
  VariableStore store;
  Create(store);
  PushRows(store, "emb", Ids(0, 300), 1.0f);
  PushDense(store, 1);
  const Saved full = Save(store, 71);
  EXPECT_GT(DenseChunksIn(full), 0);
  PushRows(store, "emb", Ids(10, 3), 1.0f);
  const Saved rows_only = Save(store, 72, 71);
  ASSERT_TRUE(rows_only.delta);
  EXPECT_TRUE(UnchangedIn(rows_only, "dense"));
  EXPECT_EQ(DenseChunksIn(rows_only), 0);
  PushDense(store, 2);
  const Saved dense_pushed = Save(store, 73, 72);
  EXPECT_FALSE(UnchangedIn(dense_pushed, "dense"));
  EXPECT_EQ(DenseChunksIn(dense_pushed), DenseChunksIn(full));
  PushRows(store, "sgd", Ids(0, 2), 1.0f);
  const Saved rows_again = Save(store, 74, 73);
  EXPECT_TRUE(UnchangedIn(rows_again, "dense"));

  VariableStore restored;
  ASSERT_TRUE(Restore(restored, {full, rows_only, dense_pushed, rows_again}).ok());
  EXPECT_EQ(testing::ExportRecords(restored), testing::ExportRecords(store));
  VariableStore skipping_the_pushed_one;
  ASSERT_TRUE(Restore(skipping_the_pushed_one, {full, rows_only}).ok());
  EXPECT_NE(testing::ExportRecords(skipping_the_pushed_one), testing::ExportRecords(store));

  // A restored variable counts as saved by the last file read: the next delta skips it too.
  PushRows(restored, "emb", Ids(0, 1), 1.0f);
  EXPECT_TRUE(UnchangedIn(Save(restored, 75, 74), "dense"));
}

// The save before was written but never committed: the next delta is since the one before it, so
// a variable pushed before that lost save is whole again, one not pushed since the base is not.
TEST(IncrementalStateTest, ADenseVariablePushedBeforeAnUncommittedSaveIsWrittenAgain) {
  VariableStore store;
  Create(store);
  PushRows(store, "emb", Ids(0, 100), 1.0f);
  const Saved full = Save(store, 81);
  PushDense(store, 3);
  const Saved lost = Save(store, 82, 81);
  EXPECT_FALSE(UnchangedIn(lost, "dense"));
  PushRows(store, "emb", Ids(0, 2), 1.0f);
  const Saved retry = Save(store, 83, 81);
  ASSERT_TRUE(retry.delta);
  EXPECT_FALSE(UnchangedIn(retry, "dense"));
  VariableStore restored;
  ASSERT_TRUE(Restore(restored, {full, retry}).ok());
  EXPECT_EQ(testing::ExportRecords(restored), testing::ExportRecords(store));

  VariableStore quiet;
  Create(quiet);
  PushRows(quiet, "emb", Ids(0, 100), 1.0f);
  const Saved quiet_full = Save(quiet, 91);
  PushRows(quiet, "emb", Ids(0, 2), 1.0f);
  (void)Save(quiet, 92, 91);  // never committed
  const Saved quiet_retry = Save(quiet, 93, 91);
  EXPECT_TRUE(UnchangedIn(quiet_retry, "dense"));
  VariableStore quiet_restored;
  ASSERT_TRUE(Restore(quiet_restored, {quiet_full, quiet_retry}).ok());
  EXPECT_EQ(testing::ExportRecords(quiet_restored), testing::ExportRecords(quiet));
}

// An `unchanged` record that does not match the variable before it (another step) is DataLoss
// naming the variable, and nothing is left half-restored.
TEST(IncrementalStateTest, AnUnchangedVariableThatDiffersFromItsBaseIsRefused) {
  VariableStore store;
  Create(store);
  PushRows(store, "emb", Ids(0, 10), 1.0f);
  const Saved full = Save(store, 101);
  PushRows(store, "emb", Ids(0, 1), 1.0f);
  Saved delta = Save(store, 102, 101);
  ASSERT_TRUE(UnchangedIn(delta, "dense"));
  for (std::string& bytes : delta.records) {
    v1::StateRecord record;
    ASSERT_TRUE(record.ParseFromString(bytes));
    if (!record.has_variable()) continue;
    record.mutable_variable()->set_step(record.variable().step() + 1);
    bytes = record.SerializeAsString();
  }
  VariableStore target;
  Create(target);
  absl::StatusOr<StateCounts> wrong = Restore(target, {full, delta});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(wrong.status().message(),
              HasSubstr("variable 'dense' is unchanged in the delta of save 102 but differs"));
  ExpectHoldsNothing(target);
}

}  // namespace
}  // namespace tj
