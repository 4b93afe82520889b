// Shared helpers for the ClusterCoordinator tests: fast-recovery options and small fetch helpers.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "coordinator/cluster/cluster_coordinator.h"

namespace tj::testing {

inline CoordinatorOptions FastOptions() {
  CoordinatorOptions options;
  options.worker_recovery_timeout = absl::Seconds(60);
  options.reconnect_backoff_initial = absl::Milliseconds(10);
  options.reconnect_backoff_max = absl::Milliseconds(200);
  options.health_check_timeout = absl::Seconds(1);
  return options;
}

inline double ReadPsScalar(ClusterCoordinator& coordinator, int ps_task, const std::string& name) {
  auto value = coordinator.Schedule("ps_read", {ps_task, name});
  EXPECT_TRUE(value.ok()) << value.status();
  auto fetched = value->Fetch();
  EXPECT_TRUE(fetched.ok()) << fetched.status();
  return fetched.ok() ? fetched->double_value() : -1;
}

// A fresh path for a "function started" marker file.
inline std::string MarkerPath(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("tj-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::filesystem::remove(path);
  return path.string();
}

}  // namespace tj::testing
