"""Lease renewal: a sandbox claimed or created with a lease is reclaimed by the server
when its client stops renewing it, so a crashed process does not hold its sandboxes
until their shutdown time. While a handle is open, the client renews it every quarter
of the lease from one background task (asyncio) or thread (sync) per client.

Renewal stops when the handle's ``with`` block ends, when it is deleted, when the
client closes, or when the handle is garbage-collected (an abandoned handle is an
abandoned sandbox). A renewal that fails for a transient reason is tried again at the
next tick; three missed ticks let the lease run out.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc

from .v1 import lease_pb2

if TYPE_CHECKING:
    from ._async_client import AsyncSandbox
    from ._client import Sandbox

__all__ = ["AsyncLeaseRenewer", "LeaseRenewer", "renew_every"]

#: Shortest gap between two renewals of one lease, whatever its length.
MIN_INTERVAL = 0.5


def renew_every(lease: float) -> float:
    """A quarter of the lease (the server's lifecycle.RenewEvery), at least MIN_INTERVAL."""
    return max(lease / 4, MIN_INTERVAL)


@dataclass
class _Entry:
    ref: weakref.ReferenceType[Any]
    every: float
    due: float


def _request(handle: Any) -> lease_pb2.RenewLeaseRequest:
    return lease_pb2.RenewLeaseRequest(name=handle.name, namespace=handle.namespace)


def _final(code: grpc.StatusCode | None) -> bool:
    """A renewal error after which renewing again is pointless: the sandbox is gone
    or has no lease (any other error is retried at the next tick)."""
    return code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION)


class _Table:
    """The leases one client renews, by sandbox key."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], _Entry] = {}

    def add(self, handle: Any) -> bool:
        lease = handle.info.lease
        if lease <= 0:
            return False
        every = renew_every(lease)
        key = (handle.namespace, handle.name)
        self.entries[key] = _Entry(weakref.ref(handle), every, time.monotonic() + every)
        return True

    def drop(self, handle: Any) -> None:
        key = (handle.namespace, handle.name)
        entry = self.entries.get(key)
        if entry is not None and entry.ref() in (handle, None):
            del self.entries[key]

    def due(self, now: float) -> list[tuple[tuple[str, str], Any]]:
        out = []
        for key, e in list(self.entries.items()):
            handle = e.ref()
            if handle is None:  # dropped without closing: let the lease run out
                del self.entries[key]
            elif e.due <= now:
                e.due = now + e.every
                out.append((key, handle))
        return out

    def wait(self, now: float) -> float:
        if not self.entries:
            return 3600.0
        return max(0.0, min(e.due for e in self.entries.values()) - now)


class AsyncLeaseRenewer:
    """Renews the leases of an :class:`AsyncClient`'s open handles from one task."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._table = _Table()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def add(self, handle: AsyncSandbox) -> None:
        if not self._table.add(handle):
            return
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        self._wake.set()

    def drop(self, handle: AsyncSandbox) -> None:
        self._table.drop(handle)

    async def close(self) -> None:
        self._table.entries.clear()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while self._table.entries:
            due = self._table.due(time.monotonic())
            timeouts = {k: max(self._table.entries[k].every, 1.0) for k, _ in due}
            for key, handle in due:
                try:
                    await handle.renew_lease(timeout=timeouts[key])
                except Exception as err:  # a renewal must never kill the task
                    if _final(getattr(err, "code", None)):
                        self._table.entries.pop(key, None)
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._table.wait(time.monotonic()))


class LeaseRenewer:
    """Renews the leases of a :class:`Client`'s open handles from one daemon thread."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._table = _Table()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, handle: Sandbox) -> None:
        with self._lock:
            if self._closed or not self._table.add(handle):
                return
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="sandpod-lease-renewer", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def drop(self, handle: Sandbox) -> None:
        with self._lock:
            self._table.drop(handle)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._table.entries.clear()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._closed or not self._table.entries:
                    self._thread = None
                    return
                due = self._table.due(time.monotonic())
                timeouts = {k: max(self._table.entries[k].every, 1.0) for k, _ in due}
            for key, handle in due:
                try:
                    handle.renew_lease(timeout=timeouts[key])
                except Exception as err:  # a renewal must never kill the thread
                    if _final(getattr(err, "code", None)):
                        with self._lock:
                            self._table.entries.pop(key, None)
            with self._lock:
                wait = self._table.wait(time.monotonic())
            self._wake.wait(wait)
            self._wake.clear()
