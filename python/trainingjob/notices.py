"""What a preemption notice leads to, without TensorFlow (tested on its own): the rules of
coordinator/preemption/preemption_handler.h for a TensorFlow chief.

- a worker: logged and counted; TensorFlow's coordinator reruns its closures elsewhere and takes
  the replacement back, so training goes on;
- the chief or a PS: the next `run` boundary joins and checkpoints; when the deadline leaves room
  for more (more than three checkpoint times), training goes on and a second checkpoint is taken
  two checkpoint times before the deadline; then the process exits with the restart code.
Only the first chief/PS notice leads; later ones are logged and ignored. A notice for a task the
job does not have is refused.
"""
import enum
import threading
import time
from typing import Callable, Optional, Tuple


class Action(enum.Enum):
    CONTINUE = 0
    SAVE = 1  # join, checkpoint, then ask checkpoint_done() whether to exit


class _Phase(enum.Enum):
    IDLE = 0
    FIRST_REQUESTED = 1
    COUNTDOWN = 2
    FINAL_REQUESTED = 3


class NoticePolicy:
    def __init__(self, num_workers: int, num_ps: int, grace_period_seconds: float,
                 restart_exit_code: int, on_event: Callable[[str, Optional[str]], None],
                 clock: Callable[[], float] = time.time):
        self._num_workers = num_workers
        self._num_ps = num_ps
        self._grace = grace_period_seconds
        self._code = restart_exit_code
        self._on_event = on_event
        self._clock = clock
        self._mu = threading.Lock()
        self._phase = _Phase.IDLE
        self._leader = ""
        self._deadline = 0.0
        self._final_at = float("inf")
        self._checkpoint_time = 0.0
        self.requested = threading.Event()  # cheap check at each run boundary

    def _exists(self, task_type: str, index: int) -> bool:
        if index < 0:
            return False
        if task_type == "chief":
            return index == 0
        if task_type == "ps":
            return index < self._num_ps
        if task_type == "worker":
            return index < self._num_workers
        return False

    def notice(self, task_type: str, index: int, reason: str,
               deadline: Optional[float]) -> Tuple[bool, str]:
        task = f"{task_type}:{index}"
        now = self._clock()
        if deadline is None:
            deadline = now + self._grace
        if not self._exists(task_type, index):
            decision = (f"refused: no task {task} in this job ({self._num_workers} workers, "
                        f"{self._num_ps} PS)")
            self._on_event(f"notice for {task} ({reason}) {decision}", "tj_notices_refused_total")
            return False, decision
        if task_type == "worker":
            decision = ("training goes on: TensorFlow's coordinator reruns its closures on the "
                        "other workers and takes its replacement back")
            self._on_event(f"notice for {task} ({reason}): {decision}",
                           "tj_coordinator_preemption_notices_total")
            return True, decision
        with self._mu:
            if self._phase != _Phase.IDLE:
                decision = f"ignored: already handling the notice for {self._leader}"
                leading = False
            else:
                self._phase = _Phase.FIRST_REQUESTED
                self._leader = task
                self._deadline = deadline
                leading = True
                decision = (f"checkpoint at the next step boundary, then exit {self._code} for a "
                            f"restart ({max(0.0, deadline - now):.1f} s to the deadline)")
        if leading:
            self.requested.set()
        self._on_event(f"notice for {task} ({reason}): {decision}",
                       "tj_coordinator_preemption_notices_total")
        return leading, decision

    def at_boundary(self) -> Action:
        """Called at a run boundary while `requested` is set: what to do now."""
        with self._mu:
            if self._phase == _Phase.FIRST_REQUESTED:
                return Action.SAVE
            if self._phase == _Phase.COUNTDOWN and self._clock() >= self._final_at:
                self._phase = _Phase.FINAL_REQUESTED
                return Action.SAVE
            return Action.CONTINUE

    def checkpoint_done(self, took: float) -> bool:
        """After a preemption checkpoint that took `took` s: whether to exit now (else training
        goes on until the final checkpoint)."""
        with self._mu:
            self._checkpoint_time = max(self._checkpoint_time, took)
            if self._phase == _Phase.FIRST_REQUESTED:
                remaining = self._deadline - self._clock()
                if remaining > 3 * took + 1.0:
                    self._phase = _Phase.COUNTDOWN
                    self._final_at = self._deadline - 2 * took - 0.5
                    return False
            self._phase = _Phase.FINAL_REQUESTED
            self.requested.set()
            return True

    @property
    def leader(self) -> str:
        with self._mu:
            return self._leader
