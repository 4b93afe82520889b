// One running parameter-server task: a VariableStore served over gRPC on a listening address. Used
// by the tj-ps binary and by tests that want a real PS in-process.
#pragma once

#include <grpcpp/server.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/ps/ps_service.h"
#include "coordinator/ps/variable_store.h"

namespace tj {

class PsServer {
 public:
  // Listens on `address` ("host:port"; port 0 picks a free one) and starts serving. Unavailable
  // when the address cannot be bound (in use, or not a local address).
  static absl::StatusOr<std::unique_ptr<PsServer>> Start(std::string address, int ps_task);
  // The same with `options` instead of PsServiceOptionsFromEnvironment() (tests).
  static absl::StatusOr<std::unique_ptr<PsServer>> Start(std::string address, int ps_task,
                                                         PsServiceOptions options);

  PsServer(const PsServer&) = delete;
  PsServer& operator=(const PsServer&) = delete;
  // Shuts down with no grace period if Shutdown was not called.
  ~PsServer();

  int port() const { return port_; }
  // The host of the requested address with the bound port, e.g. "127.0.0.1:40123".
  const std::string& address() const { return address_; }
  int ps_task() const { return service_.ps_task(); }
  uint64_t incarnation() const { return service_.incarnation(); }
  // What it serves, read in place (tests compare the states of two PS exactly).
  const VariableStore& store() const { return store_; }
  const PushWindow& push_window() const { return service_.push_window(); }
  const PsCounters& counters() const { return service_.counters(); }

  // Refuses new calls (UNAVAILABLE), waits up to `grace` for running ones, then cancels what is
  // left and closes every connection. Blocks until done. Safe to call from any thread and more than
  // once; only the first call counts.
  void Shutdown(absl::Duration grace = absl::Seconds(5));
  // Blocks until the server has shut down.
  void Wait();

 private:
  PsServer(int ps_task, std::string address, PsServiceOptions options);

  std::string address_;
  int port_ = 0;
  // Destroyed in reverse order: the server stops before the service and store it uses go away.
  VariableStore store_;
  PsService service_;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<bool> shutdown_started_{false};
};

}  // namespace tj
