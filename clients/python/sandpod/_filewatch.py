"""File watching: the changes under a directory of a sandbox (``Files.watch``).

:class:`AsyncFileWatch` is the source; :class:`FileWatch` below it is generated from it
by ``hack/unasync.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
from collections import deque
from collections.abc import Callable, Generator
from types import TracebackType
from typing import Any

import grpc

from . import _async_io, _base, _sync_io
from ._errors import ServerError, from_rpc_error
from .v1 import files_pb2


class FileEventType(str, enum.Enum):
    """What happened to a path under a watched directory."""

    CREATE = "create"
    WRITE = "write"
    REMOVE = "remove"
    RENAME = "rename"
    #: Events were lost (the kernel's queue overflowed): list the directory again.
    OVERFLOW = "overflow"


_TYPES = {
    files_pb2.FileEvent.TYPE_CREATE: FileEventType.CREATE,
    files_pb2.FileEvent.TYPE_WRITE: FileEventType.WRITE,
    files_pb2.FileEvent.TYPE_REMOVE: FileEventType.REMOVE,
    files_pb2.FileEvent.TYPE_RENAME: FileEventType.RENAME,
}


@dataclasses.dataclass(frozen=True)
class FileEvent:
    """One change seen by ``Files.watch``. Paths are named as the files API names them
    (relative to the workspace when inside it); ``old_path`` is where a renamed path
    was, else None."""

    type: FileEventType
    path: str
    old_path: str | None = None
    is_dir: bool = False

    @classmethod
    def from_pb(cls, ev: files_pb2.FileEvent) -> FileEvent:
        return cls(
            type=_TYPES.get(ev.type, FileEventType.OVERFLOW),
            path=ev.path,
            old_path=ev.old_path or None,
            is_dir=ev.is_dir,
        )


def _not_ready(resp: Any) -> ServerError | None:
    if resp is None:
        return ServerError("the watch ended before it was ready")
    if not resp.events or resp.events[0].type != files_pb2.FileEvent.TYPE_READY:
        return ServerError("the watch did not start with its ready event")
    return None


# unasync: begin source: the asyncio handle; its sync twin below is generated


class AsyncFileWatch:
    """The iterator of :class:`FileEvent` returned by ``Files.watch``: it is ready (every
    change after ``watch`` returned is reported) and ends when closed, at its timeout,
    or when the watched directory itself is removed (after that REMOVE event).

    The sync one is ready when ``watch`` returns; the asyncio one once awaited or
    entered as a context manager (iterating it waits for that by itself)."""

    def __init__(self, sandbox: Any, opener: Callable[[], Any], *, bounded: bool) -> None:
        self._sandbox = sandbox
        self._opener = opener  # opens the call (the asyncio one is a coroutine function)
        self._call: Any = None
        self._bounded = bounded
        self._closed = False
        self._ready = False
        self._pending: deque[files_pb2.FileEvent] = deque()
        self.path: str = ""  #: the watched directory, once ready

    async def _wait_ready(self) -> AsyncFileWatch:
        if self._ready:
            return self
        if self._call is None:
            self._call = await self._opener()
        try:
            first = await _async_io.read(self._call)
        except grpc.RpcError as err:
            raise await self._sandbox._failed(from_rpc_error(err)) from None
        if (bad := _not_ready(first)) is not None:
            self._call.cancel()
            raise bad
        self.path = first.events[0].path
        self._pending.extend(first.events[1:])
        self._ready = True
        await self._sandbox._answered()
        return self

    # unasync: async-only
    def __await__(self) -> Generator[Any, None, AsyncFileWatch]:
        return self._wait_ready().__await__()

    # unasync: end
    def __aiter__(self) -> AsyncFileWatch:
        return self

    async def __anext__(self) -> FileEvent:
        if self._closed:
            raise StopAsyncIteration
        await self._wait_ready()
        while not self._pending:
            try:
                resp = await _async_io.read(self._call)
            except grpc.RpcError as err:
                if _base.watch_ended(err, self._closed, self._bounded):
                    raise StopAsyncIteration from None
                raise self._sandbox._noted(from_rpc_error(err)) from None
            # unasync: async-only
            except asyncio.CancelledError:
                if self._closed:
                    raise StopAsyncIteration from None
                raise
            # unasync: end
            if resp is None:
                raise StopAsyncIteration
            self._pending.extend(resp.events)
        return FileEvent.from_pb(self._pending.popleft())

    def close(self) -> None:
        """Stops the watch."""
        self._closed = True
        if self._call is not None:
            self._call.cancel()

    async def __aenter__(self) -> AsyncFileWatch:
        return await self._wait_ready()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# unasync: end source


# unasync: begin generated from the source above by hack/unasync.py; do not edit


class FileWatch:
    """The iterator of :class:`FileEvent` returned by ``Files.watch``: it is ready (every
    change after ``watch`` returned is reported) and ends when closed, at its timeout,
    or when the watched directory itself is removed (after that REMOVE event).

    The sync one is ready when ``watch`` returns; the asyncio one once awaited or
    entered as a context manager (iterating it waits for that by itself)."""

    def __init__(self, sandbox: Any, opener: Callable[[], Any], *, bounded: bool) -> None:
        self._sandbox = sandbox
        self._opener = opener  # opens the call (the asyncio one is a coroutine function)
        self._call: Any = None
        self._bounded = bounded
        self._closed = False
        self._ready = False
        self._pending: deque[files_pb2.FileEvent] = deque()
        self.path: str = ""  #: the watched directory, once ready

    def _wait_ready(self) -> FileWatch:
        if self._ready:
            return self
        if self._call is None:
            self._call = self._opener()
        try:
            first = _sync_io.read(self._call)
        except grpc.RpcError as err:
            raise self._sandbox._failed(from_rpc_error(err)) from None
        if (bad := _not_ready(first)) is not None:
            self._call.cancel()
            raise bad
        self.path = first.events[0].path
        self._pending.extend(first.events[1:])
        self._ready = True
        self._sandbox._answered()
        return self

    def __iter__(self) -> FileWatch:
        return self

    def __next__(self) -> FileEvent:
        if self._closed:
            raise StopIteration
        self._wait_ready()
        while not self._pending:
            try:
                resp = _sync_io.read(self._call)
            except grpc.RpcError as err:
                if _base.watch_ended(err, self._closed, self._bounded):
                    raise StopIteration from None
                raise self._sandbox._noted(from_rpc_error(err)) from None
            if resp is None:
                raise StopIteration
            self._pending.extend(resp.events)
        return FileEvent.from_pb(self._pending.popleft())

    def close(self) -> None:
        """Stops the watch."""
        self._closed = True
        if self._call is not None:
            self._call.cancel()

    def __enter__(self) -> FileWatch:
        return self._wait_ready()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# unasync: end generated
