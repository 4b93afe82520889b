// tj-bench-goodput --accounting: the coordinator's goodput figure (jobcontrol/goodput.h, merged
// over coordinator restarts as the operator and `tjctl run` merge it) against goodput measured
// from outside on the same job: the wall time of a fault-free run of the same steps over the wall
// time of the run with faults (workers SIGKILLed and restarted at once, the coordinator SIGKILLed
// and restarted, restoring its newest checkpoint). Both ratios are relative to a fault-free run,
// so the coordinator's is its goodput with faults over its goodput without (start-up and
// checkpoint saves happen in both runs).
#pragma once

#include <string>

namespace tj::bench {

struct AccountingConfig {
  std::string train_binary;
  std::string data;
  std::string dir = "/var/tmp";
  int workers = 4;
  int step_ms = 20;
  int64_t steps = 6000;
  int64_t checkpoint_every = 1000;  // TJ_CHECKPOINT_INTERVAL_STEPS
  double worker_kill_every_s = 8;   // a worker SIGKILLed (and restarted at once) this often
  int chief_kill_at = 3;            // the coordinator instead at this fault (1-based; 0: never)
  int runs = 1;                     // fault-free and faulty pairs
  bool keep = false;
  std::string json_path;
};

int RunAccounting(const AccountingConfig& config);

}  // namespace tj::bench
