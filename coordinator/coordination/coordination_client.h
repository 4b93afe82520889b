// The client side of the Coordination service: what tasks, `tjctl` and the operator call on the
// coordinator. Every call has a deadline; errors name the coordinator's address.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "tj/v1/coordination.grpc.pb.h"

namespace tj {

v1::TaskId MakeTaskId(const std::string& type, int index);

class CoordinationClient {
 public:
  explicit CoordinationClient(std::string address, absl::Duration rpc_timeout = absl::Seconds(10));

  const std::string& address() const { return address_; }

  // `address`: where peers dial the task (empty: not told).
  absl::Status RegisterTask(const v1::TaskId& task, uint64_t incarnation,
                            const std::string& address = "") const;
  absl::Status Heartbeat(const v1::TaskId& task, uint64_t incarnation) const;
  absl::Status Set(const std::string& key, const std::string& value, bool allow_overwrite) const;
  // Blocks on the server up to `timeout`.
  absl::StatusOr<std::string> Get(const std::string& key, absl::Duration timeout) const;
  absl::Status Delete(const std::string& key) const;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> List(
      const std::string& prefix) const;
  absl::Status Barrier(const std::string& barrier_id, const v1::TaskId& task,
                       const std::vector<v1::TaskId>& participants, absl::Duration timeout) const;
  absl::StatusOr<std::vector<v1::TaskState>> TaskStates(const std::vector<v1::TaskId>& tasks) const;
  absl::StatusOr<v1::PreemptionNoticeResponse> SendPreemptionNotice(const v1::TaskId& task,
                                                                    const std::string& reason,
                                                                    absl::Time deadline) const;

 private:
  absl::Status Translate(const grpc::Status& status, const char* method) const;
  void SetDeadline(grpc::ClientContext& context, absl::Duration extra = absl::ZeroDuration()) const;

  std::string address_;
  absl::Duration rpc_timeout_;
  std::unique_ptr<v1::Coordination::Stub> stub_;
};

// Registers a task (and the address it serves on) with the coordinator and heartbeats every
// `interval` from its own thread, for as long as it lives. A coordinator that is down or restarted
// is simply tried again (and the task registered again): tasks outlive coordinators.
class HeartbeatSender {
 public:
  HeartbeatSender(std::string coordinator_address, v1::TaskId task, uint64_t incarnation,
                  std::string task_address = "", absl::Duration interval = absl::Seconds(1));
  ~HeartbeatSender();
  HeartbeatSender(const HeartbeatSender&) = delete;
  HeartbeatSender& operator=(const HeartbeatSender&) = delete;

 private:
  void Run();

  CoordinationClient client_;
  const v1::TaskId task_;
  const uint64_t incarnation_;
  const std::string task_address_;
  const absl::Duration interval_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace tj
