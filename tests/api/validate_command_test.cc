// `tjctl validate`: output format and exit codes, over real files.
#include "tjctl/validate_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/support/allocation_counter.h"

namespace tj {
namespace {

const std::string kDigits = std::string(TJ_API_TESTDATA) + "/digits.yaml";

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

struct Result {
  int exit_code;
  std::string output;
};

Result Validate(std::vector<std::string> files, bool local = false) {
  std::ostringstream out;
  ValidateOptions options{std::move(files), local};
  const int code = RunValidate(options, out);
  return {code, out.str()};
}

TEST(ValidateCommandTest, ValidFile) {
  Result r = Validate({kDigits});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, kDigits + ": valid\n");
}

TEST(ValidateCommandTest, EveryProblemOnItsOwnLine) {
  const std::string path = WriteFile("bad.yaml",
                                     "apiVersion: trainingjob.dev/v1alpha1\n"
                                     "kind: TrainingJob\n"
                                     "metadata: {name: job}\n"
                                     "spec:\n"
                                     "  replicaSpecs:\n"
                                     "    PS: {replicas: 0, template: {spec: {containers: [{name: "
                                     "main, image: img}]}}}\n"
                                     "  runPolicy: {activeDeadlineSeconds: -1}\n");
  Result r = Validate({path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            path + ": spec.replicaSpecs.Coordinator: Required value\n" + path +
                ": spec.replicaSpecs.PS.replicas: Invalid value: 0: must be greater than or equal "
                "to 1\n" +
                path + ": spec.replicaSpecs.Worker: Required value\n" + path +
                ": spec.runPolicy.activeDeadlineSeconds: Invalid value: -1: must be greater than "
                "or equal to 1\n");
}

TEST(ValidateCommandTest, SyntaxErrorWithLineAndColumn) {
  const std::string path = WriteFile("syntax.yaml", "kind: TrainingJob\nspec: [1,\n");
  Result r = Validate({path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, ::testing::StartsWith(path + ":3:1: YAML syntax error: "));
}

TEST(ValidateCommandTest, AllFilesAreCheckedAndAnyProblemFails) {
  const std::string missing = ::testing::TempDir() + "/missing.yaml";
  Result r = Validate({missing, kDigits});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            missing + ": cannot read: No such file or directory\n" + kDigits + ": valid\n");
}

TEST(ValidateCommandTest, LocalRules) {
  const std::string path = WriteFile(
      "local.yaml",
      "apiVersion: trainingjob.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: job}\n"
      "spec:\n  replicaSpecs:\n"
      "    Coordinator: {template: {spec: {containers: [{name: c, command: [tj-train]}]}}}\n"
      "    PS: {template: {spec: {containers: [{name: c, command: [tj-train]}]}}}\n"
      "    Worker: {template: {spec: {containers: [{name: c, image: img}]}}}\n");
  Result local = Validate({path}, /*local=*/true);
  EXPECT_EQ(local.exit_code, 1);
  EXPECT_EQ(local.output, path +
                              ": spec.replicaSpecs.Worker.template.spec.containers[0].command: "
                              "Required value: tjctl run starts each container's command as a "
                              "local process\n");
  Result cluster = Validate({path});
  EXPECT_EQ(cluster.exit_code, 1);
  EXPECT_THAT(cluster.output,
              ::testing::HasSubstr("Coordinator.template.spec.containers[0].image"));
}

// The classic "billion laughs": nine levels of nine aliases each, 10^9 nodes once expanded.
std::string NineLevelAliasBomb() {
  std::string text = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char level = 'b'; level <= 'i'; ++level) {
    const char below = static_cast<char>(level - 1);
    absl::StrAppend(&text, std::string(1, level), ": &", std::string(1, level), " [");
    for (int i = 0; i < 9; ++i) absl::StrAppend(&text, i ? ", " : "", "*", std::string(1, below));
    text += "]\n";
  }
  return text;
}

TEST(ValidateCommandTest, AliasBombsFailFastNamingTheAliasWithBoundedMemory) {
  const std::string recursive = WriteFile("recursive.yaml", "a: &a [*a, *a]\n");
  const std::string laughs = WriteFile("laughs.yaml", NineLevelAliasBomb());
  tj::testing::ResetLargestAllocation();

  Result r = Validate({recursive, laughs});

  EXPECT_LT(tj::testing::TotalAllocatedSinceReset(), size_t{64} << 20);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output,
              ::testing::HasSubstr(recursive + ":1:8: alias *a refers to a node that contains it"));
  // a: 10 nodes, b: 91, c: 820, d: 7381, e: 66430; the line of f crosses 100,000.
  EXPECT_THAT(r.output, ::testing::HasSubstr(laughs + ":6:"));
  EXPECT_THAT(r.output, ::testing::HasSubstr(": alias *e: alias expansion exceeds 100000 nodes\n"));
}

TEST(ValidateCommandTest, AFileLargerThanAManifestIsRefusedUnread) {
  const std::string path = WriteFile("huge.yaml", std::string((size_t{3} << 20) + 1, '#'));
  Result r = Validate({path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, path + ": larger than 3 MiB: not a TrainingJob manifest\n");
}

TEST(ValidateCommandTest, CommandLine) {
  CLI::App app;
  int exit_code = -1;
  ValidateOptions options;
  AddValidateCommand(app, options, exit_code);
  std::vector<std::string> args = {kDigits, "--local", "validate"};  // CLI11 parses in reverse
  app.parse(args);
  EXPECT_EQ(options.files, std::vector<std::string>{kDigits});
  EXPECT_TRUE(options.local);
  EXPECT_EQ(exit_code, 0);
}

}  // namespace
}  // namespace tj
