"""Watching sandboxes: :class:`Watch` from ``Client.watch`` (and its asyncio twin).

:class:`AsyncWatch` is the source; :class:`Watch` below it is generated from it by
``hack/unasync.py``. ``_async_ops.open_watch`` and ``_sync_ops.open_watch`` open the
stream (the sync one returns once the server has the watch live).
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

import grpc

from . import _async_io, _base, _sync_io
from ._errors import Unavailable, from_rpc_error
from ._models import WatchEvent

__all__ = ["AsyncWatch", "Watch"]


# unasync: begin source: the asyncio handle; its sync twin below is generated


class AsyncWatch:
    """The iterator of :class:`WatchEvent` returned by ``Client.watch``; it ends when
    closed or at its timeout."""

    def __init__(self, call: Any, *, bounded: bool, client: Any = None) -> None:
        self._call = call
        self._bounded = bounded
        self._closed = False
        self._client = client

    def __aiter__(self) -> AsyncWatch:
        return self

    async def __anext__(self) -> WatchEvent:
        try:
            resp = await _async_io.read(self._call)
        except grpc.RpcError as err:
            if _base.watch_ended(err, self._closed, self._bounded):
                raise StopAsyncIteration from None
            client = self._client
            unavailable = err.code() == grpc.StatusCode.UNAVAILABLE
            if client is not None and not client._reached and unavailable:
                # watch() cannot wait for the connection (it returns at once): say here
                # what the other calls say when there was never a server to talk to.
                raise Unavailable(
                    _base.no_server_message(client.address, 0, err.details() or "unavailable"),
                    code=grpc.StatusCode.UNAVAILABLE,
                ) from None
            raise from_rpc_error(err) from None
        # unasync: async-only
        except asyncio.CancelledError:
            if self._closed:
                raise StopAsyncIteration from None
            raise
        # unasync: end
        if resp is None:
            raise StopAsyncIteration
        return WatchEvent.from_pb(resp)

    def close(self) -> None:
        """Stops the stream."""
        self._closed = True
        self._call.cancel()

    async def __aenter__(self) -> AsyncWatch:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# unasync: end source


# unasync: begin generated from the source above by hack/unasync.py; do not edit


class Watch:
    """The iterator of :class:`WatchEvent` returned by ``Client.watch``; it ends when
    closed or at its timeout."""

    def __init__(self, call: Any, *, bounded: bool, client: Any = None) -> None:
        self._call = call
        self._bounded = bounded
        self._closed = False
        self._client = client

    def __iter__(self) -> Watch:
        return self

    def __next__(self) -> WatchEvent:
        try:
            resp = _sync_io.read(self._call)
        except grpc.RpcError as err:
            if _base.watch_ended(err, self._closed, self._bounded):
                raise StopIteration from None
            client = self._client
            unavailable = err.code() == grpc.StatusCode.UNAVAILABLE
            if client is not None and not client._reached and unavailable:
                # watch() cannot wait for the connection (it returns at once): say here
                # what the other calls say when there was never a server to talk to.
                raise Unavailable(
                    _base.no_server_message(client.address, 0, err.details() or "unavailable"),
                    code=grpc.StatusCode.UNAVAILABLE,
                ) from None
            raise from_rpc_error(err) from None
        if resp is None:
            raise StopIteration
        return WatchEvent.from_pb(resp)

    def close(self) -> None:
        """Stops the stream."""
        self._closed = True
        self._call.cancel()

    def __enter__(self) -> Watch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# unasync: end generated
