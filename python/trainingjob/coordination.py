"""The job's Coordination service (proto/tj/v1/coordination.proto), served by a TensorFlow chief
beside TensorFlow's own server: preemption notices from the operator and `tjctl preempt`, and the
progress key the operator reads. Other RPCs (tasks, barriers) belong to tj-train's runtime and
answer UNIMPLEMENTED.

It listens on TJ_COORDINATION_ADDRESS, never on the TF_CONFIG port TensorFlow's server holds.
"""
import logging
import pathlib
import threading
from concurrent import futures
from typing import Callable, Dict, Optional, Tuple

import grpc

from trainingjob.credentials import Authenticator
from trainingjob.v1 import coordination_pb2, coordination_pb2_grpc

log = logging.getLogger("trainingjob")

# (type, index, reason, deadline in Unix seconds or None) -> (accepted, decision)
NoticeCallback = Callable[[str, int, str, Optional[float]], Tuple[bool, str]]

# Who may call what (coordinator/base/rpc_authorization.cc).
_NOTICE_ROLES = {"control", "worker", "ps", "any"}
_READ_ROLES = {"coordinator", "worker", "ps", "control", "any"}
_WRITE_ROLES = {"coordinator", "any"}


class _Servicer(coordination_pb2_grpc.CoordinationServicer):
    def __init__(self, auth: Authenticator, on_notice: NoticeCallback):
        self._auth = auth
        self._on_notice = on_notice
        self._mu = threading.Lock()
        self._store: Dict[str, bytes] = {}

    def _check(self, context, roles, rpc):
        role = self._auth.role_of(context.invocation_metadata())
        if role is None:
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          f"{rpc}: the call carries no credential of this job")
        if role not in roles:
            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          f"{rpc}: the {role} role may not call it")

    def put(self, key: str, value: bytes):
        with self._mu:
            self._store[key] = value

    def PreemptionNotice(self, request, context):
        self._check(context, _NOTICE_ROLES, "PreemptionNotice")
        deadline = (request.deadline_unix_millis / 1000.0
                    if request.deadline_unix_millis > 0 else None)
        accepted, decision = self._on_notice(request.task.type, request.task.index,
                                             request.reason, deadline)
        return coordination_pb2.PreemptionNoticeResponse(accepted=accepted, decision=decision)

    def KeyValueGet(self, request, context):
        self._check(context, _READ_ROLES, "KeyValueGet")
        with self._mu:
            value = self._store.get(request.key)
        if value is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no key {request.key!r}")
        return coordination_pb2.KeyValueGetResponse(value=value)

    def KeyValueList(self, request, context):
        self._check(context, _READ_ROLES, "KeyValueList")
        with self._mu:
            entries = [coordination_pb2.KeyValueEntry(key=k, value=v)
                       for k, v in sorted(self._store.items()) if k.startswith(request.prefix)]
        return coordination_pb2.KeyValueListResponse(entries=entries)

    def KeyValueSet(self, request, context):
        self._check(context, _WRITE_ROLES, "KeyValueSet")
        with self._mu:
            if request.key in self._store and not request.allow_overwrite:
                context.abort(grpc.StatusCode.ALREADY_EXISTS, f"key {request.key!r} exists")
            self._store[request.key] = request.value
        return coordination_pb2.KeyValueSetResponse()


def _listen_address(address: str) -> str:
    # ":2223" (the operator's rendering) is every address of the pod.
    return f"[::]{address}" if address.startswith(":") else address


class CoordinationServer:
    """Serves the Coordination service until stop(); bind errors name the address."""

    def __init__(self, address: str, auth: Authenticator, on_notice: NoticeCallback,
                 tls_dir: Optional[str] = None):
        self._servicer = _Servicer(auth, on_notice)
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4,
                                                              thread_name_prefix="tj-coord"))
        coordination_pb2_grpc.add_CoordinationServicer_to_server(self._servicer, self._server)
        listen = _listen_address(address)
        try:
            if tls_dir:
                tls = pathlib.Path(tls_dir)
                credentials = grpc.ssl_server_credentials(
                    [((tls / "tls.key").read_bytes(), (tls / "tls.crt").read_bytes())],
                    root_certificates=(tls / "ca.crt").read_bytes(), require_client_auth=True)
                port = self._server.add_secure_port(listen, credentials)
            else:
                port = self._server.add_insecure_port(listen)
        except (OSError, RuntimeError) as error:
            raise RuntimeError(f"the Coordination service cannot listen on {address}: {error}")
        if port == 0:
            raise RuntimeError(f"the Coordination service cannot listen on {address} "
                               "(in use, or not an address of this host)")
        self._server.start()
        self.address = address
        log.info("Coordination service (notices, progress) on %s%s", address,
                 "" if not auth.open else " (open: the job has no token)")

    def publish(self, key: str, value: bytes):
        self._servicer.put(key, value)

    def stop(self):
        self._server.stop(grace=0.5)
