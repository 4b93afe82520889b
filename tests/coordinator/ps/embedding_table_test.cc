// Sparse tables at the store level: rows on first touch, determinism across PS instances, the
// open-addressing index, and bad input.
#include "coordinator/ps/embedding_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "coordinator/ps/id_hash.h"
#include "coordinator/ps/row_index.h"
#include "coordinator/ps/state_stream.h"
#include "coordinator/ps/variable_store.h"
#include "tests/coordinator/ps/ps_state_view.h"
#include "tests/coordinator/ps/ps_test_values.h"

namespace tj {
namespace {

using ::testing::AllOf;
using testing::ConstantInit;
using testing::CreateTablesRequest;
using ::testing::ElementsAre;
using testing::Floats;
using ::testing::HasSubstr;
using testing::LookupRequest;
using testing::NormalInit;
using testing::SgdOptimizer;
using testing::SparsePush;
using testing::Table;

// The rows of `ids` in `table`, one vector of dim floats per id.
std::vector<std::vector<float>> Rows(VariableStore& store, const std::string& table,
                                     const std::vector<int64_t>& ids) {
  v1::LookupResponse response;
  const absl::Status status = store.Lookup(LookupRequest({{table, ids}}), response);
  EXPECT_TRUE(status.ok()) << status;
  if (!status.ok()) return {};
  const v1::Tensor& t = response.values(0);
  EXPECT_THAT(t.shape(), ElementsAre(static_cast<int64_t>(ids.size()), ::testing::_));
  const std::vector<float> flat = Floats(t);
  const size_t dim = static_cast<size_t>(t.shape(1));
  std::vector<std::vector<float>> rows;
  for (size_t i = 0; i < ids.size(); ++i) {
    rows.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(i * dim),
                      flat.begin() + static_cast<std::ptrdiff_t>((i + 1) * dim));
  }
  return rows;
}

TEST(EmbeddingTableTest, RowsAreCreatedOnFirstTouchFromTheInitializer) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateTablesRequest({Table("emb", 3, ConstantInit(0.5f))})).ok());
  auto table = std::make_unique<EmbeddingTable>(*CheckTableSpec(Table("t", 3)));
  EXPECT_EQ(table->num_rows(), 0);

  EXPECT_THAT(Rows(store, "emb", {10, -4}),
              ElementsAre(ElementsAre(0.5, 0.5, 0.5), ElementsAre(0.5, 0.5, 0.5)));
  ASSERT_TRUE(store.PushSparse(SparsePush("emb", {99}, {1, 2, 3})).ok());  // push creates too
  EXPECT_THAT(Rows(store, "emb", {99}), ElementsAre(ElementsAre(1.5, 2.5, 3.5)));
}

TEST(EmbeddingTableTest, RowsAreTheSameOnTwoPsInstancesWhateverTheOrder) {
  const v1::TableSpec spec = Table("emb", 8, NormalInit(11));
  VariableStore a, b;
  ASSERT_TRUE(a.Create(CreateTablesRequest({spec})).ok());
  ASSERT_TRUE(b.Create(CreateTablesRequest({spec})).ok());
  const std::vector<int64_t> ids = {1, 2, 3, std::numeric_limits<int64_t>::min(), -1, 1LL << 40};
  std::vector<int64_t> reversed(ids.rbegin(), ids.rend());
  Rows(b, "emb", {777, 778});  // b has other rows too

  const auto rows_a = Rows(a, "emb", ids);
  auto rows_b = Rows(b, "emb", reversed);
  std::reverse(rows_b.begin(), rows_b.end());

  EXPECT_EQ(rows_a, rows_b);
  EXPECT_NE(rows_a[0], rows_a[1]);
  EXPECT_EQ(Rows(a, "emb", ids), rows_a);  // a second lookup sees the same rows
}

TEST(EmbeddingTableTest, ManyRowsSurviveIndexGrowth) {
  auto config = CheckTableSpec(Table("t", 2, v1::Initializer(), SgdOptimizer(1)));
  ASSERT_TRUE(config.ok());
  EmbeddingTable table(*config);
  constexpr int64_t kRows = 100000;
  std::vector<int64_t> ids(kRows);
  std::vector<float> grads(kRows * 2);
  for (int64_t i = 0; i < kRows; ++i) {
    ids[static_cast<size_t>(i)] = i * 7919 - 50000;
    grads[static_cast<size_t>(2 * i)] = -static_cast<float>(i);
    grads[static_cast<size_t>(2 * i + 1)] = 1;
  }
  ASSERT_TRUE(table
                  .Push(reinterpret_cast<const char*>(ids.data()), ids.size(),
                        reinterpret_cast<const char*>(grads.data()))
                  .ok());
  std::vector<float> out(kRows * 2);
  ASSERT_TRUE(table
                  .Lookup(reinterpret_cast<const char*>(ids.data()), ids.size(),
                          reinterpret_cast<char*>(out.data()))
                  .ok());

  EXPECT_EQ(table.num_rows(), kRows);
  for (int64_t i = 0; i < kRows; i += 997) {
    EXPECT_EQ(out[static_cast<size_t>(2 * i)], static_cast<float>(i));
    EXPECT_EQ(out[static_cast<size_t>(2 * i + 1)], -1.0f);
  }
  // dim 2 under SGD: 8 bytes of row, plus the index; far below a node-based map's ~100 bytes.
  EXPECT_LT(table.memory_bytes() / kRows, 48);
}

// One Rows record as a restore reads it: ids, then dim floats per id, for a table under SGD.
struct RowsRecord {
  std::vector<int64_t> ids;
  std::vector<float> data;
  RowsView view() const {
    return {std::string_view(reinterpret_cast<const char*>(ids.data()), ids.size() * 8),
            std::string_view(reinterpret_cast<const char*>(data.data()), data.size() * 4), {}};
  }
};

// ImportRows groups a record's rows by shard and prefetches ahead (embedding_table.cc): every row
// must still land under its own id, across shard boundaries and index growth.
TEST(EmbeddingTableTest, ImportedRowsAreFoundUnderTheirIdsInEveryShard) {
  auto config = CheckTableSpec(Table("t", 2, v1::Initializer(), SgdOptimizer(1)));
  ASSERT_TRUE(config.ok());
  EmbeddingTable table(*config);
  constexpr int64_t kRows = 50000;
  RowsRecord first, second;
  for (int64_t i = 0; i < kRows; ++i) {
    RowsRecord& record = i % 3 == 0 ? first : second;
    record.ids.push_back(i * 7919 - 20000);
    record.data.push_back(static_cast<float>(i));
    record.data.push_back(-static_cast<float>(i));
  }
  ASSERT_TRUE(table.ImportRows(first.view()).ok());
  ASSERT_TRUE(table.ImportRows(second.view()).ok());

  std::vector<int64_t> ids(kRows);
  for (int64_t i = 0; i < kRows; ++i) ids[static_cast<size_t>(i)] = i * 7919 - 20000;
  std::vector<float> out(kRows * 2);
  absl::StatusOr<size_t> created = table.Lookup(reinterpret_cast<const char*>(ids.data()),
                                                ids.size(), reinterpret_cast<char*>(out.data()));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(*created, 0u);
  EXPECT_EQ(table.num_rows(), kRows);
  for (int64_t i = 0; i < kRows; ++i) {
    ASSERT_EQ(out[static_cast<size_t>(2 * i)], static_cast<float>(i)) << "id " << ids[i];
    ASSERT_EQ(out[static_cast<size_t>(2 * i + 1)], -static_cast<float>(i)) << "id " << ids[i];
  }
}

TEST(EmbeddingTableTest, AnIdTwiceInARecordIsDataLossUnlessADeltaWhereTheLaterCopyWins) {
  auto config = CheckTableSpec(Table("t", 2, v1::Initializer(), SgdOptimizer(1)));
  ASSERT_TRUE(config.ok());
  RowsRecord record;
  for (int64_t id : {5, 77, 5, 901}) {
    record.ids.push_back(id);
    record.data.push_back(static_cast<float>(record.ids.size()));
    record.data.push_back(0);
  }

  EmbeddingTable full(*config);
  const absl::Status twice = full.ImportRows(record.view());
  EXPECT_TRUE(absl::IsDataLoss(twice)) << twice;
  EXPECT_THAT(twice.message(), AllOf(HasSubstr("table 't'"), HasSubstr("row 5 twice")));

  EmbeddingTable delta(*config);
  ASSERT_TRUE(delta.ImportRows(record.view(), /*replace=*/true).ok());
  std::vector<int64_t> ids = {5, 77, 901};
  std::vector<float> out(6);
  ASSERT_TRUE(delta
                  .Lookup(reinterpret_cast<const char*>(ids.data()), ids.size(),
                          reinterpret_cast<char*>(out.data()))
                  .ok());
  EXPECT_THAT(out, ElementsAre(3, 0, 2, 0, 4, 0));  // id 5: its second copy, the third row
}

TEST(RowIndexTest, FindsWhatWasInsertedAndNothingElse) {
  RowIndex index;
  std::vector<int64_t> ids;  // the caller's row storage: row r holds ids[r]
  const auto id_of = [&](uint32_t row) { return ids.at(row); };
  // Enough rows for many rebuilds, and ids whose hashes share the shard bits (as in one shard).
  for (uint32_t i = 0; i < 100000; ++i) {
    const int64_t id = static_cast<int64_t>(i) * 3;
    ASSERT_EQ(index.FindOrInsert(id, RowHash(id), id_of), std::make_pair(i, true)) << i;
    ids.push_back(id);
  }
  EXPECT_EQ(index.FindOrInsert(30, RowHash(30), id_of), std::make_pair(10u, false));
  for (uint32_t i = 0; i < 100000; i += 7) {
    const int64_t id = static_cast<int64_t>(i) * 3;
    ASSERT_EQ(index.Find(id, RowHash(id), id_of), i);
    ASSERT_EQ(index.Find(id + 1, RowHash(id + 1), id_of), RowIndex::kNoRow);
  }
  EXPECT_EQ(index.size(), 100000u);
  // 4-byte slots at a load between 8/15 and 4/5.
  EXPECT_LE(index.memory_bytes(), 100000u * 4 * 15 / 8);
  EXPECT_GE(index.memory_bytes(), 100000u * 4 * 5 / 4);
}

// A restore reserves the index for the row count a Table record announces: inserting up to that
// many rows then never rebuilds it, and rows held before the reservation are still found.
TEST(RowIndexTest, ReserveMakesRoomOnceAndKeepsTheRowsHeld) {
  RowIndex index;
  std::vector<int64_t> ids;
  const auto id_of = [&](uint32_t row) { return ids.at(row); };
  const auto insert = [&](int64_t id) {
    const auto [row, inserted] = index.FindOrInsert(id, RowHash(id), id_of);
    ASSERT_TRUE(inserted) << id;
    ASSERT_EQ(row, ids.size());
    ids.push_back(id);
  };
  for (int64_t id = 0; id < 100; ++id) insert(id * 7);
  index.Reserve(50000, id_of);
  const size_t reserved = index.memory_bytes();
  EXPECT_GE(reserved, 50000u * 4 * 5 / 4);
  for (int64_t id = 0; id < 100; ++id) EXPECT_EQ(index.Find(id * 7, RowHash(id * 7), id_of), id);
  for (int64_t id = 100; id < 50000; ++id) insert(id * 7);
  EXPECT_EQ(index.memory_bytes(), reserved);
  index.Reserve(10, id_of);  // never shrinks
  EXPECT_EQ(index.memory_bytes(), reserved);
  for (int64_t id = 0; id < 50000; id += 13) {
    ASSERT_EQ(index.Find(id * 7, RowHash(id * 7), id_of), id);
  }
}

TEST(EmbeddingTableTest, RowsBeyondTheMemoryBudgetAreRefusedBeforeAnyIsCreated) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateTablesRequest({Table("emb", 16, ConstantInit(0.5f)),
                                                Table("other", 16, ConstantInit(0.5f))}))
                  .ok());
  // 16 floats, the id, index and change bits: under 100 bytes a row; room for about 1,000 rows.
  store.SetMemoryBudget(100'000, "a test budget");
  std::vector<int64_t> first(800);
  for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<int64_t>(i);
  EXPECT_EQ(Rows(store, "emb", first).size(), 800u);

  std::vector<int64_t> more(800);
  for (size_t i = 0; i < more.size(); ++i) more[i] = static_cast<int64_t>(i + 10'000);
  v1::LookupResponse response;
  const absl::Status refused = store.Lookup(LookupRequest({{"emb", more}}), response);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(),
              AllOf(HasSubstr("table 'emb'"), HasSubstr("creating 800 more rows"),
                    HasSubstr("holds 800 rows"), HasSubstr("budget of 97.7 KiB (a test budget)")));
  // A push of new rows too, and a request whose second table does not fit creates nothing.
  std::vector<float> grads(more.size() * 16, 1.0f);
  EXPECT_EQ(store.PushSparse(SparsePush("emb", more, grads)).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(store.Lookup(LookupRequest({{"other", {1, 2}}, {"emb", more}}), response).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(testing::ViewOf(store).tables["other"].size(), 0u);
  EXPECT_EQ(testing::ViewOf(store).tables["emb"].size(), 800u);

  // Rows that exist are still served at the budget, and new ones while there is room.
  ASSERT_EQ(Rows(store, "emb", first).size(), 800u);
  ASSERT_EQ(Rows(store, "other", {1, 2, 3}).size(), 3u);
  EXPECT_EQ(testing::ViewOf(store).tables["other"].size(), 3u);
}

// A PS that started with no room beyond its headroom gets a budget of 0: that is no room, not no
// bound (it was no bound, so such a PS grew until the OOM killer ended it; found under ASan,
// whose larger process left ps_test's PS with less than the headroom).
TEST(EmbeddingTableTest, ABudgetOfZeroRefusesEveryNewRowAndNoBudgetRefusesNone) {
  VariableStore unbounded;
  ASSERT_TRUE(unbounded.Create(CreateTablesRequest({Table("emb", 16, ConstantInit(0.5f))})).ok());
  std::vector<int64_t> ids(5000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  EXPECT_EQ(Rows(unbounded, "emb", ids).size(), ids.size());

  VariableStore store;
  ASSERT_TRUE(store.Create(CreateTablesRequest({Table("emb", 16, ConstantInit(0.5f))})).ok());
  store.SetMemoryBudget(0, "no room at start");
  v1::LookupResponse response;
  const absl::Status refused = store.Lookup(LookupRequest({{"emb", {1, 2, 3}}}), response);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(),
              AllOf(HasSubstr("table 'emb'"), HasSubstr("budget of 0 B (no room at start)")));
  std::vector<float> grads(3 * 16, 1.0f);
  EXPECT_EQ(store.PushSparse(SparsePush("emb", {1, 2, 3}, grads)).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(testing::ViewOf(store).tables["emb"].size(), 0u);
  // A negative figure is no room too.
  store.SetMemoryBudget(-4096, "below the headroom");
  EXPECT_EQ(store.Lookup(LookupRequest({{"emb", {1}}}), response).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(EmbeddingTableTest, BadInputIsRejectedNamingTheTable) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateTablesRequest({Table("emb", 2)})).ok());
  v1::LookupResponse response;

  const absl::Status unknown = store.Lookup(LookupRequest({{"nope", {1}}}), response);
  const absl::Status unknown_push = store.PushSparse(SparsePush("nope", {1}, {1, 1}));
  const absl::Status wrong_dim = store.PushSparse(SparsePush("emb", {1, 2}, {1, 1, 1}));
  v1::LookupRequest ragged = LookupRequest({{"emb", {1}}});
  ragged.mutable_lookups(0)->mutable_ids()->resize(5);
  const absl::Status ragged_ids = store.Lookup(ragged, response);
  const absl::Status nan = store.PushSparse(SparsePush("emb", {1, 2}, {1, 1, 1, NAN}));
  v1::PushSparseRequest two = SparsePush("emb", {1}, {1, 1});
  *two.add_updates() = SparsePush("emb", {2}, {1}).updates(0);
  const absl::Status partly_bad = store.PushSparse(two);

  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(unknown.message()), HasSubstr("'nope'"));
  EXPECT_EQ(unknown_push.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(wrong_dim.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong_dim.message()), AllOf(HasSubstr("'emb'"), HasSubstr("dim 2")));
  EXPECT_EQ(ragged_ids.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nan.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(nan.message()),
              AllOf(HasSubstr("'emb'"), HasSubstr("element 3"), HasSubstr("NaN")));
  EXPECT_EQ(partly_bad.code(), absl::StatusCode::kInvalidArgument);
  // Nothing of the bad pushes was applied.
  EXPECT_THAT(Rows(store, "emb", {1, 2}), ElementsAre(ElementsAre(0, 0), ElementsAre(0, 0)));
}

TEST(EmbeddingTableTest, RecreatingKeepsRowsAndADifferentSpecIsRejected) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateTablesRequest({Table("emb", 2, ConstantInit(1))})).ok());
  ASSERT_TRUE(store.PushSparse(SparsePush("emb", {4}, {1, 1})).ok());

  EXPECT_TRUE(store.Create(CreateTablesRequest({Table("emb", 2, ConstantInit(1))})).ok());
  const absl::Status other_dim = store.Create(CreateTablesRequest({Table("emb", 3)}));
  const absl::Status other_optimizer =
      store.Create(CreateTablesRequest({Table("emb", 2, ConstantInit(1), SgdOptimizer(0.1f))}));
  const absl::Status bad_dim = store.Create(CreateTablesRequest({Table("x", 0)}));

  EXPECT_THAT(Rows(store, "emb", {4}), ElementsAre(ElementsAre(2, 2)));
  EXPECT_EQ(other_dim.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(other_dim.message()), AllOf(HasSubstr("'emb'"), HasSubstr("dim 3")));
  EXPECT_EQ(other_optimizer.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(other_optimizer.message()), HasSubstr("sgd(lr=0.1)"));
  EXPECT_EQ(bad_dim.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.num_tables(), 1);
}

}  // namespace
}  // namespace tj
