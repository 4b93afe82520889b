// How replicas end, for the jobcontrol tables: built field by field, because Termination gains
// fields (evicted, waited_for_ps) and a positional initializer would set the wrong one.
#pragma once

#include "jobcontrol/restart_decision.h"

namespace tj::testing {

inline Termination Exit(int code) {
  Termination t;
  t.exit_code = code;
  return t;
}
inline Termination Signal(int signal) {
  Termination t;
  t.signal = signal;
  return t;
}
inline Termination Oom() {
  Termination t = Exit(137);
  t.oom_killed = true;
  return t;
}
inline Termination Disrupted(int code) {
  Termination t = Exit(code);
  t.disrupted = true;
  return t;
}
inline Termination Evicted() {
  Termination t = Disrupted(143);
  t.evicted = true;
  return t;
}
inline Termination WaitedForPs(int code) {
  Termination t = Exit(code);
  t.waited_for_ps = true;
  return t;
}

}  // namespace tj::testing
