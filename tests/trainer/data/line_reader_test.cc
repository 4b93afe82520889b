#include "trainer/data/line_reader.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/trainer/test_files.h"

namespace tj::train {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> ReadAll(const std::string& path) {
  auto reader = LineReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> lines;
  std::string_view line;
  for (;;) {
    absl::StatusOr<bool> more = (*reader)->Next(line);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    lines.emplace_back(line);
  }
  return lines;
}

TEST(LineReaderTest, SplitsLinesWithOrWithoutFinalNewline) {
  EXPECT_THAT(ReadAll(testing::WriteFile("a.txt", "one\r\ntwo\n\nthree")),
              ElementsAre("one", "two", "", "three"));
  EXPECT_THAT(ReadAll(testing::WriteFile("b.txt", "one\n")), ElementsAre("one"));
  EXPECT_THAT(ReadAll(testing::WriteFile("c.txt", "")), ElementsAre());
}

TEST(LineReaderTest, LinesLongerThanTheBufferAndGzip) {
  const std::string long_line(3 << 20, 'x');  // three times the 1 MiB read chunk
  const std::string content = "short\n" + long_line + "\nend\n";
  EXPECT_THAT(ReadAll(testing::WriteFile("long.txt", content)),
              ElementsAre("short", long_line, "end"));
  EXPECT_THAT(ReadAll(testing::WriteGzip("long.gz", content)),
              ElementsAre("short", long_line, "end"));
}

TEST(LineReaderTest, CountsLines) {
  auto reader = LineReader::Open(testing::WriteFile("count.txt", "a\nb\nc\n"));
  ASSERT_TRUE(reader.ok());
  std::string_view line;
  ASSERT_TRUE(*(*reader)->Next(line));
  ASSERT_TRUE(*(*reader)->Next(line));
  EXPECT_EQ(line, "b");
  EXPECT_EQ((*reader)->line_number(), 2);
}

}  // namespace
}  // namespace tj::train
