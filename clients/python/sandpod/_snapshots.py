"""Snapshots: :class:`SnapshotInfo`, the handles :class:`Snapshot` and
:class:`AsyncSnapshot`, and the lists of forks that delete them at exit.

A snapshot is a saved copy of a sandbox's files (its workspace), made with
``sandbox.snapshot()``; ``client.fork(snapshot, n)`` makes ``n`` sandboxes from it,
``sandbox.restore(snapshot)`` puts a sandbox back to it.
"""

from __future__ import annotations

import datetime as _dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

import grpc

from . import _async_io, _sync_io
from ._base import USE_CLIENT_DEFAULT, Timeout, UseClientDefault
from ._models import policy_to_pb, to_duration, ts_to_datetime
from .v1 import sandbox_service_pb2, snapshot_pb2

if TYPE_CHECKING:
    from ._async_client import AsyncClient, AsyncSandbox
    from ._client import Client, Sandbox

__all__ = ["AsyncForkList", "AsyncSnapshot", "ForkList", "Snapshot", "SnapshotInfo"]

_pb = sandbox_service_pb2


class SnapshotPhase(str, enum.Enum):
    PENDING = "Pending"
    READY = "Ready"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


_PHASE = {
    snapshot_pb2.SNAPSHOT_PHASE_PENDING: SnapshotPhase.PENDING,
    snapshot_pb2.SNAPSHOT_PHASE_READY: SnapshotPhase.READY,
    snapshot_pb2.SNAPSHOT_PHASE_FAILED: SnapshotPhase.FAILED,
}


@dataclass(frozen=True)
class SnapshotInfo:
    """A snapshot as the server last reported it."""

    name: str
    namespace: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    phase: SnapshotPhase = SnapshotPhase.UNKNOWN
    message: str = ""
    #: The sandbox it was taken from, and that sandbox's template.
    source_sandbox: str = ""
    template: str = ""
    size_bytes: int = 0
    file_count: int = 0
    #: False: files only (the local engine); True: the processes' memory too.
    memory: bool = False
    #: What it holds, e.g. ``("workspace",)``.
    volumes: tuple[str, ...] = ()
    #: How sandboxes are made from it: "overlayfs", "reflink", "copy" or a CSI driver.
    storage: str = ""
    create_time: _dt.datetime | None = None
    #: Sandboxes ("sandbox/NAME") and warm pools ("pool/NAME") that keep it in use.
    used_by: tuple[str, ...] = ()
    #: Workspace entries not kept (fifos, sockets, devices), with why.
    skipped: tuple[str, ...] = ()

    @classmethod
    def from_pb(cls, pb: snapshot_pb2.Snapshot) -> SnapshotInfo:
        return cls(
            name=pb.name,
            namespace=pb.namespace,
            uid=pb.uid,
            labels=dict(pb.labels),
            phase=_PHASE.get(pb.phase, SnapshotPhase.UNKNOWN),
            message=pb.message,
            source_sandbox=pb.source_sandbox,
            template=pb.template,
            size_bytes=pb.size_bytes,
            file_count=pb.file_count,
            memory=pb.contents == snapshot_pb2.SNAPSHOT_CONTENTS_FILES_AND_MEMORY,
            volumes=tuple(pb.volumes),
            storage=pb.storage,
            create_time=ts_to_datetime(pb.create_time, pb.HasField("create_time")),
            used_by=tuple(pb.used_by),
            skipped=tuple(pb.skipped),
        )


# --- requests -----------------------------------------------------------------------


def snapshot_name(snapshot: Snapshot | AsyncSnapshot | str | None) -> str:
    """The name of a snapshot given as a handle or a name."""
    if snapshot is None:
        return ""
    if isinstance(snapshot, str):
        return snapshot
    return snapshot.name


def fork_request(
    source: Any,
    n: int,
    namespace: str,
    *,
    template: str | None,
    ttl: Timeout,
    shutdown_policy: str | None,
    labels: Mapping[str, str] | None,
    env: Mapping[str, str] | None,
    request_id: str,
    wait: bool,
) -> snapshot_pb2.ForkSandboxRequest:
    """``source``: a snapshot (handle or name) or a sandbox handle."""
    if n < 1:
        raise ValueError("n must be at least 1")
    req = snapshot_pb2.ForkSandboxRequest(
        namespace=namespace,
        count=n,
        template=template or "",
        labels=dict(labels or {}),
        env=dict(env or {}),
        shutdown_policy=policy_to_pb(shutdown_policy),
        request_id=request_id,
        no_wait=not wait,
    )
    if isinstance(source, (str, Snapshot, AsyncSnapshot)):
        req.snapshot = snapshot_name(source)
    elif hasattr(source, "files") and hasattr(source, "name"):  # a sandbox handle
        req.sandbox = source.name
    else:
        raise TypeError(f"fork from a snapshot or a sandbox, not {type(source).__name__}")
    if ttl is not None:
        req.ttl.CopyFrom(to_duration(ttl))
    return req


# --- handles ------------------------------------------------------------------------


# unasync: begin source: the asyncio handles; their sync twins below are generated


class AsyncSnapshot:
    """A handle to one snapshot: ``info`` is its state as last reported."""

    def __init__(self, client: AsyncClient, info: SnapshotInfo) -> None:
        self._client = client
        self.info = info

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def namespace(self) -> str:
        return self.info.namespace

    def __repr__(self) -> str:
        return (
            f"AsyncSnapshot(name={self.name!r}, source={self.info.source_sandbox!r}, "
            f"size_bytes={self.info.size_bytes}, storage={self.info.storage!r})"
        )

    async def refresh(
        self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT
    ) -> AsyncSnapshot:
        """Fetches the current state into ``info`` and returns self."""
        req = snapshot_pb2.GetSnapshotRequest(name=self.name, namespace=self.namespace)
        resp = await self._client._unary("GetSnapshot", req, timeout=timeout)
        self.info = SnapshotInfo.from_pb(resp.snapshot)
        return self

    async def delete(self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT) -> None:
        """Deletes the snapshot and its files. Raises SnapshotInUse while sandboxes or
        warm pools use it (the message names them)."""
        req = snapshot_pb2.DeleteSnapshotRequest(name=self.name, namespace=self.namespace)
        await self._client._unary(
            "DeleteSnapshot",
            req,
            timeout=timeout,
            done_on_retry=frozenset({grpc.StatusCode.NOT_FOUND}),
        )


class AsyncForkList(list):  # type: ignore[type-arg]
    """The sandboxes of one ``AsyncClient.fork``; ``async with`` deletes them all at
    exit. ``snapshot`` is the snapshot they were made from."""

    def __init__(self, sandboxes: list[AsyncSandbox], snapshot: AsyncSnapshot) -> None:
        super().__init__(sandboxes)
        self.snapshot = snapshot

    async def delete_all(self) -> None:
        """Deletes every sandbox in the list (in parallel); already gone ones are fine."""
        await _async_io.delete_all(self)

    async def __aenter__(self) -> AsyncForkList:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.delete_all()


# unasync: end source


# unasync: begin generated from the source above by hack/unasync.py; do not edit


class Snapshot:
    """A handle to one snapshot: ``info`` is its state as last reported."""

    def __init__(self, client: Client, info: SnapshotInfo) -> None:
        self._client = client
        self.info = info

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def namespace(self) -> str:
        return self.info.namespace

    def __repr__(self) -> str:
        return (
            f"Snapshot(name={self.name!r}, source={self.info.source_sandbox!r}, "
            f"size_bytes={self.info.size_bytes}, storage={self.info.storage!r})"
        )

    def refresh(self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT) -> Snapshot:
        """Fetches the current state into ``info`` and returns self."""
        req = snapshot_pb2.GetSnapshotRequest(name=self.name, namespace=self.namespace)
        resp = self._client._unary("GetSnapshot", req, timeout=timeout)
        self.info = SnapshotInfo.from_pb(resp.snapshot)
        return self

    def delete(self, *, timeout: Timeout | UseClientDefault = USE_CLIENT_DEFAULT) -> None:
        """Deletes the snapshot and its files. Raises SnapshotInUse while sandboxes or
        warm pools use it (the message names them)."""
        req = snapshot_pb2.DeleteSnapshotRequest(name=self.name, namespace=self.namespace)
        self._client._unary(
            "DeleteSnapshot",
            req,
            timeout=timeout,
            done_on_retry=frozenset({grpc.StatusCode.NOT_FOUND}),
        )


class ForkList(list):  # type: ignore[type-arg]
    """The sandboxes of one ``Client.fork``; ``with`` deletes them all at
    exit. ``snapshot`` is the snapshot they were made from."""

    def __init__(self, sandboxes: list[Sandbox], snapshot: Snapshot) -> None:
        super().__init__(sandboxes)
        self.snapshot = snapshot

    def delete_all(self) -> None:
        """Deletes every sandbox in the list (in parallel); already gone ones are fine."""
        _sync_io.delete_all(self)

    def __enter__(self) -> ForkList:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.delete_all()


# unasync: end generated
