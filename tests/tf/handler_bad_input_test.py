"""The handler misused or outside a TrainingJob, with real TensorFlow (in-process PS cluster): a
clear error naming what is wrong, or the documented fallback (SIGTERM handling, exit 42)."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

PROGRAM = pathlib.Path(__file__).resolve().parent / "handler_bad_input_program.py"


def run(*args):
    return subprocess.run([sys.executable, str(PROGRAM), *args], capture_output=True, text=True,
                          timeout=600)


class HandlerBadInputTest(unittest.TestCase):
    def test_misuse_is_a_clear_error(self):
        done = run("errors")
        self.assertEqual(done.returncode, 0, done.stderr[-3000:])
        lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
        self.assertIn("ParameterServerStrategy", lines["default strategy"])
        self.assertTrue(lines["mirrored strategy"].startswith("TypeError"), lines)
        self.assertIn("tf.train.Checkpoint", lines["no checkpoint"])
        self.assertIn("spec.checkpoint.dir", lines["no directory"])

    def test_outside_a_job_sigterm_checkpoints_and_exits_with_the_restart_code(self):
        directory = tempfile.mkdtemp()
        first = run("fallback", directory)
        self.assertEqual(first.returncode, 42, first.stdout + first.stderr[-3000:])
        self.assertIn("not in a TrainingJob", first.stderr)
        self.assertNotIn("SIGTERM did not stop training", first.stdout)
        # The next start continues the count from the checkpoint taken at the boundary.
        second = run("fallback", directory)
        self.assertIn("restored total_run_calls 6", second.stdout, second.stderr[-3000:])


if __name__ == "__main__":
    unittest.main()
