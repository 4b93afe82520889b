// Reading the coordinator's progress report ($TJ_PROGRESS_FILE, api/v1alpha1/training_progress.h).
// The coordinator replaces the file atomically, but a missing file (not written yet), a partial
// one (a writer that does not rename) or an invalid one must never stop tjctl: all read as nullopt.
#pragma once

#include <optional>
#include <string>

#include "api/v1alpha1/training_progress.h"

namespace tj::local {

std::optional<v1alpha1::TrainingProgress> ReadProgressFile(const std::string& path);

}  // namespace tj::local
