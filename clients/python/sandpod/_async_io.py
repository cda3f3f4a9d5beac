"""The asyncio primitives: what the asyncio client and its handles do differently in
kind from the sync ones (tasks and ``grpc.aio`` where :mod:`sandpod._sync_io` has
threads and blocking gRPC calls), with the same names as there.

A leaf of the package, as httpcore's ``_synchronization``: it works on channels, calls
and coroutines, and imports no module that builds on it (no handle, no client). The
handles written once (``_exec_stream``, ``_process``, ``_terminal``, ``_watch``,
``_filewatch``, ``_code_client``, ``_snapshots``) read streams and wait through it;
what opens a handle or touches a client's state is in :mod:`sandpod._async_ops`.
Hand-written.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Protocol

import grpc
import grpc.aio

from . import _base
from ._progress import WaitBar
from .v1 import exec_pb2, sandbox_service_pb2_grpc

__all__ = ["AsyncCondition", "AsyncWorker", "ExecSender"]

_UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


class Releasable(Protocol):
    """What :func:`delete_all` needs of a sandbox handle."""

    async def _release(self) -> None: ...


def initial_channel(
    settings: _base.ClientSettings,
) -> tuple[None, None]:
    """Nothing yet: the channel is opened on first use (``AsyncClient._stub``), inside
    the running event loop."""
    return None, None


def open_channel(
    settings: _base.ClientSettings,
) -> tuple[grpc.aio.Channel, sandbox_service_pb2_grpc.SandboxServiceStub]:
    if settings.credentials is not None:
        channel = grpc.aio.secure_channel(
            settings.address, settings.credentials, options=settings.options
        )
    else:
        channel = grpc.aio.insecure_channel(settings.address, options=settings.options)
    return channel, sandbox_service_pb2_grpc.SandboxServiceStub(channel)


async def why_unreachable(channel: grpc.aio.Channel) -> str | None:
    """See :func:`sandpod._sync_io.why_unreachable`."""
    check = channel.unary_unary(_base.HEALTH_CHECK)
    try:
        await check(b"", timeout=1.0)
    except grpc.RpcError as err:
        if err.code() in (_UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return err.details() or err.code().name.lower()
    return None


async def with_wait_bar(
    callable_: Any, request: Any, timeout: float | None, metadata: Any, desc: str
) -> Any:
    """One unary call, with a progress bar that ticks while it waits."""
    task = asyncio.ensure_future(callable_(request, timeout=timeout, metadata=metadata))
    try:
        with WaitBar(True, desc) as bar:
            while True:
                done, _ = await asyncio.wait({task}, timeout=0.2)
                if done:
                    return task.result()
                bar.tick()
    except BaseException:
        task.cancel()
        raise


async def delete_all(sandboxes: Iterable[Releasable]) -> None:
    """Best-effort delete of many sandboxes, concurrently; never raises."""
    await asyncio.gather(*(sb._release() for sb in sandboxes), return_exceptions=True)


async def read(call: Any) -> Any:
    """The next message of a server stream, None at its end (an error status raises;
    so does a call cancelled by us: asyncio.CancelledError)."""
    resp = await call.read()
    return None if resp is grpc.aio.EOF else resp


async def responses(call: Any) -> AsyncIterator[Any]:
    """The messages of a server stream until its end (an error status raises)."""
    while True:
        resp = await call.read()
        if resp is grpc.aio.EOF:
            return
        yield resp


# --- primitives of the handles written once (_terminal, _filewatch) ---------------


class AsyncCondition:
    """An asyncio condition whose waits take a timeout, as a threading one's do
    (:class:`sandpod._sync_io.Condition` is the twin)."""

    def __init__(self) -> None:
        self._cond = asyncio.Condition()

    async def __aenter__(self) -> AsyncCondition:
        await self._cond.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._cond.release()

    def notify_all(self) -> None:
        self._cond.notify_all()

    async def wait(self, timeout: float | None = None) -> bool:
        """Waits (holding the lock) for a notify; False if ``timeout`` ran out first."""
        try:
            await asyncio.wait_for(self._cond.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def wait_for(self, predicate: Callable[[], object], timeout: float | None) -> bool:
        """Waits (holding the lock) until ``predicate()`` is true; False if ``timeout``
        ran out first."""
        try:
            await asyncio.wait_for(self._cond.wait_for(predicate), timeout)
        except asyncio.TimeoutError:
            return False
        return True


class AsyncWorker:
    """Runs a coroutine function as a task of its own: a handle's reader
    (:class:`sandpod._sync_io.Worker` runs it on a thread)."""

    def __init__(self, target: Callable[[], Any], name: str) -> None:
        self._task = asyncio.create_task(target(), name=name)

    async def join(self, timeout: float | None = None) -> bool:
        """Waits up to ``timeout`` seconds for the end (never cancels it); True if it
        ended."""
        await asyncio.wait({self._task}, timeout=timeout)
        return self._task.done()


# --- the exec sender ----------------------------------------------------------------


async def _send(call: Any, req: exec_pb2.ExecRequest) -> bool:
    """Writes one message after the first; False if the RPC already ended.

    A command can end (and the server close the RPC) before it read its stdin, so a
    write may race with the end. grpc.aio's ``write`` then replaces the RPC's real
    status with a local INTERNAL error and drops the output not read yet; sending
    through the call's core object instead leaves the status and the output to the
    reads, as the sync client does.
    """
    if call.done():
        return False
    core = getattr(call, "_cython_call", None)
    if core is None or not hasattr(core, "send_serialized_message"):
        try:
            await call.write(req)
        except (grpc.RpcError, asyncio.InvalidStateError):
            return False
        return True
    try:
        await core.send_serialized_message(req.SerializeToString())
    except asyncio.CancelledError:
        raise
    except Exception:  # cygrpc.InternalError: the RPC ended under us
        return False
    return True


class ExecSender:
    """Writes the requests of one exec from a task of its own: the start message, then
    signals at once and stdin within the server's stdin window (see ExecInput), as the
    reader passes on the server's messages (``on_response``). Queueing never blocks."""

    def __init__(self, call: Any, first: exec_pb2.ExecRequest) -> None:
        self._call = call
        self._input = _base.ExecInput(first)
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._run())

    def _wake(self) -> None:
        self._changed.set()

    def put_stdin(self, data: bytes) -> None:
        self._input.put_stdin(data)
        self._wake()

    def close_stdin(self) -> None:
        self._input.close_stdin()
        self._wake()

    def signal(self, signal: int) -> None:
        self._input.signal(signal)
        self._wake()

    def resize(self, size: exec_pb2.TerminalSize) -> None:
        self._input.resize(size)
        self._wake()

    def on_response(self, resp: exec_pb2.ExecResponse) -> None:
        if self._input.on_response(resp):
            self._wake()

    def end(self) -> None:
        self._input.end()
        self._wake()

    async def close(self) -> None:
        """Ends sending, and the call: the reader saw its end or gives up on it. A write
        still waiting for the server is abandoned. (The sync sender has no call to end:
        a sync call ends with its reads.)"""
        self.end()
        if not self._task.done():
            self._task.cancel()
        await asyncio.wait([self._task])
        self._call.cancel()

    async def _run(self) -> None:
        first = True
        while True:
            msg = self._input.pop()
            if msg is None:
                if self._input.ended:
                    return
                self._changed.clear()
                await self._changed.wait()
                continue
            if first:
                # The first write goes through grpc.aio itself, which also starts the
                # call; a failure shows in the reads.
                first = False
                try:
                    await self._call.write(msg)
                except (grpc.RpcError, asyncio.InvalidStateError):
                    return
            elif not await _send(self._call, msg):
                return
