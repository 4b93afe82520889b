"""The `trainingjob` package without TensorFlow: what a notice leads to (NoticePolicy), the
Coordination service it serves (real gRPC on 127.0.0.1, the job's role credentials), the job's
environment, and progress in tj-train's format."""
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

import grpc

from trainingjob import job
from trainingjob.coordination import CoordinationServer
from trainingjob.credentials import Authenticator, derive_role_credential, verifier
from trainingjob.notices import Action, NoticePolicy
from trainingjob.progress import Progress
from trainingjob.v1 import coordination_pb2, coordination_pb2_grpc


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def policy(clock, grace=0.0, events=None):
    sink = events if events is not None else []
    return NoticePolicy(num_workers=2, num_ps=1, grace_period_seconds=grace, restart_exit_code=42,
                        on_event=lambda what, counter: sink.append((what, counter)), clock=clock)


class NoticePolicyTest(unittest.TestCase):
    def test_ps_notice_saves_at_the_boundary_then_exits(self):
        clock = FakeClock()
        p = policy(clock)
        accepted, decision = p.notice("ps", 0, "tjctl preempt", clock.now + 1)
        self.assertTrue(accepted)
        self.assertIn("exit 42", decision)
        self.assertTrue(p.requested.is_set())
        self.assertEqual(p.at_boundary(), Action.SAVE)
        self.assertTrue(p.checkpoint_done(0.5))

    def test_long_grace_checkpoints_twice(self):
        clock = FakeClock()
        p = policy(clock)
        p.notice("chief", 0, "SIGTERM", clock.now + 60)
        self.assertEqual(p.at_boundary(), Action.SAVE)
        self.assertFalse(p.checkpoint_done(2.0))  # 60 s left: train on
        clock.now += 10
        self.assertEqual(p.at_boundary(), Action.CONTINUE)
        clock.now += 46  # two checkpoint times and a half second before the deadline
        self.assertEqual(p.at_boundary(), Action.SAVE)
        self.assertTrue(p.checkpoint_done(2.0))

    def test_worker_notice_does_not_stop_training(self):
        clock = FakeClock()
        events = []
        p = policy(clock, events=events)
        accepted, _ = p.notice("worker", 1, "tjctl preempt", None)
        self.assertTrue(accepted)
        self.assertFalse(p.requested.is_set())
        self.assertEqual(events[0][1], "tj_coordinator_preemption_notices_total")

    def test_notice_for_a_task_the_job_lacks_is_refused_and_logged(self):
        clock = FakeClock()
        events = []
        p = policy(clock, events=events)
        for task_type, index in [("ps", 1), ("worker", 2), ("chief", 1), ("evaluator", 0)]:
            accepted, decision = p.notice(task_type, index, "test", None)
            self.assertFalse(accepted)
            self.assertIn(f"no task {task_type}:{index}", decision)
        self.assertFalse(p.requested.is_set())
        self.assertEqual(len(events), 4)

    def test_only_the_first_notice_leads(self):
        clock = FakeClock()
        p = policy(clock)
        p.notice("ps", 0, "first", None)
        accepted, decision = p.notice("chief", 0, "second", None)
        self.assertFalse(accepted)
        self.assertIn("already handling the notice for ps:0", decision)


class CoordinationServiceTest(unittest.TestCase):
    SECRET = "job-secret"

    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp())
        verifiers = self.dir / "verifiers"
        verifiers.write_text("".join(
            f"{role} {verifier(derive_role_credential(self.SECRET, role))}\n"
            for role in ("coordinator", "worker", "ps", "control")))
        self.notices = []
        auth = Authenticator.from_files(None, str(verifiers))

        def on_notice(task_type, index, reason, deadline):
            self.notices.append((task_type, index, reason, deadline))
            return True, "noted"

        port = _free_port()
        self.server = CoordinationServer(f"127.0.0.1:{port}", auth, on_notice)
        self.stub = coordination_pb2_grpc.CoordinationStub(
            grpc.insecure_channel(f"127.0.0.1:{port}"))

    def tearDown(self):
        self.server.stop()

    def call(self, rpc, request, role):
        metadata = [("authorization", f"Bearer {derive_role_credential(self.SECRET, role)}")]
        return getattr(self.stub, rpc)(request, metadata=metadata, timeout=10)

    def notice(self):
        return coordination_pb2.PreemptionNoticeRequest(
            task=coordination_pb2.TaskId(type="ps", index=0), reason="test",
            deadline_unix_millis=5000)

    def test_control_role_sends_notices(self):
        response = self.call("PreemptionNotice", self.notice(), "control")
        self.assertTrue(response.accepted)
        self.assertEqual(self.notices, [("ps", 0, "test", 5.0)])

    def test_call_without_the_jobs_credential_is_refused(self):
        with self.assertRaises(grpc.RpcError) as raised:
            self.stub.PreemptionNotice(self.notice(), timeout=10)
        self.assertEqual(raised.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
        self.assertEqual(self.notices, [])

    def test_coordinator_role_may_not_send_notices(self):
        with self.assertRaises(grpc.RpcError) as raised:
            self.call("PreemptionNotice", self.notice(), "coordinator")
        self.assertEqual(raised.exception.code(), grpc.StatusCode.PERMISSION_DENIED)

    def test_operator_reads_published_progress(self):
        progress = Progress(None, self.server.publish)
        progress.update(flush=True, step=7, totalSteps=10, loss=0.5)
        response = self.call("KeyValueGet", coordination_pb2.KeyValueGetRequest(key="tj/progress"),
                             "control")
        value = json.loads(response.value)
        self.assertEqual((value["step"], value["totalSteps"], value["loss"]), (7, 10, 0.5))

    def test_missing_key_is_not_found(self):
        with self.assertRaises(grpc.RpcError) as raised:
            self.call("KeyValueGet", coordination_pb2.KeyValueGetRequest(key="tj/progress"),
                      "control")
        self.assertEqual(raised.exception.code(), grpc.StatusCode.NOT_FOUND)


class JobEnvironmentTest(unittest.TestCase):
    TF_CONFIG = json.dumps({"cluster": {"chief": ["a:1"], "ps": ["b:1"], "worker": ["c:1", "d:1"]},
                            "task": {"type": "chief", "index": 0}})

    def test_reads_the_rendered_environment(self):
        env = job.load({"TF_CONFIG": self.TF_CONFIG, "TJ_TOKEN_FILE": "/t",
                        "TJ_RESTART_EXIT_CODE": "43", "TJ_COORDINATION_ADDRESS": ":2223"})
        self.assertEqual((env.task_type, env.num_ps, env.num_workers), ("chief", 1, 2))
        self.assertEqual((env.restart_exit_code, env.coordination_address), (43, ":2223"))

    def test_outside_a_job_is_told(self):
        with self.assertRaisesRegex(job.NotInTrainingJob, "TF_CONFIG"):
            job.load({})
        with self.assertRaisesRegex(job.NotInTrainingJob, "TJ_TOKEN_FILE"):
            job.load({"TF_CONFIG": self.TF_CONFIG})

    def test_malformed_values_name_the_variable(self):
        with self.assertRaisesRegex(ValueError, "TF_CONFIG"):
            job.load({"TF_CONFIG": "{}", "TJ_TOKEN": "x"})
        with self.assertRaisesRegex(ValueError, "TJ_RESTART_EXIT_CODE"):
            job.load({"TF_CONFIG": self.TF_CONFIG, "TJ_TOKEN": "x", "TJ_RESTART_EXIT_CODE": "x"})


class ProgressTest(unittest.TestCase):
    def test_file_has_tj_trains_format_and_events(self):
        path = pathlib.Path(tempfile.mkdtemp()) / "progress.json"
        progress = Progress(str(path))
        progress.update(flush=True, step=3, totalSteps=9, metrics={"auc": 0.75})
        progress.event("notice for ps:0 (test): decided", "tj_coordinator_preemption_notices_total")
        written = json.loads(path.read_text())
        self.assertEqual((written["step"], written["metrics"]), (3, {"auc": 0.75}))
        self.assertTrue(written["events"][0].endswith("notice for ps:0 (test): decided"))
        self.assertIn("tj_coordinator_preemption_notices_total 1", progress.prometheus_text())
        self.assertIn('tj_eval_metric{name="auc"} 0.75', progress.prometheus_text())


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeTest(unittest.TestCase):
    """trainingjob.tf.serve in a real process: what SIGTERM does to a PS (TensorFlow's server is
    not needed: serve only keeps the process alive)."""

    CHILD = ("import logging, sys; logging.basicConfig(level=logging.INFO, stream=sys.stdout); "
             "from trainingjob.tf import serving; serving.serve(None, linger=sys.argv[1] == 'ps', "
             "poll_seconds=0.05)")

    def start(self, role, coordinator):
        env = dict(os.environ)
        env.pop(job.COORDINATOR_ADDRESS, None)
        if coordinator:
            env[job.COORDINATOR_ADDRESS] = coordinator
        child = subprocess.Popen([sys.executable, "-c", self.CHILD, role], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.addCleanup(child.kill)
        self.addCleanup(child.stdout.close)
        self.read_until(child, "serving until SIGTERM")
        return child

    def read_until(self, child, text):
        seen = []
        for line in child.stdout:
            seen.append(line)
            if text in line:
                return
        self.fail(f"no '{text}' in the output: {''.join(seen)}")

    def listener(self):
        """A stand-in for the chief's Coordination service: accepts and closes connections."""
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen()
        self.addCleanup(server.close)

        def accept():
            while True:
                try:
                    server.accept()[0].close()
                except OSError:
                    return

        threading.Thread(target=accept, daemon=True).start()
        return server, f"127.0.0.1:{server.getsockname()[1]}"

    def test_ps_serves_until_the_coordinator_is_done(self):
        server, address = self.listener()
        child = self.start("ps", address)
        child.send_signal(signal.SIGTERM)
        self.read_until(child, f"serving until the coordinator at {address} is done")
        self.assertIsNone(child.poll(), "the PS stopped while the coordinator still answered")
        server.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread: nothing listens any more
        server.close()
        self.read_until(child, f"the coordinator at {address} is done: stopping")
        self.assertEqual(child.wait(), -signal.SIGTERM)

    def test_second_signal_stops_the_ps_at_once(self):
        _, address = self.listener()
        child = self.start("ps", address)
        child.send_signal(signal.SIGTERM)
        self.read_until(child, "serving until the coordinator")
        child.send_signal(signal.SIGTERM)
        self.read_until(child, "SIGTERM again: stopping now")
        self.assertEqual(child.wait(), -signal.SIGTERM)

    def test_worker_and_ps_without_coordinator_stop_at_once(self):
        _, address = self.listener()
        for role, coordinator, said in (("worker", address, "SIGTERM: stopping"),
                                        ("ps", None, "not in a TrainingJob"),
                                        ("ps", "127.0.0.1:1", "does not answer: stopping now")):
            child = self.start(role, coordinator)
            child.send_signal(signal.SIGTERM)
            self.read_until(child, said)
            self.assertEqual(child.wait(), -signal.SIGTERM, role)


if __name__ == "__main__":
    unittest.main()
