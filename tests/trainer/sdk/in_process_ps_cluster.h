// Parameter servers in the test's process, each with a client, and their whole state read back
// (ps_state_view.h), for checkpoint tests that compare what a restore produced bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_server.h"
#include "tests/coordinator/ps/ps_state_view.h"

namespace tj::testing {

struct InProcessPsCluster {
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::shared_ptr<PsClient>> clients;

  // Tasks 0..num_ps-1 on free loopback ports.
  void StartServers(int num_ps) {
    for (int task = 0; task < num_ps; ++task) {
      auto server = PsServer::Start("127.0.0.1:0", task);
      ASSERT_TRUE(server.ok()) << server.status();
      clients.push_back(PsClient::Connect((*server)->address(), task));
      servers.push_back(*std::move(server));
    }
  }

  std::vector<StoreStateView> States() const {
    std::vector<StoreStateView> states;
    for (const auto& server : servers) states.push_back(ViewOf(server->store()));
    return states;
  }
};

}  // namespace tj::testing
