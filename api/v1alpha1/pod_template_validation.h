// Checks a replica's pod template: the parts trainingjob-operator reads (containers, their
// names, images, commands and env) must be well formed; everything else is the API server's
// business and is passed through unchecked.
#pragma once

#include <string>

#include "api/v1alpha1/field_error.h"
#include "api/v1alpha1/pod_template.h"

namespace tj::v1alpha1 {

// Where the job will run decides what a container needs to start.
enum class ValidationTarget {
  kCluster,  // the operator creates pods: every container needs an image
  kLocal,    // `tjctl run` starts processes: every container needs a command; images are unused
};

// The environment variable the operator and `tjctl run` set on every replica.
inline constexpr std::string_view kTfConfigEnv = "TF_CONFIG";

// `path` is the template's field path ("spec.replicaSpecs.Worker.template").
void ValidatePodTemplate(const PodTemplate& pod_template, const std::string& path,
                         ValidationTarget target, FieldErrors& errors);

}  // namespace tj::v1alpha1
