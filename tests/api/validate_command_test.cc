// `tjctl validate`: output format and exit codes, over real files.
#include "tjctl/validate_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

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
