#include "tjctl/validate_command.h"

#include <iostream>

#include "api/v1alpha1/load.h"
#include "jobcontrol/tf_config.h"

namespace tj {

void AddValidateCommand(CLI::App& app, ValidateOptions& options, int& exit_code) {
  CLI::App* validate = app.add_subcommand(
      "validate", "check TrainingJob manifests with the rules the CRD and the operator enforce");
  validate->add_option("files", options.files, "manifest files (YAML or JSON)")->required();
  validate->add_flag("--local", options.local,
                     "use tjctl run's rules: containers need a command rather than an image");
  validate->callback([&] { exit_code = RunValidate(options, std::cout); });
}

int RunValidate(const ValidateOptions& options, std::ostream& out) {
  v1alpha1::ValidationOptions validation;
  validation.target =
      options.local ? v1alpha1::ValidationTarget::kLocal : v1alpha1::ValidationTarget::kCluster;
  int exit_code = 0;
  for (const std::string& file : options.files) {
    v1alpha1::CheckedTrainingJob checked = v1alpha1::CheckTrainingJobFile(file, validation);
    // What the operator checks before creating pods: every replica's TF_CONFIG (the Services'
    // addresses, in the manifest's namespace or "default") fits in an environment variable.
    if (checked.ok() && validation.target == v1alpha1::ValidationTarget::kCluster) {
      checked.errors = CheckClusterTfConfigSize(*checked.job);
    }
    if (checked.ok()) {
      out << file << ": valid\n";
      continue;
    }
    exit_code = 1;
    for (const v1alpha1::FieldError& error : checked.errors) {
      out << v1alpha1::FormatFieldError(file, error) << "\n";
    }
  }
  out.flush();
  return exit_code;
}

}  // namespace tj
