"""Terminals: a command on a pseudo-terminal of the sandbox (``Sandbox.terminal``).

The server gives the command a terminal of its own (a new session, the terminal as its
controlling terminal): what is sent is typed, what comes back is what the terminal
shows.

:class:`AsyncTerminal` is the source; :class:`Terminal` below it is generated from it by
``hack/unasync.py`` (the reader task becomes a thread, the asyncio condition a
threading one: see ``_async_io`` and ``_sync_io``).
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Union

from . import _base
from ._errors import SandboxTimeout, ServerError
from ._exec_stream import AsyncExecStream, ExecStream
from .v1 import exec_pb2

#: What ``expect`` waits for: text or bytes (found as they are) or a regular expression.
Pattern = Union[str, bytes, "re.Pattern[str]", "re.Pattern[bytes]"]

#: The shell a terminal runs when no command is given: bash if the image has it.
DEFAULT_SHELL = "if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi"

#: The bounds of rows and columns the server accepts.
MAX_SIZE = 1000


def check_size(rows: int, cols: int) -> exec_pb2.TerminalSize:
    """The size as a message; a size the server would refuse is a ValueError here
    (the server ends a terminal on a bad resize)."""
    for name, n in (("rows", rows), ("cols", cols)):
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_SIZE:
            raise ValueError(f"{name} must be an int between 1 and {MAX_SIZE}, got {n!r}")
    return exec_pb2.TerminalSize(rows=rows, cols=cols)


def terminal_start(
    sandbox: str,
    namespace: str,
    cmd: str | Sequence[str] | None,
    *,
    rows: int,
    cols: int,
    env: Mapping[str, str] | None,
    cwd: str | None,
    term: str | None,
    timeout: float | None,
    max_output_bytes: int | None,
) -> tuple[exec_pb2.ExecRequest, str]:
    """The first Exec message of a terminal, and its command as text."""
    size = check_size(rows, cols)
    first, text = _base.exec_start(
        sandbox,
        namespace,
        DEFAULT_SHELL if cmd is None else cmd,
        env=env,
        cwd=cwd,
        timeout=timeout,
        max_output_bytes=max_output_bytes,
    )
    first.start.pty.size.CopyFrom(size)
    first.start.pty.term = term or ""
    return first, "shell" if cmd is None else text


def match(buf: bytes | bytearray, pattern: Pattern) -> int:
    """Where the first match of ``pattern`` in ``buf`` ends, or -1."""
    if isinstance(pattern, (str, bytes)):
        needle = pattern.encode() if isinstance(pattern, str) else pattern
        i = bytes(buf).find(needle)
        return -1 if i < 0 else i + len(needle)
    if isinstance(pattern.pattern, bytes):
        m = pattern.search(bytes(buf))  # type: ignore[arg-type]
        return -1 if m is None else m.end()
    # A text pattern: decoded so that every byte maps back (surrogateescape).
    text = bytes(buf).decode("utf-8", "surrogateescape")
    m = pattern.search(text)  # type: ignore[arg-type]
    return -1 if m is None else len(text[: m.end()].encode("utf-8", "surrogateescape"))


def _shown(b: bytes | bytearray) -> str:
    return bytes(b).decode("utf-8", "replace")


def _exit_code(exit: exec_pb2.ExitStatus) -> int:
    return exit.exit_code if exit.HasField("exit_code") else 0


# unasync: begin source: the asyncio handle; its sync twin below is generated


class AsyncTerminal(AsyncExecStream):
    """A command on a terminal of the sandbox (from ``Sandbox.terminal``).

    ``send`` types into it (``"\\r"`` is Enter, ``"\\x03"`` Ctrl-C, ``"\\x7f"`` backspace),
    ``resize`` changes its size; what it shows comes back as bytes: iterate over the
    handle for chunks as they arrive, or ``read()`` what is there, or ``expect()`` a
    text. Each byte of output is handed out once, by whichever of these takes it.
    ``wait()`` returns the exit code; ``close()`` (or leaving the ``with`` block) ends
    the command and everything it started on the terminal.
    """

    _kind = "terminal"
    _label = "terminal"
    _cancel_is_close = True  # close() cancels the call

    def __init__(
        self, sandbox: Any, call: Any, sender: Any, command: str, first: exec_pb2.ExecResponse
    ) -> None:
        self._buf = bytearray()
        self._exit: exec_pb2.ExitStatus | None = None
        super().__init__(sandbox, call, sender, command, first)

    def _apply(self, resp: exec_pb2.ExecResponse) -> None:
        kind = resp.WhichOneof("msg")
        if kind == "exit":
            self._exit = resp.exit
            self._done = True
        elif kind in ("stdout", "stderr"):
            self._buf += getattr(resp, kind)

    def __repr__(self) -> str:
        state = "running" if self.running else f"exited {self.exit_code}"
        return f"AsyncTerminal(pid={self.pid}, command={self.command!r}, {state})"

    @property
    def exit_code(self) -> int | None:
        """The exit code once the command ended (-1 if a signal killed it), else None."""
        return None if self._exit is None else _exit_code(self._exit)

    async def send(self, data: bytes | str) -> None:
        """Types bytes (or UTF-8 text) into the terminal. Never blocks."""
        if self.running:
            self._sender.put_stdin(_base.as_bytes(data))

    async def resize(self, rows: int, cols: int) -> None:
        """Changes the terminal's size (each 1 to 1000); the command gets SIGWINCH."""
        size = check_size(rows, cols)
        if self.running:
            self._sender.resize(size)

    def _take(self, end: int) -> bytes:
        out = bytes(self._buf[:end])
        del self._buf[:end]
        return out

    async def read(self, timeout: float | None = None) -> bytes:
        """What the terminal showed and nobody took yet, waiting up to ``timeout``
        seconds (None: as long as it takes) for something. ``b""`` on timeout, or when
        the command ended and everything was read."""
        async with self._changed:
            await self._changed.wait_for(lambda: bool(self._buf) or self._done, timeout)
            return self._take(len(self._buf))

    async def expect(self, pattern: Pattern, timeout: float | None = 30.0) -> str:
        """Waits until the terminal shows ``pattern`` (text, bytes or a compiled regular
        expression) and returns what it showed up to the end of the match, as text;
        that much is taken. Raises :class:`SandboxTimeout` after ``timeout`` seconds,
        and EOFError if the command ends first (both say what was shown)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        async with self._changed:
            while True:
                end = match(self._buf, pattern)
                if end >= 0:
                    return _shown(self._take(end))
                if self._done:
                    if self._error is not None:
                        raise self._error
                    raise EOFError(
                        f"the terminal ended before showing {pattern!r}; "
                        f"it showed {_shown(self._buf[-500:])!r}"
                    )
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise SandboxTimeout(
                        f"the terminal did not show {pattern!r} within {timeout}s; "
                        f"it showed {_shown(self._buf[-500:])!r}"
                    )
                await self._changed.wait(left)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        while True:
            chunk = await self.read()
            if not chunk:
                if self._error is not None:
                    raise self._error
                return
            yield chunk

    async def wait(self, timeout: float | None = None) -> int:
        """Waits for the command to end and returns its exit code (-1 if a signal
        killed it); raises SandboxTimeout if ``timeout`` runs out first."""
        if not await self._reader.join(timeout):
            raise SandboxTimeout(f"terminal {self.command!r} still running")
        if self._error is not None:
            raise self._error
        if self._exit is None:
            raise ServerError(f"terminal {self.command!r} was closed before it ended")
        return _exit_code(self._exit)

    async def close(self) -> None:
        """Ends the command and everything it started on the terminal (if still
        running) and the call."""
        if self.running:
            self._sender.end()
            self._call.cancel()  # the server kills the terminal's session
        await self._reader.join(10)

    async def __aenter__(self) -> AsyncTerminal:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


# unasync: end source


# unasync: begin generated from the source above by hack/unasync.py; do not edit


class Terminal(ExecStream):
    """A command on a terminal of the sandbox (from ``Sandbox.terminal``).

    ``send`` types into it (``"\\r"`` is Enter, ``"\\x03"`` Ctrl-C, ``"\\x7f"`` backspace),
    ``resize`` changes its size; what it shows comes back as bytes: iterate over the
    handle for chunks as they arrive, or ``read()`` what is there, or ``expect()`` a
    text. Each byte of output is handed out once, by whichever of these takes it.
    ``wait()`` returns the exit code; ``close()`` (or leaving the ``with`` block) ends
    the command and everything it started on the terminal.
    """

    _kind = "terminal"
    _label = "terminal"
    _cancel_is_close = True  # close() cancels the call

    def __init__(
        self, sandbox: Any, call: Any, sender: Any, command: str, first: exec_pb2.ExecResponse
    ) -> None:
        self._buf = bytearray()
        self._exit: exec_pb2.ExitStatus | None = None
        super().__init__(sandbox, call, sender, command, first)

    def _apply(self, resp: exec_pb2.ExecResponse) -> None:
        kind = resp.WhichOneof("msg")
        if kind == "exit":
            self._exit = resp.exit
            self._done = True
        elif kind in ("stdout", "stderr"):
            self._buf += getattr(resp, kind)

    def __repr__(self) -> str:
        state = "running" if self.running else f"exited {self.exit_code}"
        return f"Terminal(pid={self.pid}, command={self.command!r}, {state})"

    @property
    def exit_code(self) -> int | None:
        """The exit code once the command ended (-1 if a signal killed it), else None."""
        return None if self._exit is None else _exit_code(self._exit)

    def send(self, data: bytes | str) -> None:
        """Types bytes (or UTF-8 text) into the terminal. Never blocks."""
        if self.running:
            self._sender.put_stdin(_base.as_bytes(data))

    def resize(self, rows: int, cols: int) -> None:
        """Changes the terminal's size (each 1 to 1000); the command gets SIGWINCH."""
        size = check_size(rows, cols)
        if self.running:
            self._sender.resize(size)

    def _take(self, end: int) -> bytes:
        out = bytes(self._buf[:end])
        del self._buf[:end]
        return out

    def read(self, timeout: float | None = None) -> bytes:
        """What the terminal showed and nobody took yet, waiting up to ``timeout``
        seconds (None: as long as it takes) for something. ``b""`` on timeout, or when
        the command ended and everything was read."""
        with self._changed:
            self._changed.wait_for(lambda: bool(self._buf) or self._done, timeout)
            return self._take(len(self._buf))

    def expect(self, pattern: Pattern, timeout: float | None = 30.0) -> str:
        """Waits until the terminal shows ``pattern`` (text, bytes or a compiled regular
        expression) and returns what it showed up to the end of the match, as text;
        that much is taken. Raises :class:`SandboxTimeout` after ``timeout`` seconds,
        and EOFError if the command ends first (both say what was shown)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while True:
                end = match(self._buf, pattern)
                if end >= 0:
                    return _shown(self._take(end))
                if self._done:
                    if self._error is not None:
                        raise self._error
                    raise EOFError(
                        f"the terminal ended before showing {pattern!r}; "
                        f"it showed {_shown(self._buf[-500:])!r}"
                    )
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise SandboxTimeout(
                        f"the terminal did not show {pattern!r} within {timeout}s; "
                        f"it showed {_shown(self._buf[-500:])!r}"
                    )
                self._changed.wait(left)

    def __iter__(self) -> Iterator[bytes]:
        return self._chunks()

    def _chunks(self) -> Iterator[bytes]:
        while True:
            chunk = self.read()
            if not chunk:
                if self._error is not None:
                    raise self._error
                return
            yield chunk

    def wait(self, timeout: float | None = None) -> int:
        """Waits for the command to end and returns its exit code (-1 if a signal
        killed it); raises SandboxTimeout if ``timeout`` runs out first."""
        if not self._reader.join(timeout):
            raise SandboxTimeout(f"terminal {self.command!r} still running")
        if self._error is not None:
            raise self._error
        if self._exit is None:
            raise ServerError(f"terminal {self.command!r} was closed before it ended")
        return _exit_code(self._exit)

    def close(self) -> None:
        """Ends the command and everything it started on the terminal (if still
        running) and the call."""
        if self.running:
            self._sender.end()
            self._call.cancel()  # the server kills the terminal's session
        self._reader.join(10)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# unasync: end generated
