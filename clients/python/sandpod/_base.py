"""What the sync and asyncio clients share: settings, request building, no I/O."""

from __future__ import annotations

import datetime as _dt
import enum
import os
import shlex
import sys
import uuid
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Final, Literal

import grpc

from ._errors import SandboxTimeout, SandpodError, from_rpc_error
from ._models import (
    Phase,
    datetime_to_ts,
    label_selector,
    policy_to_pb,
    seconds_of,
    to_duration,
    ts_to_datetime,
)
from ._retry import RetryPolicy
from .v1 import exec_pb2, files_pb2, preview_pb2, sandbox_service_pb2

#: Unary calls the server forwards to the sandbox's agent (Exec, ReadFile, WriteFile,
#: WatchFiles and RunCode are streams, handled where they are read). Before it
#: forwards one, the server resumes a paused or suspended sandbox whose template
#: auto-resumes and waits for a starting one: its answer means the sandbox ran then.
AGENT_CALLS: Final = frozenset(
    {
        "ListFiles",
        "StatFile",
        "RemoveFile",
        "MakeDir",
        "CreateCodeContext",
        "ListCodeContexts",
        "DeleteCodeContext",
        "ExposePort",
    }
)

#: ``ErrorInfo`` reasons of errors the sandbox's agent answers: a call refused with one
#: of them reached a running sandbox.
AGENT_ANSWERS: Final = frozenset({"FILE_NOT_FOUND", "CODE_CONTEXT_NOT_FOUND"})

#: The phase a refusal's ``ErrorInfo`` reason says the sandbox is in.
PHASE_OF_REASON: Final = {
    "SANDBOX_PAUSED": Phase.PAUSED,
    "SANDBOX_SUSPENDED": Phase.SUSPENDED,
    "SANDBOX_EXPIRED": Phase.EXPIRED,
    "SANDBOX_FAILED": Phase.FAILED,
}

__all__ = ["USE_CLIENT_DEFAULT", "ClientSettings", "UseClientDefault"]

DEFAULT_ADDRESS: Final = "127.0.0.1:50051"
DEFAULT_NAMESPACE: Final = "default"
DEFAULT_TIMEOUT: Final = 60.0
#: How long a client that has never reached its server waits for a first connection
#: before it raises Unavailable naming the address (see ``await_server`` in the clients).
DEFAULT_CONNECT_TIMEOUT: Final = 3.0
#: A call every server answers without a token: a probe of whether it is there at all.
HEALTH_CHECK: Final = "/grpc.health.v1.Health/Check"
#: Extra time the gRPC deadline of an exec gets over the command's own timeout, so that
#: the server's kill (and the output so far) arrives before the client gives up.
EXEC_GRACE: Final = 15.0
#: Chunk size for file uploads (the server streams downloads in chunks of <= 1 MiB).
CHUNK_SIZE: Final = 1 << 20
#: files.read() and read_text() hold the whole file in memory: beyond this they raise.
READ_MAX_SIZE: Final = 256 << 20
MAX_MESSAGE: Final = 16 << 20
#: Stdin a client may send before the server has told its window: a server's window is
#: never smaller (exec.proto), so a small stdin goes out with the start message.
INITIAL_STDIN_WINDOW: Final = 64 << 10

OnExit = Literal["delete", "suspend", "keep"]
_ON_EXIT: Final = ("delete", "suspend", "keep")


class UseClientDefault(enum.Enum):
    """The type of :data:`USE_CLIENT_DEFAULT`."""

    token = 0

    def __repr__(self) -> str:
        return "USE_CLIENT_DEFAULT"


#: Sentinel for "not given: use the client's setting", so that ``None`` can mean "none".
USE_CLIENT_DEFAULT: Final = UseClientDefault.token

Timeout = float | _dt.timedelta | None


@dataclass(frozen=True)
class ClientSettings:
    """The resolved settings of a client (shared by Client and AsyncClient)."""

    address: str
    token: str | None
    credentials: grpc.ChannelCredentials | None
    namespace: str
    timeout: float | None
    connect_timeout: float | None
    retry: RetryPolicy
    progress: bool
    options: tuple[tuple[str, Any], ...]

    @classmethod
    def resolve(
        cls,
        address: str | None,
        token: str | None,
        tls: bool | grpc.ChannelCredentials,
        namespace: str | None,
        timeout: Timeout,
        retry: RetryPolicy | None,
        progress: bool | None,
        keepalive: float,
        channel_options: Sequence[tuple[str, Any]] | None,
        connect_timeout: Timeout = DEFAULT_CONNECT_TIMEOUT,
    ) -> ClientSettings:
        address = address or os.environ.get("SANDPOD_ADDRESS") or DEFAULT_ADDRESS
        token = token if token is not None else (os.environ.get("SANDPOD_TOKEN") or None)
        if isinstance(tls, grpc.ChannelCredentials):
            creds: grpc.ChannelCredentials | None = tls
        elif tls:
            creds = grpc.ssl_channel_credentials()
        else:
            creds = None
        return cls(
            address=address,
            token=token,
            credentials=creds,
            namespace=namespace or os.environ.get("SANDPOD_NAMESPACE") or DEFAULT_NAMESPACE,
            timeout=None if timeout is None else seconds_of(timeout),
            connect_timeout=_connect_timeout(connect_timeout),
            retry=retry or RetryPolicy(),
            progress=auto_progress() if progress is None else progress,
            options=channel_options_for(keepalive, channel_options),
        )

    def metadata(self) -> tuple[tuple[str, str], ...]:
        if self.token:
            return (("authorization", f"Bearer {self.token}"),)
        return ()

    def timeout_for(self, timeout: Timeout | UseClientDefault) -> float | None:
        if timeout is USE_CLIENT_DEFAULT:
            return self.timeout
        if timeout is None:
            return None
        secs = seconds_of(timeout)
        if secs <= 0:
            raise ValueError("timeout must be positive (or None for no limit)")
        return secs

    def ns(self, namespace: str | None) -> str:
        return namespace or self.namespace


def channel_options_for(
    keepalive: float, extra: Sequence[tuple[str, Any]] | None
) -> tuple[tuple[str, Any], ...]:
    """gRPC channel options: keepalive pings so a dead connection fails calls instead of
    hanging them, quick reconnects after a server restart, and room for 1 MiB chunks."""
    options: dict[str, Any] = {
        "grpc.max_receive_message_length": MAX_MESSAGE,
        "grpc.max_send_message_length": MAX_MESSAGE,
        "grpc.initial_reconnect_backoff_ms": 100,
        "grpc.min_reconnect_backoff_ms": 100,
        "grpc.max_reconnect_backoff_ms": 2000,
        "grpc.enable_retries": 0,  # retries are ours, with request ids
    }
    if keepalive > 0:
        options.update(
            {
                "grpc.keepalive_time_ms": int(keepalive * 1000),
                "grpc.keepalive_timeout_ms": 20_000,
                "grpc.keepalive_permit_without_calls": 0,
                "grpc.http2.max_pings_without_data": 0,
            }
        )
    for key, value in extra or ():
        options[key] = value
    return tuple(options.items())


def _connect_timeout(value: Timeout) -> float | None:
    if value is None:
        return None
    secs = seconds_of(value)
    if secs <= 0:
        raise ValueError("connect_timeout must be positive (or None to wait like any call)")
    return secs


def no_server_message(address: str, waited: float, cause: str) -> str:
    """The message of a first connection that did not come."""
    return (
        f"no sandpod server at {address}: is `make run` running? "
        f"(no connection within {waited:.3g}s: {cause})"
    )


def auto_progress() -> bool:
    """Progress bars on by default only in a notebook or when stderr is a terminal."""
    if os.environ.get("SANDPOD_PROGRESS", "").lower() in ("0", "false", "no", "off"):
        return False
    if in_notebook():
        return True
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def check_on_exit(on_exit: str) -> OnExit:
    if on_exit not in _ON_EXIT:
        raise ValueError(f"on_exit must be one of {_ON_EXIT}, not {on_exit!r}")
    return on_exit  # type: ignore[return-value]


def new_request_id() -> str:
    return str(uuid.uuid4())


# --- request builders ---------------------------------------------------------------


def _lifecycle_fields(
    ttl: Timeout,
    shutdown_time: _dt.datetime | None,
    shutdown_policy: str | None,
) -> dict[str, Any]:
    fields: dict[str, Any] = {"shutdown_policy": policy_to_pb(shutdown_policy)}
    if ttl is not None and shutdown_time is not None:
        raise ValueError("give ttl or shutdown_time, not both")
    if ttl is not None:
        fields["ttl"] = to_duration(ttl)
    if shutdown_time is not None:
        fields["shutdown_time"] = datetime_to_ts(shutdown_time)
    return fields


def set_lease(req: Any, lease: Timeout) -> None:
    """Sets the lease of a create or claim request; ``None`` keeps the template's."""
    if lease is not None:
        req.lease.CopyFrom(to_duration(lease))


def ts_or_none(ts: Any, present: bool) -> _dt.datetime | None:
    """A timestamp field as a datetime, ``None`` when unset."""
    return ts_to_datetime(ts, present)


def _restart_field(restart_on_failure: bool | None) -> dict[str, bool]:
    """The optional restart_on_failure field: absent (the template's default) when None."""
    if restart_on_failure is None:
        return {}
    if not isinstance(restart_on_failure, bool):
        raise TypeError("restart_on_failure must be a bool or None")
    return {"restart_on_failure": restart_on_failure}


def claim_request(
    template: str,
    namespace: str,
    *,
    ttl: Timeout,
    shutdown_time: _dt.datetime | None,
    shutdown_policy: str | None,
    labels: Mapping[str, str] | None,
    env: Mapping[str, str] | None,
    request_id: str,
    snapshot: str = "",
    restart_on_failure: bool | None = None,
) -> sandbox_service_pb2.ClaimSandboxRequest:
    if not template and not snapshot:
        raise ValueError("template is required (or a snapshot, whose template is used)")
    return sandbox_service_pb2.ClaimSandboxRequest(
        template=template,
        snapshot=snapshot,
        namespace=namespace,
        labels=dict(labels or {}),
        env=dict(env or {}),
        request_id=request_id,
        **_lifecycle_fields(ttl, shutdown_time, shutdown_policy),
        **_restart_field(restart_on_failure),
    )


def create_request(
    template: str,
    namespace: str,
    *,
    name: str | None,
    ttl: Timeout,
    shutdown_time: _dt.datetime | None,
    shutdown_policy: str | None,
    labels: Mapping[str, str] | None,
    env: Mapping[str, str] | None,
    request_id: str,
    wait: bool,
    snapshot: str = "",
    restart_on_failure: bool | None = None,
) -> sandbox_service_pb2.CreateSandboxRequest:
    if not template and not snapshot:
        raise ValueError("template is required (or a snapshot, whose template is used)")
    return sandbox_service_pb2.CreateSandboxRequest(
        template=template,
        snapshot=snapshot,
        namespace=namespace,
        name=name or "",
        labels=dict(labels or {}),
        env=dict(env or {}),
        request_id=request_id,
        no_wait=not wait,
        **_lifecycle_fields(ttl, shutdown_time, shutdown_policy),
        **_restart_field(restart_on_failure),
    )


def list_request(
    namespace: str,
    labels: Mapping[str, str] | str | None,
    include_pool_members: bool,
    page_token: str,
) -> sandbox_service_pb2.ListSandboxesRequest:
    return sandbox_service_pb2.ListSandboxesRequest(
        namespace=namespace,
        label_selector=label_selector(labels),
        page_size=1000,
        page_token=page_token,
        include_pool_members=include_pool_members,
    )


def watch_request(
    namespace: str,
    labels: Mapping[str, str] | str | None,
    include_pool_members: bool,
    send_initial_events: bool,
) -> sandbox_service_pb2.WatchSandboxesRequest:
    return sandbox_service_pb2.WatchSandboxesRequest(
        namespace=namespace,
        label_selector=label_selector(labels),
        send_initial_events=send_initial_events,
        include_pool_members=include_pool_members,
    )


def expose_request(
    name: str, namespace: str, port: int, protocol: str, signed_url_ttl: Timeout
) -> preview_pb2.ExposePortRequest:
    protocols = {"http": preview_pb2.PORT_PROTOCOL_HTTP, "tcp": preview_pb2.PORT_PROTOCOL_TCP}
    if protocol not in protocols:
        raise ValueError(f"protocol must be 'http' or 'tcp', got {protocol!r}")
    req = preview_pb2.ExposePortRequest(
        sandbox=name, namespace=namespace, port=port, protocol=protocols[protocol]
    )
    if signed_url_ttl is not None:
        req.signed_url_ttl.CopyFrom(to_duration(signed_url_ttl))
    return req


def extend_request(
    name: str, namespace: str, ttl: Timeout, shutdown_time: _dt.datetime | None
) -> sandbox_service_pb2.ExtendSandboxRequest:
    if (ttl is None) == (shutdown_time is None):
        raise ValueError("give exactly one of ttl or shutdown_time")
    req = sandbox_service_pb2.ExtendSandboxRequest(name=name, namespace=namespace)
    if ttl is not None:
        req.ttl.CopyFrom(to_duration(ttl))
    else:
        assert shutdown_time is not None
        req.shutdown_time.CopyFrom(datetime_to_ts(shutdown_time))
    return req


def exec_start(
    sandbox: str,
    namespace: str,
    cmd: str | Sequence[str],
    *,
    env: Mapping[str, str] | None,
    cwd: str | None,
    timeout: float | None,
    max_output_bytes: int | None,
) -> tuple[exec_pb2.ExecRequest, str]:
    """The first Exec message, and the command as text (for messages and results)."""
    start = exec_pb2.ExecStart(
        sandbox=sandbox,
        namespace=namespace,
        env=dict(env or {}),
        working_dir=cwd or "",
        max_output_bytes=max_output_bytes or 0,
    )
    if isinstance(cmd, str):
        if not cmd.strip():
            raise ValueError("cmd must not be empty")
        start.shell = cmd
        text = cmd
    else:
        argv = [str(a) for a in cmd]
        if not argv:
            raise ValueError("cmd must not be empty")
        start.argv.extend(argv)
        text = shlex.join(argv)
    if timeout is not None:
        start.timeout.CopyFrom(to_duration(timeout))
    return exec_pb2.ExecRequest(start=start), text


class ExecInput:
    """What a client has to send on one exec stream, and what it may send now.

    Signals go first, ahead of queued stdin; stdin and ``close_stdin`` keep their order.
    Stdin is sent only within the server's stdin window (``ExecStarted.stdin_window``):
    at most that many bytes sent and not yet acknowledged (``stdin_acked``). So the
    server reads every message as it arrives, and a signal is acted on at once however
    much stdin the command leaves unread; the rest waits here, in the client's memory.
    No I/O and no locking: the sync and asyncio clients drive it under their own lock.
    """

    def __init__(self, first: exec_pb2.ExecRequest) -> None:
        self._control: deque[exec_pb2.ExecRequest] = deque([first])
        self._stdin: deque[memoryview | None] = deque()  # None: close_stdin
        #: The server's window: INITIAL_STDIN_WINDOW until it says (``started``), then
        #: its own; 0 for none (older servers).
        self.window = INITIAL_STDIN_WINDOW
        self.sent = 0
        self.acked = 0
        self.ended = False

    def put_stdin(self, data: bytes) -> None:
        if data:
            self._stdin.append(memoryview(data))

    def close_stdin(self) -> None:
        self._stdin.append(None)

    def signal(self, signal: int) -> None:
        self._control.append(exec_pb2.ExecRequest(signal=int(signal)))

    def resize(self, size: exec_pb2.TerminalSize) -> None:
        """A terminal's new size goes out at once, like a signal."""
        self._control.append(exec_pb2.ExecRequest(resize=size))

    def end(self) -> None:
        """The call is over: nothing more is sent."""
        self.ended = True

    def on_response(self, resp: exec_pb2.ExecResponse) -> bool:
        """Takes the window and acknowledgements from the server's messages; True when
        more may be sent now."""
        kind = resp.WhichOneof("msg")
        if kind == "started":
            self.window = resp.started.stdin_window
            return True
        if kind == "stdin_acked":
            self.acked = max(self.acked, resp.stdin_acked)
            return True
        return False

    def pop(self) -> exec_pb2.ExecRequest | None:
        """The next message to send, or None while there is none that may go now."""
        if self.ended:
            return None
        if self._control:
            return self._control.popleft()
        if not self._stdin:
            return None
        head = self._stdin[0]
        if head is None:
            self._stdin.popleft()
            return exec_pb2.ExecRequest(close_stdin=True)
        n = min(len(head), CHUNK_SIZE)
        if self.window > 0:
            n = min(n, self.window - (self.sent - self.acked))
            if n <= 0:
                return None
        if n == len(head):
            self._stdin.popleft()
        else:
            self._stdin[0] = head[n:]
        self.sent += n
        return exec_pb2.ExecRequest(stdin=bytes(head[:n]))


def exec_deadline(timeout: float | None) -> float | None:
    return None if timeout is None else timeout + EXEC_GRACE


def as_bytes(data: bytes | bytearray | memoryview | str, encoding: str = "utf-8") -> bytes:
    if isinstance(data, str):
        return data.encode(encoding)
    return bytes(data)


def write_header(
    sandbox: str, namespace: str, path: str, mode: int | None, make_parents: bool
) -> files_pb2.WriteFileRequest:
    if not path:
        raise ValueError("path is required")
    return files_pb2.WriteFileRequest(
        header=files_pb2.WriteFileHeader(
            sandbox=sandbox,
            namespace=namespace,
            path=path,
            mode=mode or 0,
            make_parents=make_parents,
        )
    )


def chunks_of(data: bytes, size: int = CHUNK_SIZE) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)] or []


#: What ``stdin=`` and ``Files.write`` take: bytes, text, a file object or an iterable.
Source = bytes | bytearray | memoryview | str | IO[bytes] | IO[str] | Iterable[bytes]


def iter_source(source: Source, size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Chunks of bytes from bytes, text, a (binary or text) file object or an iterable."""
    if isinstance(source, (bytes, bytearray, memoryview, str)):
        data = as_bytes(source)
        for i in range(0, len(data), size):
            yield data[i : i + size]
        return
    read = getattr(source, "read", None)
    if callable(read):
        while True:
            chunk = read(size)
            if not chunk:
                return
            yield as_bytes(chunk)
    else:
        for chunk in source:  # type: ignore[union-attr]
            if chunk:
                yield as_bytes(chunk)


def watch_ended(err: grpc.RpcError, closed: bool, bounded: bool) -> bool:
    """Whether an error that ends a watch stream is its normal end: closed by the
    caller, or its own timeout."""
    code = err.code()
    return (closed and code == grpc.StatusCode.CANCELLED) or (
        bounded and code == grpc.StatusCode.DEADLINE_EXCEEDED
    )


def exec_error(err: grpc.RpcError, text: str, limit: float | None) -> SandpodError:
    """The error for an exec stream that failed: a deadline past the command's own
    timeout (plus grace) says so."""
    if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED and limit is not None:
        return SandboxTimeout(
            f"command {text!r} did not report an exit within {limit + EXEC_GRACE:.3g}s",
            code=err.code(),
        )
    return from_rpc_error(err)
