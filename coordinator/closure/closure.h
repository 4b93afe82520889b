// A Closure is one scheduled call: a registered function name, its arguments serialized once, and the
// RemoteValue its result goes to. It may run more than once (at-least-once) when a worker fails.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "coordinator/closure/remote_value.h"

namespace tj {

struct Closure {
  uint64_t id = 0;
  std::string function;
  std::string serialized_args;  // a serialized tj.v1.ValueList
  std::shared_ptr<RemoteValueState> output = std::make_shared<RemoteValueState>();

  void MarkCancelled() { output->SetCancelled(); }
};

using ClosurePtr = std::shared_ptr<Closure>;

}  // namespace tj
