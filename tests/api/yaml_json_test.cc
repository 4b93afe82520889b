#include "api/v1alpha1/yaml_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tj::v1alpha1 {
namespace {

using ::testing::HasSubstr;

nlohmann::json MustParse(std::string_view text) {
  YamlDocument doc = ParseYamlDocument(text);
  EXPECT_TRUE(doc.errors.empty()) << FormatFieldErrors("test.yaml", doc.errors);
  return doc.value;
}

FieldError OnlyError(std::string_view text) {
  YamlDocument doc = ParseYamlDocument(text);
  EXPECT_EQ(doc.errors.size(), 1u) << FormatFieldErrors("test.yaml", doc.errors);
  EXPECT_TRUE(doc.value.is_null());
  return doc.errors.empty() ? FieldError{} : doc.errors.front();
}

// Scalars resolve as kubectl's reader (go-yaml v2, YAML 1.1) resolves them.
struct ScalarCase {
  std::string yaml;
  nlohmann::json expected;
};

void PrintTo(const ScalarCase& c, std::ostream* os) { *os << "v: " << c.yaml; }

class ScalarResolutionTest : public ::testing::TestWithParam<ScalarCase> {};

TEST_P(ScalarResolutionTest, ResolvesLikeKubectl) {
  const nlohmann::json value = MustParse("v: " + GetParam().yaml)["v"];
  EXPECT_EQ(value, GetParam().expected) << GetParam().yaml;
  EXPECT_EQ(value.type(), GetParam().expected.type()) << GetParam().yaml;
}

INSTANTIATE_TEST_SUITE_P(
    Scalars, ScalarResolutionTest,
    ::testing::Values(
        ScalarCase{"plain", "plain"}, ScalarCase{"\"quoted\"", "quoted"}, ScalarCase{"'42'", "42"},
        ScalarCase{"\"yes\"", "yes"}, ScalarCase{"yes", true}, ScalarCase{"No", false},
        ScalarCase{"on", true}, ScalarCase{"OFF", false}, ScalarCase{"true", true},
        ScalarCase{"False", false}, ScalarCase{"~", nullptr}, ScalarCase{"null", nullptr},
        ScalarCase{"NULL", nullptr}, ScalarCase{"", nullptr}, ScalarCase{"42", 42},
        ScalarCase{"-5", -5}, ScalarCase{"+12", 12}, ScalarCase{"1_000", 1000},
        ScalarCase{"0644", 420}, ScalarCase{"0o17", 15}, ScalarCase{"0x1F", 31},
        ScalarCase{"0b101", 5}, ScalarCase{"08", 8.0},
        ScalarCase{"-9223372036854775808", INT64_MIN},
        ScalarCase{"18446744073709551615", UINT64_MAX}, ScalarCase{"99999999999999999999", 1e20},
        ScalarCase{"1.5", 1.5}, ScalarCase{"1.10", 1.1}, ScalarCase{".5", 0.5},
        ScalarCase{"1e3", 1000.0}, ScalarCase{"1.2.3", "1.2.3"},
        ScalarCase{"2024-01-01", "2024-01-01"}, ScalarCase{"-x", "-x"},
        ScalarCase{"!!str 42", "42"}, ScalarCase{"!!int \"12\"", 12}, ScalarCase{"!!float 1", 1.0},
        ScalarCase{"|\n  a\n  b", "a\nb"}, ScalarCase{"127.0.0.1:2222", "127.0.0.1:2222"}));

TEST(YamlJsonTest, ConvertsMappingsAndSequences) {
  EXPECT_EQ(MustParse("a: [1, two, {b: c}]\nd: {}\ne: []\n"),
            nlohmann::json::parse(R"({"a": [1, "two", {"b": "c"}], "d": {}, "e": []})"));
}

TEST(YamlJsonTest, ReadsJsonText) {
  EXPECT_EQ(
      MustParse(R"({"a": "yes", "b": [1, 2.5, null, true], "c": {"d": "0644"}})"),
      nlohmann::json::parse(R"({"a": "yes", "b": [1, 2.5, null, true], "c": {"d": "0644"}})"));
}

TEST(YamlJsonTest, ResolvesAliasesAndMergeKeys) {
  const nlohmann::json value = MustParse(
      "base: &base {image: img, command: [tj-train]}\n"
      "c1: {<<: *base, name: one}\n"
      "c2:\n  <<: *base\n  image: other\n");
  EXPECT_EQ(value["c1"],
            nlohmann::json::parse(R"({"image": "img", "command": ["tj-train"], "name": "one"})"));
  EXPECT_EQ(value["c2"]["image"], "other");  // the mapping's own key wins over the merge
}

TEST(YamlJsonTest, SyntaxErrorHasLineAndColumn) {
  FieldError error = OnlyError("a: 1\nb: [1, 2\nc: 3\n");
  EXPECT_EQ(error.field, "");
  EXPECT_GT(error.line, 1);
  EXPECT_GT(error.column, 0);
  EXPECT_THAT(error.message, HasSubstr("YAML syntax error"));
}

TEST(YamlJsonTest, BadIndentationReportsItsLine) {
  FieldError error = OnlyError("metadata:\n  name: job\n    labels: x\n");
  EXPECT_EQ(error.line, 3);
  EXPECT_EQ(error.column, 11);
  EXPECT_EQ(FormatFieldError("job.yaml", error),
            "job.yaml:3:11: YAML syntax error: illegal map value");
}

TEST(YamlJsonTest, DuplicateKeyIsAnErrorNamingBothLines) {
  FieldError error = OnlyError("spec:\n  replicas: 1\n  replicas: 2\n");
  EXPECT_EQ(error.line, 3);
  EXPECT_EQ(error.column, 3);
  EXPECT_EQ(error.message, "duplicate key \"replicas\" (first at line 2)");
}

TEST(YamlJsonTest, NonFiniteNumbersAreRefused) {
  FieldError error = OnlyError("a: 1\nb: .inf\n");
  EXPECT_EQ(error.line, 2);
  EXPECT_THAT(error.message, HasSubstr("not representable in JSON"));
}

TEST(YamlJsonTest, UnsupportedTagsAreRefused) {
  EXPECT_THAT(OnlyError("a: !!int abc\n").message, HasSubstr("cannot use \"abc\""));
  EXPECT_THAT(OnlyError("a: !custom x\n").message, HasSubstr("unsupported YAML tag !custom"));
}

TEST(YamlJsonTest, ComplexKeysAreRefused) {
  EXPECT_THAT(OnlyError("? [a, b]\n: c\n").message, HasSubstr("mapping key must be a string"));
}

TEST(YamlJsonTest, EmptyTextIsAnError) {
  EXPECT_THAT(OnlyError("").message, HasSubstr("empty"));
  EXPECT_THAT(OnlyError("# only a comment\n").message, HasSubstr("empty"));
}

TEST(YamlJsonTest, OneDocumentOnly) {
  FieldError error = OnlyError("a: 1\n---\nb: 2\n");
  EXPECT_EQ(error.line, 3);
  EXPECT_THAT(error.message, HasSubstr("holds 2 YAML documents"));
  // Empty documents are skipped, as kubectl skips them.
  EXPECT_EQ(MustParse("---\na: 1\n---\n"), nlohmann::json::parse(R"({"a": 1})"));
}

TEST(YamlJsonTest, TooDeepIsRefused) {
  std::string text = "a: ";
  for (int i = 0; i < kMaxYamlDepth + 5; ++i) text += "[";
  for (int i = 0; i < kMaxYamlDepth + 5; ++i) text += "]";
  EXPECT_THAT(OnlyError(text).message, HasSubstr("nested deeper than"));
}

TEST(YamlJsonTest, TooDeepIsRefusedAtTheLineOfTheNodeTooDeep) {
  // Line n starts the n-th nested mapping; the one past kMaxYamlDepth is refused.
  std::string text;
  for (int i = 0; i <= kMaxYamlDepth; ++i)
    text += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  text += std::string(kMaxYamlDepth + 1, ' ') + "k: 1\n";
  FieldError error = OnlyError(text);
  EXPECT_EQ(error.message, "nested deeper than 100 levels");
  EXPECT_EQ(error.line, kMaxYamlDepth + 1);
}

TEST(YamlJsonTest, ARecursiveAliasIsRefusedAtTheAlias) {
  FieldError error = OnlyError("a: &a [*a, *a]");
  EXPECT_EQ(error.message, "alias *a refers to a node that contains it (a recursive alias)");
  EXPECT_EQ(error.line, 1);
  EXPECT_EQ(error.column, 8);
}

TEST(YamlJsonTest, AliasExpansionIsBoundedAtTheAliasThatCrossesIt) {
  // A list of 1,001 nodes (the list and its items) and 98 aliases of it, with the root, two keys
  // and the list of copies: 99,103 nodes, within the bound. The 99th alias, on line 101, crosses
  // it.
  std::string text = "base: &base [";
  for (int i = 0; i < 999; ++i) text += "0, ";
  text += "0]\ncopies:\n";
  for (int i = 0; i < 98; ++i) text += "- *base\n";
  EXPECT_EQ(MustParse(text)["copies"].size(), 98u);
  text += "- *base\n";
  FieldError error = OnlyError(text);
  EXPECT_EQ(error.message, "alias *base: alias expansion exceeds 100000 nodes");
  EXPECT_EQ(error.line, 101);
  EXPECT_EQ(error.column, 3);
}

TEST(YamlJsonTest, AliasCountIsBounded) {
  std::string text = "one: &one 1\nmany: [";
  for (size_t i = 0; i <= kMaxYamlAliases; ++i) text += "*one, ";
  text += "]\n";
  EXPECT_THAT(OnlyError(text).message, HasSubstr("more than 1000 aliases"));
}

TEST(YamlJsonTest, ALongStringAliasedManyTimesIsBounded) {
  std::string text = "s: &s " + std::string(size_t{1} << 20, 'x') + "\nl: [";
  for (int i = 0; i < 20; ++i) text += "*s, ";
  text += "]\n";
  EXPECT_THAT(OnlyError(text).message, HasSubstr("alias expansion exceeds 16 MiB of scalars"));
}

TEST(YamlJsonTest, TextLargerThanAManifestIsRefused) {
  EXPECT_THAT(OnlyError(std::string(kMaxManifestBytes + 1, ' ')).message,
              HasSubstr("larger than 3 MiB"));
}

TEST(YamlJsonTest, MergeKeysOfAnAliasStillWork) {
  EXPECT_EQ(MustParse("d: &d {x: 1, y: 2}\ne: {<<: *d, y: 3}\n")["e"],
            nlohmann::json::parse(R"({"x": 1, "y": 3})"));
}

TEST(YamlJsonTest, StatusOrFormPrefixesTheSource) {
  absl::StatusOr<nlohmann::json> value = YamlToJson("a: [1,\n", "job.yaml");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(value.status().message()), HasSubstr("job.yaml:"));
  EXPECT_EQ(*YamlToJson("a: 1", "job.yaml"), nlohmann::json::parse(R"({"a": 1})"));
}

}  // namespace
}  // namespace tj::v1alpha1
