#include "trainer/data/libsvm_reader.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/trainer/test_files.h"

namespace tj::train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::WriteFile;
using testing::WriteGzip;

TEST(LibsvmReaderTest, OneBasedIsDetectedAndShifted) {
  auto data = ReadLibsvm(WriteFile("one.svm", "+1 1:0.5 3:2\n-1 2:1\n0\n1 4:1.5 # a comment\n"));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ((*data)->num_examples(), 4);
  EXPECT_EQ((*data)->dim(), 4);
  EXPECT_EQ((*data)->num_classes(), 2);
  auto batch = (*data)->Read(0, 4);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->kind, BatchKind::kSparse);
  EXPECT_THAT(batch->row_offsets, ElementsAre(0, 2, 3, 3, 4));
  EXPECT_THAT(batch->ids, ElementsAre(0, 2, 1, 3));
  EXPECT_THAT(batch->values, ElementsAre(0.5, 2, 1, 1.5));
  EXPECT_THAT(batch->labels, ElementsAre(1, 0, 0, 1));
  EXPECT_TRUE(batch->fields.empty());
}

TEST(LibsvmReaderTest, ZeroBasedIsDetectedFromAnIndexZero) {
  auto data = ReadLibsvm(WriteGzip("zero.svm.gz", "1 0:1 5:2\n0 qid:3 2:1\n"));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ((*data)->dim(), 6);
  EXPECT_THAT((*data)->Read(0, 2)->ids, ElementsAre(0, 5, 2));
}

TEST(LibsvmReaderTest, ExplicitBaseAndWidthAndClasses) {
  LibsvmOptions options{
      .index_base = LibsvmIndexBase::kZeroBased, .num_features = 100, .num_classes = 3};
  auto data = ReadLibsvm(WriteFile("multi.svm", "2 1:1\n0 3:1\n"), options);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ((*data)->dim(), 100);
  EXPECT_EQ((*data)->num_classes(), 3);
  EXPECT_THAT((*data)->Read(0, 2)->ids, ElementsAre(1, 3));
  EXPECT_THAT((*data)->Read(0, 2)->labels, ElementsAre(2, 0));
}

TEST(LibsvmReaderTest, RangesAreSlicesOfTheFile) {
  auto data = ReadLibsvm(WriteFile("slices.svm", "1 1:1 2:1\n0 3:1\n1 1:2 4:1 5:1\n"));
  ASSERT_TRUE(data.ok());
  auto batch = (*data)->Read(1, 3);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->num_rows, 2);
  EXPECT_THAT(batch->row_offsets, ElementsAre(0, 1, 4));
  EXPECT_THAT(batch->ids, ElementsAre(2, 0, 3, 4));
  EXPECT_THAT(batch->labels, ElementsAre(0, 1));
}

struct BadLibsvm {
  const char* name;
  const char* content;
  LibsvmOptions options;
  const char* message;
};

class LibsvmErrorTest : public ::testing::TestWithParam<BadLibsvm> {};

TEST_P(LibsvmErrorTest, NamesFileAndLine) {
  const BadLibsvm& bad = GetParam();
  auto data = ReadLibsvm(WriteFile(bad.name, bad.content), bad.options);
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(data.status().message(), HasSubstr(bad.message));
}

INSTANTIATE_TEST_SUITE_P(
    Lines, LibsvmErrorTest,
    ::testing::Values(
        BadLibsvm{
            "label.svm", "1 1:1\nyes 2:1\n", {}, "label.svm:2: label \"yes\" is not an integer"},
        BadLibsvm{"binary.svm", "1 1:1\n2 2:1\n", {}, "binary.svm:2: binary label 2 is not one of"},
        BadLibsvm{
            "multi.svm", "5 1:1\n", {.num_classes = 3}, "multi.svm:1: label 5 is outside [0, 3)"},
        BadLibsvm{"token.svm", "1 1:1\n0 7\n", {}, "token.svm:2: \"7\" is not index:value"},
        BadLibsvm{
            "value.svm", "1 1:x\n", {}, "value.svm:1: value in \"1:x\" is not a finite number"},
        BadLibsvm{"order.svm", "1 1:1\n\n1 3:1 2:1\n", {}, "order.svm:3: index 2 follows 3"},
        BadLibsvm{"dup.svm", "1 3:1 3:1\n", {}, "dup.svm:1: index 3 follows 3"},
        BadLibsvm{"zero.svm",
                  "1 0:1\n",
                  {.index_base = LibsvmIndexBase::kOneBased},
                  "zero.svm:1: index 0 is below 1"},
        BadLibsvm{"negative.svm", "1 -2:1\n", {}, "negative.svm:1: index -2 is below 0"},
        BadLibsvm{"wide.svm",
                  "1 1:1\n1 9:1\n0 2:1\n",
                  {.num_features = 4},
                  "wide.svm:2: index 9 is beyond num_features 4"},
        BadLibsvm{"empty.svm", "# only a comment\n\n", {}, "empty.svm: no data rows"}),
    [](const auto& info) {
      std::string name = info.param.name;
      return name.substr(0, name.find('.'));
    });

}  // namespace
}  // namespace tj::train
