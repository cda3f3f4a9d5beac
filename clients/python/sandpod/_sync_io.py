"""The synchronous primitives: what the sync client and its handles do differently in
kind from the asyncio ones (threads and blocking gRPC calls where
:mod:`sandpod._async_io` has tasks and ``grpc.aio``), with the same names as there.

A leaf of the package, as httpcore's ``_synchronization``: it works on channels, calls
and functions, and imports no module that builds on it (no handle, no client). What
opens a handle or touches a client's state is in :mod:`sandpod._sync_ops`.
Hand-written.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import grpc

from . import _base
from ._progress import WaitBar
from .v1 import exec_pb2, sandbox_service_pb2_grpc

__all__ = ["Condition", "ExecSender", "Worker"]


class Releasable(Protocol):
    """What :func:`delete_all` needs of a sandbox handle."""

    def _release(self) -> None: ...


def initial_channel(
    settings: _base.ClientSettings,
) -> tuple[grpc.Channel, sandbox_service_pb2_grpc.SandboxServiceStub]:
    """The channel and stub of a new client: opened at once (a sync channel needs no
    event loop)."""
    if settings.credentials is not None:
        channel = grpc.secure_channel(
            settings.address, settings.credentials, options=settings.options
        )
    else:
        channel = grpc.insecure_channel(settings.address, options=settings.options)
    return channel, sandbox_service_pb2_grpc.SandboxServiceStub(channel)


def why_unreachable(channel: grpc.Channel) -> str | None:
    """gRPC's reason why the server cannot be reached (refused, no such host, a TLS
    handshake that failed), from one health check that does not wait for a
    connection; None if the server answered it after all."""
    check = channel.unary_unary(_base.HEALTH_CHECK)
    try:
        check(b"", timeout=1.0)
    except grpc.RpcError as err:
        if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return err.details() or err.code().name.lower()
    return None


def with_wait_bar(
    callable_: Any, request: Any, timeout: float | None, metadata: Any, desc: str
) -> Any:
    """One unary call, with a progress bar that ticks while it waits."""
    fut = callable_.future(request, timeout=timeout, metadata=metadata)
    try:
        with WaitBar(True, desc) as bar:
            while True:
                try:
                    return fut.result(timeout=0.2)
                except grpc.FutureTimeoutError:
                    bar.tick()
    except BaseException:
        fut.cancel()
        raise


def delete_all(sandboxes: Iterable[Releasable]) -> None:
    """Best-effort delete of many sandboxes, in parallel; never raises."""
    items = list(sandboxes)
    if not items:
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(items))) as pool:
        for fut in [pool.submit(sb._release) for sb in items]:
            fut.exception()


def read(call: Any) -> Any:
    """The next message of a server stream, None at its end (an error status raises;
    so does a call cancelled by us: grpc.RpcError, CANCELLED)."""
    return next(call, None)


def responses(call: Any) -> Iterator[Any]:
    """The messages of a server stream until its end (an error status raises)."""
    return iter(call)


# --- primitives of the handles written once (_terminal, _filewatch) ---------------


class Condition:
    """A threading condition, the twin of :class:`sandpod._async_io.AsyncCondition`."""

    def __init__(self) -> None:
        self._cond = threading.Condition()

    def __enter__(self) -> Condition:
        self._cond.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._cond.release()

    def notify_all(self) -> None:
        self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Waits (holding the lock) for a notify; False if ``timeout`` ran out first."""
        return self._cond.wait(timeout)

    def wait_for(self, predicate: Callable[[], object], timeout: float | None) -> bool:
        """Waits (holding the lock) until ``predicate()`` is true; False if ``timeout``
        ran out first."""
        return bool(self._cond.wait_for(predicate, timeout))


class Worker:
    """Runs a function on a daemon thread of its own: a handle's reader (the twin of
    :class:`sandpod._async_io.AsyncWorker`, which runs a task)."""

    def __init__(self, target: Callable[[], Any], name: str) -> None:
        self._thread = threading.Thread(target=target, name=name, daemon=True)
        self._thread.start()

    def join(self, timeout: float | None = None) -> bool:
        """Waits up to ``timeout`` seconds for the end; True if it ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()


# --- the exec sender ----------------------------------------------------------------


class ExecSender:
    """The request stream of one exec: gRPC's sending thread iterates it, the caller's
    threads queue stdin and signals, and whoever reads the responses passes them to
    ``on_response`` (the stdin window and its acknowledgements, see ExecInput)."""

    def __init__(self, first: exec_pb2.ExecRequest) -> None:
        self._input = _base.ExecInput(first)
        self._cond = threading.Condition()

    def put_stdin(self, data: bytes) -> None:
        with self._cond:
            self._input.put_stdin(data)
            self._cond.notify_all()

    def close_stdin(self) -> None:
        with self._cond:
            self._input.close_stdin()
            self._cond.notify_all()

    def signal(self, signal: int) -> None:
        with self._cond:
            self._input.signal(signal)
            self._cond.notify_all()

    def resize(self, size: exec_pb2.TerminalSize) -> None:
        with self._cond:
            self._input.resize(size)
            self._cond.notify_all()

    def end(self) -> None:
        with self._cond:
            self._input.end()
            self._cond.notify_all()

    def close(self) -> None:
        """Ends sending: the call is over (gRPC's sending thread stops)."""
        self.end()

    def on_response(self, resp: exec_pb2.ExecResponse) -> None:
        with self._cond:
            if self._input.on_response(resp):
                self._cond.notify_all()

    def __iter__(self) -> Iterator[exec_pb2.ExecRequest]:
        while True:
            with self._cond:
                msg = self._input.pop()
                while msg is None:
                    if self._input.ended:
                        return
                    self._cond.wait()
                    msg = self._input.pop()
            yield msg
