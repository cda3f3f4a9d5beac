"""Plain value types returned by the client, and their conversion from protobuf messages."""

from __future__ import annotations

import codecs
import datetime as _dt
import enum
import html
from collections.abc import Mapping
from dataclasses import dataclass, field

from google.protobuf import duration_pb2, timestamp_pb2

from ._code import CodeContextInfo, Execution, ExecutionError, Result
from ._errors import SandboxTimeout, SandpodError
from .v1 import exec_pb2, files_pb2, preview_pb2, sandbox_pb2, sandbox_service_pb2

__all__ = [
    "CodeContextInfo",
    "CommandFailed",
    "CommandResult",
    "CommandTimeout",
    "Condition",
    "Execution",
    "ExecutionError",
    "ExposedPort",
    "FileInfo",
    "Output",
    "Phase",
    "Result",
    "SandboxInfo",
    "ShutdownPolicy",
    "Template",
    "WarmPool",
    "WatchEvent",
]


class Phase(str, enum.Enum):
    """Where a sandbox is in its life."""

    UNKNOWN = "Unknown"
    PENDING = "Pending"
    RUNNING = "Running"
    SUSPENDED = "Suspended"
    #: Processes frozen with their memory (:meth:`Sandbox.pause`); ``resume()`` thaws.
    PAUSED = "Paused"
    EXPIRED = "Expired"
    FAILED = "Failed"
    TERMINATING = "Terminating"
    #: Never reported by the server: the client's mark for a handle whose sandbox is
    #: gone (deleted through it, or a call through it got :class:`SandboxNotFound`).
    DELETED = "Deleted"

    def __str__(self) -> str:
        return self.value


_PHASE_FROM_PB: dict[int, Phase] = {
    sandbox_pb2.PHASE_PENDING: Phase.PENDING,
    sandbox_pb2.PHASE_RUNNING: Phase.RUNNING,
    sandbox_pb2.PHASE_SUSPENDED: Phase.SUSPENDED,
    sandbox_pb2.PHASE_PAUSED: Phase.PAUSED,
    sandbox_pb2.PHASE_EXPIRED: Phase.EXPIRED,
    sandbox_pb2.PHASE_FAILED: Phase.FAILED,
    sandbox_pb2.PHASE_TERMINATING: Phase.TERMINATING,
}


class ShutdownPolicy(str, enum.Enum):
    """What happens when a sandbox reaches its shutdown time."""

    DELETE = "Delete"
    RETAIN = "Retain"

    def __str__(self) -> str:
        return self.value


_POLICY_TO_PB: dict[ShutdownPolicy, int] = {
    ShutdownPolicy.DELETE: sandbox_pb2.SHUTDOWN_POLICY_DELETE,
    ShutdownPolicy.RETAIN: sandbox_pb2.SHUTDOWN_POLICY_RETAIN,
}
_POLICY_FROM_PB: dict[int, ShutdownPolicy] = {v: k for k, v in _POLICY_TO_PB.items()}


def policy_to_pb(policy: ShutdownPolicy | str | None) -> int:
    if policy is None:
        return sandbox_pb2.SHUTDOWN_POLICY_UNSPECIFIED
    try:
        return _POLICY_TO_PB[ShutdownPolicy(str(policy).capitalize())]
    except ValueError:
        raise ValueError(f"shutdown_policy must be 'Delete' or 'Retain', not {policy!r}") from None


def policy_from_pb(value: int) -> ShutdownPolicy | None:
    return _POLICY_FROM_PB.get(value)


# --- time helpers -------------------------------------------------------------------


def ts_to_datetime(ts: timestamp_pb2.Timestamp, present: bool = True) -> _dt.datetime | None:
    if not present or (ts.seconds == 0 and ts.nanos == 0):
        return None
    return ts.ToDatetime(tzinfo=_dt.timezone.utc)


def datetime_to_ts(value: _dt.datetime) -> timestamp_pb2.Timestamp:
    if value.tzinfo is None:
        raise ValueError("shutdown_time must be timezone-aware (e.g. datetime.now(timezone.utc))")
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(value.astimezone(_dt.timezone.utc))
    return ts


def seconds_of(value: float | _dt.timedelta) -> float:
    """Seconds as a float, from a number of seconds or a timedelta."""
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected seconds or a timedelta, not {type(value).__name__}")
    return float(value)


def to_duration(value: float | _dt.timedelta) -> duration_pb2.Duration:
    secs = seconds_of(value)
    if secs < 0:
        raise ValueError("a duration must not be negative")
    d = duration_pb2.Duration()
    d.FromNanoseconds(round(secs * 1e9))
    return d


def duration_seconds(d: duration_pb2.Duration) -> float:
    return d.seconds + d.nanos / 1e9


def label_selector(labels: Mapping[str, str] | str | None) -> str:
    """A Kubernetes label selector from a dict (all must match) or a selector string."""
    if labels is None:
        return ""
    if isinstance(labels, str):
        return labels
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


# --- sandboxes ----------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    """A Kubernetes-style condition (``Ready``, ``Suspended``, ``Paused``, ``Expired``,
    ``Finished``)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: _dt.datetime | None = None


@dataclass(frozen=True)
class SandboxInfo:
    """A snapshot of a sandbox as the server last reported it."""

    name: str
    namespace: str
    uid: str = ""
    template: str = ""
    pool: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    phase: Phase = Phase.UNKNOWN
    message: str = ""
    conditions: tuple[Condition, ...] = ()
    create_time: _dt.datetime | None = None
    shutdown_time: _dt.datetime | None = None
    shutdown_policy: ShutdownPolicy | None = None
    last_activity_time: _dt.datetime | None = None
    idle_timeout: float = 0.0
    claimed: bool = False
    env_keys: tuple[str, ...] = ()
    service_fqdn: str = ""
    #: How many times the sandbox's agent was restarted after it died or stopped
    #: answering health checks; the Ready condition's message says when and why.
    agent_restarts: int = 0
    #: Kubernetes: pods restartOnFailure replaced after they failed (0 locally).
    pod_restarts: int = 0
    #: The snapshot its files were made from or last restored to ("" if none).
    snapshot: str = ""
    #: Its lease in seconds (0: none): reclaimed unless renewed (docs/python.md#leases).
    lease: float = 0.0
    lease_expire_time: _dt.datetime | None = None

    @classmethod
    def from_pb(cls, pb: sandbox_pb2.Sandbox) -> SandboxInfo:
        return cls(
            name=pb.name,
            namespace=pb.namespace,
            uid=pb.uid,
            template=pb.template,
            pool=pb.pool,
            labels=dict(pb.labels),
            phase=_PHASE_FROM_PB.get(pb.phase, Phase.UNKNOWN),
            message=pb.message,
            conditions=tuple(
                Condition(
                    type=c.type,
                    status=c.status,
                    reason=c.reason,
                    message=c.message,
                    last_transition_time=ts_to_datetime(
                        c.last_transition_time, c.HasField("last_transition_time")
                    ),
                )
                for c in pb.conditions
            ),
            create_time=ts_to_datetime(pb.create_time, pb.HasField("create_time")),
            lease=pb.lease.ToTimedelta().total_seconds() if pb.HasField("lease") else 0.0,
            lease_expire_time=ts_to_datetime(
                pb.lease_expire_time, pb.HasField("lease_expire_time")
            ),
            shutdown_time=ts_to_datetime(pb.shutdown_time, pb.HasField("shutdown_time")),
            shutdown_policy=policy_from_pb(pb.shutdown_policy),
            last_activity_time=ts_to_datetime(
                pb.last_activity_time, pb.HasField("last_activity_time")
            ),
            idle_timeout=duration_seconds(pb.idle_timeout),
            claimed=pb.claimed,
            env_keys=tuple(pb.env_keys),
            service_fqdn=pb.service_fqdn,
            agent_restarts=pb.agent_restarts,
            pod_restarts=pb.pod_restarts,
            snapshot=pb.snapshot,
        )

    def condition(self, type_: str) -> Condition | None:
        """The condition of that type, if the server reported it."""
        return next((c for c in self.conditions if c.type == type_), None)


@dataclass(frozen=True)
class WatchEvent:
    """One change seen by ``watch()``: ``type`` is ADDED, MODIFIED or DELETED."""

    type: str
    sandbox: SandboxInfo

    @classmethod
    def from_pb(cls, pb: sandbox_service_pb2.WatchSandboxesResponse) -> WatchEvent:
        name = sandbox_service_pb2.WatchSandboxesResponse.EventType.Name(pb.type)
        return cls(type=name.removeprefix("EVENT_TYPE_"), sandbox=SandboxInfo.from_pb(pb.sandbox))


@dataclass(frozen=True)
class Template:
    """A read-only view of a SandboxTemplate."""

    name: str
    namespace: str
    image: str = ""
    runtime_class_name: str = ""
    idle_timeout: float = 0.0
    default_ttl: float = 0.0
    shutdown_policy: ShutdownPolicy | None = None
    auto_resume: bool = False
    network_isolated: bool = False
    memory_limit_bytes: int = 0
    cpu_limit_millis: int = 0
    pids_limit: int = 0
    #: What one sandbox may write to the disk (``ephemeral-storage``), and
    #: how many files, directories and links; 0: not enforced.
    disk_limit_bytes: int = 0
    inode_limit: int = 0
    #: What ``idle_timeout`` does: ``"suspend"`` (the default) or ``"pause"``.
    idle_action: str = "suspend"

    @classmethod
    def from_pb(cls, pb: sandbox_pb2.Template) -> Template:
        return cls(
            name=pb.name,
            namespace=pb.namespace,
            image=pb.image,
            runtime_class_name=pb.runtime_class_name,
            idle_timeout=duration_seconds(pb.idle_timeout),
            default_ttl=duration_seconds(pb.default_ttl),
            shutdown_policy=policy_from_pb(pb.shutdown_policy),
            auto_resume=pb.auto_resume,
            network_isolated=pb.network_isolated,
            memory_limit_bytes=pb.memory_limit_bytes,
            cpu_limit_millis=pb.cpu_limit_millis,
            pids_limit=pb.pids_limit,
            disk_limit_bytes=pb.disk_limit_bytes,
            inode_limit=pb.inode_limit,
            idle_action="pause" if pb.idle_action == sandbox_pb2.IDLE_ACTION_PAUSE else "suspend",
        )


@dataclass(frozen=True)
class WarmPool:
    """A warm pool: ``replicas`` wanted, ``ready_replicas`` claimable now."""

    name: str
    namespace: str
    template: str = ""
    replicas: int = 0
    ready_replicas: int = 0
    pending_replicas: int = 0

    @classmethod
    def from_pb(cls, pb: sandbox_pb2.WarmPool) -> WarmPool:
        return cls(
            name=pb.name,
            namespace=pb.namespace,
            template=pb.template,
            replicas=pb.replicas,
            ready_replicas=pb.ready_replicas,
            pending_replicas=pb.pending_replicas,
        )


# --- port previews ------------------------------------------------------------------


@dataclass(frozen=True)
class ExposedPort:
    """A port of a sandbox served at a preview URL (``Sandbox.expose``).

    ``url`` needs the client's token (``Authorization: Bearer``) when the server has
    tokens; ``signed_url`` lets anyone who holds it in (a browser) until ``expires_at``.
    ``signed_url`` and ``expires_at`` are empty in ``Sandbox.exposed_ports()``."""

    port: int
    protocol: str
    url: str
    signed_url: str = ""
    expires_at: _dt.datetime | None = None
    sandbox: str = ""
    namespace: str = ""

    @classmethod
    def from_pb(cls, pb: preview_pb2.ExposedPort) -> ExposedPort:
        proto = preview_pb2.PortProtocol.Name(pb.protocol).removeprefix("PORT_PROTOCOL_")
        return cls(
            port=pb.port,
            protocol="http" if proto == "UNSPECIFIED" else proto.lower(),
            url=pb.url,
            signed_url=pb.signed_url,
            expires_at=ts_to_datetime(pb.expire_time, pb.HasField("expire_time")),
            sandbox=pb.sandbox,
            namespace=pb.namespace,
        )


# --- files --------------------------------------------------------------------------


@dataclass(frozen=True)
class FileInfo:
    """A file or directory in a sandbox; ``path`` is relative to the sandbox's root."""

    path: str
    name: str
    size: int = 0
    mode: int = 0
    is_dir: bool = False
    is_symlink: bool = False
    modify_time: _dt.datetime | None = None

    @classmethod
    def from_pb(cls, pb: files_pb2.FileInfo) -> FileInfo:
        return cls(
            path=pb.path,
            name=pb.name,
            size=pb.size,
            mode=pb.mode,
            is_dir=pb.is_dir,
            is_symlink=pb.is_symlink,
            modify_time=ts_to_datetime(pb.modify_time, pb.HasField("modify_time")),
        )


# --- commands -----------------------------------------------------------------------


@dataclass(frozen=True)
class Output:
    """A chunk of output from a running command.

    ``data`` is the raw bytes; ``text`` is their UTF-8 decoding, made with one incremental
    decoder per stream, so a character split across two chunks is never garbled.
    """

    stream: str  # "stdout" or "stderr"
    data: bytes
    text: str


class OutputDecoder:
    """Turns raw exec chunks into :class:`Output` events and keeps the whole output."""

    def __init__(self) -> None:
        self._decoders = {
            "stdout": codecs.getincrementaldecoder("utf-8")("replace"),
            "stderr": codecs.getincrementaldecoder("utf-8")("replace"),
        }
        self.buffers: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}

    def feed(self, stream: str, data: bytes) -> Output:
        self.buffers[stream] += data
        return Output(stream=stream, data=data, text=self._decoders[stream].decode(data))

    def feed_response(self, resp: exec_pb2.ExecResponse) -> Output | None:
        kind = resp.WhichOneof("msg")
        if kind == "stdout":
            return self.feed("stdout", resp.stdout)
        if kind == "stderr":
            return self.feed("stderr", resp.stderr)
        return None

    def result(self, status: exec_pb2.ExitStatus, command: str = "") -> CommandResult:
        return CommandResult.from_exit(
            status, bytes(self.buffers["stdout"]), bytes(self.buffers["stderr"]), command
        )


@dataclass(frozen=True)
class CommandResult:
    """What a finished command left behind.

    ``stdout``/``stderr`` are UTF-8 text (undecodable bytes replaced); the raw bytes are
    in ``stdout_bytes``/``stderr_bytes``. ``exit_code`` is -1 when a signal killed the
    command (``signal`` says which; ``timed_out`` says whether its timeout did it).
    """

    exit_code: int
    stdout_bytes: bytes = b""
    stderr_bytes: bytes = b""
    signal: int = 0
    timed_out: bool = False
    duration: float = 0.0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    command: str = ""

    @classmethod
    def from_exit(
        cls, status: exec_pb2.ExitStatus, stdout: bytes, stderr: bytes, command: str = ""
    ) -> CommandResult:
        return cls(
            exit_code=status.exit_code,
            stdout_bytes=stdout,
            stderr_bytes=stderr,
            signal=status.signal,
            timed_out=status.timed_out,
            duration=duration_seconds(status.duration),
            stdout_truncated=status.stdout_truncated,
            stderr_truncated=status.stderr_truncated,
            command=command,
        )

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        """True when the command exited with code 0."""
        return self.exit_code == 0 and not self.timed_out and not self.signal

    def check(self) -> CommandResult:
        """Returns self, or raises CommandFailed (CommandTimeout) unless ``ok``."""
        if self.timed_out:
            raise CommandTimeout(self, self.command)
        if not self.ok:
            raise CommandFailed(self, self.command)
        return self

    def __repr__(self) -> str:
        flags = " timed_out" if self.timed_out else ""
        return (
            f"CommandResult(exit_code={self.exit_code}{flags}, duration={self.duration:.3f}s, "
            f"stdout={_clip(self.stdout)!r}, stderr={_clip(self.stderr)!r})"
        )

    def _repr_html_(self) -> str:
        return result_html(self)


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- HTML for notebooks -------------------------------------------------------------

_PHASE_COLORS = {
    Phase.RUNNING: "#1a7f37",
    Phase.PENDING: "#9a6700",
    Phase.SUSPENDED: "#0969da",
    Phase.PAUSED: "#8250df",
    Phase.EXPIRED: "#6e7781",
    Phase.FAILED: "#cf222e",
    Phase.TERMINATING: "#6e7781",
    Phase.DELETED: "#6e7781",
}
_PRE = (
    "margin:0;padding:4px 6px;max-height:24em;overflow:auto;white-space:pre-wrap;"
    "background:rgba(127,127,127,.08)"
)


def _fmt_time(value: _dt.datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value else "—"


def sandbox_html(info: SandboxInfo, warm: bool | None = None) -> str:
    color = _PHASE_COLORS.get(info.phase, "#6e7781")
    rows = [
        ("template", info.template),
        ("namespace", info.namespace),
        ("source", f"warm pool {info.pool}" if info.pool else "cold start")
        if warm is None
        else ("source", f"warm pool {info.pool}" if warm else "cold start"),
        ("created", _fmt_time(info.create_time)),
    ]
    if info.phase != Phase.DELETED:
        rows.append(("shuts down", _fmt_time(info.shutdown_time)))
    if info.labels:
        rows.append(("labels", ", ".join(f"{k}={v}" for k, v in sorted(info.labels.items()))))
    if info.message:
        rows.append(("message", info.message))
    body = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
        f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
        for k, v in rows
    )
    return (
        "<div><b>Sandbox</b> <code>"
        f"{html.escape(info.name)}</code> "
        f"<span style='color:{color};font-weight:bold'>● {html.escape(str(info.phase))}</span>"
        f"<table style='margin-top:4px'>{body}</table></div>"
    )


def result_html(result: CommandResult) -> str:
    if result.timed_out:
        status, color = f"timed out after {result.duration:.3g}s", "#cf222e"
    elif result.ok:
        status, color = "exit 0", "#1a7f37"
    elif result.signal:
        status, color = f"killed by signal {result.signal}", "#cf222e"
    else:
        status, color = f"exit {result.exit_code}", "#cf222e"
    parts = [
        f"<div><span style='color:{color};font-weight:bold'>{html.escape(status)}</span>"
        f" <span style='color:#6e7781'>in {result.duration:.3f}s</span>"
    ]
    if result.command:
        parts.append(f" <code>{html.escape(_clip(result.command, 120))}</code>")
    for name, text, truncated in (
        ("stdout", result.stdout, result.stdout_truncated),
        ("stderr", result.stderr, result.stderr_truncated),
    ):
        if not text:
            continue
        note = " (truncated)" if truncated else ""
        parts.append(
            f"<div style='color:#6e7781;margin-top:4px'>{name}{note}</div>"
            f"<pre style='{_PRE}'>{html.escape(text)}</pre>"
        )
    parts.append("</div>")
    return "".join(parts)


class CommandFailed(SandpodError):
    """A command run with ``check=True`` exited with a non-zero code (or was killed).

    Attributes:
        result: the whole :class:`CommandResult`.
        exit_code, stdout, stderr: shortcuts into ``result``.
    """

    def __init__(self, result: CommandResult, command: str = "") -> None:
        self.result = result
        self.command = command
        self.exit_code = result.exit_code
        self.stdout = result.stdout
        self.stderr = result.stderr
        what = f"command {command!r}" if command else "command"
        if result.timed_out:
            text = f"{what} timed out after {result.duration:.3g}s"
        elif result.signal:
            text = f"{what} was killed by signal {result.signal}"
        else:
            text = f"{what} exited with code {result.exit_code}"
        tail = result.stderr.strip()[-500:]
        if tail:
            text = f"{text}: {tail}"
        super().__init__(text)


class CommandTimeout(CommandFailed, SandboxTimeout):
    """A command run with ``check=True`` ran out of its ``timeout`` and was killed."""
