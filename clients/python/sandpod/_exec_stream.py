"""What a process and a terminal share: the reader of their Exec call.

:class:`AsyncExecStream` is the base of :class:`~sandpod.AsyncProcess` and
:class:`~sandpod.AsyncTerminal`; :class:`ExecStream` below it, the base of their sync
twins, is generated from it by ``hack/unasync.py`` (the reader task becomes a thread,
the asyncio condition a threading one: see ``_async_io`` and ``_sync_io``). A handle
keeps what it makes of the responses (``_apply``); the loop that reads them until the
exit, and what ends it, is written once here.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from . import _async_io, _sync_io
from ._errors import SandpodError, ServerError, from_rpc_error
from .v1 import exec_pb2

__all__ = ["AsyncExecStream", "ExecStream"]


# unasync: begin source: the asyncio base; its sync twin below is generated


class AsyncExecStream:
    """The reader of an Exec call: a task (a thread in the sync twin) that hands each
    response to ``_apply`` under ``_changed`` until the exit, the end of the stream or
    an error (kept in ``_error``), then sets ``_done``. A subclass sets up its own
    state before calling ``__init__`` (which applies the first response and starts
    the reader) and says how its errors read."""

    #: The reader is named sandpod-<_kind>-<sandbox>.
    _kind: str
    #: The command as the error messages name it: "<_label> 'cmd' ended ...".
    _label: str
    #: Whether the call ending CANCELLED is this handle's own close (a terminal's
    #: ``close`` cancels it) rather than an error.
    _cancel_is_close = False

    def __init__(
        self, sandbox: Any, call: Any, sender: Any, command: str, first: exec_pb2.ExecResponse
    ) -> None:
        self.sandbox = sandbox
        self.command = command
        self._call = call
        self._sender = sender
        self._changed = _async_io.AsyncCondition()
        self._error: SandpodError | None = None
        self._done = False
        self.pid = 0
        if first.WhichOneof("msg") == "started":
            self.pid = first.started.pid
        else:
            self._apply(first)
        self._reader = _async_io.AsyncWorker(self._read, f"sandpod-{self._kind}-{sandbox.name}")

    def _apply(self, resp: exec_pb2.ExecResponse) -> None:
        """Takes in a response (under ``_changed`` once the reader runs); sets
        ``_done`` at the exit."""
        raise NotImplementedError

    def _error_of(self, err: grpc.RpcError) -> SandpodError:
        """The error for a call that failed with ``err``."""
        return from_rpc_error(err)

    async def _consume(self, resp: exec_pb2.ExecResponse) -> None:
        async with self._changed:
            self._apply(resp)
            self._changed.notify_all()

    async def _read(self) -> None:
        try:
            while not self._done:
                resp = await _async_io.read(self._call)
                if resp is None:
                    self._error = ServerError(
                        f"{self._label} {self.command!r} ended without an exit"
                    )
                    break
                self._sender.on_response(resp)
                await self._consume(resp)
        except grpc.RpcError as err:
            if not (self._cancel_is_close and err.code() == grpc.StatusCode.CANCELLED):
                self._error = self.sandbox._noted(self._error_of(err))
        # unasync: async-only
        except asyncio.CancelledError:  # grpc.aio's read of a call cancelled by us
            if not self._cancel_is_close:
                raise
        # unasync: end
        finally:
            await self._sender.close()
            async with self._changed:
                self._done = True
                self._changed.notify_all()

    @property
    def running(self) -> bool:
        return not self._done


# unasync: end source


# unasync: begin generated from the source above by hack/unasync.py; do not edit


class ExecStream:
    """The reader of an Exec call: a task (a thread in the sync twin) that hands each
    response to ``_apply`` under ``_changed`` until the exit, the end of the stream or
    an error (kept in ``_error``), then sets ``_done``. A subclass sets up its own
    state before calling ``__init__`` (which applies the first response and starts
    the reader) and says how its errors read."""

    #: The reader is named sandpod-<_kind>-<sandbox>.
    _kind: str
    #: The command as the error messages name it: "<_label> 'cmd' ended ...".
    _label: str
    #: Whether the call ending CANCELLED is this handle's own close (a terminal's
    #: ``close`` cancels it) rather than an error.
    _cancel_is_close = False

    def __init__(
        self, sandbox: Any, call: Any, sender: Any, command: str, first: exec_pb2.ExecResponse
    ) -> None:
        self.sandbox = sandbox
        self.command = command
        self._call = call
        self._sender = sender
        self._changed = _sync_io.Condition()
        self._error: SandpodError | None = None
        self._done = False
        self.pid = 0
        if first.WhichOneof("msg") == "started":
            self.pid = first.started.pid
        else:
            self._apply(first)
        self._reader = _sync_io.Worker(self._read, f"sandpod-{self._kind}-{sandbox.name}")

    def _apply(self, resp: exec_pb2.ExecResponse) -> None:
        """Takes in a response (under ``_changed`` once the reader runs); sets
        ``_done`` at the exit."""
        raise NotImplementedError

    def _error_of(self, err: grpc.RpcError) -> SandpodError:
        """The error for a call that failed with ``err``."""
        return from_rpc_error(err)

    def _consume(self, resp: exec_pb2.ExecResponse) -> None:
        with self._changed:
            self._apply(resp)
            self._changed.notify_all()

    def _read(self) -> None:
        try:
            while not self._done:
                resp = _sync_io.read(self._call)
                if resp is None:
                    self._error = ServerError(
                        f"{self._label} {self.command!r} ended without an exit"
                    )
                    break
                self._sender.on_response(resp)
                self._consume(resp)
        except grpc.RpcError as err:
            if not (self._cancel_is_close and err.code() == grpc.StatusCode.CANCELLED):
                self._error = self.sandbox._noted(self._error_of(err))
        finally:
            self._sender.close()
            with self._changed:
                self._done = True
                self._changed.notify_all()

    @property
    def running(self) -> bool:
        return not self._done


# unasync: end generated
