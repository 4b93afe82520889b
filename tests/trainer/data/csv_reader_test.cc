#include "trainer/data/csv_reader.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/trainer/test_files.h"

namespace tj::train {
namespace {

using testing::DigitsCsvPath;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::WriteFile;
using testing::WriteGzip;

constexpr char kSmall[] = "f1,f2,label\n1,2,0\n3.5,-4,2\n5,6e-1,1\n";

TEST(CsvReaderTest, ReadsHeaderFeaturesAndLabels) {
  auto data = ReadCsv(WriteFile("small.csv", kSmall));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ((*data)->num_examples(), 3);
  EXPECT_EQ((*data)->dim(), 2);
  EXPECT_EQ((*data)->num_classes(), 3);  // inferred: largest label + 1
  auto batch = (*data)->Read(0, 3);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->kind, BatchKind::kDense);
  EXPECT_THAT(batch->dense, ElementsAre(1, 2, 3.5, -4, 5, 0.6f));
  EXPECT_THAT(batch->labels, ElementsAre(0, 2, 1));
}

TEST(CsvReaderTest, GzipIsDetectedByContentNotName) {
  auto plain = ReadCsv(WriteFile("plain.csv", kSmall));
  auto gzip = ReadCsv(WriteGzip("compressed_without_suffix.csv", kSmall));
  ASSERT_TRUE(plain.ok() && gzip.ok()) << gzip.status();
  EXPECT_EQ((*plain)->Read(0, 3)->dense, (*gzip)->Read(0, 3)->dense);
  EXPECT_EQ((*plain)->Read(0, 3)->labels, (*gzip)->Read(0, 3)->labels);
}

TEST(CsvReaderTest, LabelColumnDelimiterAndHeaderOptions) {
  CsvOptions options{
      .label_column = 0, .header = CsvHeader::kAbsent, .delimiter = ';', .num_classes = 5};
  auto data = ReadCsv(WriteFile("first.csv", "4; 1.5 ;2\n0;3;4\n"), options);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ((*data)->num_classes(), 5);
  auto batch = (*data)->Read(0, 2);
  EXPECT_THAT(batch->dense, ElementsAre(1.5, 2, 3, 4));
  EXPECT_THAT(batch->labels, ElementsAre(4, 0));

  // A forced header drops the first line even though it is numeric.
  options = {.header = CsvHeader::kPresent};
  data = ReadCsv(WriteFile("forced.csv", "1,1\n2,0\n"), options);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ((*data)->num_examples(), 1);
}

TEST(CsvReaderTest, DetectedHeaderNeedsNoNumericCell) {
  // "x,1" has a number: it is data, and its "x" is reported rather than silently skipped.
  auto data = ReadCsv(WriteFile("typo.csv", "x,1\n2,0\n"));
  EXPECT_THAT(data.status().message(), HasSubstr("typo.csv:1: column 1: \"x\" is not a finite"));
}

TEST(CsvReaderTest, SkipsBlankLinesAndCarriageReturns) {
  auto data = ReadCsv(WriteFile("crlf.csv", "a,b\r\n1,0\r\n\r\n  \n2,1"));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_THAT((*data)->Read(0, 2)->labels, ElementsAre(0, 1));
}

TEST(CsvReaderTest, LabelsWrittenAsFloatsAreAccepted) {
  auto data = ReadCsv(WriteFile("floatlabel.csv", "1,2.0\n1,0.0\n"));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_THAT((*data)->Read(0, 2)->labels, ElementsAre(2, 0));
}

struct BadCsv {
  const char* name;
  const char* content;
  CsvOptions options;
  const char* message;
};

class CsvErrorTest : public ::testing::TestWithParam<BadCsv> {};

TEST_P(CsvErrorTest, NamesFileLineAndColumn) {
  const BadCsv& bad = GetParam();
  auto data = ReadCsv(WriteFile(bad.name, bad.content), bad.options);
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(data.status().message(), HasSubstr(bad.message));
}

INSTANTIATE_TEST_SUITE_P(
    Rows, CsvErrorTest,
    ::testing::Values(
        BadCsv{"short.csv",
               "a,b,c\n1,2,0\n1,0\n",
               {},
               "short.csv:3: expected 3 columns (as on line 1), found 2"},
        BadCsv{"long.csv",
               "1,2,0\n1,2,3,4,0\n",
               {},
               "long.csv:2: expected 3 columns (as on line 1), found 5"},
        BadCsv{"word.csv",
               "1,2,0\n1,abc,0\n",
               {},
               "word.csv:2: column 2: \"abc\" is not a finite number"},
        BadCsv{"nan.csv", "1,nan,0\n", {}, "nan.csv:1: column 2: \"nan\" is not a finite number"},
        BadCsv{"empty_cell.csv", "1,,0\n", {}, "empty_cell.csv:1: column 2: empty cell"},
        BadCsv{"frac.csv",
               "1,2,0\n1,2,1.5\n",
               {},
               "frac.csv:2: column 3: \"1.5\" is not an integer class label"},
        BadCsv{"negative.csv", "1,2,-1\n", {}, "negative.csv:1: column 3: label -1 is outside"},
        BadCsv{"range.csv",
               "1,2,0\n1,2,10\n",
               {.num_classes = 10},
               "range.csv:2: column 3: label 10 is outside [0, 10)"},
        BadCsv{"empty.csv", "", {}, "empty.csv: no data rows (the file is empty)"},
        BadCsv{"blank.csv", "\n \n", {}, "blank.csv: no data rows (the file is empty)"},
        BadCsv{
            "header_only.csv", "a,b\n", {}, "header_only.csv: no data rows (only a header line)"},
        BadCsv{"one_column.csv", "1\n2\n", {}, "one_column.csv:1: found 1 column"},
        BadCsv{"label_col.csv", "1,2\n", {.label_column = 5}, "label column 5 does not exist"}),
    [](const auto& info) {
      std::string name = info.param.name;
      return name.substr(0, name.find('.'));
    });

TEST(CsvReaderTest, MissingFileIsNotFound) {
  auto data = ReadCsv(testing::TempPath("does_not_exist.csv"));
  EXPECT_EQ(data.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(data.status().message(), HasSubstr("does_not_exist.csv: cannot open"));
}

TEST(CsvReaderTest, TruncatedGzipIsDataLoss) {
  std::string rows;
  for (int i = 0; i < 20000; ++i) rows += std::to_string(i) + "," + std::to_string(i % 3) + "\n";
  const std::string whole = WriteGzip("whole.csv.gz", rows);
  std::ifstream in(whole, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto data = ReadCsv(WriteFile("truncated.csv.gz", bytes.substr(0, bytes.size() / 2)));
  EXPECT_EQ(data.status().code(), absl::StatusCode::kDataLoss) << data.status();
  EXPECT_THAT(data.status().message(), HasSubstr("truncated.csv.gz: cannot read"));
}

TEST(CsvReaderTest, ReadsTheDigitsDataSet) {
  const std::string path = DigitsCsvPath();
  if (path.empty()) GTEST_SKIP() << "digits.csv.gz absent: apt-get install python3-sklearn";
  auto data = ReadCsv(path);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ((*data)->num_examples(), 1797);
  EXPECT_EQ((*data)->dim(), 64);
  EXPECT_EQ((*data)->num_classes(), 10);
}

}  // namespace
}  // namespace tj::train
