"""A real TensorFlow ParameterServerStrategy program (examples/tf-ctr/ctr_pss.py) adopting the
`trainingjob` package, under the real `tjctl run`: it survives a preemption notice for ps-0, for
coordinator-0 and for worker-1 (and for ps-0 with a grace period long enough for two
checkpoints), a SIGKILLed PS and a SIGKILLed worker, and every run ends
Succeeded with exactly its step count in the checkpointed run counter and the status.

Run one scenario: python tf_pss_tjctl_test.py TfPssUnderTjctl.test_preempt_ps0
(the interpreter must have tensorflow-cpu and the package: scripts/install-tf.sh).
"""
import os
import pathlib
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import subprocess  # noqa: E402

from tf_job import Run, tjctl  # noqa: E402

STEPS = 80
INTERVAL = 25


class TfPssUnderTjctl(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="tf-pss-"))

    def tearDown(self):
        if not os.environ.get("TJ_KEEP_TEST_RUNS"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, grace_seconds=0, step_sleep_ms=0) -> Run:
        return Run(self.dir / "run", sys.executable, STEPS, INTERVAL, grace_seconds, step_sleep_ms)

    def assert_succeeded_exactly(self, run: Run):
        code = run.finish()
        status = run.status()
        self.assertEqual(code, 0, f"{run.output}\n{run.logs()}")
        self.assertEqual(status["phase"], "Succeeded", status)
        progress = status["progress"]
        self.assertEqual(progress["step"], STEPS, progress)
        self.assertEqual(progress["totalSteps"], STEPS, progress)
        self.assertEqual(progress["lastCheckpointStep"], STEPS, progress)
        self.assertIn("auc", progress["metrics"])
        self.assertEqual(run.checkpointed_run_calls(), STEPS)
        return status

    def assert_restored(self, status):
        self.assertGreaterEqual(status["replicas"]["tf-ctr-coordinator-0"]["starts"], 2, status)
        self.assertIn("restoredFromStep", status["progress"])

    def test_preempt_ps0(self):
        run = self.start()
        run.wait_for_step(10)
        said = run.preempt("ps-0")
        self.assertIn("notice for tf-ctr-ps-0: accepted", said)
        status = self.assert_succeeded_exactly(run)
        self.assert_restored(status)
        self.assertGreaterEqual(status["replicas"]["tf-ctr-ps-0"]["starts"], 2, status)
        # The preemption was a disruption, not a failure counted toward backoffLimit.
        self.assertEqual(status["restartCount"], 0, status)

    def test_preempt_ps0_with_grace_checkpoints_twice(self):
        # Paced so that the 70 steps left take ~21 s: the 12 s grace ends before training does.
        run = self.start(step_sleep_ms=300)
        run.wait_for_step(10)
        done = subprocess.run([tjctl(), "preempt", "tf-ctr", "ps-0", "--grace", "12",
                               "--work-dir", str(run.work_dir)], capture_output=True, text=True,
                              timeout=120)
        self.assertIn("notice for tf-ctr-ps-0: accepted", done.stdout, done.stderr)
        status = self.assert_succeeded_exactly(run)
        self.assert_restored(status)
        events = "\n".join(status["progress"]["events"])
        self.assertIn("training on until the final checkpoint before the deadline", events)
        self.assertIn("exit 42 for a restart", events)

    def test_preempt_coordinator(self):
        run = self.start()
        run.wait_for_step(10)
        said = run.preempt("coordinator-0")
        self.assertIn("notice for tf-ctr-coordinator-0: accepted", said)
        status = self.assert_succeeded_exactly(run)
        self.assert_restored(status)

    def test_preempt_worker_keeps_training(self):
        run = self.start()
        run.wait_for_step(10)
        said = run.preempt("worker-1")
        self.assertIn("notice for tf-ctr-worker-1: accepted", said)
        status = self.assert_succeeded_exactly(run)
        # Training went on: the coordinator never restarted, the worker did.
        self.assertEqual(status["replicas"]["tf-ctr-coordinator-0"]["starts"], 1, status)
        self.assertGreaterEqual(status["replicas"]["tf-ctr-worker-1"]["starts"], 2, status)
        self.assertTrue(any("notice for worker:1" in e for e in status["progress"]["events"]),
                        status["progress"])

    def test_sigkilled_ps_restarts_from_checkpoint(self):
        run = self.start()
        run.wait_for_step(INTERVAL + 5)  # a periodic checkpoint exists
        run.kill("ps-0")
        status = self.assert_succeeded_exactly(run)
        self.assert_restored(status)
        self.assertGreaterEqual(status["progress"]["restoredFromStep"], INTERVAL, status)

    def test_sigkilled_worker_keeps_training(self):
        run = self.start()
        run.wait_for_step(10)
        run.kill("worker-1")
        status = self.assert_succeeded_exactly(run)
        self.assertEqual(status["replicas"]["tf-ctr-coordinator-0"]["starts"], 1, status)
        self.assertGreaterEqual(status["replicas"]["tf-ctr-worker-1"]["starts"], 2, status)


if __name__ == "__main__":
    unittest.main()
