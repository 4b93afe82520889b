// ExportState / ImportState, the local record file and the SaveShard / RestoreShard RPCs: a round
// trip restores exactly the same values, slots, steps and rows; damaged input leaves nothing
// half-restored: the store holds nothing, refuses training calls naming the failed restore, and
// waits for the next restore.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "coordinator/base/values.h"
#include "coordinator/checkpoint/file_digest.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_server.h"
#include "coordinator/ps/shard_file.h"
#include "coordinator/ps/state_stream.h"
#include "coordinator/ps/variable_store.h"
#include "tests/coordinator/ps/ps_state_view.h"
#include "tests/coordinator/ps/ps_test_values.h"
#include "tests/support/temp_dir.h"

namespace tj {
namespace {

using testing::AdagradOptimizer;
using testing::AdamOptimizer;
using testing::CreateRequest;
using testing::ExportRecords;
using testing::FloatVariable;
using ::testing::HasSubstr;
using testing::InitializedVariable;
using testing::NormalInit;
using testing::SourceOf;
using testing::SparsePush;
using testing::Table;
using testing::ViewOf;

// After a failed restore: nothing is held, training calls are Unavailable (workers report the PS
// as lost, and the coordinator restores it) naming the failed restore, and a save is refused
// rather than writing an empty shard.
void ExpectWaitingForARestore(VariableStore& store, const std::string& variable) {
  v1::PullResponse response;
  const absl::Status pulled = store.Pull(testing::PullRequest({variable}), response);
  EXPECT_EQ(pulled.code(), absl::StatusCode::kUnavailable) << pulled;
  EXPECT_THAT(std::string(pulled.message()), HasSubstr("its last restore failed"));
  EXPECT_THAT(std::string(pulled.message()), HasSubstr("DATA_LOSS"));
  const absl::Status saved =
      store.ExportState([](std::span<const std::string_view>) { return absl::OkStatus(); });
  EXPECT_EQ(saved.code(), absl::StatusCode::kFailedPrecondition) << saved;
  EXPECT_THAT(std::string(saved.message()), HasSubstr("cannot save"));
}

// A store with every kind of state: Adam and Adagrad variables with steps and slots, a plain one,
// a variable larger than one export chunk, an empty one, and lazy-Adam and SGD tables with rows.
void Populate(VariableStore& store) {
  v1::CreateVariablesRequest create = CreateRequest(
      {InitializedVariable("adam", {3, 2}, NormalInit(1), AdamOptimizer(0.01f)),
       InitializedVariable("adagrad", {4}, NormalInit(2), AdagradOptimizer(0.1f)),
       FloatVariable("plain", {1, 2, 3}, {3}), InitializedVariable("empty", {0, 5}, {}),
       InitializedVariable("big", {kStateChunkFloats + 3}, NormalInit(3))});
  *create.add_tables() = Table("emb", 4, NormalInit(4), AdamOptimizer(0.05f));
  *create.add_tables() = Table("wide", 3, {}, testing::SgdOptimizer(0.5f));
  ASSERT_TRUE(store.Create(create).ok());
  for (int step = 0; step < 3; ++step) {
    v1::PushRequest push = testing::PushRequest(
        "adam", FloatTensor(std::vector<float>{1, -1, 0.5, 2, step * 1.0f, 3}, {3, 2}));
    push.add_names("adagrad");
    *push.add_deltas() = FloatTensor(std::vector<float>{0.1f * step, 1, 2, 3}, {4});
    ASSERT_TRUE(store.Push(push).ok());
  }
  std::vector<int64_t> ids;
  std::vector<float> grads;
  for (int64_t id = 0; id < 3000; ++id) {
    ids.push_back(id * 31 - 1000);
    for (int j = 0; j < 4; ++j) grads.push_back(static_cast<float>(id % 7) - j);
  }
  ASSERT_TRUE(store.PushSparse(SparsePush("emb", ids, grads)).ok());
  ids.resize(100);
  grads.resize(400);
  ASSERT_TRUE(store.PushSparse(SparsePush("emb", ids, grads)).ok());  // rows at step 2
  ASSERT_TRUE(store.PushSparse(SparsePush("wide", {5, 6}, {1, 2, 3, 4, 5, 6})).ok());
}

TEST(StateTest, ExportImportRoundTripRestoresValuesSlotsStepsAndRows) {
  VariableStore original;
  Populate(original);
  const std::vector<std::string> records = ExportRecords(original);
  VariableStore restored;
  ASSERT_TRUE(restored.Create(CreateRequest({FloatVariable("stale", {9}, {1})})).ok());

  auto counts = restored.ImportState(SourceOf(records));

  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->num_variables, 5);
  EXPECT_EQ(counts->num_tables, 2);
  EXPECT_EQ(counts->num_rows, 3002);
  const testing::StoreStateView view = ViewOf(original);
  EXPECT_EQ(view.variables.at("adam").step, 3);
  EXPECT_EQ(view.variables.at("adam").arrays.size(), 3u);  // values, m, v
  EXPECT_EQ(view.tables.at("emb").at(-1000).step, 2);
  EXPECT_EQ(view.tables.at("emb").at(31 * 2999 - 1000).step, 1);
  EXPECT_EQ(ViewOf(restored), view);       // exact: every float, slot, step and row
  EXPECT_EQ(restored.num_variables(), 5);  // "stale" is gone: import replaces everything

  // And both stores keep evolving identically (the slots and steps really were restored).
  for (VariableStore* store : {&original, &restored}) {
    ASSERT_TRUE(store
                    ->Push(testing::PushRequest(
                        "adam", FloatTensor(std::vector<float>{1, 1, 1, 1, 1, 1}, {3, 2})))
                    .ok());
    ASSERT_TRUE(
        store->PushSparse(SparsePush("emb", {-1000, 424242}, std::vector<float>(8, 1))).ok());
  }
  EXPECT_EQ(ViewOf(restored), ViewOf(original));
}

TEST(StateTest, ATruncatedStreamIsDataLossAndLeavesTheStoreWaitingForARestore) {
  VariableStore original;
  Populate(original);
  std::vector<std::string> records = ExportRecords(original);
  VariableStore target;
  ASSERT_TRUE(target.Create(CreateRequest({FloatVariable("keep", {9}, {1})})).ok());

  std::vector<std::string> no_end(records.begin(), records.end() - 1);
  std::vector<std::string> missing_chunk = records;
  missing_chunk.erase(missing_chunk.begin() + 2);
  std::vector<std::string> garbage = records;
  garbage[3] = "\xff\xff\xff";
  std::vector<std::string> no_header(records.begin() + 1, records.end());

  for (const auto* stream : {&no_end, &missing_chunk, &garbage, &no_header}) {
    const absl::Status status = target.ImportState(SourceOf(*stream)).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
    EXPECT_EQ(target.num_variables(), 0);
    EXPECT_EQ(target.num_tables(), 0);
  }
  ExpectWaitingForARestore(target, "keep");
  // A restore that succeeds ends it.
  ASSERT_TRUE(target.ImportState(SourceOf(records)).ok());
  EXPECT_EQ(ViewOf(target), ViewOf(original));
}

// A restore releases the state held before it reads the new one (one state in memory at a time):
// from its start, what the store held is gone, whatever the restore's outcome.
TEST(StateTest, ARestoreReleasesTheOldStateBeforeReadingTheNewOne) {
  VariableStore original;
  Populate(original);
  std::vector<std::string> records = ExportRecords(original);
  VariableStore target;
  ASSERT_TRUE(target.Create(CreateRequest({FloatVariable("old", {9}, {1})})).ok());
  // The stream is read one record at a time: while its records arrive, the old variable is gone
  // and training calls name the restore in progress.
  size_t next = 0;
  absl::Status while_reading;
  const absl::StatusOr<StateCounts> counts =
      target.ImportState(RecordSource([&](std::string& record) -> absl::StatusOr<bool> {
        if (next == 2) {
          v1::PullResponse response;
          while_reading = target.Pull(testing::PullRequest({"old"}), response);
        }
        if (next == records.size()) return false;
        record = records[next++];
        return true;
      }));
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(while_reading.code(), absl::StatusCode::kUnavailable) << while_reading;
  EXPECT_THAT(std::string(while_reading.message()), HasSubstr("a restore has released"));
  EXPECT_EQ(ViewOf(target), ViewOf(original));
  v1::PullResponse response;
  EXPECT_EQ(target.Pull(testing::PullRequest({"old"}), response).code(),
            absl::StatusCode::kNotFound);
}

// Restores overlap when the checkpointer gives up on one (a corrupt delta, a deadline) and starts
// the next while the first is still reading: the one begun last decides what the store holds. A
// newer restore runs inside the older one's reading here (the reading holds no lock), so the
// order is exact: the older then fails, or succeeds, after the newer one succeeded. Seen under
// TSan as a store refusing to save after a good restore (IncrementalCheckpointTest).
TEST(StateTest, ARestoreThatEndsAfterANewerOneBeganChangesNothing) {
  VariableStore original;
  Populate(original);
  const std::vector<std::string> records = ExportRecords(original);
  for (const bool older_fails : {true, false}) {
    SCOPED_TRACE(older_fails ? "the older restore fails late" : "the older one succeeds late");
    VariableStore target;
    VariableStore stale;  // what the older restore reads: another state
    ASSERT_TRUE(stale.Create(CreateRequest({FloatVariable("stale", {7}, {1})})).ok());
    const std::vector<std::string> stale_records = ExportRecords(stale);
    size_t next = 0;
    absl::StatusOr<StateCounts> newer = absl::UnknownError("not run");
    const absl::StatusOr<StateCounts> older =
        target.ImportState(RecordSource([&](std::string& record) -> absl::StatusOr<bool> {
          if (next == 1) newer = target.ImportState(SourceOf(records));
          if (next == 1 && older_fails) return absl::DataLossError("cancelled mid-read");
          if (next == stale_records.size()) return false;
          record = stale_records[next++];
          return true;
        }));
    ASSERT_TRUE(newer.ok()) << newer.status();
    EXPECT_FALSE(older.ok());
    if (!older_fails) {
      EXPECT_EQ(older.status().code(), absl::StatusCode::kAborted) << older.status();
    }
    EXPECT_EQ(ViewOf(target), ViewOf(original)) << "the newer restore's state stays";
    const absl::Status saved =
        target.ExportState([](std::span<const std::string_view>) { return absl::OkStatus(); });
    EXPECT_TRUE(saved.ok()) << "a store holding its restored state saves: " << saved;
  }
}

// After a failed restore the coordinator may find nothing else to restore and create the
// variables afresh, as on a restarted PS: that ends the wait too.
TEST(StateTest, ACreateAfterAFailedRestoreStartsAfresh) {
  VariableStore target;
  ASSERT_TRUE(target.Create(CreateRequest({FloatVariable("keep", {9}, {1})})).ok());
  ASSERT_FALSE(target.ImportState(SourceOf({"not a record"})).ok());
  ExpectWaitingForARestore(target, "keep");
  ASSERT_TRUE(target.Create(CreateRequest({FloatVariable("keep", {2}, {1})})).ok());
  v1::PullResponse response;
  ASSERT_TRUE(target.Pull(testing::PullRequest({"keep"}), response).ok());
  EXPECT_THAT(testing::Floats(response.values(0)), ::testing::ElementsAre(2));
  EXPECT_TRUE(
      target.ExportState([](std::span<const std::string_view>) { return absl::OkStatus(); }).ok());
}

// A restored variable's memory is not cleared first, so its chunks must cover it exactly: a chunk
// repeated (or out of order) is refused even when the count of floats adds up.
TEST(StateTest, DenseChunksOutOfOrderOrRepeatedAreDataLoss) {
  VariableStore original;
  ASSERT_TRUE(original
                  .Create(CreateRequest(
                      {InitializedVariable("big", {2 * kStateChunkFloats}, NormalInit(3))}))
                  .ok());
  const std::vector<std::string> records = ExportRecords(original);
  ASSERT_EQ(records.size(), 5u);  // header, variable, two chunks, end
  std::vector<std::string> swapped = records;
  std::swap(swapped[2], swapped[3]);
  std::vector<std::string> repeated = records;
  repeated[3] = repeated[2];
  for (const auto* stream : {&swapped, &repeated}) {
    VariableStore target;
    const absl::Status status = target.ImportState(SourceOf(*stream)).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr("variable 'big'"));
    EXPECT_EQ(target.num_variables(), 0);
  }
  VariableStore target;
  ASSERT_TRUE(target.ImportState(SourceOf(records)).ok());
  EXPECT_EQ(ViewOf(target), ViewOf(original));
}

// Records pass their CRC before they are parsed, but a file written by someone else can hold any
// bytes with a valid CRC: every byte of every small record (dense chunk heads included, which are
// parsed before the rest of the chunk is read into place) flipped, and every record cut short,
// is refused or harmless, and a refused stream leaves nothing half-restored.
TEST(StateTest, EveryByteOfASmallRecordFlippedOrCutIsRefusedOrHarmless) {
  VariableStore original;
  Populate(original);
  const std::vector<std::string> records = ExportRecords(original);
  auto fresh = [] {
    auto store = std::make_unique<VariableStore>();
    EXPECT_TRUE(store->Create(CreateRequest({FloatVariable("keep", {9}, {1})})).ok());
    return store;
  };
  std::unique_ptr<VariableStore> target = fresh();
  int refused = 0;
  for (size_t r = 0; r < records.size(); ++r) {
    if (records[r].size() > 4096) continue;
    for (size_t at = 0; at <= records[r].size(); ++at) {
      std::vector<std::string> stream = records;
      if (at == records[r].size()) {
        stream[r].resize(at / 2);
      } else {
        stream[r][at] = static_cast<char>(stream[r][at] ^ 0x41);
      }
      const absl::Status status = target->ImportState(SourceOf(stream)).status();
      if (!status.ok()) {
        ++refused;
        // Nothing half-restored is left behind.
        ASSERT_EQ(target->num_variables(), 0) << "record " << r << " byte " << at << ": " << status;
        ASSERT_EQ(target->num_tables(), 0) << "record " << r << " byte " << at << ": " << status;
      } else {
        target = fresh();  // accepted (a flip that still makes sense, e.g. in a value)
      }
    }
  }
  EXPECT_GT(refused, 0);
}

TEST(StateTest, ExportsTakenWhileLookupsCreateRowsImportCleanly) {
  VariableStore store;
  ASSERT_TRUE(store.Create(testing::CreateTablesRequest({Table("emb", 4, NormalInit(1))})).ok());
  std::atomic<bool> stop{false};
  std::thread creator([&] {
    for (int64_t id = 0; !stop; ++id) {
      v1::LookupResponse response;
      EXPECT_TRUE(store.Lookup(testing::LookupRequest({{"emb", {id, -id}}}), response).ok());
    }
  });
  for (int i = 0; i < 20; ++i) {
    VariableStore copy;
    const absl::Status status = copy.ImportState(SourceOf(ExportRecords(store))).status();
    EXPECT_TRUE(status.ok()) << status;
  }
  stop = true;
  creator.join();
}

class ShardFileTest : public ::testing::Test {
 protected:
  tj::testing::TempDir temp_;
  const std::string dir_ = temp_.path();
};

TEST_F(ShardFileTest, SaveAndRestoreThroughAFile) {
  VariableStore original;
  Populate(original);
  const std::string path = dir_ + "/ps-0.state";

  auto saved = SaveShardFile(original, path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_EQ(saved->bytes(), static_cast<int64_t>(std::filesystem::file_size(path)));
  VariableStore restored;
  auto counts = RestoreShardFile(restored, path);

  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->num_rows(), 3002);
  EXPECT_EQ(ViewOf(restored), ViewOf(original));
}

// The manifest's digest is checked from the records' own CRCs as the file is read once: another
// size or CRC is DataLoss naming the file, and the store waits for the next restore.
TEST_F(ShardFileTest, RestoreChecksTheExpectedDigestAsItReads) {
  VariableStore original;
  Populate(original);
  const std::string path = dir_ + "/ps-0.state";
  auto saved = SaveShardFile(original, path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  const FileDigest digest{static_cast<uint64_t>(saved->bytes()), saved->crc32c()};
  VariableStore target;
  ASSERT_TRUE(target.Create(CreateRequest({FloatVariable("keep", {9}, {1})})).ok());

  for (const FileDigest& wrong :
       {FileDigest{digest.bytes, digest.crc32c ^ 1}, FileDigest{digest.bytes + 1, digest.crc32c}}) {
    ShardFileOptions options;
    options.expected_digest = wrong;
    const absl::Status status = RestoreShardFile(target, path, options).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(path));
    EXPECT_THAT(std::string(status.message()), HasSubstr("mismatch"));
    EXPECT_EQ(target.num_variables(), 0);
  }
  ShardFileOptions options;
  options.expected_digest = digest;
  ASSERT_TRUE(RestoreShardFile(target, path, options).ok());
  EXPECT_EQ(ViewOf(target), ViewOf(original));
}

TEST_F(ShardFileTest, ATruncatedFileIsDataLossAndAMissingOneNotFound) {
  VariableStore original;
  Populate(original);
  const std::string path = dir_ + "/ps-0.state";
  ASSERT_TRUE(SaveShardFile(original, path).ok());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
  VariableStore target;

  const absl::Status truncated = RestoreShardFile(target, path).status();
  const absl::Status missing = RestoreShardFile(target, dir_ + "/nope").status();

  EXPECT_EQ(truncated.code(), absl::StatusCode::kDataLoss) << truncated;
  EXPECT_THAT(std::string(truncated.message()), HasSubstr(path));
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound) << missing;
  EXPECT_EQ(target.num_variables(), 0);
}

TEST_F(ShardFileTest, SaveShardAndRestoreShardRpcs) {
  auto server = PsServer::Start("127.0.0.1:0", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = PsClient::Connect((*server)->address(), 0);
  v1::CreateVariablesRequest create =
      CreateRequest({InitializedVariable("w", {2}, NormalInit(5), AdamOptimizer(0.1f))});
  *create.add_tables() = Table("emb", 2, NormalInit(6));
  ASSERT_TRUE(client->Create(create).ok());
  ASSERT_TRUE(client->Push({"w"}, {FloatTensor(std::vector<float>{1, 2}, {2})}).ok());
  ASSERT_TRUE(client->Lookup(testing::LookupRequest({{"emb", {1, 2, 3}}})).ok());
  const auto before = client->Pull({"w"});
  ASSERT_TRUE(before.ok());
  const std::string path = dir_ + "/ps-0.state";

  auto saved = client->SaveShard(path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  // The digest the PS reports is the file's: the coordinator writes it into the manifest unread.
  auto on_disk = ComputeFileDigest(path);
  ASSERT_TRUE(on_disk.ok());
  EXPECT_EQ(static_cast<uint64_t>(saved->bytes()), on_disk->bytes);
  EXPECT_EQ(saved->crc32c(), on_disk->crc32c);
  ASSERT_TRUE(client->Push({"w"}, {FloatTensor(std::vector<float>{5, 5}, {2})}).ok());
  auto restored = client->RestoreShard(path);

  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->num_variables(), 1);
  EXPECT_EQ(restored->num_tables(), 1);
  EXPECT_EQ(restored->num_rows(), 3);
  auto after = client->Pull({"w"});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)[0].data(), (*before)[0].data());
  EXPECT_EQ(client->RestoreShard(dir_ + "/missing").status().code(), absl::StatusCode::kNotFound);
  // With the manifest's digest, a mismatch is DATA_LOSS naming the file, not a lost PS.
  grpc::ClientContext context;
  const auto wrong =
      client->RestoreShard(context, path, {}, FileDigest{on_disk->bytes, on_disk->crc32c ^ 1});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kDataLoss) << wrong.status();
  EXPECT_THAT(std::string(wrong.status().message()), HasSubstr(path));
  grpc::ClientContext again;
  EXPECT_TRUE(client->RestoreShard(again, path, {}, *on_disk).ok());
}

}  // namespace
}  // namespace tj

namespace tj {
namespace {

// WriteDenseChunk hands the data over in place; joined, its pieces must be exactly the bytes
// protobuf itself serializes, so that files written either way read back the same.
TEST(StateWriterTest, ADenseChunkWrittenInPiecesIsTheSerializedRecord) {
  std::string large(300'000, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 7);
  struct Case {
    int32_t slot;
    int64_t offset;
    std::string data;
  };
  for (const Case& c : std::vector<Case>{{0, 0, ""},
                                         {0, 0, "abcd"},
                                         {1, 1 << 20, large},
                                         {2, 300, std::string(4, '\0')},
                                         {0, int64_t{1} << 40, large}}) {
    std::vector<std::string> joined;
    size_t calls = 0;
    RecordSink sink = [&](std::span<const std::string_view> pieces) {
      std::string& record = joined.emplace_back();
      for (std::string_view piece : pieces) record.append(piece);
      // The data arrives as a piece of its own, never copied into the framing.
      if (!c.data.empty()) {
        EXPECT_EQ(pieces.back().data(), c.data.data());
      }
      ++calls;
      return absl::OkStatus();
    };
    StateWriter writer(sink);
    ASSERT_TRUE(writer.WriteDenseChunk(c.slot, c.offset, c.data).ok());
    v1::StateRecord expected;
    expected.mutable_dense_chunk()->set_slot(c.slot);
    expected.mutable_dense_chunk()->set_offset(c.offset);
    expected.mutable_dense_chunk()->set_data(c.data);
    ASSERT_EQ(calls, 1u);
    EXPECT_EQ(joined[0], expected.SerializeAsString())
        << "slot " << c.slot << " offset " << c.offset;
    EXPECT_EQ(writer.records(), 1);
  }
}

// Restore views dense chunks and rows in the record instead of parsing them: the views must say
// what protobuf would parse, and give up (nullopt: protobuf parses) on anything else.
TEST(StateViewTest, DenseChunkAndRowsViewsReadWhatProtobufParses) {
  const std::string large(300'000, 'x');
  for (const auto& [slot, offset, data] : std::vector<std::tuple<int32_t, int64_t, std::string>>{
           {0, 0, ""}, {1, 1 << 20, large}, {3, int64_t{1} << 40, "abcd"}, {-1, 5, "wxyz"}}) {
    v1::StateRecord record;
    record.mutable_dense_chunk()->set_slot(slot);
    record.mutable_dense_chunk()->set_offset(offset);
    record.mutable_dense_chunk()->set_data(data);
    const std::string bytes = record.SerializeAsString();
    std::optional<DenseChunkView> view = ViewDenseChunk(bytes);
    ASSERT_TRUE(view.has_value()) << "slot " << slot;
    EXPECT_EQ(view->slot, slot);
    EXPECT_EQ(view->offset, offset);
    EXPECT_EQ(view->data, data);
    EXPECT_FALSE(ViewRows(bytes).has_value());
  }
  v1::StateRecord rows;
  rows.mutable_rows()->set_ids(std::string(16, 'i'));
  rows.mutable_rows()->set_data(std::string(64, 'd'));
  rows.mutable_rows()->set_steps(std::string(16, 's'));
  std::string bytes = rows.SerializeAsString();
  std::optional<RowsView> view = ViewRows(bytes);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->ids, rows.rows().ids());
  EXPECT_EQ(view->data, rows.rows().data());
  EXPECT_EQ(view->steps, rows.rows().steps());
  EXPECT_FALSE(ViewDenseChunk(bytes).has_value());
  // Cut short, or with a field the view does not know: left to protobuf.
  EXPECT_FALSE(ViewRows(std::string_view(bytes).substr(0, bytes.size() - 1)).has_value());
  v1::StateRecord chunk;
  chunk.mutable_dense_chunk()->set_data("abcd");
  std::string unknown = chunk.SerializeAsString();
  unknown[1] = static_cast<char>(unknown[1] + 2);  // the chunk grows by the field below
  unknown += std::string("\x20\x01", 2);           // field 4, varint 1
  EXPECT_FALSE(ViewDenseChunk(unknown).has_value());
  v1::StateRecord parsed;
  ASSERT_TRUE(parsed.ParseFromString(unknown));  // protobuf keeps it as an unknown field
  EXPECT_EQ(parsed.dense_chunk().data(), "abcd");
  v1::StateRecord header;
  header.mutable_header()->set_format("tj.ps.state");
  EXPECT_FALSE(ViewDenseChunk(header.SerializeAsString()).has_value());
  EXPECT_FALSE(ViewRows(header.SerializeAsString()).has_value());
}

}  // namespace
}  // namespace tj
