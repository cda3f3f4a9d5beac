"""Background commands: :class:`Process` from ``Sandbox.start`` (and its asyncio twin).

:class:`AsyncProcess` is the source; :class:`Process` below it is generated from it by
``hack/unasync.py`` (the reader task becomes a thread, the asyncio condition a
threading one: see ``_async_io`` and ``_sync_io``). ``_async_ops.start_process`` and
``_sync_ops.start_process`` open the exec and read its first response.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Any

import grpc

from . import _base
from ._base import Timeout
from ._errors import SandboxTimeout, SandpodError
from ._exec_stream import AsyncExecStream, ExecStream
from ._models import CommandResult, Output, OutputDecoder
from .v1 import exec_pb2

__all__ = ["AsyncProcess", "Process"]

Data = bytes | bytearray | memoryview | str


# unasync: begin source: the asyncio handle; its sync twin below is generated


class AsyncProcess(AsyncExecStream):
    """A command running in a sandbox (from ``Sandbox.start``).

    Iterating yields its :class:`Output` chunks as they arrive (also after it exited,
    from the beginning); ``wait()`` returns the :class:`CommandResult`. As a context
    manager it kills the command at exit if it is still running.
    """

    _kind = "exec"
    _label = "exec of"

    def __init__(
        self,
        sandbox: Any,
        call: Any,
        sender: Any,
        command: str,
        limit: float | None,
        first: exec_pb2.ExecResponse,
    ) -> None:
        self._limit = limit
        self._decoder = OutputDecoder()
        self._events: list[Output] = []
        self._result: CommandResult | None = None
        self._stdin_closed = False
        super().__init__(sandbox, call, sender, command, first)

    def _apply(self, resp: exec_pb2.ExecResponse) -> None:
        kind = resp.WhichOneof("msg")
        if kind == "exit":
            self._result = self._decoder.result(resp.exit, self.command)
            self._done = True
        elif kind in ("stdout", "stderr"):
            out = self._decoder.feed_response(resp)
            if out is not None:
                self._events.append(out)

    def _error_of(self, err: grpc.RpcError) -> SandpodError:
        return _base.exec_error(err, self.command, self._limit)

    def __repr__(self) -> str:
        state = (
            "running"
            if self.running
            else f"exited {self._result.exit_code if self._result else '?'}"
        )
        return f"AsyncProcess(pid={self.pid}, command={self.command!r}, {state})"

    @property
    def result(self) -> CommandResult | None:
        """The result once the process exited, else None."""
        return self._result

    @property
    def stdout(self) -> str:
        """Standard output so far."""
        return bytes(self._decoder.buffers["stdout"]).decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        """Standard error so far."""
        return bytes(self._decoder.buffers["stderr"]).decode("utf-8", "replace")

    async def __aiter__(self) -> AsyncIterator[Output]:
        i = 0
        while True:
            async with self._changed:
                await self._changed.wait_for(lambda n=i: n < len(self._events) or self._done, None)
                out = self._events[i] if i < len(self._events) else None
            if out is None:  # it exited and every chunk was handed out
                if self._error is not None:
                    raise self._error
                return
            i += 1
            yield out

    async def write_stdin(self, data: Data) -> None:
        """Sends bytes (or UTF-8 text) to the command's standard input. Never blocks:
        what the command has not read yet beyond the server's stdin window (a few MiB)
        waits in this process's memory."""
        if self._stdin_closed:
            raise ValueError("stdin is closed")
        if self.running:
            self._sender.put_stdin(_base.as_bytes(data))

    async def close_stdin(self) -> None:
        """Closes the command's standard input (it sees end-of-file)."""
        if not self._stdin_closed:
            self._stdin_closed = True
            self._sender.close_stdin()

    async def send_signal(self, signal: int) -> None:
        """Sends a signal to the command's whole process group, at once: ahead of any
        stdin the command has not read."""
        if self.running:
            self._sender.signal(signal)

    async def terminate(self) -> None:
        """Sends SIGTERM."""
        await self.send_signal(15)

    async def kill(self) -> None:
        """Sends SIGKILL."""
        await self.send_signal(9)

    async def wait(self, timeout: Timeout = None, *, check: bool = False) -> CommandResult:
        """Waits for the exit and returns the result; raises SandboxTimeout if ``timeout``
        runs out first (the process keeps running)."""
        limit = None if timeout is None else _base.seconds_of(timeout)
        if not await self._reader.join(limit):
            raise SandboxTimeout(f"process {self.pid} ({self.command!r}) still running")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result.check() if check else self._result

    async def __aenter__(self) -> AsyncProcess:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.running:
            await self.kill()
            if not await self._reader.join(10):
                self._call.cancel()


# unasync: end source


# unasync: begin generated from the source above by hack/unasync.py; do not edit


class Process(ExecStream):
    """A command running in a sandbox (from ``Sandbox.start``).

    Iterating yields its :class:`Output` chunks as they arrive (also after it exited,
    from the beginning); ``wait()`` returns the :class:`CommandResult`. As a context
    manager it kills the command at exit if it is still running.
    """

    _kind = "exec"
    _label = "exec of"

    def __init__(
        self,
        sandbox: Any,
        call: Any,
        sender: Any,
        command: str,
        limit: float | None,
        first: exec_pb2.ExecResponse,
    ) -> None:
        self._limit = limit
        self._decoder = OutputDecoder()
        self._events: list[Output] = []
        self._result: CommandResult | None = None
        self._stdin_closed = False
        super().__init__(sandbox, call, sender, command, first)

    def _apply(self, resp: exec_pb2.ExecResponse) -> None:
        kind = resp.WhichOneof("msg")
        if kind == "exit":
            self._result = self._decoder.result(resp.exit, self.command)
            self._done = True
        elif kind in ("stdout", "stderr"):
            out = self._decoder.feed_response(resp)
            if out is not None:
                self._events.append(out)

    def _error_of(self, err: grpc.RpcError) -> SandpodError:
        return _base.exec_error(err, self.command, self._limit)

    def __repr__(self) -> str:
        state = (
            "running"
            if self.running
            else f"exited {self._result.exit_code if self._result else '?'}"
        )
        return f"Process(pid={self.pid}, command={self.command!r}, {state})"

    @property
    def result(self) -> CommandResult | None:
        """The result once the process exited, else None."""
        return self._result

    @property
    def stdout(self) -> str:
        """Standard output so far."""
        return bytes(self._decoder.buffers["stdout"]).decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        """Standard error so far."""
        return bytes(self._decoder.buffers["stderr"]).decode("utf-8", "replace")

    def __iter__(self) -> Iterator[Output]:
        i = 0
        while True:
            with self._changed:
                self._changed.wait_for(lambda n=i: n < len(self._events) or self._done, None)
                out = self._events[i] if i < len(self._events) else None
            if out is None:  # it exited and every chunk was handed out
                if self._error is not None:
                    raise self._error
                return
            i += 1
            yield out

    def write_stdin(self, data: Data) -> None:
        """Sends bytes (or UTF-8 text) to the command's standard input. Never blocks:
        what the command has not read yet beyond the server's stdin window (a few MiB)
        waits in this process's memory."""
        if self._stdin_closed:
            raise ValueError("stdin is closed")
        if self.running:
            self._sender.put_stdin(_base.as_bytes(data))

    def close_stdin(self) -> None:
        """Closes the command's standard input (it sees end-of-file)."""
        if not self._stdin_closed:
            self._stdin_closed = True
            self._sender.close_stdin()

    def send_signal(self, signal: int) -> None:
        """Sends a signal to the command's whole process group, at once: ahead of any
        stdin the command has not read."""
        if self.running:
            self._sender.signal(signal)

    def terminate(self) -> None:
        """Sends SIGTERM."""
        self.send_signal(15)

    def kill(self) -> None:
        """Sends SIGKILL."""
        self.send_signal(9)

    def wait(self, timeout: Timeout = None, *, check: bool = False) -> CommandResult:
        """Waits for the exit and returns the result; raises SandboxTimeout if ``timeout``
        runs out first (the process keeps running)."""
        limit = None if timeout is None else _base.seconds_of(timeout)
        if not self._reader.join(limit):
            raise SandboxTimeout(f"process {self.pid} ({self.command!r}) still running")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result.check() if check else self._result

    def __enter__(self) -> Process:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.running:
            self.kill()
            if not self._reader.join(10):
                self._call.cancel()


# unasync: end generated
