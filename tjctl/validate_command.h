// `tjctl validate FILE...`: checks TrainingJob manifests with the rules the CRD and the operator
// enforce, printing every problem as "FILE: field.path: message" (exit 1), or "FILE: valid".
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>
#include <vector>

namespace tj {

struct ValidateOptions {
  std::vector<std::string> files;
  // Check with `tjctl run`'s rules (containers need a command, not an image).
  bool local = false;
};

void AddValidateCommand(CLI::App& app, ValidateOptions& options, int& exit_code);
// Every file is checked, even after a bad one. Returns the exit code: 0 when all are valid.
int RunValidate(const ValidateOptions& options, std::ostream& out);

}  // namespace tj
